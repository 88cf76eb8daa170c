#!/usr/bin/env bash
# The Debian package in a clean Debian 12 root (debootstrap, minbase): apt installs it with the
# dependencies it declares and nothing else, `kwb --version` and `kwb tasks list` run, the window
# opens a bundled task offscreen and saves a picture, `man kwb` has its page; then apt removes it
# and nothing of it is left. Needs root, debootstrap and the Debian mirror (packaging/install-deps.sh);
# skipped (exit 77) without root or debootstrap.
#   packaging/check-deb-install.sh DEB WORKDIR
# The minbase root is cached as WORKDIR/bookworm-minbase.tar (made once, about a minute).
set -euo pipefail
deb=$(realpath "$1"); work=$2
mirror=${KWB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Without root (chroot, mounts) or debootstrap it cannot run: it says why and exits 77, which ctest
# reports as skipped (CI runs as root with packaging/install-deps.sh's debootstrap).
[ "$(id -u)" = 0 ] || { echo "check-deb-install: skipped: needs root (chroot, mounts); CI runs it as root" >&2; exit 77; }
command -v debootstrap > /dev/null || { echo "check-deb-install: skipped: needs debootstrap (packaging/install-deps.sh)" >&2; exit 77; }
mkdir -p "$work"
cache="$work/bookworm-minbase.tar"
root="$work/root"
cleanup() {
  for m in dev/pts dev proc sys; do mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m" || true; done
}
trap cleanup EXIT
cleanup
rm -rf "$root"
if [ ! -f "$cache" ]; then
  echo "check-deb-install: debootstrap --variant=minbase bookworm (once; cached in $cache)"
  debootstrap --variant=minbase bookworm "$root.new" "$mirror" > "$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  tar -C "$root.new" -cf "$cache" .
  rm -rf "$root.new"
fi
mkdir -p "$root"
tar -C "$root" -xf "$cache"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/kernel-workbench.deb"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  DEBIAN_FRONTEND=noninteractive "$@"; }

echo "check-deb-install: apt installs $(basename "$deb") and what it declares"
in_root apt-get update -qq
in_root apt-get install -y -qq --no-install-recommends /tmp/kernel-workbench.deb > "$work/install.log" 2>&1 ||
  { tail -30 "$work/install.log" >&2; exit 1; }
version=$(in_root kwb --version)
echo "check-deb-install: kwb --version: $version"
[ -n "$version" ] || { echo "check-deb-install: kwb --version printed nothing" >&2; exit 1; }
in_root kwb tasks list > "$work/tasks.txt" 2>&1 || { cat "$work/tasks.txt" >&2; exit 1; }
grep -q softmax "$work/tasks.txt" || { echo "check-deb-install: kwb tasks list lacks the bundled tasks" >&2; cat "$work/tasks.txt" >&2; exit 1; }
in_root env QT_QPA_PLATFORM=offscreen kernel-workbench --screenshot /tmp/window.png --screenshot-timeout 90 \
  /usr/share/kernel-workbench/kernels/softmax > "$work/window.log" 2>&1 || { cat "$work/window.log" >&2; exit 1; }
[ -s "$root/tmp/window.png" ] || { echo "check-deb-install: the window saved no picture" >&2; cat "$work/window.log" >&2; exit 1; }
cp "$root/tmp/window.png" "$work/window.png"
for f in /usr/share/man/man1/kwb.1.gz /usr/share/metainfo/io.kernel_workbench.KernelWorkbench.metainfo.xml \
  /usr/share/icons/hicolor/256x256/apps/kernel-workbench.png /usr/share/applications/kernel-workbench.desktop; do
  [ -s "$root$f" ] || { echo "check-deb-install: $f is not installed" >&2; exit 1; }
done
echo "check-deb-install: kwb, the window (offscreen, $(stat -c %s "$work/window.png") bytes of picture), man page, metainfo and icons work"

echo "check-deb-install: apt removes it"
in_root apt-get remove --purge -y -qq kernel-workbench > "$work/remove.log" 2>&1 || { cat "$work/remove.log" >&2; exit 1; }
status=$(in_root dpkg-query -W -f='${Status}' kernel-workbench 2> /dev/null || true)
if grep -q "installed" <<< "$status"; then
  echo "check-deb-install: kernel-workbench is still installed" >&2; exit 1
fi
left=$(cd "$root" && ls -d usr/bin/kwb usr/bin/kwb-worker usr/bin/kernel-workbench usr/share/kernel-workbench 2> /dev/null || true)
[ -z "$left" ] || { echo "check-deb-install: left behind after removal: $left" >&2; exit 1; }
echo "check-deb-install: installed, ran and removed cleanly"
