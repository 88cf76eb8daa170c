#!/usr/bin/env python3
"""PyTorch on the GPU for the suite's softmax and norm tasks (issue 4), timed like the evaluator:
L2 flushed before every sample by reading a buffer twice its size, CUDA events, median of N.

    python3 bench/torch_baselines.py KERNELS_DIR --out FILE.json [--samples 30]

For every configuration of kernels/softmax and kernels/layernorm (sizes read from task.toml):
torch.softmax(x, dim=1) and torch.nn.functional.layer_norm(x, (cols,), gamma, beta, 1e-5), f32;
plus a device copy (y.copy_(x)) of the largest softmax input as the bandwidth yardstick.
Prints a table; exits 3 when torch or a CUDA device is missing."""
import argparse
import datetime
import json
import os
import statistics
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None


def configs(kernels, task):
    with open(os.path.join(kernels, task, "task.toml"), "rb") as f:
        return tomllib.load(f)["configs"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels")
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=30)
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"torch_baselines: no torch: {e}", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_baselines: no CUDA device", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    flush_buf = torch.ones(max(2 * l2, 64 << 20) // 4, device=dev)

    def time_ms(fn):
        for _ in range(3):
            fn()
        start = [torch.cuda.Event(enable_timing=True) for _ in range(args.samples)]
        end = [torch.cuda.Event(enable_timing=True) for _ in range(args.samples)]
        for i in range(args.samples):
            flush_buf.sum()  # reads: clean lines, as the worker's flush
            start[i].record()
            fn()
            end[i].record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(start, end))

    rows = []
    gen = torch.Generator(device=dev).manual_seed(1)
    for c in configs(args.kernels, "softmax"):
        x = torch.randn(c["rows"], c["cols"], device=dev, generator=gen) * 4
        ms = time_ms(lambda: torch.softmax(x, dim=1))
        rows.append({"task": "softmax", "config": c["name"], "op": "torch.softmax", "median_ms": ms,
                     "gbytes_per_s": 8 * x.numel() / (ms * 1e-3) / 1e9})
    if os.path.exists(os.path.join(args.kernels, "layernorm", "task.toml")):
        for c in configs(args.kernels, "layernorm"):
            x = torch.randn(c["rows"], c["cols"], device=dev, generator=gen)
            g = torch.rand(c["cols"], device=dev, generator=gen) + 0.5
            b = torch.rand(c["cols"], device=dev, generator=gen) * 2 - 1
            ms = time_ms(lambda: torch.nn.functional.layer_norm(x, (c["cols"],), g, b, 1e-5))
            rows.append({"task": "layernorm", "config": c["name"], "op": "torch.nn.functional.layer_norm",
                         "median_ms": ms, "gbytes_per_s": 8 * x.numel() / (ms * 1e-3) / 1e9})
    big = max(configs(args.kernels, "softmax"), key=lambda c: c["rows"] * c["cols"])
    x = torch.randn(big["rows"], big["cols"], device=dev, generator=gen)
    y = torch.empty_like(x)
    ms = time_ms(lambda: y.copy_(x))
    rows.append({"task": "copy", "config": big["name"], "op": "Tensor.copy_", "median_ms": ms,
                 "gbytes_per_s": 8 * x.numel() / (ms * 1e-3) / 1e9})

    print(f"{props.name}, torch {torch.__version__}; median of {args.samples}, L2 flushed before each")
    print(f"{'task':<10} {'config':<8} {'op':<32} {'ms':>10} {'GB/s':>8}")
    for r in rows:
        print(f"{r['task']:<10} {r['config']:<8} {r['op']:<32} {r['median_ms']:>10.4f} {r['gbytes_per_s']:>8.0f}")
    json.dump({"program": "torch_baselines.py", "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "commit": os.environ.get("KWB_BENCH_COMMIT", "unknown"), "gpu": props.name, "torch": torch.__version__,
               "samples": args.samples, "rows": rows}, open(args.out, "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
