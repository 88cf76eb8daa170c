# Sourced by the scripts that run inside an unpacked bundle (run-on-gpu.sh, issue22-remote.sh):
# the bundle's programs and libraries, where the tests find kwb, kwb-worker and the kernels, the
# commit the benchmarks name, and what the bundle's sshd (tst_gpu_remote) needs run as root.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/env.sh"
export KWB_KERNELS_DIR="$here/kernels" KWB_CLI="$here/bin/kwb" KWB_WORKER="$here/bin/kwb-worker" HOME=${HOME:-/tmp}
# The bundle's Slurm (tst_gpu_remote's one-node cluster) loads its plugins from here.
[ -d "$here/slurm-plugins" ] && export KWB_SLURM_PLUGIN_DIR="$here/slurm-plugins"
export KWB_BENCH_COMMIT=${KWB_BENCH_COMMIT:-$(cat "$here/COMMIT" 2>/dev/null)}
if [ "$(id -u)" = 0 ] && ! id sshd > /dev/null 2>&1; then
  # sshd's privilege-separation user (Ubuntu's image has no OpenSSH server of its own).
  useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd 2>/dev/null ||
    echo "sshd:x:105:65534::/run/sshd:/usr/sbin/nologin" >> /etc/passwd
fi
mkdir -p /run/sshd 2>/dev/null || true
