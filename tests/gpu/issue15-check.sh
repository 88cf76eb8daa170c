#!/usr/bin/env bash
# Issue 15 on the H200: every gpu test (the hostile candidates among them), then a host launcher
# timed end to end beside the same kernel as device code, then (STAGES) the blur lineage (its
# steps 03-08 are host launchers) and the profiler against ncu on the softmax starter. Other
# stages: "gate" (bench/experiments/ipc_launch_latency.cu), "focus" (the host-launcher and memoization tests of tst_gpu_eval and the host
# launcher's initcheck test with its logs kept), "lineages" (LINEAGES, LINEAGE_LIMIT s each, 150 by default), "sanitize" (tst_gpu_sanitize, its
# logs kept), "agent" (issue 16: tst_gpu_agent unless the tests stage ran it, and kwb-bench-agent-overhead),
# "gemm" (gemm-bf16's lineage a step at a time, GEMM_STEPS).
#   bash tests/gpu/issue15-check.sh OUT [LIMIT_S]   (with .bundle/kwb.tar.xz from tests/gpu/pack-bundle.sh)
# Each stage runs under its own time limit and the results are packed after each one, so a run
# cut short still brings back what it did.
set -uo pipefail
out=$1; limit=${2:-560}; mkdir -p /tmp/run "$out"
started=$(date +%s)
left() { echo $(( limit - ($(date +%s) - started) )); }
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xf "$(ls .bundle/kwb.tar.* | head -1)"
k=/tmp/run/kwb; r=/tmp/res15; mkdir -p $r
pack() { tar -C /tmp --exclude='*cache*' --exclude='*.cubin' -czf $out/results15.tgz res15; }
stages=${STAGES:-tests launchers blur ncu}
source $k/env.sh
export KWB_BENCH_COMMIT=$(cat $k/COMMIT)  # the figures name the commit they were measured on
export KWB_TEST_OUTPUT_DIR=$r/test-output KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home KWB_CLI=$k/bin/kwb KWB_WORKER=$k/bin/kwb-worker; mkdir -p $HOME
if [[ " $stages " == *" focus "* ]]; then
  (command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer; /usr/local/cuda/bin/compute-sanitizer --help) > $r/compute-sanitizer-help.txt 2>&1
  mkdir -p $r/sanitizer-logs
  KWB_SANITIZER_LOG_DIR=$r/sanitizer-logs timeout 120 $k/bin/tst_gpu_sanitize uninitializedScratchIsReported > $r/focus-sanitize.txt 2>&1
  echo "focus sanitize exit $?" | tee -a $r/summary.txt
  timeout 240 $k/bin/tst_gpu_eval memoizedHistogramFailsOnRelabelledInputs hostLauncherIsCorrectAndTimed workLeftRunningIsNotRewarded \
    hostWorkIsTimed sideStreamWorkIsCounted persistingL2DoesNotOutliveASample allowedLibraryStillWorks > $r/focus-eval.txt 2>&1
  echo "focus eval exit $?" | tee -a $r/summary.txt
  grep -h "^Totals\|^FAIL" $r/focus-*.txt | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" sanitize "* ]]; then
  mkdir -p $r/sanitizer-logs
  KWB_SANITIZER_LOG_DIR=$r/sanitizer-logs timeout 240 $k/bin/tst_gpu_sanitize > $r/sanitize.txt 2>&1
  echo "tst_gpu_sanitize exit $?" | tee -a $r/summary.txt
  grep -h "^Totals\|^FAIL" $r/sanitize.txt | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" tests "* ]]; then
  timeout $(( $(left) - 20 )) bash $k/run-on-gpu.sh $r > $r/run-on-gpu.log 2>&1; echo "run-on-gpu exit $?" | tee -a $r/summary.txt
  for t in $r/tst_gpu_*.txt; do printf "%-22s %s\n" "$(basename $t .txt)" "$(grep -h '^Totals' $t)"; done | tee -a $r/summary.txt
  grep -h "^FAIL\|^SKIP" $r/tst_gpu_*.txt | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" launchers "* ]]; then
  for c in small h200; do
    timeout 60 kwb eval $k/kernels/softmax $k/bench/candidates/softmax_launcher.cu --time --config $c --json > $r/launcher-softmax-$c.json 2>$r/launcher-softmax-$c.err
    echo "host launcher softmax $c exit $?" | tee -a $r/summary.txt
    timeout 60 kwb eval $k/kernels/softmax --time --config $c --json > $r/starter-softmax-$c.json 2>$r/starter-softmax-$c.err
    echo "device starter softmax $c exit $?" | tee -a $r/summary.txt
  done
  pack
fi
if [[ " $stages " == *" blur "* ]]; then
  s=$(date +%s)
  timeout $(( $(left) - 10 )) kwb lineage $k/kernels/blur --time --config h200 --json > $r/lineage-blur.json 2>$r/lineage-blur.err
  echo "lineage blur exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" lineages "* ]]; then
  for t in ${LINEAGES:-histogram layernorm transpose gemm-bf16}; do
    [ $(left) -gt 40 ] || break
    l=$(( $(left) - 20 )); [ $l -gt ${LINEAGE_LIMIT:-150} ] && l=${LINEAGE_LIMIT:-150}
    s=$(date +%s)
    timeout $l kwb lineage $k/kernels/$t --time --config h200 --json > $r/lineage-$t.json 2>$r/lineage-$t.err
    echo "lineage $t exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt
    pack
  done
fi
if [[ " $stages " == *" gate "* ]]; then
  timeout 120 $k/bench/ipc_launch_latency $r/ipc-launch-latency.json > $r/ipc-launch-latency.txt 2>&1
  echo "ipc_launch_latency exit $?" | tee -a $r/summary.txt
  cat $r/ipc-launch-latency.txt | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" agent "* ]]; then
  # Issue 16: the starter the agent test measures first, timed as the session times it; an agent
  # session through the replay LLM server on the GPU; and its overhead (G = 8, small config).
  timeout 120 $k/bin/kwb eval $k/kernels/softmax --config h200 --time --time-cap 0.5 > $r/agent-starter-eval.txt 2>&1
  echo "kwb eval softmax h200 exit $?" | tee -a $r/summary.txt; tail -4 $r/agent-starter-eval.txt | tee -a $r/summary.txt
  [ -f $r/tst_gpu_agent.txt ] || { timeout 300 $k/bin/tst_gpu_agent -o $r/tst_gpu_agent.txt,txt -o -,txt > $r/tst_gpu_agent.log 2>&1;
    echo "tst_gpu_agent exit $?" | tee -a $r/summary.txt; grep -h "^Totals\|^FAIL\|^QDEBUG\|^QINFO" $r/tst_gpu_agent.txt | tee -a $r/summary.txt; }
  timeout $(( $(left) - 10 )) $k/bin/kwb-bench-agent-overhead -G 8 --groups ${AGENT_GROUPS:-2} --config ${AGENT_CONFIG:-small} \
    --json $r/agent-overhead.json > $r/agent-overhead.txt 2>&1
  echo "kwb-bench-agent-overhead exit $?" | tee -a $r/summary.txt
  cat $r/agent-overhead.txt | tail -8 | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" gemm "* ]]; then
  # gemm-bf16's lineage at 8192^3 a step at a time (all ten did not finish in 220 s): what finished comes back.
  for n in ${GEMM_STEPS:-1 2 3 4 5 6 7 8 9 10}; do
    [ $(left) -gt 30 ] || break
    l=$(( $(left) - 15 )); [ $l -gt 150 ] && l=150
    s=$(date +%s)
    timeout $l kwb lineage $k/kernels/gemm-bf16 --step $n --time --config h200 --json > $r/lineage-gemm-bf16-step$n.json 2>$r/lineage-gemm-bf16-step$n.err
    echo "lineage gemm-bf16 step $n exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt
    pack
  done
fi
if [[ " $stages " == *" ncu "* ]]; then
  timeout $(( $(left) - 5 )) bash $k/bench/profile_agreement.sh $r/ncu --tasks softmax --config h200 --set default > $r/ncu.log 2>&1
  echo "profile_agreement exit $?" | tee -a $r/summary.txt
  pack
fi
