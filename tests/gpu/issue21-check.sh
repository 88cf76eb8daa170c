#!/usr/bin/env bash
# Issue 21 on the H200: PyTorch references. tst_gpu_torch (a module that raises, returns the wrong
# shape or does not load; the outputs cache; every bundled task's PyTorch twin giving the CUDA
# reference's verdicts; the speedup over PyTorch), then for TASKS the lineage's last step (the
# expert) evaluated and timed on every configuration with `kwb eval --time`: its speedup over the
# task's CUDA reference and over the PyTorch twin, eager and torch.compile; and
# bench/torch_baselines.py beside it (the same PyTorch ops timed with CUDA events). The results
# (JSON per task, a table, the test's log) come back in OUT/res21.
#   TASKS="softmax ..." [SKIP_TESTS=1] bash tests/gpu/issue21-check.sh OUT [LIMIT_S]
#   (with .bundle/kwb.tar.xz from tests/gpu/pack-bundle.sh)
set -uo pipefail
out=$1; limit=${2:-560}; mkdir -p /tmp/run "$out"
started=$(date +%s)
left() { echo $(( limit - ($(date +%s) - started) )); }
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xf "$(ls .bundle/kwb.tar.* | head -1)"
k=/tmp/run/kwb; r=$out/res21; mkdir -p $r
# PyTorch runs in the machine's own Python, without the bundle's libraries on its path.
printf '#!/bin/sh\nexec env -u LD_LIBRARY_PATH -u QT_PLUGIN_PATH python3 "$@"\n' > /tmp/run/python-plain
chmod +x /tmp/run/python-plain
export KWB_PYTHON=/tmp/run/python-plain KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home21 KWB_CLI=$k/bin/kwb \
  KWB_WORKER=$k/bin/kwb-worker KWB_TEST_OUTPUT_DIR=/tmp/test21
mkdir -p $HOME /tmp/test21
source $k/env.sh
{
  echo "commit $(cat $k/COMMIT), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "torch $(/tmp/run/python-plain -c 'import torch; print(torch.__version__)')"
} | tee $r/summary.txt

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  s=$(date +%s)
  timeout 300 $k/bin/tst_gpu_torch -o $r/tst_gpu_torch.txt,txt > /dev/null 2>&1
  echo "tst_gpu_torch: exit $? in $(( $(date +%s) - s )) s: $(grep '^Totals' $r/tst_gpu_torch.txt)" | tee -a $r/summary.txt
  grep -E "^(FAIL|SKIP|QINFO)" $r/tst_gpu_torch.txt | head -20 | tee -a $r/summary.txt
fi

for t in ${TASKS:-softmax layernorm sgemm gemm-bf16 blur histogram reduce-sum transpose}; do
  [ "$(left)" -gt 60 ] || { echo "$t: skipped, out of time" | tee -a $r/summary.txt; continue; }
  step=$(ls $k/kernels/$t/lineage/*.cu | sort | tail -1)
  s=$(date +%s)
  timeout $(( $(left) - 20 )) $k/bin/kwb eval $k/kernels/$t $step --time --time-cap 1 --json \
    > $r/eval-$t.json 2> $r/eval-$t.log
  echo "$t $(basename $step): exit $? in $(( $(date +%s) - s )) s" | tee -a $r/summary.txt
done

# The table: per task and configuration, the expert against its CUDA reference and PyTorch.
/tmp/run/python-plain - $r > $r/table.txt <<'EOF'
import glob, json, os, sys
r = sys.argv[1]
print(f"{'task':<10} {'config':<8} {'expert ms':>10} {'ref ms':>10} {'vs ref':>7} {'eager ms':>10} {'vs eager':>8} {'compile ms':>10} {'vs compile':>10}")
for f in sorted(glob.glob(os.path.join(r, "eval-*.json"))):
    task = os.path.basename(f)[5:-5]
    try:
        j = json.load(open(f))
    except Exception as e:
        print(f"{task:<10} (no JSON: {e})")
        continue
    for c in j.get("configs", []):
        t, p = c.get("timing") or {}, c.get("torch") or {}
        cand = (t.get("candidate") or {}).get("median_ms", 0)
        ref = (t.get("reference") or {}).get("median_ms", 0)
        line = f"{task:<10} {c['config']:<8} {cand:>10.4f} {ref:>10.4f} {(t.get('speedup') or 0):>7.2f}"
        line += f" {p.get('eager_ms', 0):>10.4f} {p.get('speedup_eager', 0):>8.2f}"
        line += f" {p.get('compiled_ms', 0):>10.4f} {p.get('speedup_compiled', 0):>10.2f}"
        if p.get("compiled_error"): line += "  compile: " + p["compiled_error"][:60]
        print(line)
    if j.get("torch_problem"): print(f"{task:<10} PyTorch not timed: {j['torch_problem']}")
    if j.get("outcome") != "correct": print(f"{task:<10} outcome {j.get('outcome')}: {j.get('message')}")
EOF
cat $r/table.txt | tee -a $r/summary.txt
if [ "$(left)" -gt 40 ]; then
  env -u LD_LIBRARY_PATH timeout $(( $(left) - 10 )) python3 bench/torch_baselines.py $k/kernels --out $r/torch_baselines.json \
    > $r/torch_baselines.txt 2>&1
  echo "torch_baselines: exit $?" | tee -a $r/summary.txt; cat $r/torch_baselines.txt | tee -a $r/summary.txt
fi
