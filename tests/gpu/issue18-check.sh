#!/usr/bin/env bash
# Issue 18 on the H200: kwb lineage build for bundled tasks (every step gated: compiled, correct on
# every configuration and seed, timed), the cards lifted into a fresh library, listed and exported
# as SKILL.md. The library and the exports come back in $OUT/results18.tgz.
#   TASKS="sgemm gemm-bf16" TIME_CAP=0.5 bash tests/gpu/issue18-check.sh OUT [LIMIT_S]
#   (with .bundle/kwb.tar.xz from tests/gpu/pack-bundle.sh)
set -uo pipefail
out=$1; limit=${2:-560}; mkdir -p /tmp/run "$out"
started=$(date +%s)
left() { echo $(( limit - ($(date +%s) - started) )); }
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xf "$(ls .bundle/kwb.tar.* | head -1)"
k=/tmp/run/kwb; r=/tmp/res18; mkdir -p $r
pack() { tar -C /tmp -czf $out/results18.tgz res18; }
source $k/env.sh
export KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home KWB_LIBRARY=$r/library.sqlite; mkdir -p $HOME
tasks=${TASKS:-$(ls $k/kernels)}
for t in $tasks; do
  [ -f $k/kernels/$t/lineage/lineage.toml ] || continue
  [ "$(left)" -gt 40 ] || { echo "$t: skipped (time)" | tee -a $r/summary.txt; continue; }
  s=$(date +%s)
  timeout $(( $(left) - 20 )) $k/bin/kwb lineage build $k/kernels/$t --time-cap ${TIME_CAP:-0.5} > $r/build-$t.txt 2> $r/build-$t.err
  echo "$t: exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt
  cat $r/build-$t.txt | tee -a $r/summary.txt
  pack
done
$k/bin/kwb skills list | tee -a $r/summary.txt
$k/bin/kwb skills export $r/cards > /dev/null
pack
