#!/usr/bin/env bash
# Installs everything Kernel Workbench needs to build, run and test on Debian 12.
# Idempotent: run it as often as you like. Run as root (or it uses sudo).
#   packaging/install-deps.sh            build + run + test dependencies
# The CUDA toolkit is not installed here: it is expected at /usr/local/cuda (or $CUDA_HOME).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git file dpkg-dev
  qt6-base-dev qt6-base-dev-tools qt6-charts-dev qt6-svg-dev qt6-qpa-plugins libqt6opengl6-dev
  libqscintilla2-qt6-dev
  libsqlite3-dev sqlite3
  libcurl4-openssl-dev
  libgraphviz-dev graphviz
  nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libxxhash-dev libyaml-dev
  qtkeychain-qt6-dev
  xvfb xauth libgl-dev fonts-dejavu-core
  bubblewrap libseccomp-dev
  openssh-client openssh-server
  slurmctld slurmd slurm-client munge
  python3-pip python3-venv
  clang-14 libclang-rt-14-dev util-linux
  librsvg2-bin appstream desktop-file-utils debootstrap patchelf
)
# Servers the remote-worker tests start themselves, on loopback, with configurations of their own
# (tests/helpers/loopback_sshd.h, one_node_slurm.h). Installing them must not start or enable them
# as this machine's services (an SSH server on port 22, a Slurm node): see below.
test_servers=(openssh-server slurmctld slurmd munge)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  SUDO=sudo
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  servers=()
  for p in "${test_servers[@]}"; do [[ " ${missing[*]} " == *" $p "* ]] && servers+=("$p"); done
  policy=""
  if [ ${#servers[@]} -gt 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    # Debian's maintainer scripts ask policy-rc.d before starting a service: 101 = not allowed.
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
  fi
  status=0
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" || status=$?
  [ -z "$policy" ] || $SUDO rm -f "$policy"
  [ $status -eq 0 ] || exit $status
  if [ ${#servers[@]} -gt 0 ] && [ -d /run/systemd/system ]; then
    for unit in ssh slurmctld slurmd munge; do $SUDO systemctl disable --now "$unit" >/dev/null 2>&1 || true; done
    echo "install-deps: ${servers[*]} installed for the tests, not enabled as services (the tests start their own)"
  fi
else
  echo "install-deps: all ${#packages[@]} Debian packages present"
fi

cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ -x "$cuda/bin/nvcc" ]; then
  echo "install-deps: CUDA toolkit at $cuda: $("$cuda/bin/nvcc" --version | grep -o 'release [0-9.]*')"
  for lib in lib64/libnvrtc.so extras/CUPTI/lib64/libcupti.so:lib64/libcupti.so; do
    found=no
    for candidate in ${lib//:/ }; do [ -e "$cuda/$candidate" ] && found=yes; done
    [ $found = yes ] || echo "install-deps: WARNING: $cuda lacks ${lib%%:*}; compiling or profiling kernels will say so at run time" >&2
  done
elif command -v nvcc >/dev/null; then
  other=$(dirname "$(dirname "$(command -v nvcc)")")
  echo "install-deps: WARNING: no CUDA toolkit at $cuda, but nvcc is on PATH in $other." >&2
  echo "  Build and run with CUDA_HOME=$other so the workbench finds NVRTC and CUPTI there." >&2
else
  echo "install-deps: WARNING: no CUDA toolkit at $cuda (bin/nvcc missing) and no nvcc on PATH." >&2
  echo "  Kernel Workbench builds and runs without it, but cannot compile kernels (no NVRTC, no nvcc)" >&2
  echo "  or profile them (no CUPTI). Install the CUDA toolkit to /usr/local/cuda, or set CUDA_HOME." >&2
fi

# SASS views need nvdisasm (CUBINs, with line information) and cuobjdump (host-launcher
# libraries), which a trimmed toolkit may lack. NVIDIA publishes both on PyPI: take the binaries
# out of their wheels into our own tools folder (findToolkitProgram looks there), leaving the
# toolkit untouched. A newer disassembler reads the CUBINs of an older toolkit.
tools=/usr/local/lib/kernel-workbench/cuda-tools/bin
cuda_tools_wheel_version=13.2.86
for tool in nvdisasm cuobjdump; do
  if [ -x "$cuda/bin/$tool" ] || [ -x "$tools/$tool" ] || command -v "$tool" >/dev/null; then
    echo "install-deps: $tool present"
    continue
  fi
  echo "install-deps: fetching $tool $cuda_tools_wheel_version from PyPI (nvidia-cuda-$tool) into $tools"
  wheeldir=$(mktemp -d)
  if python3 -m pip download -q --no-deps --only-binary=:all: --dest "$wheeldir" \
       "nvidia-cuda-$tool==$cuda_tools_wheel_version"; then
    $SUDO mkdir -p "$tools"
    python3 - "$wheeldir" "$wheeldir/out" "$tool" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    z.extract(next(n for n in z.namelist() if n.endswith("/bin/" + sys.argv[3])), sys.argv[2])
PY
    $SUDO install -m 0755 "$(find "$wheeldir/out" -name "$tool" -type f)" "$tools/$tool"
  else
    echo "install-deps: WARNING: could not fetch $tool; SASS views will say that it is missing" >&2
  fi
  rm -rf "$wheeldir"
done
