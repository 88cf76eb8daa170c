#!/usr/bin/env bash
# Issue 14 on the H200: every gpu test, the CLI's JSON forms, and the GUI on a lineage step.
set -uo pipefail
out=$1; mkdir -p /tmp/run "$out"; tar -C /tmp/run -xzf .bundle/kwb.tar.gz
k=/tmp/run/kwb; r=/tmp/res; mkdir -p $r
bash $k/run-on-gpu.sh $r > $r/run-on-gpu.log 2>&1; echo "run-on-gpu exit $?" | tee -a $r/summary.txt
source $k/env.sh
export KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home; mkdir -p $HOME
grep -h "^Totals\|^FAIL" $r/tst_gpu_*.txt | tee -a $r/summary.txt
# Typed results on the wire: eval --time --json (softmax h200) and a lineage step run as its step
kwb eval $k/kernels/softmax --time --config h200 --json > $r/eval-softmax-h200.json 2>$r/eval-softmax.err; echo "eval softmax $?" >> $r/summary.txt
kwb eval $k/kernels/sgemm $k/kernels/sgemm/lineage/03-smem-tiling.cu --time --config small >> $r/cli.txt 2>&1; echo "eval sgemm step3 $?" >> $r/summary.txt
kwb profile $k/kernels/sgemm $k/kernels/sgemm/lineage/03-smem-tiling.cu --config small --json > $r/profile-sgemm-step3.json 2>>$r/cli.txt; echo "profile sgemm step3 $?" >> $r/summary.txt
kwb tune $k/kernels/transpose --config small --budget 4 >> $r/cli.txt 2>&1; echo "tune transpose $?" >> $r/summary.txt
# The GUI on a lineage file: Run with timing, then the roofline, then the metrics
kernel-workbench --screenshot $r/gui-sgemm-step3.png --then time,profile:small,show:roofline $k/kernels/sgemm > $r/gui.txt 2>&1; echo "gui $?" >> $r/summary.txt
kernel-workbench --screenshot $r/gui-softmax-profile.png --then time,profile:h200:detailed,show:metrics $k/kernels/softmax > $r/gui2.txt 2>&1; echo "gui profile $?" >> $r/summary.txt
cat $r/summary.txt
tar -C /tmp -czf $out/results.tgz res
cp $r/gui-sgemm-step3.png $r/gui-softmax-profile.png $out/ 2>/dev/null
