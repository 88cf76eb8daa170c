#!/usr/bin/env bash
# Installs PyTorch into a Python virtual environment of its own, for the parts of the workbench
# that read PyTorch modules without a GPU: `kwb import kernelbench` / `kwb import torch` (the
# reader builds the module and runs forward on PyTorch's meta device, reads the weights' values on
# the CPU) and the starter writer (torch.fx), and for their tests. A PyTorch reference runs on the
# GPU machine's own PyTorch; this one needs no GPU. Not part of the default install
# (install-deps.sh): the README's test command runs it.
# Idempotent: a rerun with torch in place is a quick check and changes nothing.
#   packaging/install-torch.sh        install (or check) the venv, then print its python
# Environment:
#   KWB_TORCH_VENV    the venv (default ~/.local/share/kernel-workbench/torch-venv)
#   KWB_TORCH_PYTHON  the Python that creates it (default /usr/bin/python3, else python3)
# PyPI's torch wheel for Linux brings its CUDA libraries (about 5 GB on disk); it runs on a
# machine without a GPU.
set -euo pipefail

venv="${KWB_TORCH_VENV:-$HOME/.local/share/kernel-workbench/torch-venv}"
if [ -n "${KWB_TORCH_PYTHON:-}" ]; then python="$KWB_TORCH_PYTHON"
elif [ -x /usr/bin/python3 ]; then python=/usr/bin/python3
else python=python3; fi
vpy="$venv/bin/python"

say() { echo "install-torch: $*"; }
die() { echo "install-torch: error: $*" >&2; exit 1; }

# einops: KernelBench's own requirement (its Mamba2 problems import it).
torch_ok() { "$vpy" -c 'import torch, torch.fx, numpy, einops; torch.zeros(1, device="meta")' >/dev/null 2>&1; }

if [ -x "$vpy" ] && torch_ok; then
  say "PyTorch $("$vpy" -c 'import torch; print(torch.__version__)') in $venv"
  echo "$vpy"
  exit 0
fi
if [ -x "$vpy" ]; then  # a venv from before: what it lacks (einops, or torch itself) is added
  say "completing $venv (torch, numpy, einops from PyPI)"
else
  say "creating $venv and installing torch from PyPI (a few minutes, about 5 GB)"
  "$python" -m venv "$venv" || die "could not create the venv $venv (python3-venv is installed by packaging/install-deps.sh)"
fi
"$vpy" -m pip install --quiet --disable-pip-version-check torch numpy einops ||
  die "pip could not install torch into $venv (see the messages above; PyPI must be reachable)"
torch_ok || die "torch installed into $venv but does not import (try: $vpy -c 'import torch')"
say "PyTorch $("$vpy" -c 'import torch; print(torch.__version__)') in $venv"
echo "$vpy"
