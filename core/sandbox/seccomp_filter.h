#pragma once
// The seccomp filter kwb-worker installs on itself inside bwrap or unshare, before any untrusted
// code is loaded: a deny-list of system calls a CUDA program has no use for and a sandbox
// escape or a host attack would, each answered with EPERM (never a kill: a killed worker would
// look like a crashing candidate). Everything else stays allowed, so the CUDA driver (ioctl on
// /dev/nvidia*, mmap, AF_UNIX and netlink sockets, threads, perf_event_open for CUPTI) works as
// before. Built with libseccomp.
//
// Denied with EPERM:
//   debugging other processes     ptrace, process_vm_readv, process_vm_writev, pidfd_getfd
//   kernel, modules, BPF          kexec_load, kexec_file_load, init_module, finit_module,
//                                 delete_module, bpf
//   mounts and roots              mount, umount2, pivot_root, chroot, open_tree, move_mount,
//                                 fsopen, fsconfig, fsmount, fspick, mount_setattr
//   namespaces                    unshare, setns; clone with any CLONE_NEW* flag
//   kernel keyrings               keyctl, add_key, request_key
//   network                       socket() of any family but AF_UNIX and AF_NETLINK
//   io_uring (it runs socket and  io_uring_setup, io_uring_enter, io_uring_register
//   file operations seccomp
//   cannot see)
//   others                        userfaultfd, personality (except reading it, 0xffffffff,
//                                 and setting PER_LINUX, 0), open_by_handle_at, reboot,
//                                 swapon, swapoff, acct, syslog, settimeofday, clock_settime,
//                                 iopl, ioperm, quotactl, sethostname, setdomainname, vhangup,
//                                 uselib, lookup_dcookie
// Denied with ENOSYS: clone3 (its flags sit in memory a filter cannot read; the C library then
// falls back to clone, whose flags the filter checks).
// System calls of other ABIs (i386 through int 0x80, x32) fail with EPERM.
#include <string>
#include <vector>

namespace kwb::worker {

struct SeccompReport {
  bool active = false;
  std::string reason;               // why not active; or a summary when active
  std::vector<std::string> denied;  // the calls the filter refuses (names; "clone(CLONE_NEW*)", "socket(...)")
};

// Sets no-new-privileges and loads the filter for every thread of the process (TSYNC).
SeccompReport installSeccompFilter();

// The system calls denied (names as libseccomp knows them), for documentation and tests.
const std::vector<std::string> &seccompDeniedCalls();

}  // namespace kwb::worker
