#!/usr/bin/env bash
# Issue 22 on the GPU machine, inside an unpacked bundle (pack-bundle.sh): workers through a real
# sshd on loopback and a one-node Slurm cluster (the bundle's) against the real GPU
# (tst_gpu_remote; tst_slurm_workers and tst_remote_workers, the same without the GPU, in that
# machine's kernel and cgroups), then the hostile candidates
# (tst_gpu_eval), the pool (tst_gpu_pool) and the tuner (tst_gpu_tune) after the worker changes;
# issue 49 runs it for several hosts in one pool (tst_gpu_remote aHostKilledMidBatchFinishesOnTheOther).
# Results go to $1.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$PWD/gpu-results}
mkdir -p "$out"
source "$here/bundle-env.sh"
status=0
suites=${KWB_SUITES:-"tst_slurm_workers tst_remote_workers tst_gpu_remote tst_gpu_pool tst_gpu_tune tst_gpu_eval"}  # KWB_SUITES: a choice of them
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) commit: $(cat "$here/COMMIT")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  # What the one-node Slurm cluster depends on there: the kernel, the cgroup file system and the
  # process's place in it, the user, the host name and its addresses.
  echo "kernel: $(uname -r); /sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup 2>&1); cgroup: $(tr '\n' ' ' < /proc/self/cgroup)"
  echo "user: $(id -un) ($(id -u)); host: $(hostname); addresses: $(hostname -I 2>/dev/null || echo unknown)"
} | tee "$out/machine.txt"
for t in $suites; do
  start=$(date +%s%N)
  "$here/bin/$t" -o "$out/$t.txt,txt" -o -,txt > "$out/$t.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "$t: exit $rc in $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/machine.txt"
  grep -E "^(PASS|FAIL|SKIP|Totals)" "$out/$t.txt" | tail -40
done
# A bundled lineage's times after the worker changes (the figures the User Guide quotes).
"$here/bin/kwb" lineage "$here/kernels/softmax" --time --time-cap 0.3 > "$out/lineage-softmax.txt" 2>&1 ||
  { echo "kwb lineage softmax: exit $?" | tee -a "$out/machine.txt"; status=1; }
tail -15 "$out/lineage-softmax.txt"
# Issue 49: a batch of 64 candidates through ssh workers, one host against two (two sshd servers
# on loopback; one GPU per host, a different one where the machine has two), where it was packed.
if [ -x "$here/bin/kwb-bench-eval-multi-gpu" ]; then
  "$here/bin/kwb-bench-eval-multi-gpu" --hosts-only --candidates 64 --time-cap 0.2 --out "$out/hosts-throughput.json" \
    > "$out/hosts-throughput.txt" 2> "$out/hosts-throughput.log" ||
    { echo "kwb-bench-eval-multi-gpu --hosts: exit $?" | tee -a "$out/machine.txt"; status=1; }
  cat "$out/hosts-throughput.txt"
fi
# A suite skipped whole (no GPU: as in emulate-device.sh's rehearsal) has tested nothing here.
for t in $suites; do
  if grep -q "^SKIP.*::initTestCase()" "$out/$t.txt" 2>/dev/null; then
    echo "$t: skipped whole: $(grep -m1 "^SKIP.*::initTestCase()" "$out/$t.txt" | sed 's/.*initTestCase() //')" | tee -a "$out/machine.txt"
    status=1
  fi
done
# The bundle carries Slurm: its case must have run here, not skipped.
if grep -q "^SKIP.*scancelledSlurmStepIsRunAgain" "$out/tst_gpu_remote.txt" 2>/dev/null; then
  echo "tst_gpu_remote: the Slurm case skipped on the GPU machine" | tee -a "$out/machine.txt"
  status=1
fi
exit $status
