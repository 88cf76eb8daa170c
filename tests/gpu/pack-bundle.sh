#!/usr/bin/env bash
# Packs the programs and GPU tests of a build, with their libraries and the bundled kernels,
# into one tarball that runs on the GPU machine (see run-on-gpu.sh).
#   tests/gpu/pack-bundle.sh BUILD_DIR OUT.tar.gz
set -euo pipefail
build=$1; tarball=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundler=${GPU_BUNDLE:-$root/../shared/tools/gpu-bundle.sh}
stage=$(mktemp -d)
"$bundler" "$stage/kwb" "$build/app/cli/kwb" "$build/app/worker/kwb-worker" \
  "$build/app/gui/kernel-workbench" $(find "$build/tests" -maxdepth 1 -type f -name 'tst_gpu_*' -perm -u+x)
cp -r "$root/kernels" "$stage/kwb/kernels"
cp "$root/tests/gpu/run-on-gpu.sh" "$stage/kwb/"
mkdir -p "$(dirname "$tarball")"
tar -C "$stage" -czf "$tarball" kwb
rm -rf "$stage"
ls -lh "$tarball"
