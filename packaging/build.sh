#!/usr/bin/env bash
# Installs the dependencies (packaging/install-deps.sh) and builds into ./build (or $KWB_BUILD_DIR).
#   packaging/build.sh                 everything: programs, tests, benchmarks
#   packaging/build.sh TARGET...       only these targets and what they need
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KWB_BUILD_DIR:-$root/build}
"$root/packaging/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ $# -gt 0 ]; then
  cmake --build "$build" -j "$(nproc)" --target "$@"
else
  cmake --build "$build" -j "$(nproc)"
fi
