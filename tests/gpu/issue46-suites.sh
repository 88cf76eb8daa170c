#!/usr/bin/env bash
# Issue 46 on the GPU machine: the gpu suites that use the input generator and the evaluator
# (tst_gpu_eval, tst_gpu_profile, tst_gpu_sanitize, built here, stripped, in .gpu46/suites/ with
# libQt6Test) against the relocatable bundle.   bash tests/gpu/issue46-suites.sh OUT
out=$1; repo=$(cd "$(dirname "$0")/../.." && pwd); tests=$repo/.gpu46/suites   # tst_gpu_eval, tst_gpu_profile, tst_gpu_sanitize (stripped) and libQt6Test
place=/tmp/kwb46s; rm -rf $place; mkdir -p $place; tar -C $place -xf $(ls $repo/.relbundle/kernel-workbench-*.tar.* | head -1)
dir=$(ls -d $place/kernel-workbench-*)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $out/summary.txt
for spec in "tst_gpu_eval 230" "tst_gpu_profile 110" "tst_gpu_sanitize 110"; do
  set -- $spec; start=$(date +%s)
  env LD_LIBRARY_PATH="$dir/usr/lib:$tests" KWB_WORKER="$dir/usr/bin/kwb-worker" QT_QPA_PLATFORM=offscreen \
    KWB_KERNELS_DIR="$dir/usr/share/kernel-workbench/kernels" KWB_PROMPTS_DIR="$dir/usr/share/kernel-workbench/prompts" \
    KWB_TEST_OUTPUT_DIR="$out/$1-output" timeout $2 $tests/$1 -o $out/$1.txt,txt > $out/$1.log 2>&1
  echo "$1: exit $? $(grep -a '^Totals' $out/$1.txt) in $(( $(date +%s) - start )) s" | tee -a $out/summary.txt
done
bash $repo/tests/gpu/check-skips.sh $out/tst_gpu_*.txt | tee -a $out/summary.txt
