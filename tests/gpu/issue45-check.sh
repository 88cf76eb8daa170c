#!/usr/bin/env bash
# Issue 45 on the GPU machine, in two device calls of under 10 minutes each. Inside the unpacked
# test bundle (pack-bundle.sh) at $KWB_BUNDLE (default /tmp/kwb):
#   part a: the gpu suites that run longest (the agent's sanitizer gate with a racy kernel, the
#           hostile candidates, PyTorch, compute-sanitizer, card application);
#   part b: every other gpu suite, the compile service's latency (kwb-bench-compile-latency), and
#           the relocatable bundle unpacked under $HOME and /tmp with host launchers and
#           --sanitize (issue45-bundle.sh, with .relbundle/ in the working tree).
# Every part fails when a suite fails or a gpu test function skips (check-skips.sh).
#   bash tests/gpu/issue45-check.sh OUT a|b
set -uo pipefail
out=$1; part=$2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kwb=${KWB_BUNDLE:-/tmp/kwb}
mkdir -p "$out"
long="tst_gpu_agent tst_gpu_eval tst_gpu_torch tst_gpu_sanitize tst_gpu_card_application"
status=0
case $part in
  a) suites=$long ;;
  b) suites=$(cd "$kwb/bin" && for t in tst_gpu_*; do [[ " $long " == *" $t "* ]] || printf '%s ' "$t"; done) ;;
  *) echo "issue45-check: part a or b" >&2; exit 2 ;;
esac
echo "part $part: $suites" | tee "$out/part.txt"
KWB_GPU_SUITES="$suites" bash "$kwb/run-on-gpu.sh" "$out" > "$out/run-on-gpu.log" 2>&1 || status=1
if [ "$part" = b ]; then
  (source "$kwb/bundle-env.sh" && cd "$out" &&
     "$kwb/bin/kwb-bench-compile-latency" --runs 10 --json compile-latency.json > compile-latency.txt 2>&1) || status=1
  (cd "$repo" && bash tests/gpu/issue45-bundle.sh "$out") > "$out/bundle45.log" 2>&1 || status=1
fi
echo "issue45-check part $part: exit $status" | tee -a "$out/part.txt"
exit $status
