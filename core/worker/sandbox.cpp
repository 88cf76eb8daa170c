#include "core/worker/sandbox.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/compile/child_process.h"
#include "core/process/environment.h"
#include "core/compile/temporary_directory.h"

namespace kwb::worker {

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

// Runs `true` in the sandbox; empty on success, else why it failed.
std::string trial(const SandboxSupport &candidate) {
  TemporaryDirectory scratch("kwb-sandbox-check-");
  if (!scratch.valid()) return scratch.error();
  const auto truePath = findOnPath("true");
  if (!truePath) return "no 'true' program on PATH to try the sandbox with";
  ChildProcessRequest request;
  request.argv = sandboxCommand(candidate, {truePath->string()}, scratch.path());
  request.timeout = std::chrono::milliseconds(10000);
  request.outputLimit = 4096;
  const auto result = runChildProcess(request);
  if (result.succeeded()) return {};
  if (!result.started) return result.startError;
  if (result.timedOut) return "trying it took longer than 10 s";
  std::string why = lastLine(result.output);
  if (why.empty())
    why = result.signal ? "killed by signal " + std::to_string(result.signal)
                        : "exit status " + std::to_string(result.exitCode);
  return why;
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

}  // namespace

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

SandboxCovers sandboxCovers(const fs::path &executable, const std::vector<std::string> &extraCovers) {
  std::vector<std::string> candidates{"/tmp", "/run", "/var/run", "/home", "/root", "/var/tmp"};
  for (const char *variable : {"XDG_RUNTIME_DIR", "HOME"})
    if (const char *value = std::getenv(variable); value && *value) candidates.emplace_back(value);
  candidates.insert(candidates.end(), extraCovers.begin(), extraCovers.end());
  std::vector<std::string> covers;
  for (const auto &c : candidates) {
    const auto dir = resolvedDirectory(c);  // /var/run -> /run: covered once
    if (!dir.empty() && dir != "/") covers.push_back(dir);
  }
  SandboxCovers result;
  result.covers = outermost(std::move(covers));
  std::vector<std::string> keeps;
  if (!executable.empty()) keeps.push_back(resolvedDirectory(fs::absolute(executable).parent_path().string()));
  if (const char *libraries = std::getenv("LD_LIBRARY_PATH"))
    for (const auto &entry : splitPathList(libraries)) keeps.push_back(resolvedDirectory(entry));
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
                                        const fs::path &privateDir) {
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
      for (const auto &entry : fs::directory_iterator("/dev", ec)) {
        const auto name = entry.path().filename().string();
        if (name.rfind("nvidia", 0) == 0) nodes.push_back(entry.path().string());
      }
      std::sort(nodes.begin(), nodes.end());
      for (const auto &node : nodes) argv.insert(argv.end(), {"--dev-bind", node, node});
      argv.insert(argv.end(), {"--tmpfs", "/dev/shm", "--proc", "/proc"});
      // Host Unix sockets and the user's files: empty tmpfs over them; what the worker needs
      // from there back read-only; then the private directory, which may lie under /tmp.
      const auto covers = sandboxCovers(command.empty() ? fs::path() : fs::path(command.front()));
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

std::vector<std::string> workerEnvironment(const fs::path &privateDir,
                                           const std::vector<std::pair<std::string, std::string>> &extra) {
  std::vector<std::pair<std::string, std::string>> overrides;
  if (!privateDir.empty()) {
    overrides.emplace_back("TMPDIR", privateDir.string());
    overrides.emplace_back("CUDA_CACHE_PATH", (privateDir / "cuda-cache").string());
  }
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return allowListedEnvironment(overrides);
}

}  // namespace kwb::worker
