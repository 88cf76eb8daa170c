#include "core/sandbox/library_fence.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <fstream>
#include <set>
#include <sstream>

#include "core/task/task.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

namespace fs = std::filesystem;

namespace kwb::worker {

namespace {

std::string readText(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Adds a rule allowing `access` beneath (or on) `path`; false when it cannot be opened.
bool allow(int ruleset, const fs::path &path, std::uint64_t access) {
  const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return false;
  landlock_path_beneath_attr rule{};
  rule.allowed_access = access;
  rule.parent_fd = fd;
  const long r = ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  ::close(fd);
  return r == 0;
}

// The vendor library `file` is, by its own name or that of the file its links lead to, when
// `permitted` does not name it; empty otherwise.
std::string fencedName(const fs::path &file, const std::vector<std::string> &permitted) {
  auto forbidden = [&](const fs::path &p) {
    const std::string name = vendorLibraryOf(p.string());
    return std::find(permitted.begin(), permitted.end(), name) == permitted.end() ? name : std::string();
  };
  if (auto name = forbidden(file); !name.empty()) return name;
  std::error_code ec;
  const fs::path real = fs::canonical(file, ec);
  return ec ? std::string() : forbidden(real);
}

}  // namespace

bool fencedOff(const fs::path &file, const std::vector<std::string> &allowed) {
  return !fencedName(file, withLibraryDependencies(allowed)).empty();
}

std::vector<fs::path> libraryFolders(const std::string &ldSoConf, const std::string &ldLibraryPath,
                                     const std::string &maps) {
  std::vector<fs::path> candidates = {"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/lib/x86_64-linux-gnu",
                                      "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                                      "/usr/lib/aarch64-linux-gnu", "/usr/local/lib"};
  std::istringstream conf(ldSoConf);
  for (std::string line; std::getline(conf, line);)
    if (!line.empty() && line[0] == '/') candidates.emplace_back(line.substr(0, line.find_first_of(" \t#")));
  std::istringstream paths(ldLibraryPath);
  for (std::string dir; std::getline(paths, dir, ':');)
    if (!dir.empty()) candidates.emplace_back(dir);
  std::istringstream mapped(maps);
  for (std::string line; std::getline(mapped, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    fs::path file = line.substr(slash);
    if (file.string().find(" (deleted)") != std::string::npos) continue;
    candidates.push_back(file.parent_path());
  }
  std::vector<fs::path> out;
  std::set<fs::path> seen;
  for (const auto &c : candidates) {
    std::error_code ec;
    if (!fs::is_directory(c, ec)) continue;
    const fs::path key = fs::canonical(c, ec);
    if (ec || !seen.insert(key).second) continue;
    out.push_back(c);
  }
  return out;
}

LibraryFence raiseLibraryFence(const std::vector<std::string> &allowed, const std::vector<fs::path> &libraries,
                               const std::vector<fs::path> &open) {
  LibraryFence fence;
  const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) {
    fence.problem = std::string("Landlock is not available (") + std::strerror(errno) +
                    "): vendor libraries are only recognised after they are loaded";
    return fence;
  }
  fence.abi = static_cast<int>(abi);
  const std::uint64_t fileAccess = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = fileAccess | (abi >= 2 ? LANDLOCK_ACCESS_FS_REFER : 0);
  const int ruleset =
      static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr.handled_access_fs, 0));
  if (ruleset < 0) {
    fence.problem = std::string("Landlock refused the rule set (") + std::strerror(errno) + ")";
    return fence;
  }
  for (const auto &folder : open)
    if (std::error_code ec; fs::is_directory(folder, ec)) allow(ruleset, folder, fileAccess);
  const auto permitted = withLibraryDependencies(allowed);
  for (const auto &folder : libraries) {
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code fileEc;
      if (!fs::is_regular_file(it->path(), fileEc)) continue;  // through symbolic links
      if (const auto name = fencedName(it->path(), permitted); !name.empty()) {
        fence.fenced.push_back(name + " (" + it->path().string() + ")");
        continue;
      }
      fence.readableFiles += allow(ruleset, it->path(), fileAccess);
    }
  }
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  const long restricted = ::syscall(SYS_landlock_restrict_self, ruleset, 0);
  const int restrictErrno = errno;
  ::close(ruleset);
  if (restricted != 0) {
    fence.problem = std::string("Landlock did not apply (") + std::strerror(restrictErrno) + ")";
    return fence;
  }
  fence.active = true;
  return fence;
}

LibraryFence raiseHostLauncherFence(const std::vector<std::string> &allowed, const fs::path &candidateFolder) {
  std::string conf = readText("/etc/ld.so.conf") + "\n";
  std::error_code ec;
  for (fs::directory_iterator it("/etc/ld.so.conf.d", ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".conf") conf += readText(it->path()) + "\n";
  const char *ld = std::getenv("LD_LIBRARY_PATH");
  auto libraries = libraryFolders(conf, ld ? ld : "", readText("/proc/self/maps"));
  // Whole: no vendor library lives there. The C library's locale, gconv and hwcaps folders too.
  std::vector<fs::path> open = {"/dev",      "/proc",           "/sys",
                                "/etc",      "/run",            "/tmp",
                                "/var/tmp",  "/usr/share",      "/usr/lib/locale",
                                "/usr/lib/x86_64-linux-gnu/gconv", "/usr/lib/x86_64-linux-gnu/glibc-hwcaps",
                                "/usr/lib/aarch64-linux-gnu/gconv"};
  if (const char *tmp = std::getenv("TMPDIR"); tmp && *tmp) open.emplace_back(tmp);
  if (!candidateFolder.empty()) open.push_back(candidateFolder);
  // A tool the worker runs under (compute-sanitizer) loads its own libraries into this process
  // when CUDA starts: the folders the client names for it (kFenceOpenVariable, set only for a
  // worker under a tool) stay readable whole; the folders of the injection and preload libraries
  // set in the environment are allowed file by file, as library folders are (a vendor library
  // there stays fenced). Never the root.
  for (const char *variable : {kFenceOpenVariable, "CUDA_INJECTION64_PATH", "LD_PRELOAD"}) {
    const char *value = std::getenv(variable);
    if (!value || !*value) continue;
    std::string list = value;
    for (char &c : list)
      if (c == ' ') c = ':';
    std::size_t start = 0;
    while (start <= list.size()) {
      const auto end = std::min(list.find(':', start), list.size());
      const fs::path entry = fs::path(list.substr(start, end - start)).lexically_normal();
      start = end + 1;
      if (entry.empty() || !entry.is_absolute()) continue;
      if (std::string_view(variable) == kFenceOpenVariable) {
        if (entry != entry.root_path()) open.push_back(entry);
      } else if (entry.parent_path() != entry.root_path()) {
        libraries.push_back(entry.parent_path());
      }
    }
  }
  return raiseLibraryFence(allowed, libraries, open);
}

}  // namespace kwb::worker
