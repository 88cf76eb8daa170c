#include "core/sandbox/lockdown.h"

#include "core/sandbox/worker_sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace kwb::worker {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// mount_setattr(2) by number: glibc 2.36's <sys/mount.h> and <linux/mount.h> clash, and older
// C libraries lack the wrapper. The numbers are the same on every architecture (unified table).
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
struct MountAttributes {
  std::uint64_t attrSet = 0, attrClear = 0, propagation = 0, usernsFd = 0;
};
constexpr std::uint64_t kAttrReadOnly = 0x1;   // MOUNT_ATTR_RDONLY
constexpr std::uint64_t kAttrNoSuid = 0x2;     // MOUNT_ATTR_NOSUID
constexpr unsigned kAtRecursive = 0x8000;      // AT_RECURSIVE

int setMountAttributes(const char *path, bool recursive, std::uint64_t set, std::uint64_t clear) {
  MountAttributes attributes;
  attributes.attrSet = set;
  attributes.attrClear = clear;
  return static_cast<int>(::syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? kAtRecursive : 0u,
                                    &attributes, sizeof attributes));
}

// Linux capability ABI (linux/capability.h), declared here to keep that header out.
struct CapabilityHeader {
  std::uint32_t version;
  int pid;
};
struct CapabilityData {
  std::uint32_t effective, permitted, inheritable;
};
constexpr std::uint32_t kCapabilityVersion3 = 0x20080522;
// linux/securebits.h
constexpr unsigned long kSecureBits = (1ul << 0) | (1ul << 1)     // NOROOT, locked
                                      | (1ul << 2) | (1ul << 3)   // NO_SETUID_FIXUP, locked
                                      | (1ul << 5)                // KEEP_CAPS locked (off)
                                      | (1ul << 6) | (1ul << 7);  // NO_CAP_AMBIENT_RAISE, locked

std::string errnoText(const std::string &what) { return what + ": " + std::strerror(errno); }

bool dropCapabilities(std::vector<std::string> &problems) {
  bool ok = true;
  if (::prctl(PR_SET_SECUREBITS, kSecureBits, 0, 0, 0) != 0) {
    problems.push_back(errnoText("setting the secure bits"));
    ok = false;
  }
  for (int cap = 0; cap < 64; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;  // past the last capability this kernel knows
      problems.push_back(errnoText("dropping capability " + std::to_string(cap) + " from the bounding set"));
      ok = false;
      break;
    }
  }
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  CapabilityHeader header{kCapabilityVersion3, 0};
  CapabilityData data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) {
    problems.push_back(errnoText("clearing the capability sets"));
    ok = false;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    problems.push_back(errnoText("setting no-new-privileges"));
    ok = false;
  }
  return ok;
}

bool makeFile(const std::string &path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// A tmpfs on /dev with the basic nodes and the NVIDIA ones bound from the host's /dev, and a
// private /dev/shm. The host's block devices and the rest are gone.
bool replaceDev(std::vector<std::string> &problems) {
  const int hostDev = ::open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (hostDev < 0) {
    problems.push_back(errnoText("opening /dev"));
    return false;
  }
  const std::string hostPrefix = "/proc/self/fd/" + std::to_string(hostDev) + "/";
  std::vector<std::pair<std::string, bool>> entries;  // name, is a directory
  // No "tty": the user's terminal stays out of reach (TIOCSTI).
  for (const char *name : {"null", "zero", "full", "random", "urandom"}) entries.emplace_back(name, false);
  if (DIR *dir = ::opendir("/dev")) {
    while (const dirent *e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name.rfind("nvidia", 0) == 0) entries.emplace_back(name, e->d_type == DT_DIR);
    }
    ::closedir(dir);
  }
  if (::mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m") != 0) {
    problems.push_back(errnoText("mounting a tmpfs on /dev"));
    ::close(hostDev);
    return false;
  }
  bool ok = true;
  for (const auto &[name, isDir] : entries) {
    const std::string source = hostPrefix + name, target = "/dev/" + name;
    struct stat st{};
    if (::stat(source.c_str(), &st) != 0) continue;  // absent on this machine
    const bool created = isDir ? ::mkdir(target.c_str(), 0755) == 0 : makeFile(target);
    if (!created || ::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      problems.push_back(errnoText("binding /dev/" + name));
      ok = false;
    }
  }
  ::close(hostDev);
  const std::pair<const char *, const char *> links[] = {
      {"/proc/self/fd", "/dev/fd"}, {"/proc/self/fd/0", "/dev/stdin"},
      {"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"}};
  for (const auto &[to, from] : links) ::symlink(to, from);
  if (::mkdir("/dev/shm", 01777) != 0 ||
      ::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") != 0) {
    problems.push_back(errnoText("mounting a private /dev/shm"));
    ok = false;
  }
  return ok;
}

std::atomic<pid_t> g_initChild{0};

void forwardSignal(int signal) {
  const pid_t child = g_initChild.load();
  if (child > 0) ::kill(child, signal);
}

[[noreturn]] void runInit(pid_t child) {
  g_initChild = child;
  struct sigaction action{};
  action.sa_handler = forwardSignal;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &action, nullptr);
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      ::_exit(1);
    }
    if (pid != child) continue;  // an orphan reparented to us
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    ::_exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  }
}

std::string attemptConnect(const std::string &host, int port, int timeoutMs, bool &ok) {
  ok = false;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo *found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return std::string("bad address: ") + ::gai_strerror(rc);
  std::string error;
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errnoText("socket");
  } else {
    int rc = ::connect(fd, found->ai_addr, found->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, timeoutMs);
      if (rc == 0) {
        error = "no answer within " + std::to_string(timeoutMs) + " ms";
        rc = -1;
      } else if (rc > 0) {
        int soError = 0;
        socklen_t len = sizeof soError;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len);
        if (soError != 0) error = std::strerror(soError);
        rc = soError == 0 ? 0 : -1;
      } else {
        error = errnoText("poll");
      }
    } else if (rc != 0) {
      error = std::strerror(errno);
    }
    ok = rc == 0;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return error;
}

// Connects to a Unix stream socket at `path`.
std::string attemptConnectUnix(const std::string &path, bool &ok) {
  ok = false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return "path too long for a Unix socket";
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errnoText("socket");
  std::string error;
  if (::connect(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) == 0) ok = true;
  else error = std::strerror(errno);
  ::close(fd);
  return error;
}

// Opens `path` and reads from it.
std::string attemptRead(const std::string &path, bool &ok) {
  ok = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return std::strerror(errno);
  char buffer[64];
  const ssize_t n = ::read(fd, buffer, sizeof buffer);
  const std::string error = n < 0 ? std::strerror(errno) : "";
  ::close(fd);
  ok = n >= 0;
  return error;
}

// Creates `path` (never replacing a file), writes a line and removes it again.
std::string attemptWrite(const std::string &path, bool &ok) {
  ok = false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return std::strerror(errno);
  static const char line[] = "kwb-worker sandbox probe\n";
  const bool wrote = ::write(fd, line, sizeof line - 1) == static_cast<ssize_t>(sizeof line - 1);
  const std::string writeError = wrote ? "" : std::strerror(errno);
  ::close(fd);
  ::unlink(path.c_str());
  ok = wrote;
  return writeError;
}

// The "syscalls" checks probe-sandbox knows.
const std::vector<std::string> &syscallCheckNames() {
  static const std::vector<std::string> names{
      "socket_inet", "socket_inet6", "socket_packet", "socket_unix", "socket_netlink", "ptrace",
      "process_vm_readv", "unshare", "setns", "mount", "chroot", "keyctl", "bpf", "userfaultfd",
      "io_uring_setup", "personality", "clone_newuser"};
  return names;
}

// One system call the seccomp filter refuses, made so that it is harmless when it succeeds.
// Returns the call's result: -1 with errno set, or >= 0.
long attemptSyscallNamed(const std::string &name) {
  auto socketOf = [](int family, int type, int protocol) -> long {
    const int fd = ::socket(family, type | SOCK_CLOEXEC, protocol);
    if (fd >= 0) ::close(fd);
    return fd;
  };
  if (name == "socket_inet") return socketOf(AF_INET, SOCK_STREAM, 0);
  if (name == "socket_inet6") return socketOf(AF_INET6, SOCK_DGRAM, 0);
  if (name == "socket_packet") return socketOf(AF_PACKET, SOCK_DGRAM, 0);
  if (name == "socket_unix") return socketOf(AF_UNIX, SOCK_STREAM, 0);
  if (name == "socket_netlink") return socketOf(AF_NETLINK, SOCK_RAW, 0 /* NETLINK_ROUTE */);
  if (name == "ptrace") {
    // Peeking at itself: never a tracee of itself, so ESRCH when the call is allowed.
    errno = 0;
    const long r = ::ptrace(PTRACE_PEEKDATA, ::getpid(), nullptr, nullptr);
    return errno ? -1 : r;
  }
  if (name == "process_vm_readv") {
    // Reading its own memory: allowed without a filter.
    char source[8] = "kwb", target[8] = {};
    iovec local{target, sizeof target}, remote{source, sizeof source};
    return ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
  }
  if (name == "unshare") return ::unshare(0);  // unsharing nothing: a no-op when allowed
  if (name == "setns") return ::setns(-1, 0);  // EBADF when allowed
  if (name == "mount") return ::mount("none", "/nonexistent-kwb-probe", "tmpfs", 0, nullptr);
  if (name == "chroot") return ::chroot("/nonexistent-kwb-probe");
  if (name == "keyctl") return ::syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
  if (name == "bpf") return ::syscall(SYS_bpf, -1, nullptr, 0);  // no such command: EINVAL when allowed
  if (name == "userfaultfd") {
    const long fd = ::syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
    if (fd >= 0) ::close(static_cast<int>(fd));
    return fd;
  }
  if (name == "io_uring_setup") {
    unsigned char params[120] = {};  // struct io_uring_params
    const long fd = ::syscall(SYS_io_uring_setup, 1, params);
    if (fd >= 0) ::close(static_cast<int>(fd));
    return fd;
  }
  if (name == "personality") {
    // Asking for no address randomisation: it takes effect only at the next exec, and is undone.
    const int old = ::personality(0xffffffff);
    const long r = ::personality(static_cast<unsigned long>(old) | ADDR_NO_RANDOMIZE);
    if (r != -1) ::personality(static_cast<unsigned long>(old));
    return r;
  }
  if (name == "clone_newuser") {
    // A child in a new user namespace that exits at once.
    const long pid = ::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
    if (pid == 0) ::_exit(0);
    if (pid > 0) {
      int status = 0;
      while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
      }
    }
    return pid;
  }
  throw std::invalid_argument("unknown \"syscalls\" check '" + name + "'");
}

// An O_PATH handle on `path` as the host shows it, to bind it again after covers hide it.
struct HostPath {
  std::string path;
  int fd = -1;
  std::string source() const { return "/proc/self/fd/" + std::to_string(fd); }
};

// A folder, or a file (a library kept file by file: sandboxCovers), followed through links.
HostPath openHostPath(const std::string &path, std::vector<std::string> &problems) {
  HostPath h{path, ::open(path.c_str(), O_PATH | O_CLOEXEC)};
  if (h.fd < 0) problems.push_back(errnoText("opening " + path));
  return h;
}

// Binds `host` (opened before the covers) back at its own path, creating the mount point (a
// folder, or an empty file for a file) inside the covering tmpfs where needed.
bool bindBack(const HostPath &host, std::vector<std::string> &problems) {
  if (host.fd < 0) return false;
  std::error_code ec;
  struct stat st{};
  if (::fstat(host.fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
    fs::create_directories(fs::path(host.path).parent_path(), ec);
    if (!fs::exists(host.path, ec)) std::ofstream(host.path).close();  // inside a fresh tmpfs
  } else {
    fs::create_directories(host.path, ec);  // inside a fresh tmpfs; exists otherwise
  }
  if (::mount(host.source().c_str(), host.path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    problems.push_back(errnoText("binding " + host.path + " back"));
    return false;
  }
  return true;
}

// Empty tmpfs over the paths where host sockets and the user's files live (SandboxCovers),
// then the folders the worker needs from under them back. Read-only comes later, with the rest.
bool coverHostPaths(std::vector<std::string> &problems, std::vector<HostPath> &opened) {
  std::vector<std::string> extraCovers, extraKeeps;
  if (const char *c = std::getenv(kSandboxCoversVariable)) extraCovers = splitPathList(c);
  if (const char *k = std::getenv(kSandboxKeepsVariable)) extraKeeps = splitPathList(k);
  ::unsetenv(kSandboxCoversVariable);
  ::unsetenv(kSandboxKeepsVariable);
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  // This process's own view ($HOME, LD_LIBRARY_PATH as the worker got them) joined with the
  // client's ($XDG_RUNTIME_DIR, its $HOME).
  auto covers = sandboxCovers(ec ? fs::path() : self, extraCovers);
  std::vector<std::string> keeps = covers.keeps;
  for (const auto &k : extraKeeps)
    if (std::find(keeps.begin(), keeps.end(), k) == keeps.end()) keeps.push_back(k);
  std::sort(keeps.begin(), keeps.end());  // parents before what lies inside them
  for (const auto &k : keeps) {
    struct stat st{};
    if (::stat(k.c_str(), &st) == 0) opened.push_back(openHostPath(k, problems));
  }
  bool ok = true;
  for (const auto &c : covers.covers) {
    if (::mount("tmpfs", c.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0) {
      problems.push_back(errnoText("covering " + c + " with an empty tmpfs"));
      ok = false;
    }
  }
  for (const auto &h : opened) ok = bindBack(h, problems) && ok;
  return ok;
}

// True in the first user namespace, the host's: there the lock-down must not touch anything.
bool inInitialUserNamespace() {
  std::ifstream map("/proc/self/uid_map");
  unsigned long long inside = 1, outside = 1, count = 0;
  if (!(map >> inside >> outside >> count)) return true;  // unreadable: assume the worst
  return inside == 0 && outside == 0 && count == 4294967295ull;
}

}  // namespace

LockdownReport lockDownInsideNamespaces(const fs::path &privateDir) {
  LockdownReport report;
  auto &problems = report.problems;
  if (inInitialUserNamespace()) {
    // Started by hand with --sandbox unshare: changing mounts here would change the host's.
    problems.push_back("not inside a user namespace made by unshare: nothing was locked down");
    return report;
  }
  const bool pidNamespaceInit = ::getpid() == 1;

  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    problems.push_back(errnoText("making mounts private"));
  // In a new pid namespace `unshare --mount-proc` has mounted a /proc of its own: CUDA needs
  // one that matches the pid namespace (with the host's, cuInit fails with
  // CUDA_ERROR_OPERATING_SYSTEM, as seen on the H200 machine).
  report.procMounted = pidNamespaceInit;
  // The kernel-wide knobs under /proc stay read-only even though /proc itself must stay
  // writable for CUDA: a root-mapped user could otherwise write sysctls such as
  // kernel.core_pattern. (bubblewrap covers the same four.)
  for (const char *cover : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}) {
    struct stat st{};
    if (::stat(cover, &st) != 0) continue;
    if (::mount(cover, cover, nullptr, MS_BIND | MS_REC, nullptr) != 0)
      problems.push_back(errnoText(std::string("covering ") + cover));
  }
  // The private directory may lie under /tmp, which is about to be covered: keep a handle.
  HostPath privateHost;
  if (privateDir.empty()) problems.push_back("no private directory given (--private-dir)");
  else privateHost = openHostPath(privateDir.string(), problems);
  std::vector<HostPath> keeps;
  report.hostPathsCovered = coverHostPaths(problems, keeps);
  for (auto &k : keeps) ::close(std::exchange(k.fd, -1));
  report.devReplaced = replaceDev(problems);
  bool privateBound = false;
  if (privateHost.fd >= 0) {
    privateBound = bindBack(privateHost, problems);
    ::close(std::exchange(privateHost.fd, -1));
    // The working directory still points at the directory under the cover; move to the bind.
    if (privateBound && ::chdir(privateDir.c_str()) != 0) problems.push_back(errnoText("chdir to the private directory"));
  }
  if (setMountAttributes("/", true, kAttrReadOnly | kAttrNoSuid, 0) != 0) {
    problems.push_back(errnoText("making the file system read-only (mount_setattr)"));
  } else {
    report.filesystemReadOnly = true;
    if (privateBound && setMountAttributes(privateDir.c_str(), true, 0, kAttrReadOnly) != 0) {
      problems.push_back(errnoText("making the private directory writable"));
    }
    if (report.devReplaced && setMountAttributes("/dev/shm", false, 0, kAttrReadOnly) != 0)
      problems.push_back(errnoText("making /dev/shm writable"));
    // CUDA fails to initialise (CUDA_ERROR_OPERATING_SYSTEM) with a read-only /proc. Only the
    // proc mount itself becomes writable again; the covers above stay read-only.
    if (setMountAttributes("/proc", false, 0, kAttrReadOnly) != 0)
      problems.push_back(errnoText("making /proc writable"));
  }
  report.capabilitiesDropped = dropCapabilities(problems);

  if (pidNamespaceInit) {
    const pid_t child = ::fork();
    if (child < 0) {
      problems.push_back(errnoText("fork"));
    } else if (child > 0) {
      runInit(child);
    } else {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    }
  }
  return report;
}

SandboxSelfCheck checkSandboxFromInside(const fs::path &privateDir) {
  SandboxSelfCheck c;
  if (struct if_nameindex *names = ::if_nameindex()) {
    for (auto *n = names; n->if_index != 0 && n->if_name; ++n) c.interfaces.emplace_back(n->if_name);
    ::if_freenameindex(names);
  }
  c.networkIsolated = true;
  for (const auto &name : c.interfaces)
    if (name != "lo") c.networkIsolated = false;
  if (const char *home = std::getenv("HOME")) c.home = home;
  c.homeWritable = !c.home.empty() && ::access(c.home.c_str(), W_OK) == 0;
  c.tmpWritable = ::access("/tmp", W_OK) == 0;
  c.privateDir = privateDir.string();
  if (privateDir.empty()) {
    c.privateDirError = "no private directory given";
  } else {
    const auto probe = privateDir / (".kwb-selfcheck-" + std::to_string(::getpid()));
    c.privateDirError = attemptWrite(probe.string(), c.privateDirWritable);
  }
  return c;
}

Json toJson(const SandboxSelfCheck &c) {
  Json j = {{"interfaces", c.interfaces},     {"network_isolated", c.networkIsolated},
            {"home", c.home},                 {"home_writable", c.homeWritable},
            {"tmp_writable", c.tmpWritable},  {"private_dir", c.privateDir},
            {"private_dir_writable", c.privateDirWritable}};
  if (!c.privateDirError.empty()) j["private_dir_error"] = c.privateDirError;
  return j;
}

Json runSandboxProbe(const Json &params, const fs::path &privateDir) {
  int timeoutMs = 1000;
  if (const auto t = params.find("timeout_ms"); t != params.end()) {
    if (!t->is_number_integer() || t->get<long long>() < 1 || t->get<long long>() > 10000)
      throw std::invalid_argument("\"timeout_ms\" must be an integer from 1 to 10000");
    timeoutMs = t->get<int>();
  }
  Json connects = Json::array(), writes = Json::array();
  if (const auto c = params.find("connect"); c != params.end()) {
    const Json list = c->is_array() ? *c : Json::array({*c});
    for (const auto &target : list) {
      if (!target.is_object() || !target.contains("host") || !target["host"].is_string() ||
          !target.contains("port") || !target["port"].is_number_integer())
        throw std::invalid_argument("each \"connect\" entry needs \"host\" (a numeric address) and \"port\"");
      const auto host = target["host"].get<std::string>();
      const auto port = target["port"].get<long long>();
      if (port < 1 || port > 65535) throw std::invalid_argument("\"port\" must be from 1 to 65535");
      bool ok = false;
      const auto error = attemptConnect(host, static_cast<int>(port), timeoutMs, ok);
      Json r = {{"host", host}, {"port", port}, {"ok", ok}};
      if (!ok) r["error"] = error;
      connects.push_back(std::move(r));
    }
  }
  if (const auto w = params.find("write"); w != params.end()) {
    const Json list = w->is_array() ? *w : Json::array({*w});
    for (const auto &path : list) {
      if (!path.is_string() || path.get<std::string>().empty())
        throw std::invalid_argument("each \"write\" entry must be a file path");
      bool ok = false;
      const auto error = attemptWrite(path.get<std::string>(), ok);
      Json r = {{"path", path}, {"ok", ok}};
      if (ok) r["removed"] = true;
      else r["error"] = error;
      writes.push_back(std::move(r));
    }
  }
  Json unixConnects = Json::array(), reads = Json::array();
  if (const auto c = params.find("connect_unix"); c != params.end()) {
    const Json list = c->is_array() ? *c : Json::array({*c});
    for (const auto &path : list) {
      if (!path.is_string() || path.get<std::string>().empty())
        throw std::invalid_argument("each \"connect_unix\" entry must be a socket path");
      bool ok = false;
      const auto error = attemptConnectUnix(path.get<std::string>(), ok);
      Json r = {{"path", path}, {"ok", ok}};
      if (!ok) r["error"] = error;
      unixConnects.push_back(std::move(r));
    }
  }
  if (const auto rd = params.find("read"); rd != params.end()) {
    const Json list = rd->is_array() ? *rd : Json::array({*rd});
    for (const auto &path : list) {
      if (!path.is_string() || path.get<std::string>().empty())
        throw std::invalid_argument("each \"read\" entry must be a file path");
      bool ok = false;
      const auto error = attemptRead(path.get<std::string>(), ok);
      Json r = {{"path", path}, {"ok", ok}};
      if (!ok) r["error"] = error;
      reads.push_back(std::move(r));
    }
  }
  Json syscalls = Json::array();
  if (const auto sc = params.find("syscalls"); sc != params.end()) {
    const Json list = sc->is_array() ? *sc : Json::array({*sc});
    const auto &known = syscallCheckNames();
    for (const auto &name : list) {
      if (!name.is_string()) throw std::invalid_argument("each \"syscalls\" entry must be a check's name");
      if (std::find(known.begin(), known.end(), name.get<std::string>()) == known.end()) {
        std::string names;
        for (const auto &k : known) names += (names.empty() ? "" : ", ") + k;
        throw std::invalid_argument("unknown \"syscalls\" check '" + name.get<std::string>() + "'; known: " + names);
      }
    }
    for (const auto &name : list) {
      errno = 0;
      const long r = attemptSyscallNamed(name.get<std::string>());
      const int error = errno;
      Json entry = {{"name", name}, {"ok", r >= 0}};
      if (r < 0) {
        entry["errno"] = error;
        entry["error"] = std::strerror(error);
      }
      syscalls.push_back(std::move(entry));
    }
  }
  const auto self = checkSandboxFromInside(privateDir);
  Json priv = {{"path", self.privateDir}, {"ok", self.privateDirWritable}};
  if (!self.privateDirWritable) priv["error"] = self.privateDirError;
  return {{"connect", connects}, {"write", writes}, {"connect_unix", unixConnects}, {"read", reads}, {"syscalls", syscalls}, {"private_dir", priv},
          {"interfaces", self.interfaces}, {"network_isolated", self.networkIsolated}};
}

}  // namespace kwb::worker
