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
# LIBRARY_IN: go on from a library an earlier run brought back (its lineages and cards are kept).
[ -n "${LIBRARY_IN:-}" ] && [ ! -f $r/library.sqlite ] && cp "$LIBRARY_IN" $r/library.sqlite
tasks=${TASKS:-$(ls $k/kernels)}
# HOPPER=1: gemm-bf16's sm_90a steps as a lineage of their own, from the mma.sync expert (step 10)
# through TMA + wgmma (11) to the warp-specialized pipeline (12), every step gated; then cuBLAS on
# the same GPU in the same run (kwb-bench-vendor-baselines), for the fraction of cuBLAS.
if [ -n "${HOPPER:-}" ]; then
  v=/tmp/gemm-bf16-hopper/hopper; mkdir -p $v
  cp $k/kernels/gemm-bf16/lineage/1[0-9]-*.cu $v/
  python3 - $k/kernels/gemm-bf16/lineage/lineage.toml > $v/lineage.toml <<'PY'
import re, sys
text = open(sys.argv[1]).read()
blocks = re.split(r'(?m)^(?=\[\[step\]\])', text)
print("".join(b for b in blocks if re.search(r'file = "1[0-9]-', b)))
PY
  s=$(date +%s)
  $k/bin/kwb lineage build $k/kernels/gemm-bf16 --from-versions $v --time-cap ${TIME_CAP:-0.5} > "$r/build-gemm-bf16@hopper.txt" 2> $r/build-hopper.err
  echo "gemm-bf16@hopper: exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt
  cat "$r/build-gemm-bf16@hopper.txt" | tee -a $r/summary.txt
  LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64" $k/bin/kwb-bench-vendor-baselines --bf16 8192,8192,8192 \
    --bf16 1024,1024,1024 --out $r/vendor.json 2>&1 | tee -a $r/summary.txt
  pack
fi
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
# Pictures taken here, with this machine's measurements: the lineage browser per task in SHOTS
# (default: the tasks built) and the first card of each task's lineage in the review view.
mkdir -p $r/shots
for t in ${SHOTS:-$tasks}; do
  [ "$t" = none ] && break
  [ "$(left)" -gt 30 ] || break
  task=${t%%@*}
  timeout 60 $k/bin/kernel-workbench --screenshot "$r/shots/lineage-$t.png" --screenshot-timeout 50 \
    --then "lineage:$t" $k/kernels/$task > "$r/shots/lineage-$t.log" 2>&1
  echo "shot lineage-$t: exit $?" | tee -a $r/summary.txt
  pack
  card=$(awk '/skill cards proposed/ {getline; print $1; exit}' "$r/build-$t.txt" 2>/dev/null)
  [ -n "$card" ] || continue
  timeout 60 $k/bin/kernel-workbench --screenshot "$r/shots/card-$card.png" --screenshot-timeout 50 \
    --then "skills:$card" $k/kernels/$task > "$r/shots/card-$card.log" 2>&1
  echo "shot card-$card: exit $?" | tee -a $r/summary.txt
  pack
done
