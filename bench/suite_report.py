#!/usr/bin/env python3
"""The bundled suite's table (issue 4): every lineage step's time per configuration and its
speedup over the step before, and each expert against its yardstick (cuBLAS, PyTorch, or the
measured device copy bandwidth), from the JSON that bench/run-on-gpu.sh's `suite` part writes:

    python3 bench/suite_report.py DIR PREFIX

reads DIR/PREFIX-meta.json (date, GPU, commit), DIR/PREFIX-lineage-TASK.json
(`kwb lineage TASK --time --json`), DIR/PREFIX-vendor.json
(kwb-bench-vendor-baselines) and DIR/PREFIX-torch.json (torch_baselines.py; optional), and writes
DIR/PREFIX-suite.md and DIR/PREFIX-suite.json. Exit status 1 when a step was not correct."""
import glob
import json
import os
import sys

TARGETS = {"sgemm": ("cuBLAS SGEMM", 0.80), "gemm-bf16": ("cuBLAS bf16 GEMM (f32 out)", 0.60)}
MEMORY_TARGET = 0.80
LARGE = "h200"  # every bundled task names its H200-filling configuration so


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt_us(ms):
    us = ms * 1000
    return f"{us:.0f}" if us >= 100 else f"{us:.1f}" if us >= 10 else f"{us:.2f}"


def main():
    d, prefix = sys.argv[1], sys.argv[2]
    lineages = {}
    for path in sorted(glob.glob(os.path.join(d, f"{prefix}-lineage-*.json"))):
        j = load(path)
        lineages[j["task"]] = j
    vendor = load(os.path.join(d, f"{prefix}-vendor.json")) if os.path.exists(os.path.join(d, f"{prefix}-vendor.json")) else None
    torch = load(os.path.join(d, f"{prefix}-torch.json")) if os.path.exists(os.path.join(d, f"{prefix}-torch.json")) else None
    meta_path = os.path.join(d, f"{prefix}-meta.json")
    meta = load(meta_path) if os.path.exists(meta_path) else (vendor or torch or {})
    lines = [f"# Bundled suite on {meta.get('gpu', '?')}" + (f" (x{meta['gpus']}: steps spread over them)" if meta.get("gpus", 1) > 1 else ""), "",
             f"{meta.get('date', '?')}, commit {meta.get('commit', '?')}. Times are medians of the evaluator's "
             "CUPTI kernel durations with L2 flushed before each sample (`kwb lineage TASK --time`); "
             "x = speedup over the step before on the same configuration.", ""]
    ok = True
    copy_gbs = None
    if vendor:
        copies = [r for r in vendor["rows"] if r["what"].startswith("copy")]
        if copies:
            copy_gbs = max(r["rate"] for r in copies)
    summary = {"gpu": meta.get("gpu"), "commit": meta.get("commit"), "date": meta.get("date"),
               "copy_gbytes_per_s": copy_gbs, "tasks": []}

    for task, j in sorted(lineages.items()):
        configs = []
        for s in j["steps"]:
            for c in s["configs"]:
                if c["config"] not in configs:
                    configs.append(c["config"])
        lines += [f"## {task}: {j.get('description', '')}", "",
                  "| step | adds | " + " | ".join(f"{c} µs (x)" for c in configs) + " | outcome |",
                  "| --- | --- | " + " | ".join("---:" for _ in configs) + " | --- |"]
        for s in j["steps"]:
            cells = []
            for name in configs:
                c = next((c for c in s["configs"] if c["config"] == name), None)
                if not c or "median_ms" not in c:
                    cells.append("—")
                    continue
                cell = fmt_us(c["median_ms"])
                if "speedup_vs_previous" in c:
                    cell += f" ({c['speedup_vs_previous']:.2f}x)"
                cells.append(cell)
            if s["outcome"] != "correct":
                ok = False
            lines.append(f"| {s['index']}. {s['title']} | {s['adds'][:90]}{'…' if len(s['adds']) > 90 else ''} | "
                         + " | ".join(cells) + f" | {s['outcome']} |")
        lines.append("")
        expert = j["steps"][-1]
        big = next((c for c in expert["configs"] if c["config"] == LARGE and "median_ms" in c), None)
        row = {"task": task, "steps": len(j["steps"]), "all_correct": all(s["outcome"] == "correct" for s in j["steps"])}
        if big:
            row.update({"expert_ms": big["median_ms"], "gflops": big.get("gflops"), "gbytes_per_s": big.get("gbytes_per_s"),
                        "speedup_vs_reference": big.get("speedup_vs_reference")})
            if task in TARGETS and vendor:
                what, target = TARGETS[task]
                v = next((r for r in vendor["rows"] if r["what"] == what), None)
                if v:
                    frac = (big["gflops"] / 1000) / v["rate"]
                    row.update({"yardstick": what, "yardstick_rate": v["rate"], "fraction": frac, "target": target})
            elif copy_gbs and big.get("gbytes_per_s"):
                row.update({"yardstick": "device copy bandwidth", "yardstick_rate": copy_gbs,
                            "fraction": big["gbytes_per_s"] / copy_gbs, "target": MEMORY_TARGET})
            if torch:
                t = next((r for r in torch["rows"] if r["task"] == task and r["config"] == LARGE), None)
                if t:
                    row.update({"torch_ms": t["median_ms"], "vs_torch": t["median_ms"] / big["median_ms"]})
        summary["tasks"].append(row)

    lines += ["## Experts against their yardsticks (configuration `h200`)", "",
              "| task | expert | yardstick | fraction | target | PyTorch | expert vs PyTorch |",
              "| --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for r in summary["tasks"]:
        if "expert_ms" not in r:
            lines.append(f"| {r['task']} | not timed | | | | | |")
            continue
        rate = f"{r['gflops'] / 1000:.1f} TFLOP/s" if r["task"] in TARGETS else f"{r['gbytes_per_s']:.0f} GB/s"
        yard = f"{r.get('yardstick', '—')} ({r['yardstick_rate']:.1f})" if "yardstick_rate" in r else "—"
        frac = f"{100 * r['fraction']:.0f}%" if "fraction" in r else "—"
        met = ("met" if r["fraction"] >= r["target"] else "MISSED") if "fraction" in r else ""
        tgt = f"{100 * r['target']:.0f}% {met}" if "target" in r else "—"
        tms = f"{fmt_us(r['torch_ms'])} µs" if "torch_ms" in r else "—"
        vs = f"{r['vs_torch']:.2f}x" if "vs_torch" in r else "—"
        lines.append(f"| {r['task']} | {fmt_us(r['expert_ms'])} µs, {rate} | {yard} | {frac} | {tgt} | {tms} | {vs} |")
    if copy_gbs:
        lines += ["", f"Device copy bandwidth (cudaMemcpy device to device, read + write): {copy_gbs:.0f} GB/s. "
                  "Memory-bound experts are rated by their task's `[cost] bytes` per second."]
    with open(os.path.join(d, f"{prefix}-suite.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(d, f"{prefix}-suite.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
