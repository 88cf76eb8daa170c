#!/usr/bin/env bash
# On a machine with a GPU, a gpu test function that skips has tested nothing: QtTest counts it as
# passed, so this fails the run instead. Reads QtTest's plain-text outputs (-o FILE,txt) and
# prints every SKIP line but those whose reason is this machine's shape: one GPU where two are
# needed, or a case for machines without a GPU ("this machine has a GPU", "... a CUDA device").
# Exit 0: no other skip; 1: some.
#   tests/gpu/check-skips.sh RESULT.txt...
set -uo pipefail
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
status=0
for f in "$@"; do
  [ -f "$f" ] || continue
  while IFS= read -r line; do
    case "$line" in
      *"one GPU here: spreading needs two or more"*) [ "$gpus" -lt 2 ] && continue ;;
      *"this machine has a GPU"* | *"this machine has a CUDA device"*) [ "$gpus" -ge 1 ] && continue ;;
    esac
    echo "$(basename "$f" .txt): $line"
    status=1
  done < <(grep -a '^SKIP   : ' "$f")
done
exit $status
