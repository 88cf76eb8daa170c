#!/usr/bin/env bash
# Issue 22 on the GPU machine, inside an unpacked bundle (pack-bundle.sh): workers through a real
# sshd on loopback against the real GPU (tst_gpu_remote), then the hostile candidates
# (tst_gpu_eval) and the pool (tst_gpu_pool) after the worker changes. Results go to $1.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$PWD/gpu-results}
mkdir -p "$out"
source "$here/env.sh"
export KWB_KERNELS_DIR="$here/kernels" KWB_CLI="$here/bin/kwb" KWB_WORKER="$here/bin/kwb-worker" HOME=${HOME:-/tmp}
export KWB_BENCH_COMMIT=$(cat "$here/COMMIT")
if [ "$(id -u)" = 0 ] && ! id sshd > /dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd 2>/dev/null ||
    echo "sshd:x:105:65534::/run/sshd:/usr/sbin/nologin" >> /etc/passwd
fi
mkdir -p /run/sshd 2>/dev/null
status=0
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) commit: $(cat "$here/COMMIT")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
} | tee "$out/machine.txt"
for t in tst_gpu_remote tst_gpu_pool tst_gpu_eval; do
  start=$(date +%s%N)
  "$here/bin/$t" -o "$out/$t.txt,txt" -o -,txt > "$out/$t.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "$t: exit $rc in $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/machine.txt"
  grep -E "^(PASS|FAIL|SKIP|Totals)" "$out/$t.txt" | tail -40
done
exit $status
