#!/usr/bin/env bash
# Fuzzes the task manifest parser (core/task/manifest_parser.cpp, toml++ under it) with
# libFuzzer: tests/fuzz/fuzz_manifest.cpp under AddressSanitizer and UBSan, corpus seeded from
# the bundled manifests (kernels/*/task.toml and kernels/*/lineage/lineage.toml).
#
#   tests/fuzz/fuzz-manifest.sh                 run 60 s
#   tests/fuzz/fuzz-manifest.sh --seconds 600   run 10 minutes
#   tests/fuzz/fuzz-manifest.sh --runs 30000    a fixed number of inputs (what CI runs: ctest
#                                               tst_fuzz_manifest)
#
# Environment: CXX (default clang++-14, else clang++), FUZZ_DIR (default build-fuzz-manifest in the
# source tree: the binary, the growing corpus and any crash-* file). Built with NDEBUG, as the
# workbench is, so toml++'s own debug assertions do not stop it; undefined behaviour still does.
# Exit status: 0 without a finding; 2 without clang; libFuzzer's status otherwise (replay the
# input with $FUZZ_DIR/fuzz_manifest $FUZZ_DIR/crash-...).
set -euo pipefail

mode=(-max_total_time=60)
case "${1:-}" in
  --seconds) mode=(-max_total_time="$2") ;;
  --runs) mode=(-runs="$2") ;;
  "") ;;
  *) echo "usage: fuzz-manifest.sh [--seconds N | --runs N]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${FUZZ_DIR:-$root/build-fuzz-manifest}"
cxx="${CXX:-}"
if [[ -z "$cxx" ]]; then
  if command -v clang++-14 >/dev/null; then cxx=clang++-14; else cxx=clang++; fi
fi
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz-manifest: $cxx not found; install clang (Debian 12: apt-get install clang-14)" >&2
  exit 2
fi

mkdir -p "$dir/corpus"
binary="$dir/fuzz_manifest"
sources=(core/task/manifest_parser.cpp core/task/toml_shape.cpp core/task/task.cpp core/task/expression.cpp
         core/task/source_file.cpp core/text/printable.cpp)
newest=$(cd "$root" && ls -t tests/fuzz/fuzz_manifest.cpp "${sources[@]}" core/task/*.h core/lineage/lineage.h | head -1)
if [[ ! -x "$binary" || "$root/$newest" -nt "$binary" ]]; then
  echo "fuzz-manifest: building $binary with $cxx"
  (cd "$root" && "$cxx" -std=c++20 -g -O1 -DNDEBUG -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root" tests/fuzz/fuzz_manifest.cpp "${sources[@]}" -o "$binary")
fi

# Seeds: every bundled manifest, named after its task.
for f in "$root"/kernels/*/task.toml; do cp "$f" "$dir/corpus/seed-$(basename "$(dirname "$f")")-task.toml"; done
for f in "$root"/kernels/*/lineage/lineage.toml; do
  cp "$f" "$dir/corpus/seed-$(basename "$(dirname "$(dirname "$f")")")-lineage.toml"
done

echo "fuzz-manifest: running (${mode[*]}, corpus $dir/corpus)"
cd "$dir"
status=0
# -seed fixed for --runs, so CI's run is the same every time.
seed=()
[[ "${mode[0]}" == -runs=* ]] && seed=(-seed=1)
"$binary" "${mode[@]}" "${seed[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 corpus || status=$?
if [[ $status -eq 0 ]]; then
  echo "fuzz-manifest: no crash, leak, undefined behaviour or stray exception"
else
  echo "fuzz-manifest: libFuzzer stopped with status $status; see $dir/crash-* (replay: $binary FILE)" >&2
fi
exit $status
