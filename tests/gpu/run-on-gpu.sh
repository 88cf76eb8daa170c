#!/usr/bin/env bash
# Runs on the GPU machine inside an unpacked bundle (pack-bundle.sh): the device listing, every
# gpu test, and a screenshot of the main window. Results go to $1 (default ./gpu-results).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$PWD/gpu-results}
mkdir -p "$out"
source "$here/bundle-env.sh"
# A task's PyTorch reference runs in the machine's own Python, without the bundle's libraries.
printf '#!/bin/sh\nexec env -u LD_LIBRARY_PATH -u QT_PLUGIN_PATH python3 "$@"\n' > "$out/python-plain"
chmod +x "$out/python-plain"
export KWB_PYTHON="$out/python-plain"
status=0
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  kwb --version
  kwb devices
} 2>&1 | tee "$out/devices.txt"
kwb devices --json > "$out/devices.json" || status=1
kwb tasks list | tee -a "$out/devices.txt"
# QtTest ends a test function after 5 minutes; the agent's replay session took 300 s of its ~400
# on an H100 (2026-12-06) and was cut there.
export QTEST_FUNCTION_TIMEOUT=${QTEST_FUNCTION_TIMEOUT:-900000}
# KWB_GPU_SUITES="tst_gpu_eval tst_gpu_agent" runs only those (a device call has 10 minutes).
for t in "$here"/bin/tst_gpu_*; do
  [ -x "$t" ] || continue
  if [ -n "${KWB_GPU_SUITES:-}" ] && [[ " $KWB_GPU_SUITES " != *" $(basename "$t") "* ]]; then continue; fi
  start=$(date +%s)
  "$t" -o "$out/$(basename "$t").txt,txt" -o -,txt || status=1
  echo "$(basename "$t"): $(grep -a '^Totals' "$out/$(basename "$t").txt") in $(( $(date +%s) - start )) s" >> "$out/suites.txt"
done
# On a machine with a GPU a test function that skips (a whole suite or one case) tested nothing.
if nvidia-smi -L > /dev/null 2>&1 && ! "$here/check-skips.sh" "$out"/tst_gpu_*.txt | tee -a "$out/devices.txt"; then
  echo "gpu tests skipped on a machine with a GPU (above)" | tee -a "$out/devices.txt"
  status=1
fi
for task in softmax sgemm; do
  kwb eval "$here/kernels/$task" --config small 2>&1 | tee -a "$out/kwb-eval.txt" || status=1
done
kernel-workbench --screenshot "$out/main-window.png" "$here/kernels/softmax" || status=1
exit $status
