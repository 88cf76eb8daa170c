#!/usr/bin/env bash
# kwb eval --sanitize on every bundled task's starter, on the GPU machine: the time of each
# compute-sanitizer tool per task (issue 15, gap 6), as a table and as JSON.
#   bash tests/gpu/issue15-sanitize.sh OUT [TASK...]   (with .bundle/kwb.tar.gz from pack-bundle.sh)
set -uo pipefail
out=$1; shift; mkdir -p /tmp/run "$out"
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xzf .bundle/kwb.tar.gz
k=/tmp/run/kwb; r=/tmp/res-sanitize; mkdir -p $r
source $k/env.sh
export KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home; mkdir -p $HOME
tasks=("$@"); [ ${#tasks[@]} -gt 0 ] || tasks=($(ls $k/kernels))
printf "%-12s %-8s %9s %9s %9s %9s %9s %s\n" task exit memcheck racecheck initcheck synccheck total summary | tee $r/table.txt
for t in "${tasks[@]}"; do
  [ -f $k/kernels/$t/task.toml ] || continue
  start=$EPOCHREALTIME
  kwb eval $k/kernels/$t --sanitize --json > $r/$t.json 2> $r/$t.err; rc=$?
  python3 - "$r/$t.json" "$t" "$rc" "$(awk "BEGIN{print $EPOCHREALTIME - $start}")" <<'PY' | tee -a $r/table.txt
import json, sys
path, task, rc, total = sys.argv[1:5]
try:
    s = json.load(open(path)).get("sanitize", {})
except Exception as e:
    print(f"{task:12} {rc:8} (no JSON: {e})"); sys.exit()
secs = {x["tool"]: x["seconds"] for x in s.get("reports", [])}
cols = " ".join(f"{secs.get(t, float('nan')):9.1f}" for t in ["memcheck", "racecheck", "initcheck", "synccheck"])
print(f"{task:12} {rc:8} {cols} {float(total):9.1f} {s.get('summary', s.get('problem', ''))}")
PY
done
tar -C /tmp -czf $out/sanitize-results.tgz res-sanitize
