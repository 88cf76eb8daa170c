#!/usr/bin/env bash
# Issue 20 on the H200: exports built and run there as exported, without the workbench. The window
# times softmax's starter (a real run, stored in a fresh workspace); kwb export turns that run into
# a CUDA package (CMake builds it, its test checks it against the task's reference and times it), a
# PyTorch extension (setup.py builds it; its test checks it and times it beside torch.softmax) and a
# report (the kernel and the starter profiled). Then, for TASKS, the lineage's last step exported
# both ways, built and run the same. Everything comes back in $OUT/results20.tgz (the packages'
# sources, logs and results; no build folders).
#   TASKS="softmax layernorm ..." [SKIP_RUN=1] bash tests/gpu/issue20-check.sh OUT [LIMIT_S]
#   (with .bundle/kwb.tar.xz from tests/gpu/pack-bundle.sh)
set -uo pipefail
out=$1; limit=${2:-560}; mkdir -p /tmp/run "$out"
started=$(date +%s)
left() { echo $(( limit - ($(date +%s) - started) )); }
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xf "$(ls .bundle/kwb.tar.* | head -1)"
k=/tmp/run/kwb; r=/tmp/res20; mkdir -p $r
pack() { tar -C /tmp --exclude='build' --exclude='*.so' --exclude='__pycache__' -czf $out/results20.tgz res20; }
# The exported packages are built with the machine's own tools: none of the bundle's libraries.
plain() { env -u LD_LIBRARY_PATH -u QT_PLUGIN_PATH -u QT_QPA_FONTDIR -u FONTCONFIG_FILE "$@"; }
export KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home20 KWB_LIBRARY=$r/library.sqlite; mkdir -p $HOME
{
  echo "commit $(cat $k/COMMIT), $(date -u +%FT%TZ)"
  echo "tools: $(plain cmake --version | head -1); $(plain nvcc --version | tail -1); torch $(plain python3 -c 'import torch; print(torch.__version__)')"
} | tee $r/summary.txt
[ "${SKIP_RUN:-0}" = 1 ] || (
  source $k/env.sh
  timeout 75 $k/bin/kernel-workbench --screenshot $r/window-run.png --screenshot-timeout 60 --then time \
    $k/kernels/softmax > $r/window.log 2>&1
  echo "window run+time of softmax: exit $?" | tee -a $r/summary.txt
)
ws=$HOME/.local/share/kernel-workbench/workspace.kwb
kwb() { (source $k/env.sh && $k/bin/kwb "$@"); }

# A CUDA package: configure, build, run its test.
cuda_check() {  # DIR NAME LABEL
  local d=$1 name=$2 label=$3 s=$(date +%s)
  if plain cmake -S $d -B $d/build > $d/build.log 2>&1 && plain cmake --build $d/build -j 16 >> $d/build.log 2>&1; then
    plain timeout 120 $d/build/test_$name --samples 20 > $d/test.txt 2>&1
    echo "$label cuda: built; test exit $? in $(( $(date +%s) - s )) s: $(tail -1 $d/test.txt)" | tee -a $r/summary.txt
    grep -h "kernel .* ms" $d/test.txt | sed "s/^/    /" | tee -a $r/summary.txt
  else
    echo "$label cuda: BUILD FAILED (see $d/build.log)" | tee -a $r/summary.txt; tail -5 $d/build.log
  fi
}
# A PyTorch extension: setup.py build_ext --inplace, then its test (which imports what was built).
torch_check() {  # DIR NAME LABEL
  local d=$1 name=$2 label=$3 s=$(date +%s)
  if (cd $d && MAX_JOBS=16 plain timeout 300 python3 setup.py build_ext --inplace > build.log 2>&1); then
    (cd $d && plain timeout 120 python3 test/test_$name.py --samples 20 --json results.json > test.txt 2>&1)
    echo "$label torch: built; test exit $? in $(( $(date +%s) - s )) s: $(tail -1 $d/test.txt)" | tee -a $r/summary.txt
    grep -h "kernel .* ms\|against" $d/test.txt | sed "s/^/    /" | tee -a $r/summary.txt
  else
    echo "$label torch: BUILD FAILED (see $d/build.log)" | tee -a $r/summary.txt; tail -5 $d/build.log
  fi
}

# From the window's run (run 1 of the fresh workspace); SKIP_RUN=1 leaves this part out.
if [ "${SKIP_RUN:-0}" != 1 ]; then
kwb export run:1 --task $k/kernels/softmax --to $r/run-cuda --workspace $ws > $r/export-run.txt 2>&1
echo "export run:1 cuda: exit $?" | tee -a $r/summary.txt
cuda_check $r/run-cuda softmax "softmax run 1"
pack
kwb export run:1 --task $k/kernels/softmax --to $r/run-torch --format torch --workspace $ws >> $r/export-run.txt 2>&1
torch_check $r/run-torch softmax "softmax run 1"
pack
kwb export run:1 --task $k/kernels/softmax --to $r/run-report --format report --profile --workspace $ws >> $r/export-run.txt 2>&1
echo "export run:1 report (profiled): exit $?; $(ls $r/run-report 2>/dev/null | tr '\n' ' ')" | tee -a $r/summary.txt
pack
fi

# Each task's last lineage step, both ways.
for t in ${TASKS:-softmax layernorm reduce-sum transpose histogram blur sgemm gemm-bf16}; do
  [ "$(left)" -gt 90 ] || { echo "$t: skipped (time)" | tee -a $r/summary.txt; continue; }
  step=$(ls $k/kernels/$t/lineage/*.cu | sort | tail -1)
  id=$(echo $t | tr -- - _)
  kwb export $step --task $k/kernels/$t --to $r/$t-cuda > $r/export-$t.txt 2>&1 || { echo "$t: export failed"; cat $r/export-$t.txt; }
  cuda_check $r/$t-cuda $id "$t $(basename $step)"
  pack
  [ "$(left)" -gt 90 ] || continue
  kwb export $step --task $k/kernels/$t --to $r/$t-torch --format torch >> $r/export-$t.txt 2>&1
  torch_check $r/$t-torch $id "$t $(basename $step)"
  pack
done
echo "done in $(( $(date +%s) - started )) s" | tee -a $r/summary.txt
pack
