#!/usr/bin/env bash
# Issue 20 on the GPU machine (Ubuntu 24.04, no Qt): the relocatable bundle from
# packaging/make-bundle.sh, unpacked somewhere else and run with a bare environment: kwb, the GPU
# seen, then the window opening softmax offscreen, running and timing it on the GPU (a picture with
# the Results panel), and profiling it (a picture with the Profiler panel's metrics).
#   bash tests/gpu/issue20-bundle-check.sh OUT     (with .relbundle/kernel-workbench-*.tar.gz)
set -uo pipefail
out=$1; mkdir -p "$out"; r=$out/bundle20; mkdir -p $r
rm -rf /tmp/rb && mkdir -p /tmp/rb && tar -C /tmp/rb -xzf $(ls .relbundle/kernel-workbench-*.tar.gz | head -1)
dir=$(ls -d /tmp/rb/kernel-workbench-*)
bare() { env -i PATH=/usr/bin:/bin HOME=/tmp/rbhome "$@"; }
mkdir -p /tmp/rbhome
{
  echo "$(date -u +%FT%TZ) on $(. /etc/os-release; echo $PRETTY_NAME); Qt installed: $(ls /usr/lib/x86_64-linux-gnu/libQt6Core.so.6 2>/dev/null || echo none)"
  echo "kwb --version: $(bare $dir/kwb --version)"
  ldd $dir/usr/bin/kernel-workbench | grep -c "=> $dir/usr/" | sed 's/^/libraries from the bundle: /'
  ldd $dir/usr/bin/kernel-workbench | grep "not found" || echo "no library missing"
} | tee $r/summary.txt
bare $dir/kwb devices 2>&1 | tee $r/devices.txt | head -5
s=$(date +%s)
bare timeout 150 $dir/AppRun --screenshot $r/results.png --screenshot-timeout 120 --then time \
  $dir/usr/share/kernel-workbench/kernels/softmax > $r/window-time.log 2>&1
echo "window --then time: exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt
s=$(date +%s)
bare timeout 150 $dir/AppRun --screenshot $r/profiler.png --screenshot-timeout 120 --then profile,show:metrics \
  $dir/usr/share/kernel-workbench/kernels/softmax > $r/window-profile.log 2>&1
echo "window --then profile,show:metrics: exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt
grep -h "correct\|speedup\|Profiled\|profile" $r/window-*.log | head -10 | tee -a $r/summary.txt
ls -la $r | tee -a $r/summary.txt
