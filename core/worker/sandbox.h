#pragma once
// The sandbox a worker runs in, as seen from the side that starts it: which mechanism works on
// this machine and the command line that runs the worker inside it.
//
//   bwrap    bubblewrap: no network (own network namespace), own pid namespace and session,
//            the whole file system read-only except one private directory, a minimal /dev
//            plus the NVIDIA device nodes, a fresh /proc, no capabilities (when run as root).
//   unshare  util-linux unshare where bubblewrap is missing but user namespaces work: new
//            user (root mapped to the caller), network, mount and, where a /proc of its own
//            can be mounted, pid namespaces (CUDA fails in a pid namespace that sees the
//            host's /proc); the worker itself then makes the file system read-only except
//            its private directory, /dev/shm and /proc (whose sys, sysrq-trigger, irq and bus
//            stay read-only), rebuilds /dev and drops its capabilities (sandbox_inside.h).
//   none     neither works: the worker runs as a plain child process and says so.
//
// The worker checks its own isolation and the client confirms it with the probe-sandbox
// command, so a sandbox that is requested but not in effect is reported as "none".
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kwb::worker {

enum class SandboxKind { None, Bwrap, Unshare };
const char *sandboxKindName(SandboxKind kind);  // "none", "bwrap", "unshare"
std::optional<SandboxKind> parseSandboxKind(std::string_view name);

// What the caller asks for. Auto reads KWB_SANDBOX (auto, bwrap, unshare, none) and otherwise
// takes the best that works: bwrap, then unshare, then none.
enum class SandboxPreference { Auto, Bwrap, Unshare, None };

struct SandboxSupport {
  SandboxKind kind = SandboxKind::None;
  std::string program;        // the bwrap or unshare executable
  bool pidNamespace = false;  // unshare: whether a pid namespace could be made too
  std::string reason;         // why this mechanism, and why not the better ones
};

// Runs `true` inside each candidate mechanism to see whether it works here. Cached per
// preference for the life of the process; thread-safe.
SandboxSupport detectSandbox(SandboxPreference preference = SandboxPreference::Auto);
// The same, uncached.
SandboxSupport probeSandboxSupport(SandboxPreference preference);

// The argv that runs `command` (command[0] is a path) inside the sandbox, with `privateDir`
// as its only writable directory and working directory. For None, `command` unchanged.
std::vector<std::string> sandboxCommand(const SandboxSupport &support, const std::vector<std::string> &command,
                                        const std::filesystem::path &privateDir);

// The environment a worker gets (KEY=VALUE): a short allow-list of the caller's variables
// (PATH, locale, CUDA_*, NVIDIA_*, KWB_*, ...) so API keys and other secrets stay behind;
// TMPDIR and CUDA_CACHE_PATH point into the private directory; `extra` is added last.
std::vector<std::string> workerEnvironment(const std::filesystem::path &privateDir,
                                           const std::vector<std::pair<std::string, std::string>> &extra = {});

// The full path of an executable found on $PATH.
std::optional<std::filesystem::path> findOnPath(std::string_view program);

}  // namespace kwb::worker
