#!/usr/bin/env python3
"""The softmax kernel built the KernelBench way: torch.utils.cpp_extension.load_inline.

    python3 bench/load_inline_latency.py OUTDIR [--kernel FILE] [--rows R --cols C] [--block B]

Builds kernels/softmax/softmax.cu (the task's starter, the same kernel the NVRTC path of
kwb-bench-eval-latency compiles) with a PyTorch wrapper through load_inline, runs it once and
checks it against torch.softmax, timing each phase. Two runs, each in a fresh Python process
(as KernelBench evaluates a candidate):

  cold  a fresh, empty build directory (and TORCH_EXTENSIONS_DIR): nvcc and the host compiler
        build the extension from scratch
  warm  the same build directory again: ninja finds the build up to date, the module is loaded

Phases: import torch, CUDA init (first tensor on the device), inputs, load_inline (build + load),
first run (launch + synchronise), check (torch.softmax, the task's tolerance rtol 1e-5, atol
1e-7). Prints a table and writes OUTDIR/load_inline_latency.json. Exit status: 0 measured (the
check's verdict is in the JSON), 1 a phase failed, 2 usage, 3 no CUDA device.
"""
import argparse
import datetime
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

WRAPPER = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

torch::Tensor softmax_rows(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat32, "x: 2-D float32 CUDA tensor");
  x = x.contiguous();
  auto y = torch::empty_like(x);
  const long long rows = x.size(0), cols = x.size(1);
  softmax<<<static_cast<unsigned>(rows), BLOCK, 0, c10::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""
CPP_DECL = "torch::Tensor softmax_rows(torch::Tensor x);"


def default_kernel():
    for candidate in (os.path.join(HERE, "..", "kernels", "softmax", "softmax.cu"),
                      os.path.join(HERE, "..", "..", "kernels", "softmax", "softmax.cu")):
        if os.path.isfile(candidate):
            return os.path.normpath(candidate)
    return os.path.normpath(os.path.join(HERE, "..", "kernels", "softmax", "softmax.cu"))


def phase_main(args):
    """One build-and-run in this process; prints one JSON line with the phase times."""
    out = {"phase_ok": False, "phases": {}}
    t0 = time.perf_counter()

    def mark(name, start):
        out["phases"][name] = time.perf_counter() - start
        return time.perf_counter()

    try:
        import torch
        from torch.utils.cpp_extension import load_inline
        t = mark("import_torch_s", t0)
        out["torch"] = torch.__version__
        out["torch_cuda"] = torch.version.cuda
        if not torch.cuda.is_available():
            out["error"] = "no CUDA device"
            out["no_device"] = True
            print(json.dumps(out))
            return 3
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        out["gpu"] = torch.cuda.get_device_name(0)
        t = mark("cuda_init_s", t)
        gen = torch.Generator(device="cuda")
        gen.manual_seed(1)
        x = torch.randn(args.rows, args.cols, device="cuda", generator=gen) * 4.0
        torch.cuda.synchronize()
        t = mark("inputs_s", t)
        with open(args.kernel) as f:
            kernel = f.read()
        module = load_inline(name=args.name, cpp_sources=[CPP_DECL], cuda_sources=[kernel + WRAPPER],
                             functions=["softmax_rows"], build_directory=args.build_dir,
                             extra_cuda_cflags=["-O3", "-DBLOCK=%d" % args.block], verbose=False)
        t = mark("load_inline_s", t)
        y = module.softmax_rows(x)
        torch.cuda.synchronize()
        t = mark("first_run_s", t)
        want = torch.softmax(x, dim=1)
        diff = (y - want).abs()
        ok = bool(torch.all(diff <= 1e-7 + 1e-5 * want.abs()).item())
        out["check"] = {"passed": ok, "max_abs_error": float(diff.max().item()),
                        "rtol": 1e-5, "atol": 1e-7, "against": "torch.softmax"}
        t = mark("check_s", t)
        out["phase_ok"] = True
    except Exception as e:  # a failed build is a result to record, not a crash
        out["error"] = "%s: %s" % (type(e).__name__, str(e)[-4000:])
    out["phases"]["in_process_total_s"] = time.perf_counter() - t0
    print(json.dumps(out))
    return 0 if out["phase_ok"] else 1


def run_phase(label, args, build_dir, ext_dir, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--phase", "--kernel", args.kernel, "--rows", str(args.rows),
           "--cols", str(args.cols), "--block", str(args.block), "--name", args.name, "--build-dir", build_dir]
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=ext_dir)
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        wall = time.perf_counter() - start
        status, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        wall = time.perf_counter() - start
        status, stdout, stderr = 124, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), \
            "timed out after %d s" % timeout
    result = {"run": label, "process_wall_s": wall, "exit_status": status}
    line = next((l for l in reversed(stdout.splitlines()) if l.startswith("{")), None)
    if line:
        try:
            result.update(json.loads(line))
        except ValueError:
            result["error"] = "unreadable phase output"
    else:
        result["error"] = result.get("error") or "no phase output"
    if status != 0:
        result["stderr_tail"] = stderr[-3000:]
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("outdir", nargs="?", help="folder for load_inline_latency.json")
    p.add_argument("--kernel", default=default_kernel(), help="the softmax starter (kernels/softmax/softmax.cu)")
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--cols", type=int, default=1024)
    p.add_argument("--block", type=int, default=128, help="BLOCK (the task's first tunable value: 128)")
    p.add_argument("--timeout", type=int, default=300, help="seconds per run before it is stopped")
    p.add_argument("--out-name", default="load_inline_latency.json")
    p.add_argument("--phase", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--name", default="kwb_bench_softmax", help=argparse.SUPPRESS)
    p.add_argument("--build-dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.phase:
        return phase_main(args)
    if not args.outdir:
        p.error("the output folder is required")
    if not os.path.isfile(args.kernel):
        print("load_inline_latency: no kernel source at %s (pass --kernel)" % args.kernel, file=sys.stderr)
        return 2
    os.makedirs(args.outdir, exist_ok=True)

    scratch = tempfile.mkdtemp(prefix="kwb-bench-load-inline-")
    build_dir = os.path.join(scratch, "build")
    ext_dir = os.path.join(scratch, "torch_extensions")
    os.makedirs(build_dir)
    os.makedirs(ext_dir)
    # A name unique to this run, so no earlier build of it anywhere can be reused.
    args.name = "kwb_bench_softmax_%d_%d" % (os.getpid(), int(time.time()))
    runs = []
    try:
        runs.append(run_phase("cold", args, build_dir, ext_dir, args.timeout))
        if not runs[0].get("no_device"):
            runs.append(run_phase("warm", args, build_dir, ext_dir, args.timeout))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    gpu = next((r.get("gpu") for r in runs if r.get("gpu")), "")
    report = {
        "meta": {"program": "load_inline_latency.py",
                 "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "commit": os.environ.get("KWB_BENCH_COMMIT", "unknown"), "host": socket.gethostname(), "gpu": gpu,
                 "python": sys.version.split()[0], "torch": next((r.get("torch") for r in runs if r.get("torch")), None),
                 "torch_cuda": next((r.get("torch_cuda") for r in runs if r.get("torch_cuda")), None)},
        "settings": {"kernel": args.kernel, "rows": args.rows, "cols": args.cols, "block": args.block,
                     "extra_cuda_cflags": ["-O3", "-DBLOCK=%d" % args.block]},
        "definitions": {"cold": "fresh process, empty build directory and TORCH_EXTENSIONS_DIR",
                        "warm": "fresh process, the same build directory (ninja up to date)",
                        "process_wall_s": "the whole Python process, interpreter start to exit"},
        "runs": runs,
    }
    with open(os.path.join(args.outdir, args.out_name), "w") as f:
        json.dump(report, f, indent=2)

    if runs and runs[0].get("no_device"):
        print("load_inline_latency: no CUDA device (torch.cuda.is_available() is False): nothing measured",
              file=sys.stderr)
        return 3
    cols = ["run", "import torch", "CUDA init", "inputs", "load_inline", "first run", "check", "process", "result"]
    rows = [cols]
    for r in runs:
        ph = r.get("phases", {})
        cell = lambda k: "%.3f" % ph[k] if k in ph else "-"
        if r.get("phase_ok"):
            verdict = "correct" if r["check"]["passed"] else "INCORRECT (max abs err %.3g)" % r["check"]["max_abs_error"]
        else:
            verdict = "FAILED: " + (r.get("error") or "exit %d" % r["exit_status"]).splitlines()[0][:100]
        rows.append([r["run"], cell("import_torch_s"), cell("cuda_init_s"), cell("inputs_s"), cell("load_inline_s"),
                     cell("first_run_s"), cell("check_s"), "%.3f" % r["process_wall_s"], verdict])
    widths = [max(len(row[i]) for row in rows) for i in range(len(cols))]
    print("load_inline latency (seconds) on %s, softmax %dx%d, BLOCK=%d" % (gpu or "?", args.rows, args.cols, args.block))
    for n, row in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    print("wrote %s" % os.path.join(args.outdir, args.out_name))
    return 0 if all(r.get("phase_ok") for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
