#!/usr/bin/env bash
# Packs the programs and GPU tests of a build, with their libraries and the bundled kernels,
# into one tarball that runs on the GPU machine (see run-on-gpu.sh); tst_compile_service too, to see
# the compile service work in that machine's sandbox and kernel.
#   tests/gpu/pack-bundle.sh BUILD_DIR OUT.tar.xz
set -euo pipefail
build=$1; tarball=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bundler=${GPU_BUNDLE:-$root/../shared/tools/gpu-bundle.sh}
stage=$(mktemp -d)
slurm_programs="/usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/slurmstepd /usr/bin/srun /usr/bin/salloc /usr/bin/squeue /usr/bin/scancel /usr/bin/sinfo /usr/bin/scontrol"
# KWB_BUNDLE_TESTS="tst_gpu_remote tst_remote_workers": only kwb, kwb-worker and those tests (a
# bundle small enough to travel beside the working tree); unset: every GPU test, the GUI, benches.
if [ -n "${KWB_BUNDLE_TESTS:-}" ]; then
  # (A kwb-bench-* name among them is the benchmark program of that name.)
  programs="$build/app/cli/kwb $build/app/worker/kwb-worker $(for t in $KWB_BUNDLE_TESTS; do
    case $t in kwb-bench-*) echo "$build/bench/$t" ;; *) echo "$build/tests/$t" ;; esac; done)"
else
  programs="$build/app/cli/kwb $build/app/worker/kwb-worker $build/app/gui/kernel-workbench
    $(find "$build/tests" -maxdepth 1 -type f -name 'tst_gpu_*' -perm -u+x)
    $build/tests/tst_compile_service $build/tests/tst_slurm_workers $build/tests/tst_remote_workers
    $(find "$build/bench" -maxdepth 1 -type f -name 'kwb-bench-*' -perm -u+x 2>/dev/null)"
fi
"$bundler" "$stage/kwb" $programs \
  $(for p in /usr/sbin/sshd /usr/bin/ssh /usr/bin/ssh-keygen $slurm_programs; do [ -x "$p" ] && echo "$p"; done)
# (tst_slurm_workers and tst_remote_workers: the bundle's Slurm and sshd without a GPU, for
# emulate-device.sh's rehearsal.)
# (OpenSSH's server and client: tst_gpu_remote runs workers through a real sshd on loopback
# there. As root sshd wants its privilege-separation user: bundle-env.sh adds it.)
# Debian's Slurm and munge too: tst_gpu_remote starts a one-node cluster there whose GPU is the
# machine's own. Slurm loads its plugins at run time from a folder its configuration names
# (bundle-env.sh exports it as KWB_SLURM_PLUGIN_DIR): all of them, with what they link.
slurmplugins=/usr/lib/x86_64-linux-gnu/slurm-wlm
if [ -d "$slurmplugins" ] && [ -x /usr/sbin/slurmd ]; then
  mkdir -p "$stage/kwb/slurm-plugins"
  cp -L "$slurmplugins"/*.so "$stage/kwb/slurm-plugins/"
  ldd "$slurmplugins"/*.so 2>/dev/null | awk '$2=="=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
    # As the shared bundler: not the C library family, nor the driver's or the toolkit's own
    # (a plugin for NVML would bring this machine's libnvidia-ml over the GPU machine's).
    [[ $name =~ ^(libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|ld-linux|libcuda|libnvidia|libnvrtc|libcupti|libcudart|libcublas|libnvJitLink|libnvperf) ]] && continue
    [ -e "$stage/kwb/lib/$name" ] || cp -L "$path" "$stage/kwb/lib/$name"
  done
fi
# What the shared bundler leaves out but the GUI wants for a faithful screenshot: the SVG icon
# and image plugins (the toolbar and tree icons are SVG) and the bold and mono DejaVu faces.
qtplugins=$(dirname "$(dirname "$(find /usr/lib -path '*qt6/plugins/platforms/libqoffscreen.so' | head -n1)")")
for plugin in iconengines/libqsvgicon.so imageformats/libqsvg.so; do
  mkdir -p "$stage/kwb/plugins/$(dirname "$plugin")"
  cp -L "$qtplugins/$plugin" "$stage/kwb/plugins/$plugin"
  ldd "$qtplugins/$plugin" | awk '$2=="=>" && $3 ~ /libQt6Svg/ {print $3}' | xargs -r -I{} cp -Ln {} "$stage/kwb/lib/"
done
# Graphviz's dot layout is a plugin it loads at run time (the Experience view's graph): the core
# and dot plugins, their config, and the libraries they need; GVBINDIR points Graphviz at them.
gvdir=$(dirname "$(find /usr/lib -name 'libgvplugin_dot_layout.so.6' | head -n1)")
mkdir -p "$stage/kwb/graphviz"
cp -L "$gvdir"/libgvplugin_core.so.6 "$gvdir"/libgvplugin_dot_layout.so.6 "$stage/kwb/graphviz/"
cp -L "$gvdir"/config6* "$stage/kwb/graphviz/"  # the plugins it names but the bundle lacks are never asked for
ldd "$gvdir"/libgvplugin_core.so.6 "$gvdir"/libgvplugin_dot_layout.so.6 | awk '$2=="=>" && $3 ~ /lib(gvc|cgraph|cdt|pathplan|ltdl|expat)/ {print $3}' |
  sort -u | xargs -r -I{} cp -Ln {} "$stage/kwb/lib/"
echo 'export GVBINDIR="$here/graphviz"' >> "$stage/kwb/env.sh"
cp -L /usr/share/fonts/truetype/dejavu/DejaVuSans*.ttf "$stage/kwb/fonts/" 2>/dev/null || true
cp -r "$root/kernels" "$stage/kwb/kernels"
cp -r "$root/resources/prompts" "$stage/kwb/prompts"
cp -r "$root/resources/python" "$stage/kwb/python"
strip --strip-debug "$stage/kwb/bin/"*   # debug info would push the bundle past what travels
cp "$root/tests/gpu/run-on-gpu.sh" "$root/tests/gpu/bundle-env.sh" "$root/tests/gpu/issue22-remote.sh" "$root/tests/gpu/check-skips.sh" "$stage/kwb/"
# The benchmarks (bench/README.md): their scripts and candidates beside the programs, and the
# commit they were built from (bench/run-on-gpu.sh names its result files with it).
mkdir -p "$stage/kwb/bench"
cp "$root/bench/run-on-gpu.sh" "$root/bench/ncu_agreement.sh" "$root/bench/find_programs.sh" "$root/bench/load_inline_latency.py" \
  "$root/bench/suite.sh" "$root/bench/tune_bench.sh" "$root/bench/profile_agreement.sh" "$root/bench/suite_report.py" "$root/bench/torch_baselines.py" "$root/bench/compile_service_probe.py" \
  "$root/bench/README.md" "$stage/kwb/bench/"
cp -r "$root/bench/candidates" "$stage/kwb/bench/candidates"
# The standalone experiments (bench/README.md), built with the toolkit's nvcc where there is one.
if command -v nvcc > /dev/null; then
  nvcc -O2 -arch=sm_90 -o "$stage/kwb/bench/ipc_launch_latency" "$root/bench/experiments/ipc_launch_latency.cu" -lcuda ||
    echo "pack-bundle: ipc_launch_latency did not build" >&2
fi
git -C "$root" describe --always --dirty --abbrev=7 > "$stage/kwb/COMMIT" 2>/dev/null || echo unknown > "$stage/kwb/COMMIT"
mkdir -p "$(dirname "$tarball")"
# The suffix picks the compression: .tar.xz keeps the bundle under what a device call carries (64 MiB).
XZ_OPT=${XZ_OPT:--T2 -6} tar -C "$stage" -caf "$tarball" kwb
rm -rf "$stage"
ls -lh "$tarball"
