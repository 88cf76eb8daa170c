#!/usr/bin/env python3
"""KernelBench import coverage (issue 46): every problem file of the given levels through the real
`kwb import kernelbench`, each imported task validated (`kwb task validate`) and its starter compiled
as the evaluator compiles it (`kwb eval TASK STARTER --no-gpu`, nvcc/NVRTC, no GPU needed).

    python3 bench/kernelbench_import.py --kwb BUILD/app/cli/kwb --python PY --to DIR \
        --out FILE.json [-j N] [--no-compile] LEVEL_DIR...

LEVEL_DIR: a folder of problem files (e.g. ../shared/kernelbench/level1); its name is the level's.
PY: a Python with PyTorch (the reader builds each module on the meta device and reads its weights
on the CPU). The tasks are written to DIR/LEVEL/NAME (kept: the GPU checks use them).
Prints a table per level (imported, refused by reason, starters that are host launchers of naive
steps, validated, compiled, import seconds) and writes every problem's row to FILE.json.
Exit status 0 (the numbers are the result), 2 usage error."""
import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time


def run(argv, timeout=900):
    start = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired:
        return -1, "", f"timed out after {timeout} s", time.monotonic() - start


def reason_of(message):
    """A refusal's reason without the file and line: 'PART: why' (up to the fix)."""
    text = re.sub(r"^.*?\.py(:\d+)?: ", "", message)
    return text.split(";")[0][:160]


def one(problem, args, level):
    to = os.path.join(args.to, level)
    row = {"problem": os.path.basename(problem), "level": level}
    code, out, err, seconds = run([args.kwb, "import", "kernelbench", problem, "--to", to, "--force", "--json",
                                   "--python", args.python])
    row["import_seconds"] = round(seconds, 2)
    try:
        outcome = json.loads(out)[0]
    except (ValueError, IndexError):
        row.update(ok=False, reason="no answer: " + (err.strip().splitlines() or ["?"])[-1][:160])
        return row
    row["ok"] = outcome["ok"]
    if not outcome["ok"]:
        row["reason"] = reason_of(outcome["message"])
        row["message"] = outcome["message"]
        return row
    folder = outcome["folder"]
    row.update(folder=folder, configs=outcome["configs"], inputs=outcome["inputs"], outputs=outcome["outputs"])
    row["launcher"] = any("the starter is a host launcher" in w for w in outcome["warnings"])
    row["starter_note"] = next((w for w in outcome["warnings"] if w.startswith("the starter is")), "")
    code, _, err, _ = run([args.kwb, "task", "validate", folder])
    row["validated"] = code == 0
    if code != 0:
        row["validate_error"] = err.strip()[-300:]
    if not args.no_compile:
        starter = os.path.join(folder, outcome["name"] + ".cu")
        code, out, err, seconds = run([args.kwb, "eval", folder, starter, "--no-gpu", "--json"])
        try:
            result = json.loads(out)
            compile_ok = bool(result.get("compile", {}).get("ok", False)) or \
                (result.get("compile") is not None and not result["compile"].get("errors") and
                 not any(d.get("severity") == "error" for d in result["compile"].get("diagnostics", [])))
        except ValueError:
            result, compile_ok = None, False
        row["compiled"] = compile_ok
        row["compile_seconds"] = round(seconds, 2)
        if not compile_ok:
            row["compile_error"] = (err.strip() or out.strip())[-400:]
    return row


def table(rows, level):
    mine = [r for r in rows if r["level"] == level]
    ok = [r for r in mine if r["ok"]]
    reasons = collections.Counter(r["reason"] for r in mine if not r["ok"])
    seconds = [r["import_seconds"] for r in mine]
    print(f"\n{level}: imported {len(ok)} / {len(mine)} ({100.0 * len(ok) / max(len(mine), 1):.0f}%)")
    print(f"  starters: {sum(1 for r in ok if r.get('launcher'))} host launchers of naive steps, "
          f"{sum(1 for r in ok if not r.get('launcher'))} empty kernels")
    print(f"  validated: {sum(1 for r in ok if r.get('validated'))} / {len(ok)}")
    if any("compiled" in r for r in ok):
        print(f"  starters compiled: {sum(1 for r in ok if r.get('compiled'))} / {len(ok)}")
    if seconds:
        print(f"  import seconds: median {statistics.median(seconds):.1f}, max {max(seconds):.1f}, "
              f"total {sum(seconds):.0f} (one at a time)")
    for reason, n in reasons.most_common():
        print(f"  refused x{n}: {reason}")
    return {"level": level, "problems": len(mine), "imported": len(ok),
            "launchers": sum(1 for r in ok if r.get("launcher")),
            "validated": sum(1 for r in ok if r.get("validated")),
            "compiled": sum(1 for r in ok if r.get("compiled")),
            "import_seconds_median": statistics.median(seconds) if seconds else None,
            "import_seconds_total": sum(seconds), "refusals": dict(reasons)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("levels", nargs="+")
    ap.add_argument("--kwb", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--to", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    jobs = []
    for folder in args.levels:
        level = os.path.basename(os.path.normpath(folder))
        for name in sorted(os.listdir(folder), key=lambda n: (len(n.split("_")[0]), n)):
            if name.endswith(".py"):
                jobs.append((os.path.join(folder, name), level))
    started = time.monotonic()
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        for row in pool.map(lambda job: one(job[0], args, job[1]), jobs):
            rows.append(row)
            print(f"{row['level']} {row['problem']}: " +
                  ("imported" + (", host launcher" if row.get("launcher") else ", empty kernel") +
                   ("" if row.get("validated") else ", NOT VALID") +
                   ("" if row.get("compiled", True) else ", NOT COMPILED") if row["ok"] else "refused: " + row["reason"]),
                  flush=True)
    summary = [table(rows, level) for level in dict.fromkeys(level for _, level in jobs)]
    git = run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"])[1].strip()
    with open(args.out, "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "commit": git, "jobs": args.j,
                   "wall_seconds": round(time.monotonic() - started, 1), "summary": summary, "rows": rows}, f, indent=1)
    print(f"\nwall {time.monotonic() - started:.0f} s with {args.j} at a time; rows in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
