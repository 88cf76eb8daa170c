#include "core/sandbox/seccomp_filter.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <memory>

namespace kwb::worker {

namespace {

// Refused whatever their arguments.
const char *const kDeniedOutright[] = {
    // other processes' memory
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    // the kernel itself
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf",
    // mounts and roots (the classic call and the new mount API)
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr",
    // namespaces
    "unshare", "setns",
    // kernel keyrings
    "keyctl", "add_key", "request_key",
    // io_uring: its operations (socket, connect, openat, ...) never pass through this filter
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    // others
    "userfaultfd", "open_by_handle_at", "reboot", "swapon", "swapoff", "acct", "syslog", "settimeofday",
    "clock_settime", "iopl", "ioperm", "quotactl", "sethostname", "setdomainname", "vhangup", "uselib",
    "lookup_dcookie"};

// linux/sched.h: every flag that makes a new namespace.
constexpr std::uint64_t kNamespaceFlags[] = {
    0x00020000,  // CLONE_NEWNS
    0x02000000,  // CLONE_NEWCGROUP
    0x04000000,  // CLONE_NEWUTS
    0x08000000,  // CLONE_NEWIPC
    0x10000000,  // CLONE_NEWUSER
    0x20000000,  // CLONE_NEWPID
    0x40000000,  // CLONE_NEWNET
    0x00000080,  // CLONE_NEWTIME
};

struct FilterDeleter {
  void operator()(void *ctx) const { seccomp_release(ctx); }
};

std::string errorText(const std::string &what, int rc) { return what + ": " + std::strerror(-rc); }

}  // namespace

const std::vector<std::string> &seccompDeniedCalls() {
  static const std::vector<std::string> calls = [] {
    std::vector<std::string> out(std::begin(kDeniedOutright), std::end(kDeniedOutright));
    out.push_back("clone(CLONE_NEW*)");
    out.push_back("clone3 (ENOSYS)");
    out.push_back("socket(family other than AF_UNIX, AF_NETLINK)");
    out.push_back("personality(other than 0, 0xffffffff)");
    return out;
  }();
  return calls;
}

SeccompReport installSeccompFilter() {
  SeccompReport report;
  std::unique_ptr<void, FilterDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) {
    report.reason = "libseccomp could not make a filter (seccomp_init failed)";
    return report;
  }
  const auto deny = SCMP_ACT_ERRNO(EPERM);
  std::vector<std::string> problems;
  auto check = [&](int rc, const std::string &what) {
    if (rc != 0) problems.push_back(errorText(what, rc));
  };
  // Other ABIs (i386 through int 0x80, x32) are refused as a whole rather than filtered.
  check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, deny), "refusing other ABIs");
  check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 1), "no-new-privileges on load");
  check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1), "all threads");

  for (const char *name : kDeniedOutright) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not a call on this architecture
    check(seccomp_rule_add(ctx.get(), deny, nr, 0), std::string("denying ") + name);
  }
  // clone: refused when it asks for a new namespace (flags are the first argument on x86-64
  // and aarch64). clone3: ENOSYS, so the C library falls back to clone.
  for (const auto flag : kNamespaceFlags)
    check(seccomp_rule_add(ctx.get(), deny, SCMP_SYS(clone), 1, SCMP_A0_64(SCMP_CMP_MASKED_EQ, flag, flag)),
          "denying clone with namespace flags");
  if (const int nr = seccomp_syscall_resolve_name("clone3"); nr != __NR_SCMP_ERROR)
    check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), nr, 0), "answering clone3 with ENOSYS");
  // socket: only AF_UNIX (1) and AF_NETLINK (16). The family is an int: 32-bit comparisons.
  static_assert(AF_UNIX == 1 && AF_NETLINK == 16);
  check(seccomp_rule_add(ctx.get(), deny, SCMP_SYS(socket), 1, SCMP_A0_32(SCMP_CMP_LT, AF_UNIX)), "denying socket");
  for (int family = AF_UNIX + 1; family < AF_NETLINK; ++family)
    check(seccomp_rule_add(ctx.get(), deny, SCMP_SYS(socket), 1, SCMP_A0_32(SCMP_CMP_EQ, family)), "denying socket");
  check(seccomp_rule_add(ctx.get(), deny, SCMP_SYS(socket), 1, SCMP_A0_32(SCMP_CMP_GT, AF_NETLINK)), "denying socket");
  // personality: only reading it (0xffffffff) and PER_LINUX (0). One comparison per rule, so the
  // other values are covered bit by bit: bit b set with bit 31 clear, or bit 31 set with bit b
  // clear, for b = 0..30.
  constexpr std::uint32_t top = 0x80000000u;
  for (int b = 0; b < 31; ++b) {
    const std::uint32_t bit = 1u << b;
    check(seccomp_rule_add(ctx.get(), deny, SCMP_SYS(personality), 1, SCMP_A0_32(SCMP_CMP_MASKED_EQ, bit | top, bit)),
          "denying personality");
    check(seccomp_rule_add(ctx.get(), deny, SCMP_SYS(personality), 1, SCMP_A0_32(SCMP_CMP_MASKED_EQ, bit | top, top)),
          "denying personality");
  }
  if (!problems.empty()) {
    report.reason = "the seccomp filter could not be built: " + problems.front();
    return report;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    report.reason = std::string("setting no-new-privileges failed: ") + std::strerror(errno);
    return report;
  }
  if (const int rc = seccomp_load(ctx.get()); rc != 0) {
    report.reason = errorText("loading the seccomp filter failed", rc);
    return report;
  }
  report.active = true;
  report.denied = seccompDeniedCalls();
  report.reason = "seccomp filter loaded: " + std::to_string(report.denied.size()) +
                  " kinds of system call fail with EPERM (clone3 with ENOSYS)";
  return report;
}

}  // namespace kwb::worker
