#!/usr/bin/env bash
# The bundled suite on the GPU machine (issue 4): every lineage step of every task (or of the
# tasks named) checked and timed with `kwb lineage --time`, the vendor yardsticks
# (kwb-bench-vendor-baselines: cuBLAS and copy bandwidth; torch_baselines.py: PyTorch), and the
# report (suite_report.py) — all in one run, on the same GPU(s).
#
#   bench/suite.sh OUTDIR PREFIX [TASK...]      (KWB_SUITE_SKIP_VENDOR=1 skips the yardsticks)
#
# Writes OUTDIR/PREFIX-lineage-TASK.json, PREFIX-vendor.json, PREFIX-torch.json, PREFIX-suite.md
# and PREFIX-suite.json. Needs kwb, kwb-bench-vendor-baselines on PATH and KWB_KERNELS_DIR.
set -uo pipefail
benchdir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$1 prefix=$2; shift 2
kernels=${KWB_KERNELS_DIR:?KWB_KERNELS_DIR names the kernels folder}
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || mapfile -t tasks < <(cd "$kernels" && ls -d */ | tr -d / )
status=0
# Where and when, for the report even when the yardsticks are skipped.
python3 - "$out/$prefix-meta.json" <<'PY'
import datetime, json, os, subprocess, sys
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip().splitlines()
json.dump({"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": os.environ.get("KWB_BENCH_COMMIT", "unknown"), "gpu": gpu[0] if gpu else "?", "gpus": len(gpu)},
          open(sys.argv[1], "w"), indent=2)
PY
for t in "${tasks[@]}"; do
  [ -f "$kernels/$t/lineage/lineage.toml" ] || { echo "suite: $t has no lineage"; status=1; continue; }
  echo "== lineage $t"
  kwb lineage "$kernels/$t" --time --time-cap "${KWB_SUITE_TIME_CAP:-1}" --json > "$out/$prefix-lineage-$t.json" \
    2> "$out/$prefix-lineage-$t.log" || status=1
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
for s in j["steps"]:
    print(" ", s["index"], s["title"], s["outcome"], " ".join("%s=%.1fus" % (c["config"], c["median_ms"]*1000) for c in s["configs"] if "median_ms" in c), "" if s["outcome"]=="correct" else s["message"][:300])' \
    "$out/$prefix-lineage-$t.json" || status=1
done
if [ -z "${KWB_SUITE_SKIP_VENDOR:-}" ]; then
  export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64"
  kwb-bench-vendor-baselines --copy-mib 256 --copy-mib 1024 --sgemm 4096,4096,4096 --sgemm 512,512,512 \
    --bf16 8192,8192,8192 --bf16 1024,1024,1024 --out "$out/$prefix-vendor.json" || status=1
  python3 "$benchdir/torch_baselines.py" "$kernels" --out "$out/$prefix-torch.json" || true
fi
python3 "$benchdir/suite_report.py" "$out" "$prefix" > /dev/null || status=1
exit $status
