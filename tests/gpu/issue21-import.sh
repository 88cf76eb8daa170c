#!/usr/bin/env bash
# Issue 21's measurement on the H200: ten level-1-style KernelBench problems
# (tests/bench/kernelbench-level1) each imported with `kwb import kernelbench` and its candidate
# evaluated and timed on the problem's own sizes (`kwb eval --config kernelbench --time`): the time
# from the import's start to the first timed verdict, per problem. Then `kwb suite` over the ten
# (the correctness rate and fast_p over PyTorch). Results in OUT/res21i.
#   bash tests/gpu/issue21-import.sh OUT [LIMIT_S]   (with .bundle/kwb.tar.xz from pack-bundle.sh)
set -uo pipefail
out=$1; limit=${2:-560}; mkdir -p /tmp/run "$out"
started=$(date +%s)
left() { echo $(( limit - ($(date +%s) - started) )); }
[ -d /tmp/run/kwb ] || tar -C /tmp/run -xf "$(ls .bundle/kwb.tar.* | head -1)"
k=/tmp/run/kwb; r=$out/res21i; mkdir -p $r
printf '#!/bin/sh\nexec env -u LD_LIBRARY_PATH -u QT_PLUGIN_PATH python3 "$@"\n' > /tmp/run/python-plain
chmod +x /tmp/run/python-plain
export KWB_PYTHON=/tmp/run/python-plain KWB_KERNELS_DIR=$k/kernels HOME=/tmp/home21i KWB_WORKER=$k/bin/kwb-worker \
  KWB_PYTHON_DIR=${KWB_PYTHON_DIR:-$k/python} KWB_TEST_OUTPUT_DIR=/tmp/test21i
mkdir -p $HOME
source $k/env.sh
[ -z "${TWINS:-}" ] || { mkdir -p /tmp/test21i; timeout 120 $k/bin/tst_gpu_torch $TWINS 2>&1 | grep -E "^(PASS|FAIL|Totals)|Loc" | tee $r/twins.txt; }
b=tests/bench/kernelbench-level1
tasks=/tmp/tasks21; rm -rf $tasks
echo "commit $(cat $k/COMMIT), $(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name --format=csv,noheader)" | tee $r/summary.txt
printf "%-14s %8s %8s %8s %8s  %s\n" problem import_s eval_s total_s outcome "timing" | tee -a $r/summary.txt
for p in $b/problems/*.py; do
  name=$(basename $p .py)
  [ "$(left)" -gt 40 ] || { echo "$name: skipped, out of time" | tee -a $r/summary.txt; continue; }
  t0=$(date +%s.%N)
  $k/bin/kwb import kernelbench $p --to $tasks > $r/import-$name.txt 2>&1; ist=$?
  t1=$(date +%s.%N)
  timeout $(( $(left) - 10 )) $k/bin/kwb eval $tasks/$name $b/candidates/$name.cu --config kernelbench --time \
    --time-cap 1 --json > $r/eval-$name.json 2> $r/eval-$name.log; est=$?
  t2=$(date +%s.%N)
  summary=$(/tmp/run/python-plain - $r/eval-$name.json <<'EOF'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("no result", e); sys.exit()
c = (j.get("configs") or [{}])[0]
t, p = c.get("timing") or {}, c.get("torch") or {}
cand = (t.get("candidate") or {}).get("median_ms", 0)
print(f"{j.get('outcome')} cand {cand:.4f} ms, eager {p.get('eager_ms', 0):.4f} ms ({p.get('speedup_eager', 0):.2f}x), "
      f"compile {p.get('compiled_ms', 0):.4f} ms ({p.get('speedup_compiled', 0):.2f}x)"
      + ("" if j.get("outcome") == "correct" else " -- " + str(j.get("message"))[:200]))
EOF
)
  printf "%-14s %8.1f %8.1f %8.1f %8s  %s\n" $name $(awk "BEGIN{print $t1-$t0}") $(awk "BEGIN{print $t2-$t1}") $(awk "BEGIN{print $t2-$t0}") \
    "i$ist/e$est" "$summary" | tee -a $r/summary.txt
done
if [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 10 )) $k/bin/kwb suite $tasks --candidates $b/candidates --config kernelbench --out $r/suite.json \
    > $r/suite.txt 2>&1
  echo "suite: exit $?" | tee -a $r/summary.txt; cat $r/suite.txt | tee -a $r/summary.txt
fi
tar -C /tmp -czf $r/tasks21.tgz tasks21 2>/dev/null
# Few files travel back: everything but the summary in one archive.
tar -C $out -czf $out/res21i.tgz res21i && find $r -type f ! -name summary.txt -delete
