#!/usr/bin/env bash
# On the GPU machine: tst_gpu_eval's hang test under watch. After the 5 s timeout kills the worker,
# the next evaluation hung for the rest of QtTest's 300 s on the H200 (2026-12-03): what state are
# the processes in? ps (state, kernel wait channel) and nvidia-smi every 10 s while it runs.
#   bash tests/gpu/hang-diagnosis.sh OUT [SECONDS]   (after issue15-check.sh unpacked the bundle)
out=$1; limit=${2:-90}
k=/tmp/run/kwb; source $k/env.sh
export KWB_TEST_OUTPUT_DIR=/tmp/res15/test-output KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home KWB_CLI=$k/bin/kwb KWB_WORKER=$k/bin/kwb-worker
QTEST_FUNCTION_TIMEOUT=$(( limit * 1000 )) timeout $(( limit + 10 )) $k/bin/tst_gpu_eval hangIsATimeoutAndTheNextRunWorks > $out/hang-test.txt 2>&1 &
pid=$!
for i in $(seq 1 $(( limit / 10 ))); do
  sleep 10
  { echo "== $(( i * 10 )) s"; ps -eo pid,ppid,pgid,stat,etimes,wchan:32,args --forest | grep -v "ps -eo\|grep" | grep -i "kwb\|tst_\|unshare\|bwrap"
    nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv 2>&1
    nvidia-smi --query-gpu=utilization.gpu,compute_mode --format=csv 2>&1
    for q in $(pgrep -f "tst_gpu_eval|kwb-worker"); do echo "-- threads of $q: $(tr '\0' ' ' < /proc/$q/cmdline | cut -c1-80)"
      for t in /proc/$q/task/*; do echo "  $(basename $t) $(cat $t/comm) $(awk '{print $3}' $t/stat) $(cat $t/wchan)"; done; done; } >> $out/hang-ps.txt 2>&1
  kill -0 $pid 2>/dev/null || break
done
wait $pid; echo "hang test exit $?" >> $out/hang-ps.txt
for p in $(pgrep -f kwb-worker); do echo "== stack of $p"; cat /proc/$p/stack 2>&1; cat /proc/$p/status | grep -i "state\|threads"; done >> $out/hang-ps.txt 2>&1
