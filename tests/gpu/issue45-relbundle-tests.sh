#!/usr/bin/env bash
# Issue 45 on the GPU machine when one device call must carry only the relocatable bundle (the
# test bundle and it together pass what a call carries): gpu test programs built here (.agent45/:
# tst_gpu_agent, tst_gpu_lineage_build, libQt6Test) run against the relocatable bundle's own
# kwb-worker, libraries and kernels (the sanitizer gate with a racy kernel; the lineage build's
# exact metric set and card count), then issue45-bundle.sh (the bundle under $HOME and /tmp:
# host launchers and --sanitize in each sandbox). Results in OUT; exit 1 when anything failed or
# a test function skipped.
#   bash tests/gpu/issue45-relbundle-tests.sh OUT [PART...]    (parts: agent lineage bundle; all by default)
set -uo pipefail
out=$1; shift; mkdir -p "$out"
parts=" ${*:-agent lineage bundle} "
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tests=$repo/.agent45
status=0
place=/tmp/kwb45-tests
rm -rf "$place" && mkdir -p "$place" && tar -C "$place" -xf "$(ls "$repo"/.relbundle/kernel-workbench-*.tar.* | head -1)"
dir=$(ls -d "$place"/kernel-workbench-*)
run_test() {  # LIMIT_S PROGRAM [FUNCTION...]
  local limit=$1 t=$2; shift 2
  local start=$(date +%s)
  env LD_LIBRARY_PATH="$dir/usr/lib:$tests" KWB_WORKER="$dir/usr/bin/kwb-worker" QT_QPA_PLATFORM=offscreen \
    KWB_KERNELS_DIR="$dir/usr/share/kernel-workbench/kernels" KWB_PROMPTS_DIR="$dir/usr/share/kernel-workbench/prompts" \
    KWB_TEST_OUTPUT_DIR="$out/$t-output" \
    timeout "$limit" "$tests/$t" -o "$out/$t.txt,txt" -o -,txt "$@" > "$out/$t.log" 2>&1 || status=1
  echo "$t $*: $(grep -a '^Totals' "$out/$t.txt") in $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/summary.txt"
[[ $parts == *" agent "* ]] && run_test 180 tst_gpu_agent racyKernelIsNeverTheBest
[[ $parts == *" lineage "* ]] && run_test 240 tst_gpu_lineage_build
bash "$repo/tests/gpu/check-skips.sh" "$out"/tst_gpu_*.txt | tee -a "$out/summary.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
if [[ $parts == *" bundle "* ]]; then
  (cd "$repo" && bash tests/gpu/issue45-bundle.sh "$out") > "$out/bundle45.log" 2>&1 || status=1
fi
cat "$out/bundle45/summary.txt" >> "$out/summary.txt" 2>/dev/null
echo "issue45-relbundle-tests: exit $status" | tee -a "$out/summary.txt"
exit $status
