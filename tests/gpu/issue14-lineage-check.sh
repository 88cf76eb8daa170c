#!/usr/bin/env bash
# Issue 14 closing check on the H200: every gpu test (hostile candidates included), then the
# bundled lineages at their h200 size, timed, to compare with the suite's recorded times.
#   bash tests/gpu/issue14-lineage-check.sh OUT [TASKS...]   (KWB_SKIP_TESTS=1: lineages only)
set -uo pipefail
out=$1; shift; mkdir -p /tmp/run "$out"
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xzf .bundle/kwb.tar.gz
k=/tmp/run/kwb; r=/tmp/res-lineage; mkdir -p $r
if [ "${KWB_SKIP_TESTS:-0}" != 1 ]; then
  bash $k/run-on-gpu.sh $r > $r/run-on-gpu.log 2>&1; echo "run-on-gpu exit $?" | tee -a $r/summary.txt
fi
source $k/env.sh
export KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home; mkdir -p $HOME
tasks=("$@"); [ ${#tasks[@]} -gt 0 ] || tasks=(softmax reduce-sum transpose sgemm)
for t in "${tasks[@]}"; do
  start=$(date +%s)
  timeout 150 kwb lineage $k/kernels/$t --time --config h200 --json > $r/lineage-$t.json 2>$r/lineage-$t.err
  echo "lineage $t exit $? in $(( $(date +%s) - start )) s" | tee -a $r/summary.txt
done
tar -C /tmp -czf $out/lineage-results.tgz res-lineage
