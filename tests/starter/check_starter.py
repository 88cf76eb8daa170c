#!/usr/bin/env python3
# check_starter.py: checks resources/python/kwb_starter.py's launchers on the CPU, against PyTorch.
#
# Usage: python check_starter.py [--nvcc] [--json OUT.json] [--quiet] PROBLEM.py...
#   For each KernelBench-format problem: shrinks its size constants to two small configurations
#   (A and B, different values, so a size baked into the starter shows), writes the spec the
#   importer would (forward's tensors, the state dict's tensors named key '.' -> '_', the
#   outputs, the sizes, the params), runs the starter writer on it (configuration B listed in
#   "configs"), compiles the starter for the host with g++ through emulation/cuda_runtime.h
#   (each `k<<<b, t, 0, stream>>>(...)` launch rewritten to kwb_emulate_launch), and at A and at
#   B runs it on the same weights and inputs as the PyTorch module (CPU, f32), comparing every
#   output with rtol = atol = 1e-4. --nvcc also compiles the starter for sm_90 with nvcc.
#   Needs the torch venv's python. Prints one line per problem and a summary; exit status 0 when
#   every starter written passed (refusals are not failures), 1 otherwise, 2 usage.
#
# Per problem, the verdicts: "pass", "FAIL" (a starter that does not compile or disagrees with
# PyTorch), "refused: REASON" (the writer wrote none), "skipped: REASON" (this driver could not
# make small configurations, e.g. a forward that fails at them).

import argparse
import ast
import ctypes
import inspect
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "resources", "python"))

import kwb_starter  # noqa: E402

LAUNCH = re.compile(r"(\w+)<<<([^<>]+?), (\d+), 0, stream>>>\(")
CHANNELS = re.compile(r"(channels|features|_size$|^hidden|^dim$|^d_model$|^num_classes$|^embed|^input_size$|^output_size$|^out_dim|^in_dim|^size$|^n$|^N$|^M$|^K$)")
KEEP = re.compile(r"(kernel|stride|padding|pad|dilation|group|pool|^k$|eps|momentum|output_padding|^dim$)", re.I)
SPATIAL = re.compile(r"^(height|width|depth|length|seq_len|sequence_length|h|w|d|l|H|W|D|L|spatial|img_size|image_size)$")


def int_constants(tree):
    names = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and n.id not in names:
                        names.append(n.id)
    return names


def with_overrides(source, overrides):
    """The problem's source with each overridden module constant set right after its assignments."""
    tree = ast.parse(source)
    body = []
    for stmt in tree.body:
        body.append(stmt)
        if isinstance(stmt, ast.Assign):
            assigned = {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            for name in sorted(assigned & set(overrides)):
                body.append(ast.parse("%s = %r" % (name, overrides[name])).body[0])
    tree.body = body
    return ast.unparse(tree)


def exec_module(source, path):
    ns = {"__name__": "kwb_problem", "__file__": path}
    exec(compile(source, path, "exec"), ns)
    return ns


def shrink_plans(ns):
    """Candidate (A, B) override pairs for the module's integer constants, most natural first."""
    ints = {k: v for k, v in ns.items() if isinstance(v, int) and not isinstance(v, bool) and not k.startswith("_")}
    groups = [v for k, v in ints.items() if re.search(r"group", k, re.I) and v > 0]
    g = max(groups) if groups else 1
    plans = []
    for variant in range(6):
        a, b = {}, {}
        ch = 0
        for k, v in ints.items():
            if k == "batch_size" or k == "batch":
                a[k], b[k] = 2, 3
            elif SPATIAL.match(k):
                if variant == 3:  # a LayerNorm over the last dimension of a stride-2 transposed conv
                    a[k], b[k] = 4, 6
                elif variant >= 4:  # large (dilated) kernels and pools
                    a[k], b[k] = (32, 40) if variant == 4 else (64, 72)
                elif variant == 2:
                    a[k], b[k] = 8, 12
                else:
                    a[k], b[k] = (6, 8) if "depth" in k or k in ("d", "D") else (8, 10)
            elif KEEP.search(k):
                continue
            elif CHANNELS.search(k) or v >= 64:
                if variant in (2, 3):
                    a[k], b[k] = 8, 12
                    continue
                if variant >= 4:
                    a[k], b[k] = 4 * max(1, g // 4), 6 * max(1, g // 4) if g <= 4 else 2 * g
                    continue
                base = max(g, 4 if variant == 0 else 8)
                a[k] = base * (2 + ch)
                b[k] = base * (3 + ch)
                ch += 1
        plans.append((a, b))
    return plans


DRAW_FUNCTIONS = ("randn", "rand", "randint", "normal", "randn_like", "rand_like", "randint_like")


def make_config(source, path, overrides):
    import torch
    ns = exec_module(with_overrides(source, overrides), path)
    torch.manual_seed(0)
    init = list(ns["get_init_inputs"]())
    model = ns["Model"](*init)
    inputs = list(ns["get_inputs"]())
    draws = []  # the tensors forward's random calls returned: the launcher gets them ("draw")

    def recording(original):
        def record(*args, **kwargs):
            t = original(*args, **kwargs)
            draws.append(t.clone())
            return t
        return record
    saved = {name: getattr(torch, name) for name in DRAW_FUNCTIONS}
    try:
        for name, fn in saved.items():
            setattr(torch, name, recording(fn))
        with torch.no_grad():
            out = model(*[t.clone() if isinstance(t, torch.Tensor) else t for t in inputs])
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return {"ns": ns, "init": init, "model": model, "inputs": inputs, "outputs": outs, "draws": draws}


def jsonable(v):
    if isinstance(v, tuple):
        return [jsonable(e) for e in v]
    if isinstance(v, list):
        return [jsonable(e) for e in v]
    return v


def build_spec(path, source, a, b):
    import torch
    dtypes = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.int32: "i32", torch.bool: "bool", torch.float16: "f16"}
    ints_a = {k: v for k, v in a["ns"].items() if isinstance(v, int) and not isinstance(v, bool) and not k.startswith("_")}
    ints_b = {k: v for k, v in b["ns"].items() if isinstance(v, int) and not isinstance(v, bool) and not k.startswith("_")}
    sizes_a, sizes_b = {}, {}

    def name_dim(tensor_name, i, va, vb):
        for k in ints_a:
            if ints_a[k] == va and ints_b.get(k) == vb and va != vb:
                sizes_a[k], sizes_b[k] = va, vb
                return k
        if va == vb:
            return va
        k = "%s_d%d" % (tensor_name, i)
        sizes_a[k], sizes_b[k] = va, vb
        return k

    args = []
    params = inspect.signature(a["ns"]["Model"].forward).parameters
    fnames = [p for p in params if p != "self"][:len(a["inputs"])]
    for name, ta, tb in zip(fnames, a["inputs"], b["inputs"]):
        if isinstance(ta, torch.Tensor):
            args.append({"name": name, "kind": "tensor", "dtype": dtypes.get(ta.dtype, str(ta.dtype)),
                         "shape": [name_dim(name, i, x, y) for i, (x, y) in enumerate(zip(ta.shape, tb.shape))], "role": "in"})
        else:
            args.append({"name": name, "kind": "param", "dtype": "f32" if isinstance(ta, float) else "i64", "value": ta})
    sa, sb = a["model"].state_dict(), b["model"].state_dict()
    for key, ta in sa.items():
        name = key.replace(".", "_")
        tb = sb[key]
        args.append({"name": name, "kind": "tensor", "dtype": dtypes.get(ta.dtype, str(ta.dtype)),
                     "shape": [name_dim(name, i, x, y) for i, (x, y) in enumerate(zip(ta.shape, tb.shape))] if ta.dim() == tb.dim() else None,
                     "role": "in", "state": key})
    for k, (ta, tb) in enumerate(zip(a["draws"], b["draws"]), 1):
        name = "draw%d" % k
        args.append({"name": name, "kind": "tensor", "dtype": dtypes.get(ta.dtype, str(ta.dtype)),
                     "shape": [name_dim(name, i, x, y) for i, (x, y) in enumerate(zip(ta.shape, tb.shape))],
                     "role": "in", "draw": k})
    onames = ["out"] if len(a["outputs"]) == 1 else ["out%d" % i for i in range(len(a["outputs"]))]
    for name, ta, tb in zip(onames, a["outputs"], b["outputs"]):
        args.append({"name": name, "kind": "tensor", "dtype": dtypes.get(ta.dtype, str(ta.dtype)),
                     "shape": [name_dim(name, i, x, y) for i, (x, y) in enumerate(zip(ta.shape, tb.shape))], "role": "out"})
    for k in sizes_a:
        args.append({"name": k, "kind": "size"})
    params_args = [x for x in args if x["kind"] == "param"]
    args = [x for x in args if x["kind"] != "param"] + params_args
    spec = {"module": path, "init": jsonable(a["init"]), "forward": fnames, "outputs": onames,
            "kernel_args": [{k: v for k, v in x.items() if k != "value"} for x in args],
            "sizes": sizes_a, "configs": [{"name": "B", "values": sizes_b, "init": jsonable(b["init"])}]}
    return spec, args


def compile_host(source, workdir):
    text = LAUNCH.sub(lambda m: "kwb_emulate_launch(%s, %s, %s, " % (m.group(2), m.group(3), m.group(1)), source)
    cu = os.path.join(workdir, "starter_host.cpp")
    with open(cu, "w") as f:
        f.write(text)
    so = os.path.join(workdir, "starter_host.so")
    r = subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-I", os.path.join(HERE, "emulation"),
                        "-o", so, cu], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr[-3000:]
    return so, None


def compile_nvcc(source, workdir):
    cu = os.path.join(workdir, "starter.cu")
    with open(cu, "w") as f:
        f.write(source)
    r = subprocess.run(["nvcc", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", os.path.join(workdir, "starter_nvcc.so"), cu],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else r.stderr[-3000:]


def run_config(lib, spec, args, conf, sizes):
    """Runs the emulated launcher on conf's weights and inputs; returns the max excess error."""
    import torch
    state = conf["model"].state_dict()
    fnames = spec["forward"]
    keep = []
    ptrs = (ctypes.c_void_p * len(args))()
    outs = {}
    for i, arg in enumerate(args):
        if arg["kind"] == "tensor":
            if arg.get("state"):
                t = state[arg["state"]].detach().contiguous().clone()
            elif arg.get("draw"):
                t = conf["draws"][arg["draw"] - 1].contiguous().clone()
            elif arg["role"] == "out":
                ref = conf["outputs"][spec["outputs"].index(arg["name"])]
                t = torch.full(ref.shape, float("nan"), dtype=torch.float32)
                outs[arg["name"]] = t
            else:
                t = conf["inputs"][fnames.index(arg["name"])].contiguous().clone()
            holder = ctypes.c_void_p(t.data_ptr())
            keep += [t, holder]
            ptrs[i] = ctypes.cast(ctypes.pointer(holder), ctypes.c_void_p)
        elif arg["kind"] == "size":
            holder = ctypes.c_longlong(sizes[arg["name"]])
            keep.append(holder)
            ptrs[i] = ctypes.cast(ctypes.pointer(holder), ctypes.c_void_p)
        else:
            v = conf["inputs"][fnames.index(arg["name"])]
            holder = ctypes.c_float(v) if arg["dtype"] == "f32" else ctypes.c_longlong(v)
            keep.append(holder)
            ptrs[i] = ctypes.cast(ctypes.pointer(holder), ctypes.c_void_p)
    rc = lib.kwb_launch(ptrs, None)
    if rc != 0:
        return math.inf, "kwb_launch returned %d" % rc
    worst = 0.0
    for name, got in outs.items():
        ref = conf["outputs"][spec["outputs"].index(name)].detach().float()
        if got.shape != ref.shape:
            return math.inf, "%s has shape %s, torch %s" % (name, list(got.shape), list(ref.shape))
        diff = (got - ref).abs()
        tol = 1e-4 + 1e-4 * ref.abs()
        bad = ~(diff <= tol)
        excess = float((diff / tol).max()) if diff.numel() else 0.0
        if bool(bad.any()):
            idx = int(bad.flatten().nonzero()[0])
            return excess, "%s[%d]: %r vs torch %r (%d of %d elements off)" % (
                name, idx, float(got.flatten()[idx]), float(ref.flatten()[idx]), int(bad.sum()), diff.numel())
        worst = max(worst, excess)
    return worst, None


def check(path, use_nvcc):
    import torch
    torch.set_num_threads(1)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    base = exec_module(source, path)
    plan_errors = []
    for a_over, b_over in shrink_plans(base):
        try:
            a = make_config(source, path, a_over)
            b = make_config(source, path, b_over)
            break
        except Exception as e:
            plan_errors.append("%s: %s" % (type(e).__name__, str(e).splitlines()[0][:150] if str(e) else ""))
    else:
        return {"verdict": "skipped", "why": "no small configuration runs: " + plan_errors[-1]}
    with tempfile.TemporaryDirectory() as work:
        # the writer imports the module at configuration A
        module_path = os.path.join(work, os.path.basename(path))
        with open(module_path, "w") as f:
            f.write(with_overrides(source, a_over))
        spec, args = build_spec(module_path, source, a, b)
        if any(x["kind"] == "tensor" and x.get("shape") is None for x in args):
            return {"verdict": "skipped", "why": "a state tensor changes rank between configurations"}
        t0 = time.time()
        try:
            result = kwb_starter.write_starter(spec)
        except kwb_starter.Refuse as e:
            result = {"ok": False, "reason": str(e)}
        write_s = time.time() - t0
        if not result["ok"]:
            return {"verdict": "refused", "why": result["reason"], "write_s": write_s}
        so, err = compile_host(result["source"], work)
        if so is None:
            return {"verdict": "FAIL", "why": "g++: " + err, "steps": result["steps"], "source": result["source"]}
        lib = ctypes.CDLL(so)
        lib.kwb_launch.restype = ctypes.c_int
        lib.kwb_launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        worst = 0.0
        for conf, sizes in ((a, spec["sizes"]), (b, spec["configs"][0]["values"])):
            excess, why = run_config(lib, spec, args, conf, sizes)
            if why:
                return {"verdict": "FAIL", "why": why, "steps": result["steps"], "source": result["source"]}
            worst = max(worst, excess)
        out = {"verdict": "pass", "steps": result["steps"], "worst": worst, "write_s": write_s}
        if use_nvcc:
            err = compile_nvcc(result["source"], work)
            if err:
                return {"verdict": "FAIL", "why": "nvcc: " + err, "steps": result["steps"], "source": result["source"]}
            out["nvcc"] = True
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nvcc", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("problems", nargs="+")
    opts = ap.parse_args()
    results = {}
    for path in opts.problems:
        t0 = time.time()
        try:
            r = check(path, opts.nvcc)
        except Exception as e:  # a problem this driver cannot even load
            r = {"verdict": "skipped", "why": "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")}
        r["seconds"] = round(time.time() - t0, 2)
        results[os.path.basename(path)] = r
        line = "%-60s %s" % (os.path.basename(path), r["verdict"])
        if r["verdict"] == "pass":
            line += " (%d steps, worst error %.3f of the tolerance%s, %.1f s)" % (len(r["steps"]), r["worst"], ", nvcc ok" if r.get("nvcc") else "", r["seconds"])
        else:
            line += ": " + r["why"].replace("\n", " | ")[:400]
        print(line, flush=True)
    counts = {}
    for r in results.values():
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    print("summary: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    return 1 if counts.get("FAIL") else 0


if __name__ == "__main__":
    sys.exit(main())
