#!/usr/bin/env bash
# Issue 47 on the GPU machine: the gpu suites its rules touch, built here, stripped, in .gpu46/tests/
# with libQt6Test, against the relocatable bundle (.relbundle/):
#   tst_gpu_card_application  admission judged at the declared configuration, two tasks to admit
#   tst_gpu_lineage_build     the lineage gate's "every step pays" on softmax's real steps
#   tst_gpu_agent             sessions on the GPU (Cases recorded as attempts end, memory every turn)
#   bash tests/gpu/issue47-suites.sh OUT [SUITE...]
out=$1; shift; mkdir -p "$out"
repo=$(cd "$(dirname "$0")/../.." && pwd); tests=$repo/.gpu46/tests
place=/tmp/kwb47s; rm -rf $place; mkdir -p $place; tar -C $place -xf "$(ls "$repo"/.relbundle/kernel-workbench-*.tar.* | head -1)"
dir=$(ls -d $place/kernel-workbench-*)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/summary.txt"
status=0
for spec in ${*:-tst_gpu_card_application:200 tst_gpu_lineage_build:200 tst_gpu_agent:180}; do
  name=${spec%%:*}; limit=${spec##*:}; start=$(date +%s)
  env LD_LIBRARY_PATH="$dir/usr/lib:$tests" KWB_WORKER="$dir/usr/bin/kwb-worker" QT_QPA_PLATFORM=offscreen \
    KWB_KERNELS_DIR="$dir/usr/share/kernel-workbench/kernels" KWB_PROMPTS_DIR="$dir/usr/share/kernel-workbench/prompts" \
    KWB_TEST_OUTPUT_DIR="$out/$name-output" KWB_LIBRARY="$out/$name-library.sqlite" QTEST_FUNCTION_TIMEOUT=900000 \
    timeout "$limit" "$tests/$name" -o "$out/$name.txt,txt" > "$out/$name.log" 2>&1 || status=1
  echo "$name: $(grep -a '^Totals' "$out/$name.txt") in $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
done
bash "$repo/tests/gpu/check-skips.sh" "$out"/tst_gpu_*.txt | tee -a "$out/summary.txt"
echo "issue47-suites: exit $status" | tee -a "$out/summary.txt"
exit $status
