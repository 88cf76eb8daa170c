#!/usr/bin/env bash
# Issue 46 on the GPU machine: every task `kwb import kernelbench` made from KernelBench's levels 1
# and 2 (bench/kernelbench_import.py, here) evaluated with its own starter, `kwb eval TASK STARTER
# --config small` (the problem's own sizes where the import made no small configuration): the
# PyTorch reference computes its outputs with forward run twice on the same inputs (the repeat
# check: "nondeterministic" when the bits differ), then the starter is checked against them (a
# host launcher of naive steps must be correct; an empty kernel is expected to be incorrect).
# Then the gpu suite for module state (tst_gpu_torch) and a timed evaluation and a profile of an
# imported task (the worker's time and profile commands with the new input generator).
#   bash tests/gpu/issue46-check.sh OUT [PART...]     (parts: tasks tests readme; all by default)
# readme: the guide's module with weights (linear_gelu.py, cut from resources/guide/04-pytorch-and-kernelbench.md) through the
# README's own commands on this machine: kwb import torch, then kwb eval of the starter (and --time).
# Needs .relbundle/kernel-workbench-*.tar.* (packaging/make-bundle.sh), .gpu46/tasks.tar.xz (the
# imported tasks, made under /tmp/kbimp) and .gpu46/tests/ (tst_gpu_torch and libQt6Test).
# KWB_JOBS evaluations at a time (default 6); KWB46_TASKS (or a file of them, KWB46_TASKS_FILE):
# the task folders (default all);
# KWB_TIME_LIMIT: kwb eval's --time-limit (default 60 s). Writes OUT/: summary.txt, tasks.jsonl (one result
# per task), one log per failure; exits 1 when a host-launcher starter is not correct, a
# reference failed, or a test failed.
set -uo pipefail
out=$1; shift; mkdir -p "$out"
parts=" ${*:-tasks tests readme} "
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
status=0
place=/tmp/kwb46
rm -rf "$place" && mkdir -p "$place" && tar -C "$place" -xf "$(ls "$repo"/.relbundle/kernel-workbench-*.tar.* | head -1)"
dir=$(ls -d "$place"/kernel-workbench-*)
kwb=$dir/kwb
# The helper scripts from this tree (a fix in resources/python needs no new bundle).
export KWB_PYTHON_DIR=$repo/resources/python
rm -rf /tmp/kbimp && tar -C / -xf "$repo/.gpu46/tasks.tar.xz"
{
  echo "$(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
  echo "python3: $(python3 -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1)"
} | tee "$out/summary.txt"

if [[ $parts == *" tasks "* ]]; then
  evaluate() {  # TASK_FOLDER: one JSON line
    local task=$1 name config
    name=$(basename "$task")
    config=small
    grep -q '^name = "small"' "$task/task.toml" || config=kernelbench
    local start=$(date +%s.%N)
    timeout 900 "$kwb" eval "$task" "$task/$name.cu" --config "$config" --time-limit "${KWB_TIME_LIMIT:-60}" --json > "$OUTDIR/eval-$name.json" 2> "$OUTDIR/eval-$name.err"
    local rc=$?
    python3 - "$task" "$name" "$config" "$rc" "$OUTDIR/eval-$name.json" "$start" <<'EOF'
import json, sys, time, re
task, name, config, rc, path, start = sys.argv[1:]
launcher = "kwb_launch" in open(f"{task}/{name}.cu").read()
try:
    r = json.load(open(path))
except Exception:
    r = {}
text = json.dumps(r)
row = {"task": task.split("/")[-2] + "/" + name, "config": config, "exit": int(rc), "launcher": launcher,
       "outcome": r.get("outcome"), "seconds": round(time.time() - float(start), 1),
       "nondeterministic": "nondeterministic" in text,
       "reference_error": (r.get("outcome") == "error" and "PyTorch reference" in r.get("message", "")),
       "message": (r.get("message") or "")[:300]}
print(json.dumps(row))
EOF
  }
  export -f evaluate
  export kwb OUTDIR="$out/evals"
  mkdir -p "$out/evals"
  start=$(date +%s)
  tasks=${KWB46_TASKS:-/tmp/kbimp/level*/*}
  [ -n "${KWB46_TASKS_FILE:-}" ] && tasks=$(cat "$KWB46_TASKS_FILE")
  ls -d $tasks | xargs -P "${KWB_JOBS:-6}" -I{} bash -c 'evaluate {}' > "$out/tasks.jsonl"
  python3 - "$out/tasks.jsonl" <<'EOF' | tee -a "$out/summary.txt"
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for level in sorted({r["task"].split("/")[0] for r in rows}):
    mine = [r for r in rows if r["task"].startswith(level)]
    launch = [r for r in mine if r["launcher"]]
    empty = [r for r in mine if not r["launcher"]]
    print(f"{level}: {len(mine)} tasks evaluated")
    print(f"  reference ran twice, same bits: {sum(1 for r in mine if not r['nondeterministic'] and not r['reference_error'])}"
          f" / {len(mine)}; nondeterministic: {[r['task'] for r in mine if r['nondeterministic']]}")
    print(f"  reference errors: {[(r['task'], r['message'][:120]) for r in mine if r['reference_error'] and not r['nondeterministic']]}")
    print(f"  host-launcher starters correct: {sum(1 for r in launch if r['outcome'] == 'correct')} / {len(launch)}")
    print(f"    not correct: {[(r['task'], r['outcome'], r['message'][:120]) for r in launch if r['outcome'] != 'correct']}")
    print(f"  empty-kernel starters: {len(empty)} (outcomes {dict(collections.Counter(r['outcome'] for r in empty))})")
    secs = sorted(r["seconds"] for r in mine)
    if secs:
        print(f"  seconds per evaluation: median {secs[len(secs) // 2]}, max {secs[-1]}")
bad = [r for r in rows if (r["launcher"] and r["outcome"] != "correct") or r["reference_error"] or r["nondeterministic"]]
sys.exit(1 if bad else 0)
EOF
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  echo "tasks: $(( $(date +%s) - start )) s with ${KWB_JOBS:-6} at a time" | tee -a "$out/summary.txt"
fi

if [[ $parts == *" tests "* ]]; then
  tests=$repo/.gpu46/tests
  start=$(date +%s)
  env LD_LIBRARY_PATH="$dir/usr/lib:$tests" KWB_WORKER="$dir/usr/bin/kwb-worker" QT_QPA_PLATFORM=offscreen \
    KWB_KERNELS_DIR="$dir/usr/share/kernel-workbench/kernels" KWB_PROMPTS_DIR="$dir/usr/share/kernel-workbench/prompts" \
    QTEST_FUNCTION_TIMEOUT=900000 \
    timeout 420 "$tests/tst_gpu_torch" -o "$out/tst_gpu_torch.txt,txt" > "$out/tst_gpu_torch.log" 2>&1 || status=1
  echo "tst_gpu_torch: $(grep -a '^Totals' "$out/tst_gpu_torch.txt") in $(( $(date +%s) - start )) s" | tee -a "$out/summary.txt"
  bash "$repo/tests/gpu/check-skips.sh" "$out"/tst_gpu_torch.txt | tee -a "$out/summary.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  # The worker's time and profile commands on an imported task with module state.
  t=/tmp/kbimp/level2/12_Gemm_Multiply_LeakyReLU
  if [ -d "$t" ]; then
    timeout 300 "$kwb" eval "$t" "$t/12_Gemm_Multiply_LeakyReLU.cu" --config small --time --json > "$out/time-12.json" 2> "$out/time-12.err"
    echo "kwb eval --time level2/12 (small): exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("outcome"), [(c.get("config"), c.get("median_ms"), (c.get("torch") or {}).get("eager", {}).get("median_ms")) for c in r.get("timing", {}).get("configs", [])] if isinstance(r.get("timing"), dict) else r.get("timing"))' "$out/time-12.json" 2>&1 | head -c 400)" | tee -a "$out/summary.txt"
    timeout 300 "$kwb" profile "$t" "$t/12_Gemm_Multiply_LeakyReLU.cu" --config small > "$out/profile-12.txt" 2>&1
    echo "kwb profile level2/12 (small): exit $?" | tee -a "$out/summary.txt"
  fi
fi
if [[ $parts == *" readme "* ]]; then
  work=/tmp/kwb46-readme; rm -rf "$work"; mkdir -p "$work"
  python3 - "$repo/resources/guide/04-pytorch-and-kernelbench.md" "$work/linear_gelu.py" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"```python\n(# linear_gelu.py\n.*?)```", text, re.S).group(1)
open(sys.argv[2], "w").write(block)
EOF
  (cd "$work" && timeout 300 "$kwb" import torch linear_gelu.py --to tasks) > "$out/readme-import.txt" 2>&1
  echo "README import: exit $? $(grep '^imported' "$out/readme-import.txt")" | tee -a "$out/summary.txt"
  (cd "$work" && timeout 300 "$kwb" eval tasks/linear_gelu tasks/linear_gelu/linear_gelu.cu) > "$out/readme-eval.txt" 2>&1
  rc=$?
  echo "README eval: exit $rc $(grep -m1 -iE 'correct|incorrect|error' "$out/readme-eval.txt")" | tee -a "$out/summary.txt"
  [ $rc = 0 ] || status=1
  (cd "$work" && timeout 300 "$kwb" eval tasks/linear_gelu tasks/linear_gelu/linear_gelu.cu --config small --time) > "$out/readme-time.txt" 2>&1
  echo "README eval --time (small): exit $?" | tee -a "$out/summary.txt"
  cp -r "$work/tasks/linear_gelu" "$out/readme-task" 2>/dev/null
fi
echo "issue46-check: exit $status" | tee -a "$out/summary.txt"
exit $status
