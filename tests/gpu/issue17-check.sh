#!/usr/bin/env bash
# Issue 17 on the H200: every gpu test (their device code now compiled by the sandboxed compile
# service), tst_compile_service in that machine's sandbox and kernel, kwb-bench-compile-latency
# (the service against NVRTC in process) and kwb-bench-eval-latency (the warm figures must stay
# within 10% of tests/bench/results/2026-12-02-h200-f9de0f8-eval-latency.txt). Stage "bisect":
# the compile service's cost on the H200 (0.081 s a compile against 0.012 s in process at 410e286)
# with each of its limits lifted in turn, to find which one costs it; stage "probe": the service
# started directly (no namespaces) with its fence, seccomp and limits lifted one at a time, and
# its own figures (wall, CPU, faults inside it) for each (bench/compile_service_probe.py).
#   STAGES="tests service compile latency" bash tests/gpu/issue17-check.sh OUT [LIMIT_S]
#   (with .bundle/kwb.tar.xz from tests/gpu/pack-bundle.sh)
# Results are packed after each stage, so a run cut short still brings back what it did.
set -uo pipefail
out=$1; limit=${2:-560}; mkdir -p /tmp/run "$out"
started=$(date +%s)
left() { echo $(( limit - ($(date +%s) - started) )); }
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xf "$(ls .bundle/kwb.tar.* | head -1)"
k=/tmp/run/kwb; r=/tmp/res17; mkdir -p $r
pack() { tar -C /tmp --exclude='*cache*' --exclude='*.cubin' -czf $out/results17.tgz res17; }
stages=${STAGES:-tests service compile latency}
source $k/env.sh
export KWB_BENCH_COMMIT=$(cat $k/COMMIT)
export KWB_TEST_OUTPUT_DIR=$r/test-output KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home KWB_CLI=$k/bin/kwb KWB_WORKER=$k/bin/kwb-worker; mkdir -p $HOME
if [[ " $stages " == *" service "* ]]; then
  timeout 300 $k/bin/tst_compile_service > $r/tst_compile_service.txt 2>&1
  echo "tst_compile_service exit $?: $(grep -h '^Totals' $r/tst_compile_service.txt)" | tee -a $r/summary.txt
  grep -h "^FAIL\|^SKIP" $r/tst_compile_service.txt | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" compile "* ]]; then
  timeout 300 $k/bin/kwb-bench-compile-latency --runs 10 --json $r/compile-latency.json > $r/compile-latency.txt 2>&1
  echo "compile-latency exit $?" | tee -a $r/summary.txt; tail -14 $r/compile-latency.txt | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" tests "* ]]; then
  timeout $(( $(left) - 20 )) bash $k/run-on-gpu.sh $r > $r/run-on-gpu.log 2>&1; echo "run-on-gpu exit $?" | tee -a $r/summary.txt
  for t in $r/tst_gpu_*.txt; do printf "%-22s %s\n" "$(basename $t .txt)" "$(grep -h '^Totals' $t)"; done | tee -a $r/summary.txt
  grep -h "^FAIL\|^SKIP" $r/tst_gpu_*.txt | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" probe "* ]]; then
  timeout 120 python3 $k/bench/compile_service_probe.py $k/bin/kwb-worker $k/kernels/softmax/softmax.cu softmax \
    --runs 12 --json $r/compile-service-probe.json 2>&1 | tee -a $r/summary.txt
  pack
fi
if [[ " $stages " == *" bisect "* ]]; then
  for v in default KWB_COMPILE_MEMORY_MB=1000000 KWB_SANDBOX=none; do
    e=(); [ "$v" = default ] || e=("$v")
    echo "== $v" | tee -a $r/summary.txt
    env "${e[@]}" timeout 120 $k/bin/kwb-bench-compile-latency --runs 5 2>&1 | tail -12 | tee -a $r/summary.txt
  done
  pack
fi
if [[ " $stages " == *" latency "* ]]; then
  s=$(date +%s)
  timeout $(( $(left) - 15 )) $k/bin/kwb-bench-eval-latency --cold 1 --warm 4 --time-cap 1 --out $r/eval-latency.json > $r/eval-latency.txt 2>$r/eval-latency.err
  echo "eval-latency exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt; cat $r/eval-latency.txt | tee -a $r/summary.txt
  pack
fi
