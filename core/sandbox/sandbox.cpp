#include "core/sandbox/sandbox.h"

#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

extern char **environ;

namespace kwb {

namespace fs = std::filesystem;

namespace {

// The last non-empty line a failed trial printed, for the reason text.
std::string lastLine(const std::string &text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::vector<std::string> unshareFlags() {
  // A pid namespace with a /proc of its own is required: with the host's /proc (writable, as
  // CUDA needs it) /proc/<pid>/root of a host process would lead out of the mount namespace.
  // CUDA also needs the /proc to match the pid namespace: without --mount-proc cuInit fails.
  return {"--net", "--mount", "--ipc", "--pid", "--fork", "--kill-child", "--mount-proc", "--map-root-user"};
}

// `path` is `root` or inside it.
bool within(const std::string &path, const std::string &root) {
  if (root == "/") return true;
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

// An absolute, existing directory with links resolved; empty otherwise.
std::string resolvedDirectory(const std::string &path) {
  if (path.empty() || path.front() != '/') return {};
  std::error_code ec;
  const auto canonical = fs::canonical(path, ec);
  if (ec || !fs::is_directory(canonical, ec)) return {};
  return canonical.lexically_normal().string();
}

// Sorted, without entries inside others (or equal to them).
std::vector<std::string> outermost(std::vector<std::string> paths) {
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  std::vector<std::string> out;
  for (const auto &p : paths) {
    if (p.empty()) continue;
    if (std::none_of(out.begin(), out.end(), [&](const std::string &o) { return within(p, o); })) out.push_back(p);
  }
  return out;
}

// Runs argv with output captured (at most 4 KiB kept) and a time limit; its own session, so
// the whole tree can be killed. Empty on success, else why it failed. (A few lines of our own
// rather than core/compile's runChildProcess, so this module depends on nothing in core.)
std::string runBriefly(const std::vector<std::string> &command, const fs::path &workingDirectory,
                       std::chrono::milliseconds limit) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, workingDirectory.c_str());
  sigset_t defaults, noMask;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM}) sigaddset(&defaults, s);
  sigemptyset(&noMask);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setsigmask(&attributes, &noMask);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> argv = command;
  std::vector<char *> pointers;
  for (auto &a : argv) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  pid_t pid = -1;
  const int spawnError = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attributes, pointers.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(fds[1]);
  if (spawnError != 0) {
    ::close(fds[0]);
    return "cannot start " + argv[0] + ": " + std::strerror(spawnError);
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string output;
  bool timedOut = false;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timedOut = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every writer is gone
    output.append(buffer, static_cast<std::size_t>(n));
    if (output.size() > 4096) output.erase(0, output.size() - 4096);
  }
  ::close(fds[0]);
  ::kill(-pid, SIGKILL);  // on expiry the whole tree; otherwise leftovers, if any
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timedOut) return "trying it took longer than " + std::to_string(limit.count() / 1000) + " s";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  std::string why = lastLine(output);
  if (why.empty())
    why = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                              : "exit status " + std::to_string(WEXITSTATUS(status));
  return why;
}

// Runs `true` in the sandbox; empty on success, else why it failed.
std::string trial(const SandboxSupport &candidate) {
  std::error_code ec;
  std::string pattern = (fs::temp_directory_path(ec) / "kwb-sandbox-check-XXXXXX").string();
  if (ec) pattern = "/tmp/kwb-sandbox-check-XXXXXX";
  if (!::mkdtemp(pattern.data())) return "cannot create a directory to try the sandbox in: " + std::string(std::strerror(errno));
  const fs::path scratch = pattern;
  std::string problem;
  if (const auto truePath = findOnPath("true"); !truePath)
    problem = "no 'true' program on PATH to try the sandbox with";
  else
    problem = runBriefly(sandboxCommand(candidate, {truePath->string()}, scratch), scratch, std::chrono::milliseconds(10000));
  fs::remove_all(scratch, ec);
  return problem;
}

SandboxSupport tryBwrap(std::string &whyNot) {
  SandboxSupport s;
  const auto bwrap = findOnPath("bwrap");
  if (!bwrap) {
    whyNot = "bubblewrap (bwrap) is not on PATH";
    return s;
  }
  SandboxSupport candidate{SandboxKind::Bwrap, bwrap->string(), true, ""};
  const auto problem = trial(candidate);
  if (!problem.empty()) {
    whyNot = bwrap->string() + " does not work here: " + problem;
    return s;
  }
  candidate.reason = "bubblewrap works here (" + bwrap->string() + ")";
  return candidate;
}

SandboxSupport tryUnshare(std::string &whyNot) {
  SandboxSupport s;
  const auto unshare = findOnPath("unshare");
  if (!unshare) {
    whyNot = "unshare (util-linux) is not on PATH";
    return s;
  }
  SandboxSupport candidate{SandboxKind::Unshare, unshare->string(), true, ""};
  const auto problem = trial(candidate);
  if (problem.empty()) {
    candidate.reason = "user, network, mount, IPC and pid namespaces work with " + unshare->string();
    return candidate;
  }
  // No fallback without a pid namespace: with the host's /proc writable, /proc/<pid>/root
  // escapes the mount namespace, so that would not be a sandbox.
  whyNot = "user, network, mount, IPC and pid namespaces (with a /proc of their own) do not work with " +
           unshare->string() + ": " + problem;
  return s;
}

// What the dynamic loader reads from one object's dynamic section.
struct DynamicSection {
  std::vector<std::string> needed;   // DT_NEEDED
  std::vector<std::string> rpath;    // DT_RPATH, split at ':'
  std::vector<std::string> runpath;  // DT_RUNPATH, split at ':'
};

// `object`'s dynamic section as the loader sees it (program headers: PT_DYNAMIC, and its string
// table found through the PT_LOAD segments); nothing for a file that is not a 64-bit ELF object of
// this machine's byte order, or not dynamically linked. Reads headers and tables only, each
// bounds-checked and capped.
std::optional<DynamicSection> readDynamicSection(const fs::path &object) {
  const int fd = ::open(object.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  auto readAt = [&](std::uint64_t offset, void *into, std::size_t size) {
    return ::pread(fd, into, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
  };
  Elf64_Ehdr header{};
  if (!readAt(0, &header, sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != (std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB) ||
      header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 || header.e_phnum > 512)
    return std::nullopt;
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (!readAt(header.e_phoff, segments.data(), segments.size() * sizeof(Elf64_Phdr))) return std::nullopt;
  const auto dynamic = std::find_if(segments.begin(), segments.end(), [](const Elf64_Phdr &p) { return p.p_type == PT_DYNAMIC; });
  if (dynamic == segments.end() || dynamic->p_filesz > (1u << 20)) return std::nullopt;
  std::vector<Elf64_Dyn> entries(dynamic->p_filesz / sizeof(Elf64_Dyn));
  if (!readAt(dynamic->p_offset, entries.data(), entries.size() * sizeof(Elf64_Dyn))) return std::nullopt;
  std::uint64_t stringsAddress = 0, stringsSize = 0;
  for (const auto &e : entries) {
    if (e.d_tag == DT_STRTAB) stringsAddress = e.d_un.d_ptr;
    if (e.d_tag == DT_STRSZ) stringsSize = e.d_un.d_val;
  }
  if (stringsSize == 0 || stringsSize > (16u << 20)) return std::nullopt;
  // The string table's file offset: through the loaded segment that holds its address.
  std::optional<std::uint64_t> stringsOffset;
  for (const auto &p : segments)
    if (p.p_type == PT_LOAD && stringsAddress >= p.p_vaddr && stringsAddress - p.p_vaddr + stringsSize <= p.p_filesz)
      stringsOffset = p.p_offset + (stringsAddress - p.p_vaddr);
  if (!stringsOffset) return std::nullopt;
  std::string strings(stringsSize, '\0');
  if (!readAt(*stringsOffset, strings.data(), strings.size())) return std::nullopt;
  auto text = [&](std::uint64_t offset) {
    return offset < strings.size() ? std::string(strings.c_str() + offset, ::strnlen(strings.c_str() + offset, strings.size() - offset))
                                   : std::string();
  };
  DynamicSection out;
  for (const auto &e : entries) {
    if (e.d_tag == DT_NULL) break;
    if (e.d_tag == DT_NEEDED) out.needed.push_back(text(e.d_un.d_val));
    if (e.d_tag == DT_RPATH)
      for (const auto &p : splitPathList(text(e.d_un.d_val))) out.rpath.push_back(p);
    if (e.d_tag == DT_RUNPATH)
      for (const auto &p : splitPathList(text(e.d_un.d_val))) out.runpath.push_back(p);
  }
  return out;
}

// A RUNPATH or RPATH entry of an object in `origin` as the loader reads it: $ORIGIN and ${ORIGIN}
// replaced; empty for an entry that is relative (to whatever the working directory is) or names
// another token ($LIB, $PLATFORM: the system's own folders).
std::string expandedLoadPath(std::string entry, const std::string &origin) {
  for (const std::string token : {"${ORIGIN}", "$ORIGIN"})
    for (auto at = entry.find(token); at != std::string::npos; at = entry.find(token, at + origin.size()))
      entry.replace(at, token.size(), origin);
  if (entry.empty() || entry.front() != '/' || entry.find('$') != std::string::npos) return {};
  return entry;
}

// A file as the loader or exec opens it: its folder's links resolved, its own name kept (it may
// be a link, which a bind mount then follows); empty when the folder does not exist.
std::string resolvedFile(const fs::path &path) {
  if (!path.has_filename()) return {};
  const auto folder = resolvedDirectory(path.parent_path().string());
  return folder.empty() ? std::string() : (fs::path(folder) / path.filename()).string();
}

// A library the loader takes from a folder named in RUNPATH, RPATH or LD_LIBRARY_PATH: the path it
// opens (the folder where it was found / the name it needs) and the file that path leads to.
struct FoundLibrary {
  std::string opened;
  std::string file;
};

// libraryKeeps' walk: each library `object` needs, looked for as the loader does, and the libraries
// those need, in turn. `inherited`: the RPATH entries of the objects that loaded it (the loader
// searches them too, unless the object has a RUNPATH).
void collectLibraries(const fs::path &object, const std::vector<std::string> &inherited,
                      const std::vector<std::string> &libraryPath, std::set<std::string> &visited,
                      std::vector<FoundLibrary> &found) {
  if (visited.size() > 1024 || !visited.insert(object.string()).second) return;
  const auto dynamic = readDynamicSection(object);
  if (!dynamic) return;
  const std::string origin = object.parent_path().string();
  std::vector<std::string> rpath = inherited, runpath;
  for (const auto &p : dynamic->rpath)
    if (const auto e = expandedLoadPath(p, origin); !e.empty()) rpath.push_back(e);
  for (const auto &p : dynamic->runpath)
    if (const auto e = expandedLoadPath(p, origin); !e.empty()) runpath.push_back(e);
  // The loader's order: RPATH (only without a RUNPATH), LD_LIBRARY_PATH, RUNPATH; then the
  // system's cache and folders, which the sandbox never covers and are not followed here.
  std::vector<std::string> search = runpath.empty() ? rpath : std::vector<std::string>{};
  search.insert(search.end(), libraryPath.begin(), libraryPath.end());
  search.insert(search.end(), runpath.begin(), runpath.end());
  for (const auto &name : dynamic->needed) {
    std::vector<fs::path> candidates;
    if (name.find('/') != std::string::npos) {
      if (name.front() == '/') candidates.push_back(name);  // a relative one depends on the working directory
    } else {
      for (const auto &dir : search) candidates.push_back(fs::path(dir) / name);
    }
    for (const auto &candidate : candidates) {
      std::error_code ec;
      const auto file = fs::canonical(candidate, ec);
      if (ec || !fs::is_regular_file(file, ec)) continue;
      found.push_back({resolvedFile(candidate), file.string()});
      collectLibraries(file, runpath.empty() ? rpath : std::vector<std::string>{}, libraryPath, visited, found);
      break;
    }
  }
}

// The folders the sandbox covers, each resolved, before those inside others are dropped ($HOME
// under /home stays in the list: a folder to keep must not reveal it either).
std::vector<std::string> coverCandidates(const std::vector<std::string> &extraCovers) {
  std::vector<std::string> candidates{"/tmp", "/run", "/var/run", "/home", "/root", "/var/tmp"};
  for (const char *variable : {"XDG_RUNTIME_DIR", "HOME"})
    if (const char *value = std::getenv(variable); value && *value) candidates.emplace_back(value);
  candidates.insert(candidates.end(), extraCovers.begin(), extraCovers.end());
  std::vector<std::string> covers;
  for (const auto &c : candidates) {
    const auto dir = resolvedDirectory(c);  // /var/run -> /run: covered once
    if (!dir.empty() && dir != "/") covers.push_back(dir);
  }
  return covers;
}

// Whether showing `folder` would show a covered folder whole: it is one, or lies above one.
bool revealsCover(const std::string &folder, const std::vector<std::string> &covers) {
  return std::any_of(covers.begin(), covers.end(), [&](const std::string &c) { return within(c, folder); });
}

// What to show of `file` (resolvedFile): its folder, or the file alone where the folder would
// reveal a cover (a program in $HOME itself, a RUNPATH of $ORIGIN/.. from ~/bin).
std::string folderOrFile(const std::string &file, const std::vector<std::string> &covers) {
  if (file.empty()) return {};
  const auto folder = fs::path(file).parent_path().string();
  if (!revealsCover(folder, covers)) return folder;
  std::error_code ec;
  return fs::exists(file, ec) ? file : std::string();
}

std::vector<std::string> programKeepsUnder(const fs::path &program, const std::vector<std::string> &covers) {
  if (program.empty()) return {};
  std::error_code ec;
  std::vector<std::string> keeps{folderOrFile(resolvedFile(fs::absolute(program, ec)), covers)};
  const auto object = fs::canonical(program, ec);  // $ORIGIN is the folder of the file itself
  if (ec) return keeps;
  std::vector<std::string> libraryPath;
  if (const char *libraries = std::getenv("LD_LIBRARY_PATH"))
    for (const auto &entry : splitPathList(libraries))
      if (entry.front() == '/') libraryPath.push_back(entry);
  std::set<std::string> visited;
  std::vector<FoundLibrary> found;
  collectLibraries(object, {}, libraryPath, visited, found);
  for (const auto &library : found)
    for (const auto &path : {library.opened, library.file}) keeps.push_back(folderOrFile(path, covers));
  keeps.erase(std::remove(keeps.begin(), keeps.end(), std::string()), keeps.end());
  std::sort(keeps.begin(), keeps.end());
  keeps.erase(std::unique(keeps.begin(), keeps.end()), keeps.end());
  return keeps;
}

}  // namespace

std::vector<std::string> programKeeps(const fs::path &program, const std::vector<std::string> &extraCovers) {
  return programKeepsUnder(program, coverCandidates(extraCovers));
}

const char *sandboxKindName(SandboxKind kind) {
  switch (kind) {
    case SandboxKind::Bwrap: return "bwrap";
    case SandboxKind::Unshare: return "unshare";
    case SandboxKind::None: break;
  }
  return "none";
}

std::optional<SandboxKind> parseSandboxKind(std::string_view name) {
  if (name == "bwrap") return SandboxKind::Bwrap;
  if (name == "unshare") return SandboxKind::Unshare;
  if (name == "none") return SandboxKind::None;
  return std::nullopt;
}

std::optional<fs::path> findOnPath(std::string_view program) {
  if (program.find('/') != std::string_view::npos) {
    if (::access(std::string(program).c_str(), X_OK) == 0) return fs::path(program);
    return std::nullopt;
  }
  const char *path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const auto colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty()) {
      const fs::path candidate = fs::path(dir) / program;
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return std::nullopt;
}

SandboxSupport probeSandboxSupport(SandboxPreference preference) {
  if (preference == SandboxPreference::Auto) {
    if (const char *env = std::getenv("KWB_SANDBOX"); env && *env) {
      const std::string v = env;
      if (v == "bwrap") preference = SandboxPreference::Bwrap;
      else if (v == "unshare") preference = SandboxPreference::Unshare;
      else if (v == "none") {
        return {SandboxKind::None, "", false, "sandbox turned off by KWB_SANDBOX=none"};
      } else if (v != "auto") {
        return {SandboxKind::None, "", false,
                "KWB_SANDBOX='" + v + "' is not one of auto, bwrap, unshare, none: running without a sandbox"};
      }
    }
  }
  std::string bwrapProblem, unshareProblem;
  switch (preference) {
    case SandboxPreference::None:
      return {SandboxKind::None, "", false, "sandbox turned off by the caller"};
    case SandboxPreference::Bwrap: {
      auto s = tryBwrap(bwrapProblem);
      if (s.kind == SandboxKind::None) s.reason = bwrapProblem;
      return s;
    }
    case SandboxPreference::Unshare: {
      auto s = tryUnshare(unshareProblem);
      if (s.kind == SandboxKind::None) s.reason = unshareProblem;
      return s;
    }
    case SandboxPreference::Auto: break;
  }
  auto s = tryBwrap(bwrapProblem);
  if (s.kind != SandboxKind::None) return s;
  s = tryUnshare(unshareProblem);
  if (s.kind != SandboxKind::None) {
    s.reason += "; " + bwrapProblem;
    return s;
  }
  s.reason = bwrapProblem + "; " + unshareProblem;
  return s;
}

std::vector<std::string> splitPathList(std::string_view list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto colon = list.find(':', start);
    const auto part = list.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
    if (!part.empty()) out.emplace_back(part);
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return out;
}

std::string joinPathList(const std::vector<std::string> &paths) {
  std::string out;
  for (const auto &p : paths) out += (out.empty() ? "" : ":") + p;
  return out;
}

SandboxCovers sandboxCovers(const fs::path &executable, const std::vector<std::string> &extraCovers,
                            const std::vector<std::string> &extraKeeps) {
  const auto candidates = coverCandidates(extraCovers);
  SandboxCovers result;
  result.covers = outermost(candidates);
  // The program's folder and where it loads its libraries from (a relocatable bundle's
  // $ORIGIN/../lib under /tmp or $HOME), each narrowed to files where it would reveal a cover.
  std::vector<std::string> keeps = programKeepsUnder(executable, candidates);
  // A folder that would reveal a cover is never kept: the libraries the loader takes from
  // LD_LIBRARY_PATH are among the program's keeps already, file by file where need be.
  const auto folderKeep = [&](const std::string &path) {
    const auto folder = resolvedDirectory(path);
    if (!revealsCover(folder, candidates)) keeps.push_back(folder);
  };
  if (const char *libraries = std::getenv("LD_LIBRARY_PATH"))
    for (const auto &entry : splitPathList(libraries)) folderKeep(entry);
  for (const auto &k : extraKeeps) {
    std::error_code ec;
    if (k.empty() || k.front() != '/' || fs::is_directory(k, ec)) folderKeep(k);
    else if (fs::exists(k, ec)) keeps.push_back(resolvedFile(k));  // a file: programKeeps'
  }
  std::vector<std::string> needed;
  for (const auto &k : keeps)
    if (!k.empty() && std::any_of(result.covers.begin(), result.covers.end(),
                                  [&](const std::string &c) { return within(k, c); }))
      needed.push_back(k);
  result.keeps = outermost(std::move(needed));
  return result;
}

SandboxSupport detectSandbox(SandboxPreference preference) {
  static std::mutex mutex;
  static std::map<int, SandboxSupport> cache;
  std::lock_guard lock(mutex);
  const int key = static_cast<int>(preference);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  auto support = probeSandboxSupport(preference);
  cache[key] = support;
  return support;
}

std::vector<std::string> sandboxCommand(const SandboxSupport &support, const std::vector<std::string> &command,
                                        const fs::path &privateDir, const SandboxCommandOptions &options) {
  std::vector<std::string> argv;
  const std::string priv = privateDir.string();
  switch (support.kind) {
    case SandboxKind::None:
      return command;
    case SandboxKind::Bwrap: {
      argv = {support.program, "--ro-bind", "/", "/", "--dev", "/dev"};
      // CUDA needs the NVIDIA nodes (nvidiactl, nvidiaN, nvidia-uvm, nvidia-uvm-tools,
      // nvidia-modeset, nvidia-caps/) read-write; the driver's libraries are read from / .
      std::vector<std::string> nodes;
      std::error_code ec;
      if (options.gpuDevices) {
        for (const auto &entry : fs::directory_iterator("/dev", ec)) {
          const auto name = entry.path().filename().string();
          if (name.rfind("nvidia", 0) == 0) nodes.push_back(entry.path().string());
        }
      }
      std::sort(nodes.begin(), nodes.end());
      for (const auto &node : nodes) argv.insert(argv.end(), {"--dev-bind", node, node});
      argv.insert(argv.end(), {"--tmpfs", "/dev/shm", "--proc", "/proc"});
      // Host Unix sockets and the user's files: empty tmpfs over them; what the worker needs
      // from there back read-only; then the private directory, which may lie under /tmp.
      const auto covers =
          sandboxCovers(command.empty() ? fs::path() : fs::path(command.front()), {}, options.extraKeeps);
      for (const auto &c : covers.covers) argv.insert(argv.end(), {"--tmpfs", c});
      for (const auto &k : covers.keeps) argv.insert(argv.end(), {"--ro-bind", k, k});
      argv.insert(argv.end(), {"--bind", priv, priv});
      for (const auto &c : covers.covers) argv.insert(argv.end(), {"--remount-ro", c});
      argv.insert(argv.end(), {"--unshare-net", "--unshare-pid", "--unshare-ipc", "--new-session", "--die-with-parent"});
      // As root bwrap keeps capabilities unless told not to; with them the worker could undo
      // the read-only mounts.
      if (::geteuid() == 0) argv.insert(argv.end(), {"--cap-drop", "ALL"});
      argv.insert(argv.end(), {"--chdir", priv, "--"});
      break;
    }
    case SandboxKind::Unshare: {
      argv = {support.program};
      const auto flags = unshareFlags();
      argv.insert(argv.end(), flags.begin(), flags.end());
      argv.push_back("--");
      break;
    }
  }
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

}  // namespace kwb
