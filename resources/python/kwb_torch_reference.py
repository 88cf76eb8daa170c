#!/usr/bin/env python3
"""Kernel Workbench: run a PyTorch module as a task's reference.

The C++ evaluator (core/eval/torch_reference.{h,cpp}) starts this helper with
Python 3.10+; it needs only the standard library and torch (imported lazily,
so spec errors are reported even where torch is missing).

Invocation
    kwb_torch_reference.py SPEC.json      (or "-": the spec on stdin)
    kwb_torch_reference.py --probe

--probe prints one JSON line and exits 0 when ok, 2 otherwise:
    {"ok": true, "python": "3.12.3", "torch": "2.11.0+cu130", "cuda": true,
     "device": "NVIDIA H200" | null, "compile": true | false}
    {"ok": false, "kind": "no-torch" | "internal", "message": "..."}
"compile" says whether torch.compile's inductor backend (and, with CUDA,
Triton) can be imported; nothing is compiled.

SPEC.json
    {"module": "/abs/reference.py",      KernelBench format: class Model(nn.Module)
     "init": [...] | null,               Model(*init); null/absent: get_init_inputs()
                                         when the module defines it, else no arguments
     "device": 0,                        CUDA device index (default 0); "cpu": the CPU,
                                         for tests of this helper only (no timings)
     "seed": 0,                          torch.manual_seed before building (default 0)
     "forward": [ARG...] | null,         forward's arguments in order (below)
     "constants": {"NAME": value} | null, top-level names of the module file set to
                                         these values (below)
     "jobs": [{"id": "small/seed 1",
               "init": [...],            optional: Model(*init) for this job (overrides
                                         the top level's)
               "constants": {...},       optional: overrides the top level's
               "repeat_check": false,    optional: run forward twice (below)
               "inputs":  [TENSOR...],   roles "in" | "inout"
               "outputs": [TENSOR...]}], roles "out" | "inout"
     "timings": [{"id": "small", "init": [...], "constants": {...}, "inputs": [TENSOR...], "outputs": ignored,
                  "modes": ["eager", "compile"], "cap_ms": 3000,
                  "min_samples": 10, "max_samples": 1000,
                  "target_spread": 0.01, "warmup_ms": 50}]}   (numbers optional)
    TENSOR = {"name": "x", "dtype": "f32", "shape": [16, 256],
              "file": "/tmp/x.bin", "role": "in", "state": "fc.weight" | "draw": 1}
    dtypes: f64 f32 f16 bf16 i64 i32 i8 u8 bool. Files hold the raw little-endian
    element bytes, row-major (bool: one byte 0/1). The "out" outputs are, in
    order, what forward returns (one tensor or a tuple/list of tensors); an
    "inout" output is the input of that name after forward ran. Shapes and
    dtypes are checked strictly (a one-element output may come back as a
    0-dim or [1] tensor); each output's bytes are written to its file.
    ARG = "x" (an input without "state" or "draw") | {"name": "alpha", "value": 0.5}
    (a number passed as it is: a JSON integer as a Python int, else a float).
    Without "forward": every input without "state" or "draw", in order. With
    it, every input without "state" or "draw" must be one of its arguments.

Model. The module file is executed once per distinct "constants" (a job's
or timing's, else the top level's): with some, through kwb_problem_module.py's
load_problem (each NAME set to its value right after every top-level
assignment to it, so what the file derives from it follows: a shape tuple,
get_init_inputs()' arguments). Model is built once per module and distinct
argument list (a job's or timing's "init", else the top level's, else that
module's get_init_inputs()), after torch.manual_seed(seed), and moved to the
device. It stays in the mode its constructor left it (nn.Module starts in
training mode, as KernelBench evaluates it): no eval() is called, so
BatchNorm uses batch statistics and Dropout is active unless the module
says otherwise.

Module state. An input with "state" is not an argument of forward: it is
loaded into the module before forward. A parameter or buffer (state-dict
key: "conv.weight", "bn.running_mean", "layers.0.weight_ih_l0") is copied
into the module's tensor, whose shape and dtype must be the input's; a plain
tensor attribute ("h0" for self.h0 = torch.randn(...) in __init__, a dotted
path into submodules) is replaced by the input on the device (same shape and
dtype too). Other keys fail ("module-state"). The parameters and buffers
the spec does not give keep the values Model built (listed in a progress
line). Before every forward of a job the whole state is put back (those
values, then the given ones), so a training-mode BatchNorm's in-place update
of its running statistics never carries from one job or run to the next;
timing loads the state once per mode (outputs do not depend on what
forward updates in training mode, and eval mode updates nothing).

Draws. An input with "draw": N is not an argument of forward either: it is
the tensor forward's N-th random call returns (torch.randn, torch.rand,
torch.randint, torch.normal and their _like forms, looked up on torch while
forward runs: `h0 = torch.randn(layers, batch, hidden, device=x.device)`).
Those functions are replaced while forward runs (jobs, timings, the compiled
forward: there they are kept out of the graph) by one that hands back the
draws in order (copies, on the device the call asks for), after checking that the
call's shape and dtype are the draw's ("draw-mismatch" otherwise, also when
forward makes more random calls than the draws, or in a job fewer).
Numbers 1..K, each once, are required.

Reference outputs (jobs) are computed with torch.use_deterministic_algorithms(True,
warn_only=True) and cudnn.deterministic (cuDNN's fastest transposed convolutions add with
atomics: their last bits differ run to run); timings with the defaults, as a user's model runs.

Repeat check ("repeat_check": true): forward runs a second time on the same
inputs (read again, state reloaded, the random generator NOT reseeded) and
every output must be the first run's bit for bit, or within the output's
"tolerance" ({"rtol", "atol"} on an output entry, optional: then a progress
line flags it NONDETERMINISTIC and the first run's outputs are used);
otherwise the job fails with "nondeterministic", naming the output, how many
elements differ and by how much at most. The first run's outputs are written.

Timing (per timing entry and mode; "compile" = torch.compile(model, dynamic=False)
after torch._dynamo.reset(), its first call timed as compile_seconds): before
each sample the L2 is flushed by reading a float32 buffer of
max(2 x L2, 64 MiB); 3 warm-up calls, then more until warmup_ms (10 s at most).
A sample is the span from the start of the first to the end of the last GPU
activity (kernels, and memcpy/memset, see SPAN_INCLUDES_COPIES) of one
forward call, measured with CUPTI through torch.profiler (batches of
PROFILE_BATCH samples, split by the (flush, forward) pattern learned from a
profile of each alone). When the profiler sees nothing or the pattern does
not hold, CUDA events around the call are used instead ("timer":
"cuda-events", "timer_note": why). Sampling stops after min_samples when
IQR/median < target_spread ("converged"), at max_samples ("max-samples") or
after cap_ms of sampling ("time-cap"). Quartiles interpolate linearly
between order statistics.

Output (stdout, one JSON object per line, flushed; nothing else is ever
written there: fd 1 is pointed at stderr and the protocol uses a private copy)
    {"event": "progress", "text": "small/seed 1: forward ran (0.8 s)"}
    ... and last:
    {"result": {"ok": true, "python": ..., "torch": ..., "device": ...,
                "jobs": [{"id": ..., "seconds": ...}],
                "timings": [{"id": "small", "eager": MODE, "compile": MODE}]}}
    MODE = {"median_ms", "q1_ms", "q3_ms", "iqr_ms", "min_ms", "max_ms",
            "mean_ms", "samples", "relative_spread" (null when the median is 0),
            "stop_reason", "timer": "cupti" | "cuda-events", "timer_note"?,
            "kernels_per_sample" (null if unknown), "copies_per_sample" (null
            if unknown), "compile_seconds"?}
         | {"error": "torch.compile failed: <type>: <first line>"}
           (or "forward raised ..." / "timing failed ...")
    On failure (exit status 2):
    {"result": {"ok": false, "kind": K, "message": M, "file"?: F, "line"?: L,
                "job"?: ID, "traceback"?: T (last 20 lines)}}
    K: bad-spec | no-torch | no-cuda | module-load | no-model | init-raised |
       module-state | forward-raised | wrong-output | nondeterministic |
       input-file | output-file | internal
Exit status: 0 ok, 2 failure.  Non-finite floats are written as null.
"""

import contextlib
import ctypes
import importlib.machinery
import importlib.util
import json
import math
import os
import platform
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kwb_problem_state  # noqa: E402  (beside this file: the random functions a draw answers)

# cuBLAS's deterministic mode needs this before CUDA starts (torch.use_deterministic_algorithms).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
MODULE_NAME = "kwb_reference"
DTYPES = {  # spec name -> (torch attribute, bytes per element)
    "f64": ("float64", 8), "f32": ("float32", 4), "f16": ("float16", 2),
    "bf16": ("bfloat16", 2), "i64": ("int64", 8), "i32": ("int32", 4),
    "i8": ("int8", 1), "u8": ("uint8", 1), "bool": ("bool", 1),
}
MODES = ("eager", "compile")
TIMING_DEFAULTS = {"cap_ms": 3000.0, "min_samples": 10, "max_samples": 1000,
                   "target_spread": 0.01, "warmup_ms": 50.0}
FLUSH_MIN_BYTES = 64 << 20
WARMUP_CALLS = 3
WARMUP_MAX_S = 10.0
PROFILE_BATCH = 20          # samples per profiler session
CHECK_EVERY = 10            # samples between stop checks with CUDA events
SPAN_INCLUDES_COPIES = True  # a forward's memcpy/memset count in its span
SYNC_NAMES = ("Context Sync", "Stream Sync", "Event Sync", "Stream Wait Event",
              "Device Synchronize", "Unknown Sync")
TRACEBACK_LINES = 20
MESSAGE_CHARS = 4000

_channel = None  # the protocol's private copy of stdout


# ----------------------------------------------------------------- output

class Failure(Exception):
    """Ends the run with {"result": {"ok": false, ...}}."""

    def __init__(self, kind, message, file=None, line=None, job=None, exc=None):
        super().__init__(message)
        self.kind, self.message = kind, message
        self.file, self.line, self.job, self.exc = file, line, job, exc

    def result(self):
        r = {"ok": False, "kind": self.kind, "message": _clip(self.message)}
        for key in ("file", "line", "job"):
            if getattr(self, key) is not None:
                r[key] = getattr(self, key)
        if self.exc is not None:
            r["traceback"] = format_traceback(self.exc)
        return r


def open_channel():
    """Keep a private copy of stdout for the protocol; send fd 1 to stderr so
    prints of the module, of torch or of its compilers cannot reach it."""
    global _channel
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    _channel = os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def _clean(value):
    """JSON cannot hold NaN or infinities: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def emit(obj):
    _channel.write(json.dumps(_clean(obj), allow_nan=False) + "\n")
    _channel.flush()


def progress(text):
    emit({"event": "progress", "text": text})


def _clip(text):
    text = str(text)
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " ..."


def first_line(exc):
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def describe(exc):
    return f"{type(exc).__name__}: {first_line(exc)}"


def format_traceback(exc):
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return "\n".join(text.rstrip("\n").splitlines()[-TRACEBACK_LINES:])


def frame_in(exc, path):
    """(file, line) of the innermost traceback frame in `path`, else (None, None)."""
    want = os.path.realpath(path)
    found = (None, None)
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename and os.path.realpath(frame.filename) == want:
            found = (frame.filename, frame.lineno)
    return found


def _at(file, line):
    return f" (at {os.path.basename(file)}:{line})" if file else ""


# ------------------------------------------------------- spec (no torch)

def bad(where, what):
    raise Failure("bad-spec", f"spec field {where}: {what}")


def _int(obj, key, where, default=None, minimum=0):
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        bad(f"{where}.{key}", "missing" if key not in obj else "not an integer")
    if value < minimum:
        bad(f"{where}.{key}", f"must be at least {minimum}")
    return value


def _number(obj, key, where, default):
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        bad(f"{where}.{key}", "not a number")
    if not math.isfinite(value) or value < 0:
        bad(f"{where}.{key}", "must be a finite number >= 0")
    return float(value)


def _str(obj, key, where):
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        bad(f"{where}.{key}", "missing" if key not in obj else "not a non-empty string")
    return value


def _list(obj, key, where, required=True):
    if key not in obj or obj[key] is None:
        if required:
            bad(f"{where}.{key}", "missing")
        return []
    if not isinstance(obj[key], list):
        bad(f"{where}.{key}", "not a list")
    return obj[key]


def _dict(value, where):
    if not isinstance(value, dict):
        bad(where, "not an object")
    return value


def check_tensor(entry, where, roles, need_file):
    _dict(entry, where)
    t = {"name": _str(entry, "name", where), "dtype": _str(entry, "dtype", where)}
    if t["dtype"] not in DTYPES:
        bad(f"{where}.dtype", f"unknown dtype {t['dtype']!r}; expected one of {', '.join(DTYPES)}")
    shape = _list(entry, "shape", where)
    if any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape):
        bad(f"{where}.shape", "must be a list of integers >= 0")
    t["shape"] = list(shape)
    t["role"] = _str(entry, "role", where)
    if t["role"] not in roles:
        bad(f"{where}.role", f"{t['role']!r} is not one of {', '.join(roles)}")
    t["file"] = _str(entry, "file", where) if need_file else entry.get("file")
    t["tolerance"] = None
    if entry.get("tolerance") is not None:
        tol = _dict(entry["tolerance"], f"{where}.tolerance")
        t["tolerance"] = (_number(tol, "rtol", f"{where}.tolerance", 0.0), _number(tol, "atol", f"{where}.tolerance", 0.0))
    t["state"] = None
    if entry.get("state") is not None:
        t["state"] = _str(entry, "state", where)
        if t["role"] != "in":
            bad(f"{where}.state", f"{t['name']!r} is module state ({t['state']!r}); only an \"in\" tensor can be")
    t["draw"] = None
    if entry.get("draw") is not None:
        draw = entry["draw"]
        if isinstance(draw, bool) or not isinstance(draw, int) or draw < 1:
            bad(f"{where}.draw", "must be an integer >= 1 (forward's random call it stands for)")
        if t["role"] != "in" or t["state"] is not None:
            bad(f"{where}.draw", f"{t['name']!r} is a draw; only an \"in\" tensor without state can be")
        t["draw"] = draw
    return t


def check_tensors(obj, key, where, roles, need_file):
    entries = _list(obj, key, where)
    tensors = [check_tensor(e, f"{where}.{key}[{i}]", roles, need_file)
               for i, e in enumerate(entries)]
    names = [t["name"] for t in tensors]
    for i, name in enumerate(names):
        if name in names[:i]:
            bad(f"{where}.{key}[{i}].name", f"{name!r} appears twice")
    draws = sorted(t["draw"] for t in tensors if t["draw"] is not None)
    if draws != list(range(1, len(draws) + 1)):
        bad(f"{where}.{key}", f"the draws are {draws}; expected 1, 2, ... each once (forward's random calls in order)")
    return tensors


def check_inouts(job, where):
    """An "inout" output names an "inout" input with the same dtype and shape."""
    inputs = {t["name"]: t for t in job["inputs"]}
    for i, out in enumerate(job["outputs"]):
        if out["role"] != "inout":
            continue
        src = inputs.get(out["name"])
        if src is None or src["role"] != "inout":
            bad(f"{where}.outputs[{i}]", f"inout output {out['name']!r} has no inout input of that name")
        if src["dtype"] != out["dtype"] or src["shape"] != out["shape"]:
            bad(f"{where}.outputs[{i}]", f"inout output {out['name']!r} differs from its input in dtype or shape")


def check_init(obj, where):
    """A list of Model(...)'s arguments, or None (absent or null)."""
    init = obj.get("init")
    if init is not None and not isinstance(init, list):
        bad(f"{where}.init", "must be a list or null")
    return init


def check_constants(obj, where):
    """{"NAME": value} for kwb_problem_module.load_problem, or None (absent or null)."""
    constants = obj.get("constants")
    if constants is None:
        return None
    if not isinstance(constants, dict):
        bad(f"{where}.constants", "must be an object of top-level names and values, or null")
    for name, value in constants.items():
        if not name.isidentifier():
            bad(f"{where}.constants", f"{name!r} is not a Python name")
        if isinstance(value, dict):
            bad(f"{where}.constants.{name}", "must be a number, string, boolean, null or list")
    return constants


def check_forward(spec):
    """forward's arguments: [("tensor", name) | ("value", name, number)], or None."""
    entries = spec.get("forward")
    if entries is None:
        return None
    if not isinstance(entries, list):
        bad("spec.forward", "must be a list or null")
    out = []
    for i, e in enumerate(entries):
        where = f"spec.forward[{i}]"
        if isinstance(e, str) and e:
            out.append(("tensor", e))
            continue
        if not isinstance(e, dict):
            bad(where, "must be an input's name or {\"name\": ..., \"value\": NUMBER}")
        value = e.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            bad(f"{where}.value", "missing" if "value" not in e else "not a number")
        out.append(("value", _str(e, "name", where), value))
    names = [a[1] for a in out]
    for i, name in enumerate(names):
        if name in names[:i]:
            bad(f"spec.forward[{i}]", f"{name!r} appears twice")
    return out


def check_arguments(entry, forward, where):
    """forward names inputs of this entry that are not module state, and every
    such input is one of its arguments."""
    inputs = {t["name"]: t for t in entry["inputs"]}
    if forward is None:
        return
    for i, arg in enumerate(forward):
        if arg[0] != "tensor":
            continue
        t = inputs.get(arg[1])
        if t is None:
            bad(f"spec.forward[{i}]", f"{arg[1]!r} is not an input of {where} (its inputs: "
                                       f"{', '.join(inputs) or 'none'})")
        if t["state"] is not None:
            bad(f"spec.forward[{i}]", f"{arg[1]!r} is module state ({t['state']!r}), loaded into Model, "
                                       f"not an argument of forward")
        if t["draw"] is not None:
            bad(f"spec.forward[{i}]", f"{arg[1]!r} is draw {t['draw']}, handed to forward's random call, "
                                       f"not an argument of forward")
    named = {a[1] for a in forward if a[0] == "tensor"}
    for i, t in enumerate(entry["inputs"]):
        if t["state"] is None and t["draw"] is None and t["name"] not in named:
            bad(f"{where}.inputs[{i}]", f"{t['name']!r} is neither module state nor an argument of forward "
                                        f"(spec.forward names {', '.join(sorted(named)) or 'no tensor'})")


def check_job(entry, where, forward):
    _dict(entry, where)
    job = {"id": _str(entry, "id", where),
           "inputs": check_tensors(entry, "inputs", where, ("in", "inout"), True),
           "outputs": check_tensors(entry, "outputs", where, ("out", "inout"), True),
           "init": check_init(entry, where), "constants": check_constants(entry, where)}
    repeat = entry.get("repeat_check", False)
    if not isinstance(repeat, bool):
        bad(f"{where}.repeat_check", "not true or false")
    job["repeat_check"] = repeat
    check_inouts(job, where)
    check_arguments(job, forward, where)
    return job


def check_timing(entry, where, forward):
    _dict(entry, where)
    t = {"id": _str(entry, "id", where),
         "inputs": check_tensors(entry, "inputs", where, ("in", "inout"), True),
         "init": check_init(entry, where), "constants": check_constants(entry, where)}
    check_arguments(t, forward, where)
    modes = _list(entry, "modes", where)
    if not modes or any(m not in MODES for m in modes) or len(set(modes)) != len(modes):
        bad(f"{where}.modes", f"must be a non-empty list of distinct modes from {', '.join(MODES)}")
    t["modes"] = list(modes)
    for key in ("cap_ms", "target_spread", "warmup_ms"):
        t[key] = _number(entry, key, where, TIMING_DEFAULTS[key])
    t["min_samples"] = _int(entry, "min_samples", where, TIMING_DEFAULTS["min_samples"], 1)
    t["max_samples"] = _int(entry, "max_samples", where, TIMING_DEFAULTS["max_samples"], 1)
    if t["max_samples"] < t["min_samples"]:
        bad(f"{where}.max_samples", "is less than min_samples")
    return t


def check_spec(spec):
    _dict(spec, "(top level)")
    out = {"module": os.path.abspath(_str(spec, "module", "spec"))}
    out["init"] = check_init(spec, "spec")
    out["constants"] = check_constants(spec, "spec")
    out["device"] = "cpu" if spec.get("device") == "cpu" else _int(spec, "device", "spec", 0)
    out["seed"] = _int(spec, "seed", "spec", 0)
    out["forward"] = check_forward(spec)
    out["jobs"] = [check_job(e, f"jobs[{i}]", out["forward"]) for i, e in enumerate(_list(spec, "jobs", "spec"))]
    out["timings"] = [check_timing(e, f"timings[{i}]", out["forward"])
                      for i, e in enumerate(_list(spec, "timings", "spec", required=False))]
    if out["timings"] and out["device"] == "cpu":
        bad("spec.timings", "timing needs a CUDA device (\"device\": \"cpu\" is for tests of the reference only)")
    return out


def read_spec(arg):
    try:
        text = sys.stdin.read() if arg == "-" else open(arg, encoding="utf-8").read()
    except OSError as e:
        raise Failure("bad-spec", f"cannot read the spec {arg}: {e.strerror or e}")
    try:
        spec = json.loads(text)
    except ValueError as e:
        raise Failure("bad-spec", f"the spec is not valid JSON: {e}")
    return check_spec(spec)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def check_input_file(t, job_id):
    """The file exists and holds numel x itemsize bytes."""
    want = numel(t["shape"]) * DTYPES[t["dtype"]][1]
    try:
        size = os.path.getsize(t["file"])
    except OSError as e:
        raise Failure("input-file", f"input {t['name']}: cannot read {t['file']}: {e.strerror or e}",
                      file=t["file"], job=job_id)
    if size != want:
        raise Failure("input-file",
                      f"input {t['name']}: {t['file']} holds {size} bytes; shape {t['shape']} "
                      f"of {t['dtype']} needs {want}", file=t["file"], job=job_id)


def check_input_files(spec):
    for entry in spec["jobs"] + spec["timings"]:
        for t in entry["inputs"]:
            check_input_file(t, entry["id"])


def check_module_source(path):
    """The module file exists and compiles (no torch needed for this)."""
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as e:
        raise Failure("module-load", f"cannot read the module {path}: {e.strerror or e}", file=path)
    try:
        compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise Failure("module-load", f"syntax error in {os.path.basename(path)}: {e.msg}",
                      file=e.filename or path, line=e.lineno, exc=e)
    except ValueError as e:  # e.g. null bytes
        raise Failure("module-load", f"cannot compile {path}: {e}", file=path, exc=e)


# ------------------------------------------------------------------ torch

def import_torch():
    try:
        import torch
    except Exception as e:  # ImportError, or OSError from a broken install
        raise Failure("no-torch",
                      f"PyTorch is not installed for {sys.executable} ({platform.python_version()}): "
                      f"{describe(e)}; install it (pip install torch) or name another interpreter")
    return torch


def select_device(torch, index):
    if index == "cpu":  # tests of the reference without a GPU
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise Failure("no-cuda", f"CUDA is not available to PyTorch {torch.__version__} "
                                 f"(built for CUDA {torch.version.cuda}; "
                                 f"{torch.cuda.device_count()} devices visible)")
    count = torch.cuda.device_count()
    if index >= count:
        names = ", ".join(f"{i}: {torch.cuda.get_device_name(i)}" for i in range(count))
        raise Failure("no-cuda", f"CUDA device {index} does not exist; this machine has {names}")
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def compile_available(torch):
    """torch.compile's inductor backend can be imported (and Triton, with CUDA)."""
    try:
        import torch._inductor  # noqa: F401
        if torch.cuda.is_available():
            from torch.utils._triton import has_triton
            return bool(has_triton())
        return True
    except Exception:
        return False


def probe():
    try:
        torch = import_torch()
    except Failure as f:
        emit({"ok": False, "kind": f.kind, "message": f.message})
        return 2
    try:
        cuda = torch.cuda.is_available()
        emit({"ok": True, "python": platform.python_version(), "torch": torch.__version__,
              "cuda": cuda, "device": torch.cuda.get_device_name(0) if cuda else None,
              "compile": compile_available(torch)})
        return 0
    except Exception as e:
        emit({"ok": False, "kind": "internal", "message": f"probing torch failed: {describe(e)}"})
        return 2


def problem_loader():
    """kwb_problem_module.load_problem, from the file beside this one (not
    whatever of that name the module's folder holds)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kwb_problem_module.py")
    try:
        spec = importlib.util.spec_from_file_location("kwb_problem_module", here)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.load_problem
    except Exception as e:
        raise Failure("internal", f"the workbench's {here} could not be loaded: {describe(e)}", exc=e)


def load_module(path, constants=None):
    """The module file executed; with `constants`, by kwb_problem_module.load_problem: each
    top-level name set to its value after every assignment to it (see that file)."""
    load_problem = problem_loader() if constants else None
    if os.path.dirname(path) not in sys.path:
        sys.path.insert(0, os.path.dirname(path))
    try:
        if constants:
            return load_problem(path, constants, MODULE_NAME)
        loader = importlib.machinery.SourceFileLoader(MODULE_NAME, path)
        spec = importlib.util.spec_from_loader(MODULE_NAME, loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[MODULE_NAME] = module
        loader.exec_module(module)
    except SyntaxError as e:
        raise Failure("module-load", f"syntax error in {e.filename}: {e.msg}",
                      file=e.filename, line=e.lineno, exc=e)
    except BaseException as e:
        file, line = frame_in(e, path)
        raise Failure("module-load", f"importing {os.path.basename(path)} raised {describe(e)}{_at(file, line)}",
                      file=file or path, line=line, exc=e)
    return module


def init_arguments(module, init, path):
    if init is not None:
        return init
    get = getattr(module, "get_init_inputs", None)
    if get is None:
        return []
    try:
        args = get()
    except BaseException as e:
        file, line = frame_in(e, path)
        raise Failure("init-raised", f"get_init_inputs() raised {describe(e)}{_at(file, line)}",
                      file=file, line=line, exc=e)
    if not isinstance(args, (list, tuple)):
        raise Failure("init-raised", f"get_init_inputs() returned a {type(args).__name__}, not a list")
    return list(args)


def build_model(torch, module, path, seed, args, device):
    """Model(*args) on the device, in the mode its constructor left it."""
    cls = getattr(module, "Model", None)
    if cls is None or not callable(cls):
        what = "does not define" if cls is None else "defines a non-callable"
        raise Failure("no-model", f"{os.path.basename(path)} {what} Model", file=path)
    torch.manual_seed(seed)
    # Full f32: no TF32 in matmuls or convolutions (cuDNN allows it by default), so the module's
    # outputs are the f32 results a f32 kernel is checked against, and its timings are of f32 work.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        model = cls(*args)
    except BaseException as e:
        file, line = frame_in(e, path)
        raise Failure("init-raised", f"Model(*init) raised {describe(e)}{_at(file, line)}",
                      file=file, line=line, exc=e)
    if not isinstance(model, torch.nn.Module):
        raise Failure("no-model", f"Model(*init) built a {type(model).__name__}, not a torch.nn.Module", file=path)
    try:
        return model.to(device)  # no eval(): training-mode behaviour is the problem's (see the header)
    except BaseException as e:
        raise Failure("init-raised", f"moving the model to {device} raised {describe(e)}", exc=e)


class Built:
    """One Model instance, and what its state was before the task's state
    was first loaded into it (the parameters and buffers the task does not
    give, restored before every forward)."""

    def __init__(self, model, label):
        self.model, self.label = model, label
        self.kept = None  # state key -> copy of the module's own value


class Models:
    """The module file loaded once per distinct "constants" (an entry's, else the
    spec's), and Model built once per module and distinct argument list: an
    entry's "init", else the spec's, else that module's get_init_inputs()
    (called once)."""

    def __init__(self, torch, spec, device):
        self.torch, self.spec, self.device = torch, spec, device
        self.modules = {}  # constants key -> [module, get_init_inputs() or None, label]
        self.built = {}

    def module(self, constants):
        key = json.dumps(constants or {}, sort_keys=True)
        if key not in self.modules:
            path = self.spec["module"]
            where = ", ".join(f"{k} = {v!r}" for k, v in sorted((constants or {}).items()))[:200]
            module, seconds = timed(f"loading {os.path.basename(path)}" + (f" with {where}" if where else ""),
                                    lambda: load_module(path, constants))
            progress(f"module loaded ({seconds:.1f} s)")
            self.modules[key] = [module, None, f" [{where}]" if where else ""]
        return key, self.modules[key]

    def get(self, entry):
        constants = entry["constants"] if entry["constants"] is not None else self.spec["constants"]
        module_key, slot = self.module(constants)
        module = slot[0]
        init = entry["init"] if entry["init"] is not None else self.spec["init"]
        if init is None:
            if slot[1] is None:
                slot[1] = init_arguments(module, None, self.spec["module"])
            key, args = (module_key, "get_init_inputs"), slot[1]
        else:
            key, args = (module_key, json.dumps(init)), init
        if key not in self.built:
            label = "Model(" + ", ".join(repr(a) for a in args)[:200] + ")" + slot[2]
            model, seconds = timed(f"building {label}", lambda: build_model(
                self.torch, module, self.spec["module"], self.spec["seed"], args, self.device))
            mode = "training" if model.training else "eval"
            progress(f"{label} built ({seconds:.1f} s, {mode} mode)")
            self.built[key] = Built(model, label)
        return self.built[key]


# ------------------------------------------------------------ module state

def spec_dtype_name(torch, dtype):
    for name, (attr, _) in DTYPES.items():
        if getattr(torch, attr) == dtype:
            return name
    return str(dtype).replace("torch.", "")


def state_tensors(model):
    """Every parameter and buffer by state key (a tied one under each name)."""
    found = dict(model.named_parameters(remove_duplicate=False))
    for key, b in model.named_buffers(remove_duplicate=False):
        found.setdefault(key, b)
    return found


def tensor_attribute(torch, model, key):
    """(owner module, attribute name) of a plain tensor attribute at the
    dotted path `key` ("h0", "cell.h0"), or None."""
    *path, attr = key.split(".")
    owner = model
    for part in path:
        owner = getattr(owner, part, None)
        if not isinstance(owner, torch.nn.Module):
            return None
    if not isinstance(getattr(owner, attr, None), torch.Tensor):
        return None
    return owner, attr


def unknown_state(model, t, known, job_id):
    keys = list(known)
    listed = ", ".join(keys[:8]) + (f", ... ({len(keys)} in all)" if len(keys) > 8 else "")
    has = f"its parameters and buffers: {listed}" if keys else "it has no parameters or buffers"
    raise Failure("module-state", f"input {t['name']}: state {t['state']!r} is not a parameter, buffer or "
                                  f"tensor attribute of Model ({has})", job=job_id)


def check_state_match(torch, current, t, job_id):
    if list(current.shape) != t["shape"] or current.dtype != torch_dtype(torch, t["dtype"]):
        raise Failure("module-state",
                      f"input {t['name']}: Model's {t['state']!r} is {list(current.shape)} "
                      f"{spec_dtype_name(torch, current.dtype)}, the task's is {t['shape']} {t['dtype']}; "
                      f"make the task's shape and dtype those of the module", job=job_id)


def load_state(torch, built, entry, inputs):
    """The task's state tensors into the module, after the parameters and
    buffers it does not give are put back as Model built them: every forward
    starts from the same state (a training-mode BatchNorm updates its running
    statistics in place)."""
    model, job_id = built.model, entry["id"]
    known = state_tensors(model)
    given = [(t, x) for t, x in zip(entry["inputs"], inputs) if t["state"] is not None]
    if built.kept is None:
        given_ids = {id(known[t["state"]]) for t, _ in given if t["state"] in known}
        built.kept = {k: v.detach().clone() for k, v in known.items() if id(v) not in given_ids}
        if built.kept:
            names = list(built.kept)
            listed = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "")
            progress(f"{built.label}: module state the task does not give, kept as Model built it: {listed}")
    with torch.no_grad():
        for key, value in built.kept.items():
            known[key].copy_(value)
        for t, x in given:
            target = known.get(t["state"])
            if target is not None:
                check_state_match(torch, target, t, job_id)
                target.copy_(x)
                continue
            found = tensor_attribute(torch, model, t["state"])
            if found is None:
                unknown_state(model, t, known, job_id)
            check_state_match(torch, getattr(*found), t, job_id)
            setattr(found[0], found[1], x)


def forward_arguments(forward, entry, inputs):
    """forward's arguments: the spec's "forward" order, else every input that
    is not module state, in order."""
    by_name = {t["name"]: x for t, x in zip(entry["inputs"], inputs)}
    if forward is None:
        return [x for t, x in zip(entry["inputs"], inputs) if t["state"] is None and t["draw"] is None]
    return [by_name[a[1]] if a[0] == "tensor" else a[2] for a in forward]


class Draws:
    """forward's random calls answered with the entry's draw tensors, in
    order (see Draws in the docstring).  `with draws:` replaces the functions
    on torch for the block; reset() before each forward."""

    def __init__(self, torch, entry, inputs):
        self.torch, self.job = torch, entry["id"]
        self.given = sorted(((t["draw"], t, x) for t, x in zip(entry["inputs"], inputs)
                             if t["draw"] is not None), key=lambda d: d[0])
        self.next, self.replaced = 0, None
        keep_out = getattr(getattr(torch, "compiler", None), "disable", None)
        self.functions = {}  # one function per name for the whole timing (torch.compile's guards)
        for name in kwb_problem_state.DRAW_FUNCTIONS:
            fn = self._answer(name, getattr(torch, name))
            self.functions[name] = keep_out(fn) if keep_out else fn

    def reset(self):
        self.next = 0

    def __enter__(self):
        if self.given:
            self.replaced = kwb_problem_state.draw_functions_replaced(self.torch, lambda name, _: self.functions[name])
            self.replaced.__enter__()
        return self

    def __exit__(self, kind, value, tb):
        replaced, self.replaced = self.replaced, None
        return replaced.__exit__(kind, value, tb) if replaced else False

    def check_all_used(self):
        if self.next != len(self.given):
            raise Failure("draw-mismatch", f"forward made {self.next} random call(s); the task gives "
                                           f"{len(self.given)} draw(s) (draw = 1 .. {len(self.given)})", job=self.job)

    def _requested(self, name, original, args, kwargs):
        """(shape, dtype, device) of what the call asks for, read by making it on the meta
        device (the call's own argument handling) or from its tensor arguments."""
        torch = self.torch
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        if name.endswith("_like"):
            like = args[0] if args else kwargs.get("input")
            rest = {k: v for k, v in kwargs.items() if k not in ("device", "input")}
            meta = original(torch.empty(like.shape, dtype=like.dtype, device="meta"), *args[1:], **rest)
            return list(meta.shape), meta.dtype, kwargs.get("device", like.device)
        if name == "normal" and tensors:
            shape = torch.broadcast_shapes(*(t.shape for t in tensors))
            return list(shape), tensors[0].dtype, tensors[0].device
        meta = original(*args, **dict(kwargs, device="meta"))
        device = kwargs.get("device")
        if device is None:
            device = torch.get_default_device() if hasattr(torch, "get_default_device") else torch.device("cpu")
        return list(meta.shape), meta.dtype, torch.device(device) if isinstance(device, (str, int)) else device

    def _answer(self, name, original):
        def answer(*args, **kwargs):
            kwargs.pop("generator", None)
            number = self.next + 1
            if self.next >= len(self.given):
                raise Failure("draw-mismatch", f"forward's random call {number} (torch.{name}) has no draw: the "
                                               f"task gives {len(self.given)} (draw = 1 .. {len(self.given)})",
                              job=self.job)
            _, t, x = self.given[self.next]
            self.next += 1
            shape, dtype, device = self._requested(name, original, args, kwargs)
            if shape != list(x.shape) or dtype != x.dtype:
                raise Failure("draw-mismatch",
                              f"forward's random call {number} (torch.{name}) asks for {shape} "
                              f"{spec_dtype_name(self.torch, dtype)}; the task's draw {number} ({t['name']}) is "
                              f"{t['shape']} {t['dtype']}: make the task's shape and dtype the call's", job=self.job)
            # a fresh tensor, as the call's own would be: forward may change it in place
            return x.to(device, copy=True)
        return answer


def torch_dtype(torch, name):
    return getattr(torch, DTYPES[name][0])


def read_tensor(torch, t, device, job_id):
    check_input_file(t, job_id)  # again: it may have changed since the start
    with open(t["file"], "rb") as f:
        data = f.read()
    dtype = torch_dtype(torch, t["dtype"])
    if t["dtype"] == "bool" and data.translate(None, b"\x00\x01"):
        raise Failure("input-file", f"input {t['name']}: {t['file']} holds bool bytes other than 0 and 1",
                      file=t["file"], job=job_id)
    if not data:  # frombuffer refuses an empty buffer
        return torch.empty(t["shape"], dtype=dtype, device=device)
    return torch.frombuffer(bytearray(data), dtype=dtype).reshape(t["shape"]).to(device)


def tensor_bytes(torch, tensor):
    """The raw little-endian element bytes, row-major, of any dtype (bool as
    0/1 bytes). Needs no numpy (torch wheels do not require it): copies the
    memory of the contiguous CPU tensor."""
    t = tensor.detach().contiguous().cpu()
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    n = t.numel() * t.element_size()
    return ctypes.string_at(t.data_ptr(), n) if n else b""


def write_tensor(torch, tensor, t, job_id):
    data = tensor_bytes(torch, tensor)
    try:
        with open(t["file"], "wb") as f:
            f.write(data)
    except OSError as e:
        raise Failure("output-file", f"output {t['name']}: cannot write {t['file']}: {e.strerror or e}",
                      file=t["file"], job=job_id)


def returned_values(torch, result, outs, job_id):
    """The tensors forward returned, one per "out" entry."""
    names = ", ".join(o["name"] for o in outs)
    if isinstance(result, torch.Tensor):
        values = [result]
    elif isinstance(result, (tuple, list)):
        values = list(result)
    else:
        raise Failure("wrong-output", f"forward returned a {type(result).__name__}; "
                                      f"the task expects {len(outs)} tensor(s) ({names})", job=job_id)
    if len(values) != len(outs):
        raise Failure("wrong-output", f"forward returned {len(values)} value(s); "
                                      f"the task expects {len(outs)} ({names})", job=job_id)
    for v, o in zip(values, outs):
        if not isinstance(v, torch.Tensor):
            raise Failure("wrong-output", f"forward returned a {type(v).__name__} for {o['name']}, "
                                          f"not a tensor", job=job_id)
    return values


def check_output(torch, value, o, job_id):
    shape = list(value.shape)
    one_element = numel(o["shape"]) == 1 and value.numel() == 1 and value.dim() <= 1
    if shape != o["shape"] and not one_element:
        raise Failure("wrong-output", f"forward returned shape {shape} for {o['name']}; "
                                      f"the task says {o['shape']}", job=job_id)
    if value.dtype != torch_dtype(torch, o["dtype"]):
        raise Failure("wrong-output", f"forward returned {value.dtype} for {o['name']}; "
                                      f"the task says {o['dtype']}", job=job_id)


def collect_outputs(torch, job, result, inputs):
    """(entry, tensor) for every output; with no "out" entries the value
    forward returns is not looked at."""
    outs = [o for o in job["outputs"] if o["role"] == "out"]
    returned = iter(returned_values(torch, result, outs, job["id"]) if outs else [])
    by_name = {t["name"]: x for t, x in zip(job["inputs"], inputs)}
    pairs = []
    for o in job["outputs"]:
        value = next(returned) if o["role"] == "out" else by_name[o["name"]]
        check_output(torch, value, o, job["id"])
        pairs.append((o, value))
    return pairs


def sync(torch, device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def forward_once(torch, built, job, forward, device, path):
    """Reads the job's inputs, loads the state, runs forward: (outputs, seconds)."""
    inputs = [read_tensor(torch, t, device, job["id"]) for t in job["inputs"]]
    load_state(torch, built, job, inputs)
    args = forward_arguments(forward, job, inputs)
    draws = Draws(torch, job, inputs)
    start = time.perf_counter()
    try:
        with torch.no_grad(), draws:
            result = built.model(*args)
        sync(torch, device)
        draws.check_all_used()
    except Failure:
        raise
    except BaseException as e:
        file, line = frame_in(e, path)
        raise Failure("forward-raised", f"forward raised {describe(e)}{_at(file, line)}",
                      file=file, line=line, job=job["id"], exc=e)
    return collect_outputs(torch, job, result, inputs), time.perf_counter() - start


BITS = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}


def bit_pattern(torch, value):
    """The tensor's elements as integers of the same width (bool as uint8)."""
    t = value.detach().contiguous().reshape(-1)
    if t.dtype == torch.bool:
        return t.to(torch.uint8)
    return t.view(getattr(torch, BITS[t.element_size()]))


def difference(torch, first, second):
    """(number of elements whose bits differ, their max finite abs difference
    or None, whether a non-finite value is among them)."""
    differ = bit_pattern(torch, first) != bit_pattern(torch, second)
    count = int(differ.sum())
    if not count:
        return 0, None, False
    a = first.detach().reshape(-1)[differ].to(torch.float64)
    b = second.detach().reshape(-1)[differ].to(torch.float64)
    finite = torch.isfinite(a) & torch.isfinite(b)
    largest = float((a[finite] - b[finite]).abs().max()) if bool(finite.any()) else None
    return count, largest, not bool(finite.all())


def within_tolerance(torch, o, a, b):
    """Whether two runs' outputs agree within the output's tolerance, |a - b| <= atol + rtol |a|
    (the check a candidate passes), when the task gives one (not "exact")."""
    if o.get("tolerance") is None or not a.dtype.is_floating_point:
        return False
    rtol, atol = o["tolerance"]
    x, y = a.detach().to(torch.float64), b.detach().to(torch.float64)
    return bool(((x - y).abs() <= atol + rtol * x.abs()).all())


def repeat_check(torch, built, job, forward, device, path, first):
    """forward again on the same inputs (read again, state reloaded): every
    output must be bit for bit the first run's."""
    second, _ = forward_once(torch, built, job, forward, device, path)
    found, within = [], []
    for (o, a), (_, b) in zip(first, second):
        count, largest, nonfinite = difference(torch, a, b)
        if count and not nonfinite and within_tolerance(torch, o, a, b):
            within.append(f"{o['name']} in {count} of {a.numel()} elements (max abs difference {largest:.6g})")
        elif count:
            found.append((o["name"], count, a.numel(), largest, nonfinite))
    if not found:
        progress(f"{job['id']}: forward ran twice, " +
                 ("the same outputs bit for bit" if not within else
                  "NONDETERMINISTIC within the task's tolerance: " + "; ".join(within) +
                  " (the first run's outputs are the reference)"))
        return
    name, count, total, largest, nonfinite = found[0]
    what = f"max abs difference {largest:.6g}" if largest is not None else "no finite difference"
    if nonfinite:
        what += ", some of them NaN or infinite in one run only"
    also = f"; also {', '.join(f[0] for f in found[1:])}" if len(found) > 1 else ""
    raise Failure("nondeterministic",
                  f"forward run twice on the same inputs (module state reloaded) disagrees with itself: output "
                  f"{name} differs in {count} of {total} elements ({what}){also}. A reference whose output is "
                  f"random cannot check a kernel: dropout (p > 0) in training mode, random operations in forward "
                  f"(torch.rand, torch.randn_like, ...), or atomics in a nondeterministic operator "
                  f"(torch.use_deterministic_algorithms(True) may help)", job=job["id"])


def run_job(torch, models, job, forward, device, path):
    built = models.get(job)
    progress(f"{job['id']}: running forward")
    outputs, seconds = forward_once(torch, built, job, forward, device, path)
    if job["repeat_check"]:
        outputs = [(o, v.detach().clone()) for o, v in outputs]  # not a view of what the second run changes
        repeat_check(torch, built, job, forward, device, path, outputs)
    for o, value in outputs:
        write_tensor(torch, value, o, job["id"])
    progress(f"{job['id']}: forward ran ({seconds:.1f} s)")
    return {"id": job["id"], "seconds": seconds}


# ----------------------------------------------------------------- timing

class TimerFallback(Exception):
    """CUPTI timing is not possible; the message says why."""


class ModeError(Exception):
    """The mode cannot be timed; the message is its "error"."""


class Bench:
    """L2 flush, synchronisation and the call being timed."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        props = torch.cuda.get_device_properties(device)
        l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        count = max(2 * l2, FLUSH_MIN_BYTES) // 4
        self.buffer = torch.zeros(count, dtype=torch.float32, device=device)
        self.sink = torch.zeros((), dtype=torch.float32, device=device)
        self.fn = None
        self.before = None  # called before each call of fn, untimed work only (Draws.reset)
        self.what = "forward"

    def flush(self):
        self.torch.sum(self.buffer, 0, out=self.sink)  # reads the whole buffer

    def sync(self):
        self.torch.cuda.synchronize(self.device)

    def call(self):
        if self.before is not None:
            self.before()
        try:
            self.fn()
        except Exception as e:
            raise ModeError(f"{self.what} raised {describe(e)}") from e


def warm_up(bench, warmup_ms):
    start = time.perf_counter()
    calls = 0
    while calls < WARMUP_CALLS or time.perf_counter() - start < min(warmup_ms / 1000, WARMUP_MAX_S):
        bench.call()
        bench.sync()
        calls += 1


def is_copy(name):
    return name.startswith("Memcpy") or name.startswith("Memset")


def gpu_activities(torch, prof):
    """The device activities of a finished profiler session, by start time:
    kernels, and memcpy/memset when SPAN_INCLUDES_COPIES."""
    cuda = torch.autograd.DeviceType.CUDA
    found = []
    for e in prof.events():
        if e.device_type != cuda or getattr(e, "is_user_annotation", False):
            continue
        if e.name in SYNC_NAMES or (is_copy(e.name) and not SPAN_INCLUDES_COPIES):
            continue
        found.append((e.time_range.start, e.time_range.end, e.name))
    found.sort()
    return found


def profiled(torch, bench, body):
    """Runs body() under a CUDA-only profiler; returns (body's value, activities)."""
    from torch.profiler import ProfilerActivity, profile
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            value = body()
        return value, gpu_activities(torch, prof)
    except ModeError:
        raise
    except Exception as e:
        raise TimerFallback(f"the profiler failed: {describe(e)}") from e


class Pattern:
    """The GPU activities of one flush and of one forward call."""

    def __init__(self, flush, forward):
        self.flush = sorted(n for _, _, n in flush)
        self.forward = sorted(n for _, _, n in forward)
        self.kernels = sum(1 for n in self.forward if not is_copy(n))
        self.copies = len(self.forward) - self.kernels


def learn_pattern(torch, bench):
    def flush():
        bench.flush()
        bench.sync()

    def forward():
        bench.call()
        bench.sync()

    _, flushed = profiled(torch, bench, flush)
    _, forwarded = profiled(torch, bench, forward)
    if not flushed:
        raise TimerFallback("the profiler recorded no GPU activity for the L2 flush (CUPTI unavailable?)")
    if not forwarded:
        raise TimerFallback("the profiler recorded no GPU activity for forward")
    return Pattern(flushed, forwarded)


def _names(names):
    shown = ", ".join(n[:80] for n in names[:6])
    return shown + (", ..." if len(names) > 6 else "")


def split_samples(acts, count, pattern):
    """Per sample, the span in ms of its forward activities."""
    f, k = len(pattern.flush), len(pattern.forward)
    if len(acts) != count * (f + k):
        raise TimerFallback(f"a profiled batch of {count} samples had {len(acts)} GPU activities; "
                            f"expected {count} x ({f} flush + {k} forward)")
    spans = []
    for i in range(count):
        group = acts[i * (f + k):(i + 1) * (f + k)]
        flush, forward = group[:f], group[f:]
        if sorted(n for _, _, n in flush) != pattern.flush or \
                sorted(n for _, _, n in forward) != pattern.forward:
            raise TimerFallback(f"sample {i + 1} of a profiled batch ran [{_names([n for _, _, n in group])}]; "
                                f"expected flush [{_names(pattern.flush)}] then forward [{_names(pattern.forward)}]")
        spans.append((max(e for _, e, _ in forward) - min(s for s, _, _ in forward)) / 1000.0)
    return spans


def cupti_batch(torch, bench, pattern, count, deadline):
    def body():
        done = 0
        while done < count:
            bench.flush()
            bench.sync()
            bench.call()
            bench.sync()
            done += 1
            if time.perf_counter() >= deadline:
                break
        return done

    done, acts = profiled(torch, bench, body)
    return split_samples(acts, done, pattern)


def events_batch(torch, bench, count, deadline):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    spans = []
    while len(spans) < count:
        bench.flush()
        bench.sync()
        start.record()
        bench.call()
        end.record()
        end.synchronize()
        spans.append(start.elapsed_time(end))
        if time.perf_counter() >= deadline:
            break
    return spans


def quantile(ordered, p):
    pos = p * (len(ordered) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def spread(samples):
    ordered = sorted(samples)
    median = quantile(ordered, 0.5)
    iqr = quantile(ordered, 0.75) - quantile(ordered, 0.25)
    return iqr / median if median > 0 else math.inf


def statistics(samples):
    ordered = sorted(samples)
    q1, median, q3 = (quantile(ordered, p) for p in (0.25, 0.5, 0.75))
    return {"median_ms": median, "q1_ms": q1, "q3_ms": q3, "iqr_ms": q3 - q1,
            "min_ms": ordered[0], "max_ms": ordered[-1],
            "mean_ms": sum(ordered) / len(ordered), "samples": len(ordered),
            "relative_spread": (q3 - q1) / median if median > 0 else None}


def sample(t, batch, step, label):
    """Adaptive sampling: batch(count, deadline) -> new samples."""
    samples = []
    start = time.perf_counter()
    deadline = start + t["cap_ms"] / 1000.0
    last_report = start
    while True:
        samples += batch(min(step, t["max_samples"] - len(samples)), deadline)
        now = time.perf_counter()
        if len(samples) >= t["min_samples"] and spread(samples) < t["target_spread"]:
            return samples, "converged"
        if len(samples) >= t["max_samples"]:
            return samples, "max-samples"
        if now >= deadline:
            return samples, "time-cap"
        if now - last_report >= 1.0:
            progress(f"{label}: {len(samples)} samples so far")
            last_report = now


def measure(torch, bench, t, label):
    """(samples, stop reason, timer fields)."""
    pattern, note = None, None
    try:
        pattern = learn_pattern(torch, bench)
        samples, reason = sample(t, lambda n, d: cupti_batch(torch, bench, pattern, n, d),
                                 PROFILE_BATCH, label)
        return samples, reason, timer_fields("cupti", None, pattern)
    except TimerFallback as e:
        note = str(e)
    progress(f"{label}: timing with CUDA events ({note})")
    samples, reason = sample(t, lambda n, d: events_batch(torch, bench, n, d), CHECK_EVERY, label)
    return samples, reason, timer_fields("cuda-events", note, pattern)


def timer_fields(timer, note, pattern):
    fields = {"timer": timer}
    if note:
        fields["timer_note"] = note
    fields["kernels_per_sample"] = pattern.kernels if pattern else None
    fields["copies_per_sample"] = pattern.copies if pattern else None
    return fields


def prepare_compiled(torch, bench, model, inputs, label):
    """torch.compile the model; its first call (the compilation) is timed."""
    progress(f"{label}: compiling")
    try:
        import torch._dynamo
        torch._dynamo.reset()
        compiled = torch.compile(model, dynamic=False)
        start = time.perf_counter()
        compiled(*inputs)
        bench.sync()
    except Exception as e:
        raise ModeError(f"torch.compile failed: {describe(e)}") from e
    seconds = time.perf_counter() - start
    progress(f"{label}: compiled ({seconds:.1f} s)")
    bench.fn = lambda: compiled(*inputs)
    bench.what = "the compiled forward"
    return seconds


def time_mode(torch, bench, built, t, mode, device, forward):
    label = f"timing {t['id']} ({mode})"
    inputs = [read_tensor(torch, x, device, t["id"]) for x in t["inputs"]]
    load_state(torch, built, t, inputs)  # once: outputs do not depend on what forward updates
    model, args = built.model, forward_arguments(forward, t, inputs)
    draws = Draws(torch, t, inputs)
    bench.fn, bench.what = (lambda: model(*args)), "forward"
    compile_seconds = None
    with draws:  # forward's random calls answered by the draws, one set per call (reset)
        bench.before = draws.reset if draws.given else None
        if mode == "compile":
            compile_seconds = prepare_compiled(torch, bench, model, args, label)
        progress(f"{label}: warming up")
        warm_up(bench, t["warmup_ms"])
        progress(f"{label}: measuring")
        samples, reason, fields = measure(torch, bench, t, label)
    report = statistics(samples)
    report["stop_reason"] = reason
    report.update(fields)
    if compile_seconds is not None:
        report["compile_seconds"] = compile_seconds
    progress(f"{label}: median {report['median_ms']:.4g} ms over {len(samples)} samples "
             f"({reason}, {fields['timer']})")
    return report


def run_timing(torch, bench, models, t, device, forward):
    built = models.get(t)
    entry = {"id": t["id"]}
    for mode in t["modes"]:
        try:
            with torch.no_grad():
                entry[mode] = time_mode(torch, bench, built, t, mode, device, forward)
        except Failure:
            raise
        except ModeError as e:
            entry[mode] = {"error": _clip(str(e))}
        except Exception as e:
            entry[mode] = {"error": _clip(f"timing failed: {describe(e)}")}
        finally:
            bench.fn = None
            if mode == "compile":
                _reset_dynamo(torch)
        if "error" in entry[mode]:
            progress(f"timing {t['id']} ({mode}): {entry[mode]['error']}")
    return entry


def _reset_dynamo(torch):
    try:
        torch._dynamo.reset()
    except Exception:
        pass


# ------------------------------------------------------------------- main

def timed(label, fn):
    progress(label)
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


@contextlib.contextmanager
def deterministic_algorithms(torch, on):
    """Reference outputs are computed with PyTorch's deterministic algorithms (cuDNN's
    deterministic convolutions: its fastest transposed convolutions add with atomics, and their
    last bits differ run to run); timing uses the defaults again, as a user's model runs."""
    if not on:
        yield
        return
    saved = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark,
             torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    torch.use_deterministic_algorithms(True, warn_only=True)
    progress("reference outputs with deterministic algorithms (torch.use_deterministic_algorithms, "
             "cudnn.deterministic)")
    try:
        yield
    finally:
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = saved[0], saved[1]
        torch.use_deterministic_algorithms(saved[2], warn_only=saved[3])


def run(spec_arg):
    spec = read_spec(spec_arg)
    check_module_source(spec["module"])
    check_input_files(spec)
    torch, seconds = timed("loading torch", import_torch)
    progress(f"torch {torch.__version__} loaded ({seconds:.1f} s)")
    device = select_device(torch, spec["device"])
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    models = Models(torch, spec, device)
    models.module(spec["constants"])  # a module that does not load fails before any job
    forward = spec["forward"]
    with deterministic_algorithms(torch, bool(spec["jobs"])):
        jobs = [run_job(torch, models, job, forward, device, spec["module"]) for job in spec["jobs"]]
    timings = []
    if spec["timings"]:
        bench = Bench(torch, device)
        timings = [run_timing(torch, bench, models, t, device, forward) for t in spec["timings"]]
    return {"ok": True, "python": platform.python_version(), "torch": torch.__version__,
            "device": name, "jobs": jobs, "timings": timings}


def main(argv):
    open_channel()
    if len(argv) != 2:
        emit({"result": Failure("bad-spec", "usage: kwb_torch_reference.py SPEC.json | - | --probe").result()})
        return 2
    if argv[1] == "--probe":
        return probe()
    try:
        result = run(argv[1])
    except Failure as f:
        result = f.result()
    except BaseException as e:  # the process always ends with a result line
        result = Failure("internal", f"the reference helper failed: {describe(e)}", exc=e).result()
    emit({"result": result})
    return 0 if result["ok"] else 2


def _exit(code):
    """Flush and leave without running interpreter teardown (CUDA, CUPTI and
    compile-worker shutdown have been seen to hang or crash at exit)."""
    for stream in (sys.stdout, sys.stderr, _channel):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    os._exit(code)


if __name__ == "__main__":
    _exit(main(sys.argv))
