# Sourced by the benchmark scripts that compare with Nsight Compute (ncu_agreement.sh,
# profile_agreement.sh): sets kwb, runner (kwb-bench-kernel-runner), ncu (empty when absent) and
# kernels, and exports KWB_WORKER, from $PATH (the bundle's env.sh puts bin/ there) or
# $KWB_BUILD_DIR (a build tree); $KWB, $KWB_RUNNER, $NCU and $KWB_KERNELS_DIR override. Exits 2
# naming what it cannot find. Expects $here: the calling script's folder.
find_program() {  # NAME BUILD_RELATIVE_PATH
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"
  elif [ -n "${KWB_BUILD_DIR:-}" ] && [ -x "$KWB_BUILD_DIR/$2" ]; then echo "$KWB_BUILD_DIR/$2"
  fi
}
kwb=${KWB:-$(find_program kwb app/cli/kwb)}
runner=${KWB_RUNNER:-$(find_program kwb-bench-kernel-runner bench/kwb-bench-kernel-runner)}
if [ -z "${KWB_WORKER:-}" ] && [ -n "${KWB_BUILD_DIR:-}" ] && [ -x "$KWB_BUILD_DIR/app/worker/kwb-worker" ]; then
  export KWB_WORKER="$KWB_BUILD_DIR/app/worker/kwb-worker"
fi
ncu=${NCU:-}
if [ -z "$ncu" ]; then
  ncu=$(command -v ncu 2>/dev/null || true)
  for c in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/NVIDIA-Nsight-Compute*/ncu; do
    [ -z "$ncu" ] && [ -x "$c" ] && ncu=$c
  done
fi
kernels=${KWB_KERNELS_DIR:-}
if [ -z "$kernels" ]; then
  for c in "$here/../kernels" "$here/../../kernels"; do [ -d "$c/softmax" ] && { kernels=$(cd "$c" && pwd); break; }; done
fi
for need in kwb runner kernels; do
  [ -n "${!need}" ] || { echo "$0: cannot find $need (set KWB_BUILD_DIR, or run from the bundle after env.sh)" >&2; exit 2; }
done
