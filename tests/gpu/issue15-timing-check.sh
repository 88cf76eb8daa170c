#!/usr/bin/env bash
# Issue 15 on the H200: the bundled lineages timed at their h200 size (the honest candidates must
# keep their times with fresh inputs per sample, re-checks and the L2 reset), and, with BENCH=1,
# kwb-bench-eval-latency (per-candidate latency and its split).
#   bash tests/gpu/issue15-timing-check.sh OUT LIMIT_S TASKS...   (with .bundle/kwb.tar.gz)
set -uo pipefail
out=$1; limit=$2; shift 2; mkdir -p /tmp/run "$out"
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xzf .bundle/kwb.tar.gz
k=/tmp/run/kwb; r=/tmp/res-timing; mkdir -p $r
source $k/env.sh
export KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home; mkdir -p $HOME
if [ "${BENCH:-0}" = 1 ]; then
  start=$(date +%s)
  kwb-bench-eval-latency --cold 1 --warm 4 --time-cap 1 --out $r/eval-latency.json > $r/eval-latency.txt 2>$r/eval-latency.err
  echo "eval-latency exit $? in $(( $(date +%s) - start )) s" | tee -a $r/summary.txt
fi
for t in "$@"; do
  start=$(date +%s)
  timeout $limit kwb lineage $k/kernels/$t --time --config h200 --json > $r/lineage-$t.json 2>$r/lineage-$t.err
  echo "lineage $t exit $? in $(( $(date +%s) - start )) s" | tee -a $r/summary.txt
done
tar -C /tmp -czf $out/timing-results.tgz res-timing
