#!/usr/bin/env bash
# One command from a fresh clone: install, build, and run every test (unit, ui, gpu).
# gpu tests skip, saying why, where there is no CUDA device.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KWB_BUILD_DIR:-$root/build}
"$root/packaging/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
