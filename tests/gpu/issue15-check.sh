#!/usr/bin/env bash
# Issue 15 on the H200: every gpu test (the hostile candidates among them), then a host launcher
# timed end to end beside the same kernel as device code, and the sgemm lineage's expert.
#   bash tests/gpu/issue15-check.sh OUT   (with .bundle/kwb.tar.gz from tests/gpu/pack-bundle.sh)
set -uo pipefail
out=$1; mkdir -p /tmp/run "$out"
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xzf .bundle/kwb.tar.gz
k=/tmp/run/kwb; r=/tmp/res15; mkdir -p $r
bash $k/run-on-gpu.sh $r > $r/run-on-gpu.log 2>&1; echo "run-on-gpu exit $?" | tee -a $r/summary.txt
for t in $r/tst_gpu_*.txt; do printf "%-22s %s\n" "$(basename $t .txt)" "$(grep -h '^Totals' $t)"; done | tee -a $r/summary.txt
grep -h "^FAIL\|^SKIP" $r/tst_gpu_*.txt | tee -a $r/summary.txt
source $k/env.sh
export KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home; mkdir -p $HOME
for c in small h200; do
  kwb eval $k/kernels/softmax $k/bench/candidates/softmax_launcher.cu --time --config $c --json > $r/launcher-softmax-$c.json 2>$r/launcher-softmax-$c.err
  echo "host launcher softmax $c exit $?" | tee -a $r/summary.txt
  kwb eval $k/kernels/softmax --time --config $c --json > $r/starter-softmax-$c.json 2>$r/starter-softmax-$c.err
  echo "device starter softmax $c exit $?" | tee -a $r/summary.txt
done
tar -C /tmp -czf $out/results15.tgz res15
