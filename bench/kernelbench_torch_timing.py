#!/usr/bin/env python3
"""PyTorch on the GPU for KernelBench problems at their own sizes (issue 46): for each problem file,
forward run twice on the same inputs (the same bits, or the problem is flagged nondeterministic),
then timed eagerly and through torch.compile, beside KernelBench's published eager baseline.

    python3 bench/kernelbench_torch_timing.py --out FILE.json [--baseline BASELINE.json]
        [--no-compile] [--cap-ms 1000] [--cudnn-tf32] PROBLEM.py...

Each problem as KernelBench builds it: Model(*get_init_inputs()) and get_inputs() with the device
set to the GPU (so the inputs are made there), f32, training mode as constructed, TF32 off (as the
workbench's reference; --cudnn-tf32 lets cuDNN use it, PyTorch's default and KernelBench's). A sample is one forward call between CUDA events, the L2 flushed before it
(a read of a buffer of 2 x L2, at least 64 MiB); 3 warm-up calls, then samples until --cap-ms of
sampling or 100 samples; the median and the spread (IQR / median). torch.compile: the default
inductor mode, its first call (the compile) timed apart. KernelBench's baseline: the mean of 100
trials per problem (the JSON names the card); the ratio is ours / theirs.
Prints a table; writes every row to FILE.json. Exit status 3 without torch or a CUDA device."""
import argparse
import contextlib
import datetime
import gc
import json
import os
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resources", "python"))


def flush_buffer(torch):
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    return torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.float32, device="cuda")


def timed(torch, fn, flush, cap_ms, max_samples=100):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples, spent = [], 0.0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while len(samples) < max_samples and (spent < cap_ms or len(samples) < 5):
        flush.mul_(1.0)
        start.record()
        fn()
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end)
        samples.append(ms)
        spent += ms
    samples.sort()
    q = statistics.quantiles(samples, n=4) if len(samples) >= 4 else [samples[0], samples[len(samples) // 2], samples[-1]]
    median = statistics.median(samples)
    return {"median_ms": median, "q1_ms": q[0], "q3_ms": q[2], "min_ms": samples[0], "samples": len(samples),
            "relative_spread": (q[2] - q[0]) / median if median else None}


def same_bits(torch, a, b):
    items_a = list(a) if isinstance(a, (tuple, list)) else [a]
    items_b = list(b) if isinstance(b, (tuple, list)) else [b]
    differing = 0
    for x, y in zip(items_a, items_b):
        if isinstance(x, torch.Tensor):
            if x.dtype.is_floating_point:
                differing += int((x.view(-1) != y.view(-1)).sum().item() - (x.isnan() & y.isnan()).sum().item())
            else:
                differing += int((x != y).sum().item())
    return differing


def one(torch, path, args, baseline, flush):
    import kwb_problem_module
    name = os.path.basename(path)
    row = {"problem": name}
    with contextlib.redirect_stdout(sys.stderr):
        module = kwb_problem_module.load_problem(path, {}, "kwb_timed_problem")
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = module.Model(*module.get_init_inputs())
            inputs = module.get_inputs()
        model = model.cuda()
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.no_grad():
            first = model(*inputs)
            second = model(*inputs)
            torch.cuda.synchronize()
            row["differing_elements"] = same_bits(torch, first, second)
            row["deterministic"] = row["differing_elements"] == 0
            del first, second
            row["eager"] = timed(torch, lambda: model(*inputs), flush, args.cap_ms)
            if not args.no_compile:
                try:
                    torch._dynamo.reset()
                    compiled = torch.compile(model)
                    t0 = time.monotonic()
                    compiled(*inputs)
                    torch.cuda.synchronize()
                    row["compile_seconds"] = time.monotonic() - t0
                    row["compiled"] = timed(torch, lambda: compiled(*inputs), flush, args.cap_ms)
                except Exception as err:  # noqa: BLE001
                    row["compiled"] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"}
    theirs = baseline.get(name)
    if theirs:
        row["kernelbench_mean_ms"] = theirs["mean_ms"]
        row["kernelbench_card"] = theirs["hardware"]
        row["ratio_eager_to_kernelbench"] = row["eager"]["median_ms"] / theirs["mean_ms"]
    del model, inputs
    gc.collect()
    torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--cap-ms", type=float, default=1000.0)
    ap.add_argument("--cudnn-tf32", action="store_true",
                    help="cuDNN may use TF32 (PyTorch's default; the workbench's reference turns it off)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as err:
        print(f"kernelbench_torch_timing: no torch: {err}", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("kernelbench_torch_timing: no CUDA device", file=sys.stderr)
        return 3
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = args.cudnn_tf32
    baseline = {}
    if args.baseline:
        with open(args.baseline) as f:
            baseline = json.load(f)["level1"]
    flush = flush_buffer(torch)
    rows = []
    for path in args.problems:
        started = time.monotonic()
        try:
            row = one(torch, path, args, baseline, flush)
        except Exception as err:  # noqa: BLE001  the problem's own code, or out of memory
            row = {"problem": os.path.basename(path),
                   "error": f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:200]}",
                   "traceback": traceback.format_exc()[-800:]}
            gc.collect()
            torch.cuda.empty_cache()
        row["seconds"] = round(time.monotonic() - started, 1)
        rows.append(row)
        eager = row.get("eager", {}).get("median_ms")
        comp = row.get("compiled", {}).get("median_ms") if isinstance(row.get("compiled"), dict) else None
        ratio = row.get("ratio_eager_to_kernelbench")
        print(f"{row['problem'][:48]:48} " +
              (f"eager {eager:9.3f} ms" if eager is not None else f"error {row.get('error', '')[:60]}") +
              (f"  compile {comp:9.3f} ms" if comp is not None else "") +
              (f"  kernelbench {row['kernelbench_mean_ms']:7.2f} ms ratio {ratio:5.2f}" if ratio else "") +
              ("" if row.get("deterministic", True) else f"  NONDETERMINISTIC ({row['differing_elements']} elements)"),
              flush=True)
        with open(args.out, "w") as f:
            json.dump({"date": datetime.date.today().isoformat(), "device": torch.cuda.get_device_name(0),
                       "torch": torch.__version__, "cudnn_tf32": args.cudnn_tf32, "rows": rows}, f, indent=1)
    ratios = [r["ratio_eager_to_kernelbench"] for r in rows if "ratio_eager_to_kernelbench" in r]
    if ratios:
        q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [min(ratios), statistics.median(ratios), max(ratios)]
        print(f"\nours / KernelBench's eager: median {statistics.median(ratios):.2f}, quartiles {q[0]:.2f} to {q[2]:.2f}, "
              f"min {min(ratios):.2f}, max {max(ratios):.2f} over {len(ratios)} problems")
    print(f"nondeterministic: {sum(1 for r in rows if r.get('deterministic') is False)}; errors: "
          f"{sum(1 for r in rows if 'error' in r)}; rows in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
