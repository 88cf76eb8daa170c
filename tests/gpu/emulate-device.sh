#!/usr/bin/env bash
# A rehearsal of the GPU machine, without its GPU, before device time is spent: a bundle
# (pack-bundle.sh) unpacked in Ubuntu 24.04's userland (debootstrap from archive.ubuntu.com) and
# booted under QEMU on Debian's kernel with cgroup v1 switched off (cgroup_no_v1=all), so that
# /sys/fs/cgroup is cgroup2 alone, as Ubuntu 24.04 mounts it by default (what the GPU machine
# mounts is not yet recorded: issue22-remote.sh now writes it down). The system is an initramfs:
# no disk image, no kernel modules beyond the one for a dummy network interface. That gives a
# non-loopback address, without which glibc's AI_ADDRCONFIG resolves nothing and Slurm cannot
# reach 127.0.0.1; on the GPU machine sinfo reached slurmctld, so it has one.
#
#   tests/gpu/emulate-device.sh BUNDLE.tar.xz [COMMAND]
#
# As root. NVRTC and the CUDA headers go in from this machine's toolkit (CUDA_HOME or
# /usr/local/cuda), as the GPU machine has them. COMMAND runs in the unpacked bundle's folder
# with bundle-env.sh sourced; by default the bundle's tst_slurm_workers and tst_remote_workers
# (its one-node Slurm cluster and its sshd, as tst_gpu_remote starts them there). What it prints comes back over the serial console; the
# script exits with COMMAND's status. QEMU emulates the CPU in software (this machine's nested
# KVM did not boot the kernel), so it is several times slower than the machine. The root file
# system, the kernel and the tools are kept in ${KWB_EMU_DIR:-/var/tmp/kwb-emu} for the next run.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUNDLE.tar.xz [COMMAND]" >&2; exit 2; }
bundle=$(readlink -f "$1")
command=${2:-'s=0; for t in tst_slurm_workers tst_remote_workers; do bin/$t || s=1; done; exit $s'}
[ "$(id -u)" = 0 ] || { echo "emulate-device: needs root (debootstrap, device files in the initramfs)" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundler=${GPU_BUNDLE:-$root/../shared/tools/gpu-bundle.sh}
dir=${KWB_EMU_DIR:-/var/tmp/kwb-emu}
mkdir -p "$dir"
say() { echo "emulate-device: $*" >&2; }

missing=()
for tool in debootstrap:debootstrap qemu-system-x86_64:qemu-system-x86 cpio:cpio; do
  command -v "${tool%%:*}" > /dev/null || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" > "$dir/apt.log" 2>&1 ||
    { cat "$dir/apt.log" >&2; exit 1; }
fi

# Ubuntu 24.04's minimal userland. Debian 12's debootstrap has no script named noble; gutsy's
# is the one every later Ubuntu release uses.
if [ ! -e "$dir/noble.done" ]; then
  say "debootstrap Ubuntu 24.04 (noble) into $dir/noble (a few minutes)"
  rm -rf --one-file-system "$dir/noble"
  debootstrap --variant=minbase --no-check-gpg noble "$dir/noble" http://archive.ubuntu.com/ubuntu \
    /usr/share/debootstrap/scripts/gutsy > "$dir/debootstrap.log" 2>&1 || { tail -20 "$dir/debootstrap.log" >&2; exit 1; }
  touch "$dir/noble.done"
fi

# Debian's kernel, and its dummy network driver.
if [ ! -e "$dir/kernel.done" ]; then
  say "fetching Debian's kernel"
  rm -rf "$dir/kernel" "$dir/kernel-deb" && mkdir -p "$dir/kernel" "$dir/kernel-deb"
  package=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
  (cd "$dir/kernel-deb" && apt-get download "$package" > /dev/null)
  dpkg-deb -x "$dir/kernel-deb/"*.deb "$dir/kernel-deb/x"
  cp "$dir/kernel-deb/x/boot/vmlinuz-"* "$dir/kernel/vmlinuz"
  cp "$(find "$dir/kernel-deb/x/lib/modules" -name dummy.ko | head -n1)" "$dir/kernel/dummy.ko"
  rm -rf "$dir/kernel-deb"
  touch "$dir/kernel.done"
fi

# The base archive: the userland, ip(8) with its libraries, a loader for the one module.
if [ ! -e "$dir/base.cpio.gz" ] || [ "$dir/noble.done" -nt "$dir/base.cpio.gz" ] ||
  [ "$dir/kernel.done" -nt "$dir/base.cpio.gz" ]; then
  say "packing the base initramfs"
  rm -rf "$dir/noble/opt/emu"
  bash "$bundler" "$dir/noble/opt/emu" "$(command -v ip)" > /dev/null
  cp "$dir/kernel/dummy.ko" "$dir/noble/opt/emu/"
  cat > "$dir/insmod.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;
  if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) != 0) { perror(argc > 1 ? argv[1] : "insmod"); return 1; }
  return 0;
}
C
  cc -static -O2 -o "$dir/noble/opt/emu/bin/insmod" "$dir/insmod.c"
  printf '127.0.0.1 localhost\n' > "$dir/noble/etc/hosts"
  # Written aside and moved in whole: a cut-short archive is never taken for the cache.
  (cd "$dir/noble" && find . -xdev | cpio -o -H newc --quiet | gzip -1 > "$dir/base.cpio.gz.part")
  mv "$dir/base.cpio.gz.part" "$dir/base.cpio.gz"
fi

# The run's archive: the bundle and /init. The kernel unpacks both archives, in order, into one tree.
stage=$(mktemp -d "$dir/stage.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/root/opt/run"
tar -C "$stage/root/opt/run" -xf "$bundle"
printf '%s\n' "$command" > "$stage/root/opt/run/command.sh"
# The GPU machine has the CUDA toolkit: NVRTC and the toolkit's headers, for compile-only work.
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ -e "$cuda/lib64/libnvrtc.so.13" ]; then
  mkdir -p "$stage/root/usr/local/cuda/lib64"
  cp -a "$cuda/lib64/"libnvrtc.so* "$cuda/lib64/"libnvrtc-builtins.so* "$stage/root/usr/local/cuda/lib64/"
  cp -rL "$cuda/include" "$stage/root/usr/local/cuda/include"
else
  say "no NVRTC under $cuda/lib64: compile-only cases will say so"
fi
cat > "$stage/root/init" <<'INIT'
#!/bin/bash
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t cgroup2 none /sys/fs/cgroup
mount -t devtmpfs dev /dev
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
echo gpu-rehearsal > /proc/sys/kernel/hostname
export LD_LIBRARY_PATH=/opt/emu/lib
/opt/emu/bin/ip link set lo up
/opt/emu/bin/insmod /opt/emu/dummy.ko && /opt/emu/bin/ip link add eth0 type dummy &&
  /opt/emu/bin/ip addr add 10.7.0.2/24 dev eth0 && /opt/emu/bin/ip link set eth0 up
unset LD_LIBRARY_PATH
export HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
echo "=== emu: start: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r), /sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup), $(nproc) CPU"
cd /opt/run/kwb && (source ./bundle-env.sh && source /opt/run/command.sh)
echo "=== emu: exit $?"
echo o > /proc/sysrq-trigger
sleep 30
INIT
chmod +x "$stage/root/init"
(cd "$stage/root" && find . | cpio -o -H newc --quiet | gzip -1 > "$stage/run.cpio.gz")
cat "$dir/base.cpio.gz" "$stage/run.cpio.gz" > "$stage/initrd.gz"
rm -f "$stage/run.cpio.gz"

say "booting (console in $dir/console.log)"
timeout "${KWB_EMU_TIMEOUT:-3000}" qemu-system-x86_64 -accel tcg -cpu max -m "${KWB_EMU_MEMORY:-6144}" -smp 2 \
  -nographic -no-reboot -nic none -kernel "$dir/kernel/vmlinuz" -initrd "$stage/initrd.gz" \
  -append "console=ttyS0 rdinit=/init cgroup_no_v1=all panic=-1 loglevel=3" > "$dir/console.log" 2>&1 ||
  say "qemu ended with status $? (a timeout is 124)"
# (the first line follows the firmware's terminal escapes)
console=$(tr -d '\r' < "$dir/console.log")
sed -n '/=== emu: start/,/^=== emu: exit/{s/.*=== emu: start/=== emu: start/;p}' <<< "$console"
status=$(sed -n 's/^=== emu: exit \([0-9]*\)$/\1/p' <<< "$console" | tail -n1)
[ -n "$status" ] || { say "the command did not finish; the console's end:"; tail -20 "$dir/console.log" >&2; exit 1; }
exit "$status"
