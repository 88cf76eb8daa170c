#!/usr/bin/env bash
# Runs every benchmark of bench/README.md on the GPU machine and puts their JSON and tables in
# OUTDIR, each file named DATE-GPU-COMMIT-PART (e.g. 2026-11-30-h200-cf5123b-eval-latency.json).
#
#   bench/run-on-gpu.sh OUTDIR
#
# From an unpacked bundle (tests/gpu/pack-bundle.sh puts this script in kwb/bench/), or from a
# source tree with KWB_BUILD_DIR naming a build (default <repo>/build). Each part runs under its
# own time bound (about 8 minutes in all on an H200); a part that fails or runs out of time is
# recorded in DATE-GPU-COMMIT-summary.json and the others still run. Exit status: 0 when every
# part succeeded, 1 otherwise.
set -uo pipefail
benchdir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # not "here": env.sh sets that
root=$(cd "$benchdir/.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
mkdir -p "$1" && out=$(cd "$1" && pwd)

if [ -f "$root/env.sh" ]; then          # the bundle: bin/, lib/, kernels/, bench/, COMMIT
  source "$root/env.sh"
  export KWB_WORKER="$root/bin/kwb-worker"
else                                    # a source tree and its build
  build=${KWB_BUILD_DIR:-$root/build}
  export KWB_BUILD_DIR=$build KWB_WORKER="$build/app/worker/kwb-worker"
  export PATH="$build/app/cli:$build/bench:$PATH"
fi
export KWB_KERNELS_DIR="$root/kernels" HOME=${HOME:-/tmp}

commit=$(cat "$root/COMMIT" 2>/dev/null || git -C "$root" describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)
export KWB_BENCH_COMMIT=$commit
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
[ -n "$gpu" ] || gpu=$(kwb devices --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin)["devices"]; print(d[0]["name"] if d else "")' 2>/dev/null)
slug=$(echo "${gpu:-no-gpu}" | tr '[:upper:]' '[:lower:]' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\+/-/g' -e 's/^-//' -e 's/-$//')
prefix="$(date -u +%F)-$slug-$commit"
echo "bench: $gpu, commit $commit, results in $out/$prefix-*"

parts=()  # name|exit|seconds|limit
summary() {
  python3 - "$out/$prefix-summary.json" "$prefix" "$gpu" "$commit" "${parts[@]}" <<'PY'
import datetime, json, sys
path, prefix, gpu, commit, *parts = sys.argv[1:]
rows = []
for p in parts:
    name, code, seconds, limit = p.split("|")
    code = int(code)
    rows.append({"part": name, "exit_status": code, "seconds": float(seconds), "time_bound_s": int(limit),
                 "timed_out": code in (124, 137), "ok": code == 0,
                 "files": [prefix + "-" + name + ext for ext in (".json", ".txt", ".log")]})
json.dump({"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "gpu": gpu, "commit": commit, "prefix": prefix, "parts": rows}, open(path, "w"), indent=2)
PY
}
# part NAME LIMIT_SECONDS COMMAND...: stdout (the table) to PREFIX-NAME.txt and the terminal,
# stderr to PREFIX-NAME.log; stopped after LIMIT_SECONDS.
part() {
  local name=$1 limit=$2; shift 2
  # KWB_BENCH_ONLY="a b": run only the parts named there.
  if [ -n "${KWB_BENCH_ONLY:-}" ] && [[ " $KWB_BENCH_ONLY " != *" $name "* ]]; then
    echo "== $name: skipped (KWB_BENCH_ONLY=$KWB_BENCH_ONLY)"
    return
  fi
  local start end code
  echo "== $name (at most ${limit}s): $*"
  start=$(date +%s.%N)
  timeout -k 10 "$limit" "$@" 2> "$out/$prefix-$name.log" | tee "$out/$prefix-$name.txt"
  code=${PIPESTATUS[0]}
  end=$(date +%s.%N)
  local seconds
  seconds=$(python3 -c "print(round($end - $start, 1))")
  [ "$code" -eq 124 ] || [ "$code" -eq 137 ] && echo "== $name: stopped at its time bound (${limit}s)"
  echo "== $name: exit $code after ${seconds}s"
  parts+=("$name|$code|$seconds|$limit")
  summary
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $commit"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1
  kwb --version
  kwb devices
} > "$out/$prefix-devices.txt" 2>&1
kwb devices --json > "$out/$prefix-devices.json" 2>/dev/null

part eval-latency 200 kwb-bench-eval-latency --cold 2 --warm 4 --time-cap 1 --config small --config wide --out "$out/$prefix-eval-latency.json"
part ncu-agreement 170 bash "$benchdir/ncu_agreement.sh" "$out" --name "$prefix-ncu-agreement" --repeats 5 --time-cap 2 \
  --launches 20 --warmup 5
part eval-throughput 45 kwb-bench-eval-throughput softmax --config small --candidates 12 --threads 2 --time-cap 0.3 \
  --out "$out/$prefix-eval-throughput.json"
part multi-gpu 150 kwb-bench-eval-multi-gpu --candidates 32 --time-cap 0.3 --out "$out/$prefix-multi-gpu.json"
part suite 540 bash "$benchdir/suite.sh" "$out" "$prefix"
part load-inline 110 python3 "$benchdir/load_inline_latency.py" "$out" --out-name "$prefix-load-inline.json" --timeout 95

echo
echo "parts (exit status, seconds):"
status=0
for p in "${parts[@]}"; do
  IFS='|' read -r name code seconds limit <<< "$p"
  printf '  %-16s %4s %8ss\n' "$name" "$code" "$seconds"
  [ "$code" -eq 0 ] || status=1
done
echo "summary: $out/$prefix-summary.json"
exit $status
