#!/usr/bin/env bash
# Timing fidelity and repeatability of `kwb eval --time`, per bundled kernel and configuration:
#
#   spread     REPEATS (5) separate `kwb eval TASK --config C --time --json` runs; per kernel
#              (the starter candidate and the reference) the (max - min) / median of their
#              medians. Target: <= 2% for kernels over 50 us.
#   agreement  our median (the median of those medians) against Nsight Compute's
#              gpu__time_duration.sum for the same kernel, launch and inputs, measured on
#              kwb-bench-kernel-runner (ncu --clock-control none; ncu's default cache control
#              flushes caches before each profiled kernel, as our timing flushes L2). The ratio
#              ours / ncu per kernel. Target: within ±5%.
#
#   bench/ncu_agreement.sh OUTDIR [--tasks "softmax sgemm"] [--repeats 5] [--time-cap S]
#                                 [--launches N] [--warmup W] [--name STEM]
#
# Finds its programs on $PATH (the bundle's env.sh puts bin/ there) or under $KWB_BUILD_DIR
# (a build tree); override with $KWB, $KWB_RUNNER, $NCU. Tasks are looked up under
# $KWB_KERNELS_DIR (else the bundle's or source tree's kernels/). Writes OUTDIR/STEM.json and
# OUTDIR/STEM.txt (the table), raw outputs under OUTDIR/STEM-raw/. Exit status: 0 every run
# done (the targets are reported, not enforced), 1 something failed (recorded in the JSON),
# 3 no CUDA device.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [--tasks \"softmax sgemm\"] [--repeats 5] [--time-cap S] [--launches N] [--warmup W] [--name STEM]" >&2; exit 2; }
out=$1; shift
tasks="softmax sgemm"; repeats=5; timecap=2; launches=20; warmup=5; name=ncu_agreement
while [ $# -gt 0 ]; do
  case $1 in
    --tasks) tasks=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --time-cap) timecap=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    *) echo "$0: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
raw="$out/$name-raw"
rm -rf "$raw"; mkdir -p "$raw"

source "$here/find_programs.sh"
python3 -c 'import json, csv, statistics' || { echo "$0: python3 is needed to read the results" >&2; exit 2; }

# No device: say so and stop (nothing to compare).
if ! "$kwb" devices --json > "$raw/devices.json" 2> "$raw/devices.err" ||
   ! python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("devices") else 1)' "$raw/devices.json"; then
  problem=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("problem",""))' "$raw/devices.json" 2>/dev/null)
  echo "ncu_agreement: no CUDA device${problem:+ ($problem)}: nothing measured" >&2
  printf '{"error": "no CUDA device", "problem": %s}\n' "$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$problem")" > "$out/$name.json"
  exit 3
fi

status=0
for task in $tasks; do
  tdir="$kernels/$task"
  configs=$("$kwb" task show "$tdir" --json | python3 -c 'import json,sys; print(" ".join(c["name"] for c in json.load(sys.stdin)["configs"]))') || {
    echo "$0: cannot read task $tdir" >&2; status=1; continue; }
  for config in $configs; do
    echo "$task $config" >> "$raw/order.txt"
    for r in $(seq 1 "$repeats"); do
      "$kwb" eval "$tdir" --config "$config" --seed 1 --time --time-cap "$timecap" --json \
        > "$raw/eval-$task-$config-$r.json" 2> "$raw/eval-$task-$config-$r.err"
      echo $? > "$raw/eval-$task-$config-$r.status"
    done
    if [ -n "$ncu" ]; then
      "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
        --log-file "$raw/ncu-$task-$config.csv" \
        "$runner" "$tdir" --config "$config" --launches "$launches" --warmup "$warmup" \
        --json "$raw/runner-$task-$config.json" > "$raw/runner-$task-$config.txt" 2>&1
      echo $? > "$raw/ncu-$task-$config.status"
    fi
    echo "$task $config: done" >&2
  done
done

python3 - "$raw" "$out/$name.json" "$tasks" "$repeats" "$timecap" "$launches" "$warmup" "${ncu:-}" <<'PY' | tee "$out/$name.txt"
import csv, datetime, glob, io, json, os, re, socket, statistics, sys
raw, out_json, tasks, repeats, timecap, launches, warmup, ncu = sys.argv[1:9]
repeats, warmup = int(repeats), int(warmup)

def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default

UNITS_MS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3, "s": 1e3}

def ncu_times(path):
    """Kernel name -> [milliseconds] in launch order, from ncu --csv output."""
    text = read(path, "")
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    times = {}
    if start is None:
        return times
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        scale = UNITS_MS.get(row.get("Metric Unit", "").strip(), None)
        if scale is None:
            continue
        times.setdefault(row.get("Kernel Name", ""), []).append(value * scale)
    return times

rows, failures, device = [], [], ""
for line in (read(os.path.join(raw, "order.txt"), "") or "").splitlines():
    task, config = line.split()
    medians = {"candidate": [], "reference": []}
    stops, timers, statuses, errors = [], [], [], []
    for r in range(1, repeats + 1):
        base = os.path.join(raw, "eval-%s-%s-%d" % (task, config, r))
        st = (read(base + ".status", "") or "").strip()
        statuses.append(int(st) if st.lstrip("-").isdigit() else None)
        try:
            j = json.loads(read(base + ".json", "") or "null")
        except ValueError:
            j = None
        if not j:
            errors.append("run %d: no JSON (exit %s): %s" % (r, st, (read(base + ".err", "") or "").strip()[-300:]))
            continue
        device = device or j.get("device", "")
        timing = (j.get("configs") or [{}])[0].get("timing") or {}
        if not timing.get("ok"):
            errors.append("run %d: %s: %s" % (r, j.get("outcome"), timing.get("error") or j.get("message")))
            continue
        for role in medians:
            medians[role].append(timing[role]["median_ms"])
        stops.append(timing.get("stop_reason"))
        timers.append(timing.get("timer"))
    runner = {}
    try:
        runner = json.loads(read(os.path.join(raw, "runner-%s-%s.json" % (task, config)), "") or "{}")
    except ValueError:
        pass
    ncu_status = (read(os.path.join(raw, "ncu-%s-%s.status" % (task, config)), "") or "").strip()
    theirs = ncu_times(os.path.join(raw, "ncu-%s-%s.csv" % (task, config))) if ncu else {}
    if ncu and not theirs:  # an ncu that wrote its report to stdout rather than --log-file
        theirs = ncu_times(os.path.join(raw, "runner-%s-%s.txt" % (task, config)))
    kernel_names = {k["role"]: k["kernel"] for k in runner.get("kernels", [])}
    for role in ("candidate", "reference"):
        m = medians[role]
        ours = statistics.median(m) if m else None
        spread = (max(m) - min(m)) / ours if m and ours else None
        row = {"task": task, "config": config, "role": role, "kernel": kernel_names.get(role),
               "our_medians_ms": m, "our_median_ms": ours, "spread": spread,
               "spread_target": None, "stop_reasons": stops, "timers": timers, "eval_exit_statuses": statuses,
               "ncu_median_ms": None, "ncu_launches": 0, "ratio": None, "agreement_target": None,
               "errors": list(errors)}
        if spread is not None:
            row["spread_target"] = ("met" if spread <= 0.02 else "MISSED") if ours > 0.05 else "n/a (<= 50 us)"
        if not ncu:
            row["errors"].append("ncu not found: no agreement figure")
        elif ncu_status != "0":
            row["errors"].append("ncu run failed (exit %s); see %s" % (ncu_status, "runner-%s-%s.txt / ncu-%s-%s.csv" % (task, config, task, config)))
        name = kernel_names.get(role)
        if ncu and name:
            series = next((v for k, v in theirs.items() if k == name or k.startswith(name + "(")), [])
            measured = series[warmup:] if len(series) > warmup else series
            row["ncu_launches"] = len(measured)
            if measured:
                row["ncu_median_ms"] = statistics.median(measured)
                row["ncu_min_ms"] = min(measured)
                if ours:
                    row["ratio"] = ours / row["ncu_median_ms"]
                    row["agreement_target"] = "met" if abs(row["ratio"] - 1) <= 0.05 else "MISSED"
            elif ncu_status == "0":
                row["errors"].append("no gpu__time_duration.sum rows for kernel %s in the ncu output" % name)
        if row["errors"]:
            failures.append("%s %s %s: %s" % (task, config, role, "; ".join(row["errors"])))
        rows.append(row)

report = {
    "meta": {"program": "ncu_agreement.sh", "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "commit": os.environ.get("KWB_BENCH_COMMIT", "unknown"), "host": socket.gethostname(), "gpu": device,
             "ncu": ncu or None},
    "settings": {"repeats": repeats, "kwb_eval": "kwb eval TASK --config C --seed 1 --time --time-cap %s --json" % timecap,
                 "ncu": "ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base "
                        "kwb-bench-kernel-runner TASK --config C --launches %s --warmup %d" % (launches, warmup),
                 "ncu_warmup_launches_dropped": warmup},
    "definitions": {"our_median_ms": "median of the REPEATS medians of kwb eval --time",
                    "spread": "(max - min) / median of the REPEATS medians; target <= 2% for kernels over 50 us",
                    "ratio": "our_median_ms / ncu_median_ms; target within 5%"},
    "rows": rows, "failures": failures}
with open(out_json, "w") as f:
    json.dump(report, f, indent=2)

def ms(v):
    return "-" if v is None else ("%.2f us" % (v * 1e3) if v < 1 else "%.3f ms" % v)
table = [["task", "config", "role", "kernel", "ours (median of %d)" % repeats, "spread", "spread target", "ncu median", "ours/ncu", "agreement"]]
for r in rows:
    table.append([r["task"], r["config"], r["role"], r["kernel"] or "-", ms(r["our_median_ms"]),
                  "-" if r["spread"] is None else "%.2f%%" % (100 * r["spread"]), r["spread_target"] or "-",
                  ms(r["ncu_median_ms"]), "-" if r["ratio"] is None else "%.3f" % r["ratio"], r["agreement_target"] or "-"])
w = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
print("Timing fidelity on %s (commit %s): kwb eval --time vs ncu gpu__time_duration.sum" % (device or "?", report["meta"]["commit"]))
for n, row in enumerate(table):
    print("  ".join(c.ljust(x) for c, x in zip(row, w)).rstrip())
    if n == 0:
        print("-" * (sum(w) + 2 * (len(w) - 1)))
for f in failures:
    print("problem: " + f)
sys.exit(1 if failures else 0)
PY
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
exit $status
