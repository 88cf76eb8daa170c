#!/usr/bin/env bash
# ctest starter_cpu_check: kwb_starter.py's command-line contract (test_starter_cli.py) and its
# launchers run on the CPU against PyTorch (check_starter.py) for a handful of problems that
# together use every kernel of its library, and --nvcc where nvcc is on PATH or in CUDA_HOME.
# Needs Python with torch: $KWB_PYTHON, else ~/.local/share/kernel-workbench/torch-venv, else
# python3; exits 77 (skipped) saying so when none imports torch. The sweep over all of
# KernelBench's level 2 is tests/starter/check_starter.py by hand (tests/starter/README.md).
set -u
here=$(cd "$(dirname "$0")" && pwd)
kb=${KWB_KERNELBENCH_DIR:-$here/../../../shared/kernelbench}
python=
for c in "${KWB_PYTHON:-}" "$HOME/.local/share/kernel-workbench/torch-venv/bin/python" python3; do
  [ -n "$c" ] || continue
  if "$c" -c "import torch" >/dev/null 2>&1; then python=$c; break; fi
done
if [ -z "$python" ]; then
  echo "SKIP: no Python with PyTorch (\$KWB_PYTHON, ~/.local/share/kernel-workbench/torch-venv/bin/python, python3); set KWB_PYTHON to one"
  exit 77
fi
command -v g++ >/dev/null || { echo "SKIP: no g++ for the host emulation"; exit 77; }
nvcc_flag=
if command -v nvcc >/dev/null || [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
  export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
  nvcc_flag=--nvcc
fi
"$python" "$here/test_starter_cli.py" || exit 1
problems=("$here/fixtures/scaled_attention_scores.py" "$here/fixtures/noisy_linear.py")
if [ -d "$kb/level2" ]; then
  for p in 11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm 3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU \
           18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp 28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply \
           89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max 42_ConvTranspose2d_GlobalAvgPool_BiasAdd_LogSumExp_Sum_Multiply; do
    problems+=("$kb/level2/$p.py")
  done
else
  echo "note: no KernelBench copy at $kb (set KWB_KERNELBENCH_DIR): checking the fixture only"
fi
exec "$python" "$here/check_starter.py" $nvcc_flag "${problems[@]}"
