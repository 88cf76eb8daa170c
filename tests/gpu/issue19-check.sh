#!/usr/bin/env bash
# Issue 19 on the H200: the experience memory filled by real work in a fresh library — kwb
# lineage build for TASKS (each step a Case under the previous accepted step), and the window
# running and timing the starter of the first task (the run stored in a fresh workspace becomes
# an editor Case), kwb tune of the first task's starter (each measured point a Case), the
# Experience view photographed with the open task's fastest Case inspected, and tst_gpu_agent (a
# replayed agent session timed on the GPU, its candidates synced as Cases, a second session's
# first prompt carrying them) — then kwb memory stats, query, export and graph.
# Everything comes back in $OUT/results19.tgz.
#   TASKS="softmax reduce-sum" TIME_CAP=0.3 bash tests/gpu/issue19-check.sh OUT [LIMIT_S]
#   (with .bundle/kwb.tar.xz from tests/gpu/pack-bundle.sh)
set -uo pipefail
out=$1; limit=${2:-560}; mkdir -p /tmp/run "$out"
started=$(date +%s)
left() { echo $(( limit - ($(date +%s) - started) )); }
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xf "$(ls .bundle/kwb.tar.* | head -1)"
k=/tmp/run/kwb; r=/tmp/res19; mkdir -p $r
pack() { tar -C /tmp -czf $out/results19.tgz res19; }
source $k/env.sh
export KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home19 KWB_LIBRARY=$r/library.sqlite; mkdir -p $HOME
echo "commit $(cat $k/COMMIT), $(date -u +%FT%TZ)" | tee $r/summary.txt
tasks=${TASKS:-softmax reduce-sum}
for t in $tasks; do
  [ "$(left)" -gt 60 ] || { echo "$t: skipped (time)" | tee -a $r/summary.txt; continue; }
  s=$(date +%s)
  timeout $(( $(left) - 40 )) $k/bin/kwb lineage build $k/kernels/$t --time-cap ${TIME_CAP:-0.3} > $r/build-$t.txt 2> $r/build-$t.err
  echo "$t: exit $? in $(( $(date +%s) - s )) s; $(grep -h 'experience memory' $r/build-$t.err)" | tee -a $r/summary.txt
  pack
done
first=${tasks%% *}
if [ "$(left)" -gt 60 ]; then
  s=$(date +%s)
  timeout 75 $k/bin/kernel-workbench --screenshot $r/window-run.png --screenshot-timeout 60 --then time \
    $k/kernels/$first > $r/window.log 2>&1
  echo "window run+time of $first: exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt
fi
if [ "$(left)" -gt 60 ]; then
  s=$(date +%s)
  timeout 120 $k/bin/kwb tune $k/kernels/$first --budget 4 --time-cap ${TIME_CAP:-0.3} > $r/tune-$first.txt 2>&1
  echo "tune $first: exit $? in $(( $(date +%s) - s )) s; $(grep -h '^memory:' $r/tune-$first.txt)" | tee -a $r/summary.txt
fi
if [ "$(left)" -gt 60 ]; then
  timeout 75 $k/bin/kernel-workbench --screenshot $r/experience.png --screenshot-timeout 60 --then experience:best \
    $k/kernels/$first > $r/experience.log 2>&1
  echo "experience view: exit $?" | tee -a $r/summary.txt
fi
if [ "$(left)" -gt 100 ]; then
  KWB_TEST_OUTPUT_DIR=$r/test-output KWB_WORKER=$k/bin/kwb-worker KWB_CLI=$k/bin/kwb \
    timeout $(( $(left) - 30 )) $k/bin/tst_gpu_agent > $r/tst_gpu_agent.txt 2>&1
  echo "tst_gpu_agent exit $?: $(grep -h '^Totals' $r/tst_gpu_agent.txt)" | tee -a $r/summary.txt
  grep -h "^FAIL\|^memory:\|^second session" -A2 $r/tst_gpu_agent.txt | tee -a $r/summary.txt
  pack
fi
# The window recorded its run already: importing its workspace adds nothing.
$k/bin/kwb memory import $HOME/.local/share/kernel-workbench/workspace.kwb 2>&1 | tee -a $r/summary.txt
$k/bin/kwb memory stats | tee -a $r/summary.txt
$k/bin/kwb memory stats --json > $r/memory-stats.json
$k/bin/kwb memory query --task $first --limit 0 | tee -a $r/summary.txt
$k/bin/kwb memory query "shuffle" | tee -a $r/summary.txt
$k/bin/kwb memory export --format jsonl > $r/memory.jsonl
$k/bin/kwb memory graph --dot > $r/memory.dot
command -v dot > /dev/null && dot -Tsvg $r/memory.dot > $r/memory.svg
echo "jsonl lines: $(wc -l < $r/memory.jsonl)" | tee -a $r/summary.txt
pack
