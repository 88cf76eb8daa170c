#!/usr/bin/env bash
# The profiler against Nsight Compute, and what profiling costs (issue 5), per task:
#
#   agreement  every metric of `kwb profile TASK --config C --set S --json` (CUPTI range
#              profiler in the worker) against `ncu --clock-control none --metrics <the same>`
#              on kwb-bench-kernel-runner (the same candidate, inputs and launch; --launches N
#              --warmup 0, no L2 flush, as our profile pass launches the kernel without one).
#              The difference per metric: points for percentages, the ratio for the rest.
#   overhead   wall seconds of `kwb eval --time` (compile cache warm), of `kwb profile` with the
#              default set and with the detailed set, and of the ncu run; the profiled duration
#              against the timed median.
#
#   bench/profile_agreement.sh OUTDIR [--tasks "softmax sgemm"] [--config h200] [--set default|detailed]
#                                     [--launches 3] [--name STEM]
#
# Programs as bench/ncu_agreement.sh finds them ($PATH after the bundle's env.sh, or
# $KWB_BUILD_DIR). Writes OUTDIR/STEM.json and OUTDIR/STEM.txt (the table), raw outputs under
# OUTDIR/STEM-raw/. Exit status: 0 every run done (differences are reported, not enforced),
# 1 something failed, 3 no CUDA device.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [--tasks \"softmax sgemm\"] [--config h200] [--set default] [--launches 3] [--name STEM]" >&2; exit 2; }
out=$1; shift
tasks="softmax sgemm"; config=h200; set=default; launches=3; name=profile_agreement
while [ $# -gt 0 ]; do
  case $1 in
    --tasks) tasks=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --set) set=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    *) echo "$0: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
raw="$out/$name-raw"
rm -rf "$raw"; mkdir -p "$raw"

source "$here/find_programs.sh"

if ! "$kwb" devices --json > "$raw/devices.json" 2> "$raw/devices.err" ||
   ! python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("devices") else 1)' "$raw/devices.json"; then
  echo "profile_agreement: no CUDA device: nothing measured" >&2
  echo '{"error": "no CUDA device"}' > "$out/$name.json"
  exit 3
fi

wall() {  # OUTFILE command...: runs it, stdout to OUTFILE, stderr to OUTFILE.err, seconds to OUTFILE.wall
  local file=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > "$file" 2> "$file.err"
  echo $? > "$file.status"
  t1=$(date +%s.%N)
  python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$t0" "$t1" > "$file.wall"
}

for task in $tasks; do
  tdir="$kernels/$task"
  echo "== $task $config" >&2
  wall "$raw/eval-$task.json" "$kwb" eval "$tdir" --config "$config" --seed 1 --time --json   # warms the compile cache
  wall "$raw/eval2-$task.json" "$kwb" eval "$tdir" --config "$config" --seed 1 --time --json
  wall "$raw/profile-$task.json" "$kwb" profile "$tdir" --config "$config" --set "$set" --json
  wall "$raw/profile-detailed-$task.json" "$kwb" profile "$tdir" --config "$config" --set detailed --json
  metrics=$(python3 -c 'import json,sys; print(",".join(m["name"] for m in json.load(open(sys.argv[1]))["requested"]))' \
    "$raw/profile-$task.json" 2>/dev/null)
  [ -n "$metrics" ] || metrics=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct
  if [ -n "$ncu" ]; then
    wall "$raw/ncu-$task.csv" "$ncu" --clock-control none --metrics "$metrics" --csv --print-units base \
      "$runner" "$tdir" --config "$config" --which candidate --launches "$launches" --warmup 0 --no-flush
  fi
done

python3 - "$raw" "$out/$name.json" "$tasks" "$config" "$set" "${ncu:-}" <<'PY' | tee "$out/$name.txt"
import csv, datetime, io, json, os, socket, statistics, sys
raw, out_json, tasks, config, mset, ncu = sys.argv[1:7]

def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default

def load(path):
    try:
        return json.loads(read(path) or "null")
    except ValueError:
        return None

def seconds(path):
    try:
        return float(read(path + ".wall").strip())
    except ValueError:
        return None

def ncu_values(path):
    """metric -> [values in launch order] (the candidate kernel only runs), units as printed."""
    lines = read(path).splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    values, units = {}, {}
    if start is None:
        return values, units
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        try:
            v = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        values.setdefault(row["Metric Name"], []).append(v)
        units[row["Metric Name"]] = row.get("Metric Unit", "")
    return values, units

result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
          "host": socket.gethostname(), "config": config, "set": mset, "ncu": ncu or None, "tasks": []}
failed = False
lines = []
for task in tasks.split():
    prof = load(os.path.join(raw, f"profile-{task}.json")) or {}
    detailed = load(os.path.join(raw, f"profile-detailed-{task}.json")) or {}
    ev = load(os.path.join(raw, f"eval2-{task}.json")) or {}
    timing = ((ev.get("configs") or [{}])[0].get("timing") or {})
    timed_ms = (timing.get("candidate") or {}).get("median_ms")
    theirs, units = ncu_values(os.path.join(raw, f"ncu-{task}.csv")) if ncu else ({}, {})
    t = {"task": task, "device": prof.get("device"), "outcome": prof.get("outcome"), "message": prof.get("message"),
         "passes": prof.get("passes"), "detailed_passes": detailed.get("passes"),
         "detailed_outcome": detailed.get("outcome"),
         "seconds": {"eval_time_warm": seconds(os.path.join(raw, f"eval2-{task}.json")),
                     "profile": seconds(os.path.join(raw, f"profile-{task}.json")),
                     "profile_inside_worker": prof.get("seconds"),
                     "profile_detailed": seconds(os.path.join(raw, f"profile-detailed-{task}.json")),
                     "ncu": seconds(os.path.join(raw, f"ncu-{task}.csv")) if ncu else None},
         "timed_median_ms": timed_ms, "metrics": []}
    if prof.get("outcome") != "profiled":
        failed = True
    if ncu and read(os.path.join(raw, f"ncu-{task}.csv.status")).strip() != "0":
        failed = True
        t["ncu_error"] = read(os.path.join(raw, f"ncu-{task}.csv.err"))[-500:]
    for m in prof.get("metrics", []):
        row = {"name": m["name"], "label": m["label"], "unit": m["unit"], "kwb": m["value"]}
        series = theirs.get(m["name"], [])
        if series:
            ref = statistics.median(series)
            row["ncu_median"], row["ncu_launches"], row["ncu_unit"] = ref, len(series), units.get(m["name"])
            if m["unit"] == "%":
                row["difference_points"] = m["value"] - ref
            elif ref:
                row["ratio"] = m["value"] / ref
        t["metrics"].append(row)
        if m["name"] == "gpu__time_duration.sum" and timed_ms:
            t["profiled_over_timed"] = m["value"] / (timed_ms * 1e6)
    result["tasks"].append(t)
    s = t["seconds"]
    f = lambda v, p=2: "—" if v is None else f"{v:.{p}f}"
    lines.append(f"{task} ({config}, {t['device']}): kwb profile --set {mset}: {t['outcome']}, {t['passes']} pass(es); "
                 f"detailed: {t['detailed_outcome']}, {t['detailed_passes']} pass(es)")
    lines.append(f"  {'metric':<52} {'kwb':>12} {'ncu (median)':>14} {'difference':>12}")
    for r in t["metrics"]:
        diff = (f"{r['difference_points']:+.2f} pt" if "difference_points" in r else
                f"x{r['ratio']:.3f}" if "ratio" in r else "—")
        lines.append(f"  {r['name']:<52} {r['kwb']:>12.2f} {f(r.get('ncu_median')):>14} {diff:>12}")
    lines.append(f"  wall seconds: kwb eval --time {f(s['eval_time_warm'])}, kwb profile {f(s['profile'])} "
                 f"(in the worker {f(s['profile_inside_worker'])}), detailed {f(s['profile_detailed'])}, ncu {f(s['ncu'])}")
    if t.get("profiled_over_timed"):
        lines.append(f"  profiled duration / timed median ({f(timed_ms, 4)} ms): {t['profiled_over_timed']:.3f}")
print("\n".join(lines))
json.dump(result, open(out_json, "w"), indent=2)
sys.exit(1 if failed else 0)
PY
