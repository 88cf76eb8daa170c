#!/usr/bin/env bash
# The relocatable bundle (packaging/make-bundle.sh) made, moved elsewhere and run with a bare
# environment: every program's libraries resolve inside it (Qt's among them), `kwb --version` and
# `kwb tasks list` run, the window opens a bundled task offscreen and saves a picture; then, unpacked
# under /tmp and $HOME, its programs start in the sandbox (check-bundle-sandbox.sh).
#   packaging/check-bundle.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$1; work=$(realpath -m "$2")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rm -rf "$work"; mkdir -p "$work"
bash "$root/packaging/make-bundle.sh" "$build" "$work/made"
tarball=$(ls "$work"/made/kernel-workbench-*.tar.gz)
mkdir -p "$work/elsewhere"
tar -C "$work/elsewhere" -xzf "$tarball"   # moved: nothing may point back at the build
size=$(du -h "$tarball" | cut -f1)
tarball_copy="$work/$(basename "$tarball")"
mv "$tarball" "$tarball_copy"
rm -rf "$work/made"
dir=$(ls -d "$work"/elsewhere/kernel-workbench-*)
fail() { echo "check-bundle: $*" >&2; exit 1; }
for program in kernel-workbench kwb kwb-worker; do
  missing=$(ldd "$dir/usr/bin/$program" | grep "not found" || true)
  [ -z "$missing" ] || fail "$program: libraries not found: $missing"
done
# Read whole first: `ldd | grep -q` can end ldd with SIGPIPE, which pipefail counts as a failure.
libraries=$(ldd "$dir/usr/bin/kernel-workbench")
grep -q "libQt6Core.so.6 => $dir/usr/" <<< "$libraries" || fail "Qt is not taken from the bundle"
bare() { env -i PATH=/usr/bin:/bin HOME="$work/home" "$@"; }
mkdir -p "$work/home"
version=$(bare "$dir/kwb" --version) || fail "kwb --version failed"
echo "check-bundle: kwb --version: $version"
bare "$dir/kwb" tasks list > "$work/tasks.txt" 2>&1 || { cat "$work/tasks.txt" >&2; fail "kwb tasks list failed"; }
grep -q softmax "$work/tasks.txt" || fail "kwb tasks list lacks the bundled tasks"
bare "$dir/AppRun" --screenshot "$work/window.png" --screenshot-timeout 90 "$dir/usr/share/kernel-workbench/kernels/softmax" \
  > "$work/window.log" 2>&1 || { cat "$work/window.log" >&2; fail "the window did not open"; }
[ -s "$work/window.png" ] || fail "the window saved no picture"
echo "check-bundle: moved, bare environment: kwb and the window ran ($(du -sh "$dir" | cut -f1), tarball $size)"

# Issue 45: unpacked under /tmp and $HOME (both covered by the sandbox), its programs still find
# their libraries inside the sandbox.
bash "$root/packaging/check-bundle-sandbox.sh" "$tarball_copy" "$work/sandbox" || fail "the bundle's programs did not start in the sandbox (above)"
rm -f "$tarball_copy"
