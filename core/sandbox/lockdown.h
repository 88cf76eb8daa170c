#pragma once
// The sandbox as seen from inside the worker: finishing the unshare-based sandbox, checking
// the isolation the worker actually has, and the probe-sandbox command's attempts.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kwb::worker {

struct LockdownReport {
  bool filesystemReadOnly = false;  // everything but the private directory is read-only
  bool hostPathsCovered = false;    // /tmp, /run, /home, $HOME, ... behind empty tmpfs
  bool devReplaced = false;         // /dev holds only the basic nodes and the NVIDIA ones
  bool procMounted = false;         // /proc shows only this pid namespace (unshare --mount-proc)
  bool capabilitiesDropped = false;
  std::vector<std::string> problems;  // what could not be done, in words
};

// For `kwb-worker --sandbox unshare`: run first thing in main(), inside the user, mount and
// network, IPC and pid namespaces `unshare` made. Covers /tmp, /run, /home, /root, /var/tmp,
// $HOME, $XDG_RUNTIME_DIR and the paths in KWB_SANDBOX_COVERS with empty tmpfs and binds the
// worker's own folder, LD_LIBRARY_PATH's and KWB_SANDBOX_KEEPS back (SandboxCovers, sandbox.h),
// then the private directory. Replaces /dev with a small tmpfs holding
// null, zero, full, random, urandom (no tty) and the /dev/nvidia* nodes; mounts a private /dev/shm;
// makes every mount read-only except the private directory, /dev/shm and /proc itself (CUDA
// needs a writable /proc; /proc/sys, sysrq-trigger, irq and bus stay read-only, as in
// bubblewrap); drops every capability (bounding set included) and sets
// no-new-privileges. When the process is pid 1 of its namespace it forks: the parent stays as
// a minimal init (reaps, forwards SIGTERM/SIGINT/SIGHUP, exits with the child's status, a
// signal as 128 + its number) and never returns; the child returns and serves.
LockdownReport lockDownInsideNamespaces(const std::filesystem::path &privateDir);

struct SandboxSelfCheck {
  std::vector<std::string> interfaces;  // network interfaces this process can see
  bool networkIsolated = false;         // only loopback (a loopback of its own in a namespace)
  std::string home;                     // $HOME
  bool homeWritable = false;
  bool tmpWritable = false;             // /tmp
  std::string privateDir;
  bool privateDirWritable = false;
  std::string privateDirError;
};

// Looks without changing anything outside the private directory: interfaces, access(W_OK) on
// $HOME and /tmp (EROFS on a read-only mount), and a file created and removed in privateDir.
SandboxSelfCheck checkSandboxFromInside(const std::filesystem::path &privateDir);
nlohmann::json toJson(const SandboxSelfCheck &check);

// The probe-sandbox command: {"connect": [{"host": "127.0.0.1", "port": N}, ...],
// "write": ["/path", ...], "connect_unix": ["/socket", ...], "read": ["/file", ...],
// "syscalls": ["socket_inet", "ptrace", ...], "timeout_ms": 1000}. Tries each connection
// (numeric addresses only), each file creation (O_CREAT|O_EXCL; a file it managed to create is
// removed again), each Unix socket connection, each file read and each named system call the
// seccomp filter refuses (made so that it is harmless when allowed: socket() closed at once,
// unshare(0), ptrace on itself, ...; see PROTOCOL.md), and writes a file in the private
// directory. Throws std::invalid_argument on malformed fields and unknown check names.
nlohmann::json runSandboxProbe(const nlohmann::json &params, const std::filesystem::path &privateDir);

}  // namespace kwb::worker
