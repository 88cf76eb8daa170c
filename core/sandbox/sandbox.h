#pragma once
// Running an untrusted program in a sandbox, as seen from the side that starts it: which
// mechanism works on this machine and the command line that runs a program inside it. Used for
// the worker (core/sandbox/worker_sandbox.h) and for nvcc compiling a candidate (core/compile/).
// Depends on nothing but the C++ and C libraries, so any part of core can use it.
//
//   bwrap    bubblewrap: no network (own network namespace), own pid and IPC namespaces and
//            session, the whole file system read-only except one private directory, /tmp,
//            /run, /home, /root, $HOME, ... covered by empty tmpfs (see SandboxCovers), a
//            minimal /dev plus (optionally) the NVIDIA device nodes, a fresh /proc, no
//            capabilities (when run as root).
//   unshare  util-linux unshare where bubblewrap is missing but user namespaces work: new
//            user (root mapped to the caller), network, mount, IPC and pid namespaces with a
//            /proc of its own (required: without it the host's /proc, writable for CUDA,
//            would let /proc/<pid>/root escape; "none" then); the program run first inside
//            (kwb-worker, itself or as `kwb-worker --sandbox-exec`) then covers the same paths
//            as bwrap with empty tmpfs, makes the file system read-only except its private
//            directory, /dev/shm and /proc (whose sys, sysrq-trigger, irq and bus stay
//            read-only), rebuilds /dev and drops its capabilities
//            (core/sandbox/lockdown.h).
//   none     neither works: the program runs as a plain child process and says so.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kwb {

enum class SandboxKind { None, Bwrap, Unshare };
const char *sandboxKindName(SandboxKind kind);  // "none", "bwrap", "unshare"
std::optional<SandboxKind> parseSandboxKind(std::string_view name);

// What the caller asks for. Auto reads KWB_SANDBOX (auto, bwrap, unshare, none) and otherwise
// takes the best that works: bwrap, then unshare, then none.
enum class SandboxPreference { Auto, Bwrap, Unshare, None };

struct SandboxSupport {
  SandboxKind kind = SandboxKind::None;
  std::string program;        // the bwrap or unshare executable
  bool pidNamespace = false;  // unshare: always true now (a pid namespace is required)
  std::string reason;         // why this mechanism, and why not the better ones
};

// Runs `true` inside each candidate mechanism to see whether it works here. Cached per
// preference for the life of the process; thread-safe.
SandboxSupport detectSandbox(SandboxPreference preference = SandboxPreference::Auto);
// The same, uncached.
SandboxSupport probeSandboxSupport(SandboxPreference preference);

struct SandboxCommandOptions {
  bool gpuDevices = true;               // bwrap: bind /dev/nvidia* (the worker); nvcc needs none
  std::vector<std::string> extraKeeps;  // more folders to show again read-only if under a cover
};

// The argv that runs `command` (command[0] is a path) inside the sandbox, with `privateDir`
// as its only writable directory and working directory. For None, `command` unchanged. For
// Unshare only the namespaces are made: command[0] must finish the sandbox itself
// (kwb-worker --serve --sandbox unshare, or kwb-worker --sandbox-exec).
std::vector<std::string> sandboxCommand(const SandboxSupport &support, const std::vector<std::string> &command,
                                        const std::filesystem::path &privateDir,
                                        const SandboxCommandOptions &options = {});

// What the sandbox hides behind empty, read-only tmpfs mounts, and what it shows again. Host
// Unix sockets (D-Bus, X11, docker.sock, ssh-agent) and the user's files live there:
//   covers  /tmp, /run, /var/run (unless a link to /run), /home, /root, /var/tmp,
//           $XDG_RUNTIME_DIR and $HOME (where not under one already), `extraCovers`; only
//           those that exist, symbolic links resolved, none inside another. (/dev/shm is
//           private too: part of the fresh /dev.)
//   keeps   what lies under a cover and the program needs, bound back read-only: the folder
//           of `executable` and those it loads libraries from (programKeeps), the
//           LD_LIBRARY_PATH entries and `extraKeeps` (folders, or programKeeps' files). A folder
//           that is a covered folder or lies above one ($HOME, /tmp, /home, /run/user/N, `/`)
//           is never kept: the program's own file and libraries there are kept file by file,
//           other such folders are left covered.
// The private directory is bound read-write after both. $HOME, $XDG_RUNTIME_DIR and
// LD_LIBRARY_PATH are read from this process's environment.
struct SandboxCovers {
  std::vector<std::string> covers;
  std::vector<std::string> keeps;
};
SandboxCovers sandboxCovers(const std::filesystem::path &executable, const std::vector<std::string> &extraCovers = {},
                            const std::vector<std::string> &extraKeeps = {});
// What of `program` must stay visible for it to start: its folder, and the folders the dynamic
// loader takes its libraries from, as far as its files say without running it — each library it
// needs (DT_NEEDED), looked for through RPATH, LD_LIBRARY_PATH and RUNPATH in the loader's order
// ($ORIGIN expanded), the folder where it was found and the one its links lead to, and theirs in
// turn (a relocatable bundle's $ORIGIN/../lib). A search folder that supplies no library is not
// kept. Where a folder would reveal a covered one (sandboxCovers, `extraCovers`), the file alone
// (its path as the loader opens it, and the file its links lead to). The system's own folders
// (ld.so.cache) are not followed. Sorted.
std::vector<std::string> programKeeps(const std::filesystem::path &program,
                                      const std::vector<std::string> &extraCovers = {});
// The variables that hand the caller's covers and keeps to `kwb-worker --sandbox unshare` (and
// `--sandbox-exec`), which mounts them itself (colon-separated paths).
inline constexpr const char *kSandboxCoversVariable = "KWB_SANDBOX_COVERS";
inline constexpr const char *kSandboxKeepsVariable = "KWB_SANDBOX_KEEPS";
// Splits a colon-separated list, dropping empty entries.
std::vector<std::string> splitPathList(std::string_view list);
std::string joinPathList(const std::vector<std::string> &paths);

// The full path of an executable found on $PATH.
std::optional<std::filesystem::path> findOnPath(std::string_view program);

}  // namespace kwb
