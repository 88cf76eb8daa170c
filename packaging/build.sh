#!/usr/bin/env bash
# Installs the dependencies (packaging/install-deps.sh) and builds into ./build (or $KWB_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KWB_BUILD_DIR:-$root/build}
"$root/packaging/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$(nproc)"
