#!/usr/bin/env bash
# Fuzzes the LLM wire-format parsers and decoders (core/llm/wire_format.cpp) with libFuzzer:
# tests/fuzz/fuzz_llm_streams.cpp under AddressSanitizer and UBSan, corpus seeded from the
# recorded streams in tests/fixtures/llm. Not run in CI.
#
#   bench/fuzz-llm.sh [SECONDS]      default 60
#
# Environment: CXX (default clang++-14, else clang++), FUZZ_DIR (default build-fuzz-llm in the
# source tree: the binary, the growing corpus and any crash-* files), FUZZ_JOBS (default 1).
# Exit status: 0 when the run ended without a finding; libFuzzer's status otherwise (the input
# that failed is written to $FUZZ_DIR/crash-* and can be replayed: $FUZZ_DIR/fuzz_llm_streams FILE).
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${FUZZ_DIR:-$root/build-fuzz-llm}"
jobs="${FUZZ_JOBS:-1}"
cxx="${CXX:-}"
if [[ -z "$cxx" ]]; then
  if command -v clang++-14 >/dev/null; then cxx=clang++-14; else cxx=clang++; fi
fi
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz-llm: $cxx not found; install clang (Debian 12: apt-get install clang-14)" >&2
  exit 2
fi

mkdir -p "$dir/corpus"
binary="$dir/fuzz_llm_streams"
echo "fuzz-llm: building $binary with $cxx"
"$cxx" -std=c++20 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$root" \
  "$root/tests/fuzz/fuzz_llm_streams.cpp" "$root/core/llm/wire_format.cpp" "$root/core/llm/llm_types.cpp" \
  -o "$binary"

# Seeds: each recorded stream, with a first byte choosing the cut (see the target's header).
for f in "$root"/tests/fixtures/llm/*.sse "$root"/tests/fixtures/llm/*.ndjson "$root"/tests/fixtures/llm/*.json; do
  [[ -f "$f" ]] || continue
  for b in 0 7 200; do
    { printf "\\$(printf '%03o' "$b")"; cat "$f"; } > "$dir/corpus/seed-$b-$(basename "$f")"
  done
done

echo "fuzz-llm: running for ${seconds}s (corpus $dir/corpus)"
cd "$dir"
status=0
"$binary" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -dict="$root/tests/fuzz/llm.dict" -jobs="$jobs" -workers="$jobs" -print_final_stats=1 \
  corpus || status=$?
if [[ $status -eq 0 ]]; then
  echo "fuzz-llm: no crash, leak or split-dependent result in ${seconds}s"
else
  echo "fuzz-llm: libFuzzer stopped with status $status; see $dir/crash-* (replay: $binary FILE)" >&2
fi
exit $status
