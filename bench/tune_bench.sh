#!/usr/bin/env bash
# The autotuner on the GPU machine (issue 5): for each bundled task with tunables (or those named),
#   1. exhaustive `kwb tune` with compile-ahead, from a cold compile cache;
#   2. the same without compile-ahead (--no-compile-ahead), again from a cold compile cache;
#   3. random sampling plus local search with a third of the space as budget;
# then a table of points evaluated per minute (1 against 2) and the best point found within the
# budget against the exhaustive best (3 against 1).
#   bench/tune_bench.sh OUTDIR PREFIX [TASK...]     (KWB_TUNE_CONFIG, default h200; KWB_TUNE_TIME_CAP, default 0.3)
# Writes OUTDIR/PREFIX-tune-TASK-{ahead,serial,budget}.json and PREFIX-tune.json / PREFIX-tune.txt.
set -uo pipefail
out=$1 prefix=$2; shift 2
kernels=${KWB_KERNELS_DIR:?KWB_KERNELS_DIR names the kernels folder}
config=${KWB_TUNE_CONFIG:-h200}
cap=${KWB_TUNE_TIME_CAP:-0.3}
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || mapfile -t tasks < <(cd "$kernels" && grep -l '^\[tunables\]' */task.toml | cut -d/ -f1)
mkdir -p "$out"
for t in "${tasks[@]}"; do
  for mode in ahead serial; do
    cold=$(mktemp -d)
    flags=(--no-cache --config "$config" --time-cap "$cap" --json)
    [ $mode = serial ] && flags+=(--no-compile-ahead)
    echo "== $t $mode"
    XDG_CACHE_HOME=$cold kwb tune "$kernels/$t" "${flags[@]}" > "$out/$prefix-tune-$t-$mode.json" 2> "$out/$prefix-tune-$t-$mode.log"
    rm -rf "$cold"
  done
  size=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["space_size"])' "$out/$prefix-tune-$t-ahead.json")
  budget=$(( (size + 2) / 3 )); [ $budget -lt 2 ] && budget=2
  echo "== $t budget $budget of $size"
  kwb tune "$kernels/$t" --no-cache --config "$config" --time-cap "$cap" --strategy random-local --budget $budget --json \
    > "$out/$prefix-tune-$t-budget.json" 2> "$out/$prefix-tune-$t-budget.log"
done
python3 - "$out" "$prefix" "${tasks[@]}" <<'PY'
import json, sys
out, prefix, tasks = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = []
def load(t, mode):
    try:
        return json.load(open(f"{out}/{prefix}-tune-{t}-{mode}.json"))
    except Exception as e:
        return {"error": str(e)}
def best(j):
    b = j.get("best")
    return (b["objective_ms"], b["label"]) if b else (None, None)
for t in tasks:
    a, s, b = load(t, "ahead"), load(t, "serial"), load(t, "budget")
    row = {"task": t, "points": len(a.get("points", [])), "space": a.get("space_size")}
    for key, j in (("ahead", a), ("serial", s)):
        n, sec = len(j.get("points", [])), j.get("seconds", 0)
        row[f"{key}_seconds"] = sec
        row[f"{key}_per_min"] = 60 * n / sec if sec else None
    row["compiled_ahead"] = a.get("compiled_ahead")
    row["exhaustive_best_ms"], row["exhaustive_best"] = best(a)
    row["budget"] = b.get("budget")
    row["budget_best_ms"], row["budget_best"] = best(b)
    rows.append(row)
lines = ["task        points  ahead/min  serial/min  gain   exhaustive best             budget  budget best (x of exhaustive)"]
for r in rows:
    f = lambda v, p=1: "—" if v is None else f"{v:.{p}f}"
    gain = r["ahead_per_min"] / r["serial_per_min"] if r.get("ahead_per_min") and r.get("serial_per_min") else None
    ratio = r["budget_best_ms"] / r["exhaustive_best_ms"] if r["budget_best_ms"] and r["exhaustive_best_ms"] else None
    lines.append(f"{r['task']:<11} {r['points']:>6}  {f(r['ahead_per_min']):>9}  {f(r['serial_per_min']):>10}  {f(gain, 2):>5}  "
                 f"{f(r['exhaustive_best_ms'], 4):>9} ms {str(r['exhaustive_best']):<15} {str(r['budget']):>6}  "
                 f"{f(r['budget_best_ms'], 4)} ms ({f(ratio, 3)})")
text = "\n".join(lines)
print(text)
open(f"{out}/{prefix}-tune.txt", "w").write(text + "\n")
json.dump(rows, open(f"{out}/{prefix}-tune.json", "w"), indent=2)
PY
