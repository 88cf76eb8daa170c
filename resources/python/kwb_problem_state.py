# kwb_problem_state.py: the PyTorch half of `kwb import kernelbench` / `kwb import torch`, used by
# kwb_kernelbench.py --configs (its header documents the JSON; this file the rules).
#
# 1. Module state.  Every parameter, buffer and plain tensor attribute of the Model (and of its
#    submodules) is listed with its state-dict key (or attribute path), dtype and shape, and the
#    recipe the workbench's seeded generator fills it with.  Parameters always become task inputs:
#    the reference loads the very tensors the kernel is given, so any recipe is correct; the
#    recipe only keeps values in a realistic range.  It is PyTorch's default initialisation where
#    that has a closed form, by the module that owns the tensor:
#      nn.Linear, nn.Conv*d, nn.ConvTranspose*d, nn.Bilinear weight and bias:
#          kaiming-uniform with a = sqrt(5): uniform(+-1/sqrt(fan_in)), fan_in = weight.size(1) x
#          the kernel's elements (bias: the weight's fan_in)
#      nn.BatchNorm*, nn.LayerNorm, nn.GroupNorm, nn.InstanceNorm*, nn.RMSNorm: weight 1, bias 0,
#          running_mean 0, running_var 1, num_batches_tracked 0
#      nn.RNN, nn.LSTM, nn.GRU (and their cells): uniform(+-1/sqrt(hidden_size))
#      nn.Embedding: normal(0, 1); nn.PReLU: 0.25
#      nn.MultiheadAttention: in_proj_weight xavier-uniform (+-sqrt(6/(fan_in+fan_out))),
#          in_proj_bias and out_proj.bias 0
#    and checked against the values the module really holds (built on the CPU at the small sizes,
#    torch.manual_seed(0), against the same default at those sizes): a tensor the problem changed after construction (`nn.Parameter(
#    torch.randn(shape) * 0.02)`, a bias shifted by a constant) gets the recipe its values show:
#    a constant, integers in a range, a lower/upper triangle of a constant (a causal mask), else
#    uniform(min, max) or normal(mean, std) by the share of values within one standard deviation
#    (uniform 58%, normal 68%), numbers rounded to 3 significant digits ("measured").  A buffer or
#    tensor attribute whose values follow none of those (a table the module computes, e.g.
#    positional encodings) is not made an input: it stays inside the reference and a note says so.
# 2. Random outputs.  nn.Dropout*, nn.AlphaDropout, attention and recurrent dropout with p > 0 in
#    training mode (KernelBench builds modules in training mode and never calls eval()), and calls
#    of random functions (bernoulli, multinomial, randperm, in-place normal_/uniform_..., F.dropout
#    with p not 0, a random function imported by name) in the Model's methods other than __init__
#    make the output random: such a problem is refused.  Draws: a fresh random tensor forward makes
#    through torch (torch.randn, torch.rand, torch.randint, torch.normal with numbers, their _like
#    forms: `h0 = torch.randn(layers, batch, hidden, device=x.device)`) is an input the task gives
#    instead (draw = N, its N-th call; the reference hands it to that call): DrawRecorder records
#    each call's shape, dtype and recipe while forward runs on the meta device.
# 3. Sizes to iterate at.  Every tensor's shape (inputs, state, outputs) is read at several
#    assignments of the module's size constants (the constants an input's shape names), each by
#    executing the file with those constants replaced (kwb_problem_module.py), building the Model
#    on PyTorch's meta device and running forward there:
#      kernelbench  the problem's own sizes
#      probe        the batch (the first input's first dimension) doubled, and "probe NAME" each
#                   other size constant doubled alone: only to tell which size a dimension
#                   follows (where two sizes hold the same values, or a weight's dimension merely
#                   equals a size), kept where the module builds and runs there
#      small        every tensor together <= SMALL_BYTES (64 MiB): the batch divided down (to 16
#                   at most), then the largest other size constant halved (not below 8), one at a
#                   time, then the batch again (not below 2), keeping only steps the Model still
#                   builds and runs with, until it fits
#      large        the batch times the smallest power of two (<= 1024) that brings every tensor
#                   together to >= 1 GiB (none when the problem's sizes already hold that)
import ast
import contextlib
import math
import time

SMALL_BYTES = 64 << 20
LARGE_BYTES = 1 << 30
MAX_LARGE_SCALE = 1024
MIN_BATCH = 2
BATCH_FIRST_FLOOR = 16  # the batch is divided down to this first, then the other sizes
MIN_OTHER = 8
PLAN_SECONDS = 60  # the configurations' search stops there (a module forward runs on the CPU
#                   where the meta device lacks an operator, e.g. nn.GRU: slow at large sizes)
CPU_STATE_LIMIT = 1 << 30  # state bytes at the small sizes above which values are not read
DTYPE_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i8": 1, "u8": 1, "bool": 1}
# Random functions on torch whose call forward's draw can answer (kwb_torch_reference.py's Draws).
DRAW_FUNCTIONS = ("randn", "rand", "randint", "normal", "randn_like", "rand_like", "randint_like")
RANDOM_FUNCTIONS = ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
                    "bernoulli", "multinomial", "normal", "poisson", "normal_", "uniform_", "bernoulli_",
                    "exponential_", "geometric_", "cauchy_", "log_normal_", "random_")
DROPOUT_FUNCTIONS = ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                     "feature_alpha_dropout")


class StateProblem(Exception):
    """A reason the problem cannot be imported (kind, line, why, fix)."""

    def __init__(self, kind, line, why, fix):
        super().__init__(why)
        self.kind, self.line, self.why, self.fix = kind, line, why, fix


# ------------------------------------------------------------------ numbers

def sig(x, digits=3):
    """x rounded to `digits` significant digits (0 stays 0)."""
    if x == 0 or not math.isfinite(x):
        return 0.0
    return float(f"{x:.{digits}g}")


def uniform(bound):
    b = sig(bound, 6)
    return {"kind": "uniform", "low": -b, "high": b}


def constant(value):
    return {"kind": "constant", "value": value}


# ------------------------------------------------------------------ state

def tensor_attributes(torch, module):
    """(name, tensor) of a module's plain tensor attributes (not parameters or buffers)."""
    out = []
    for name, value in vars(module).items():
        if name.startswith("_") or not isinstance(value, torch.Tensor):
            continue
        if isinstance(value, torch.nn.Parameter):
            continue
        out.append((name, value))
    return out


def enumerate_state(torch, model):
    """[(key, tensor, owner module, local name, kind)] in module order."""
    found, seen = [], set()
    for prefix, module in model.named_modules():
        head = prefix + "." if prefix else ""
        for name, p in module._parameters.items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                found.append((head + name, p, module, name, "parameter"))
        for name, b in module._buffers.items():
            if b is not None and id(b) not in seen:
                seen.add(id(b))
                found.append((head + name, b, module, name, "buffer"))
        for name, t in tensor_attributes(torch, module):
            if id(t) not in seen:
                seen.add(id(t))
                found.append((head + name, t, module, name, "attribute"))
    return found


def fan_in(shape):
    if len(shape) < 2:
        return shape[0] if shape else 1
    return shape[1] * math.prod(shape[2:])


def closed_form(torch, module, name, shape):
    """(recipe, how) for PyTorch's default init of `name` in `module`, or (None, None)."""
    nn = torch.nn
    kind = type(module).__name__
    conv_like = (nn.Linear, nn.Bilinear, nn.modules.conv._ConvNd)
    if isinstance(module, conv_like) and name in ("weight", "bias"):
        weight = module._parameters.get("weight")
        fan = fan_in(list(weight.shape)) if weight is not None else 1
        if isinstance(module, nn.Bilinear):
            fan = list(weight.shape)[1]
        return uniform(1 / math.sqrt(max(fan, 1))), \
            f"{kind} default: uniform(+-1/sqrt({fan})), kaiming-uniform with a = sqrt(5)"
    norms = (nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm)
    if hasattr(nn, "RMSNorm"):
        norms = norms + (nn.RMSNorm,)
    if isinstance(module, norms):
        value = {"weight": 1.0, "bias": 0.0, "running_mean": 0.0, "running_var": 1.0,
                 "num_batches_tracked": 0}.get(name)
        if value is not None:
            return constant(value), f"{kind} default: {value}"
    if isinstance(module, (nn.RNNBase, nn.modules.rnn.RNNCellBase)):
        hidden = module.hidden_size
        return uniform(1 / math.sqrt(hidden)), f"{kind} default: uniform(+-1/sqrt({hidden}))"
    if isinstance(module, nn.Embedding) and name == "weight":
        return {"kind": "normal", "mean": 0.0, "std": 1.0}, "Embedding default: normal(0, 1)"
    if isinstance(module, nn.PReLU) and name == "weight":
        return constant(0.25), "PReLU default: 0.25"
    if isinstance(module, nn.MultiheadAttention):
        if name == "in_proj_weight" and len(shape) == 2:
            bound = math.sqrt(6 / (shape[0] + shape[1]))
            return uniform(bound), f"MultiheadAttention default: xavier-uniform (+-{sig(bound)})"
        if name == "in_proj_bias":
            return constant(0.0), "MultiheadAttention default: 0"
    if isinstance(module, nn.modules.linear.NonDynamicallyQuantizableLinear) and name == "bias":
        return constant(0.0), "MultiheadAttention out_proj default: 0"
    return None, None


def structured(torch, t):
    """(recipe, how) for a 2-D-or-more tensor equal to a constant's lower or upper triangle."""
    if t.dim() < 2 or t.shape[-1] != t.shape[-2] or t.shape[-1] < 2:
        return None, None
    for which, make in (("lower", torch.tril), ("upper", torch.triu)):
        if torch.equal(make(t), t):
            part = t[make(torch.ones_like(t, dtype=torch.bool))]
            if part.numel() and bool((part == part.flatten()[0]).all()):
                value = part.flatten()[0].item()
                recipe = constant(value if t.dtype.is_floating_point else int(value))
                recipe["matrix"] = which
                return recipe, f"measured: the {which} triangle of {value}"
    return None, None


def measured(torch, t):
    """(recipe, how, exact): the recipe the values show; exact when they are reproduced exactly
    (a constant, a triangle of one), else a fitted distribution (or None: no fit)."""
    flat = t.detach().flatten()
    if flat.numel() == 0:
        return constant(0), "empty", True
    if t.dtype == torch.bool:
        flat = flat.to(torch.int64)
    first = flat[0].item()
    if bool((flat == flat[0]).all()):
        return constant(first if t.dtype.is_floating_point else int(first)), f"measured: all {first}", True
    recipe, how = structured(torch, t.detach())
    if recipe:
        return recipe, how, True
    if not t.dtype.is_floating_point:
        low, high = int(flat.min().item()), int(flat.max().item())
        return {"kind": "randint", "low": low, "high": high + 1}, f"measured: integers in [{low}, {high}]", False
    x = flat.to(torch.float64)
    if not bool(torch.isfinite(x).all()):
        return None, "holds non-finite values", False
    mean, std = x.mean().item(), x.std().item() if x.numel() > 1 else 0.0
    low, high = x.min().item(), x.max().item()
    share = ((x - mean).abs() <= std).to(torch.float64).mean().item() if std > 0 else 1.0
    n = x.numel()
    if n >= 16 and share < 0.63:
        if abs(low + high) <= 0.02 * (high - low):
            bound = sig(max(-low, high))
            return {"kind": "uniform", "low": -bound, "high": bound}, \
                f"measured: uniform(+-{bound})", False
        return {"kind": "uniform", "low": sig(low), "high": sig(high)}, \
            f"measured: uniform({sig(low)}, {sig(high)})", False
    if abs(mean) < 3 * std / math.sqrt(n):
        mean = 0.0
    std = nice(std, n)
    return {"kind": "normal", "mean": sig(mean), "std": std}, \
        f"measured: normal({sig(mean):g}, {std:g})", False


def nice(std, n):
    """A sample standard deviation of n values as the round number (1, 2 or 5 times a power of
    ten) nearest to it where that is within three standard errors (relative 1/sqrt(2n)), else
    3 significant digits: torch.randn(s) * 0.02 reads as 0.02, torch.randn(16) as 1."""
    if std <= 0:
        return 0.0
    power = math.floor(math.log10(std))
    candidates = [m * 10.0 ** p for p in (power - 1, power, power + 1) for m in (1, 2, 5)]
    best = min(candidates, key=lambda c: abs(math.log(c / std)))
    if abs(best - std) <= 3 * std / math.sqrt(2 * max(n, 1)):
        return float(f"{best:.1g}")
    return sig(std)


def recipe_holds(torch, recipe, t):
    """Whether the tensor's values could have come from the recipe."""
    x = t.detach().flatten()
    if x.numel() == 0:
        return True
    if recipe["kind"] == "constant":
        return bool((x == recipe["value"]).all())
    if recipe["kind"] == "uniform":
        x = x.to(torch.float64)
        low, high = recipe["low"], recipe["high"]
        slack = 1e-6 * max(abs(low), abs(high), 1e-30)
        if x.min().item() < low - slack or x.max().item() > high + slack:
            return False
        if x.numel() >= 64:  # spread: a uniform's std is (high - low) / sqrt(12)
            want = (high - low) / math.sqrt(12)
            return abs(x.std().item() - want) <= 0.25 * want
        return True
    if recipe["kind"] == "normal":
        x = x.to(torch.float64)
        if x.numel() < 64:
            return True
        return abs(x.std().item() - recipe["std"]) <= 0.25 * recipe["std"] and \
            abs(x.mean().item() - recipe["mean"]) <= 0.25 * recipe["std"] + 1e-12
    return False


def dtype_short(torch, dtype):
    names = {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16",
             torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
             torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool"}
    return names.get(dtype, str(dtype).replace("torch.", ""))


def read_state(torch, meta_model, cpu_model):
    """The module state: [{"key", "kind", "owner", "dtype", "shape", "recipe", "how",
    "input"}], "input" false for a buffer/attribute left inside the reference."""
    cpu = {}  # key -> (values, the closed form at the CPU model's own sizes)
    if cpu_model is not None:
        for key, t, module, name, kind in enumerate_state(torch, cpu_model):
            form = closed_form(torch, module, name, list(t.shape))[0] \
                if kind != "attribute" else None
            cpu[key] = (t, form)
    out = []
    for key, t, module, name, kind in enumerate_state(torch, meta_model):
        entry = {"key": key, "kind": kind, "owner": type(module).__name__,
                 "dtype": dtype_short(torch, t.dtype), "shape": list(t.shape), "input": True}
        recipe, how = closed_form(torch, module, name, list(t.shape)) if kind != "attribute" \
            else (None, None)
        values, form = cpu.get(key, (None, None))
        if values is not None and (form is None or not recipe_holds(torch, form, values)):
            changed = recipe is not None
            recipe, how, exact = measured(torch, values)
            if changed:
                how = f"{how} (the problem changes the {entry['owner']} default)"
            if kind != "parameter" and not exact and not random_looking(how):
                entry["input"] = False
        if recipe is None:
            if kind != "parameter":
                entry["input"] = False
                how = "values not read (the module is too large to build on the CPU)"
            else:
                recipe, how = {"kind": "normal", "mean": 0.0, "std": 1.0}, \
                    "not read (the module is too large to build on the CPU): normal(0, 1)"
        entry["recipe"], entry["how"] = recipe, how
        out.append(entry)
    return out


def random_looking(how):
    """A buffer or attribute fitted by a distribution is taken as drawn at random
    (`self.h0 = torch.randn(...)`) when the fit is a plain normal or uniform."""
    return how.startswith("measured: normal") or how.startswith("measured: uniform")


# --------------------------------------------------------- random outputs

def random_modules(torch, model):
    """[why] for each submodule whose training-mode output is random."""
    nn, found = torch.nn, []
    for prefix, m in model.named_modules():
        if not m.training:
            continue
        name = prefix or "Model"
        p = None
        if isinstance(m, nn.modules.dropout._DropoutNd):
            p = m.p
        elif isinstance(m, nn.MultiheadAttention):
            p = m.dropout
        elif isinstance(m, nn.RNNBase) and m.num_layers > 1:
            p = m.dropout
        if p:
            found.append(f"{name} ({type(m).__name__}) drops values at random with p = {p} in training mode")
    return found


def random_calls(tree, aliases):
    """(line, text) of random calls in the Model's methods other than __init__, other than the
    draws (DRAW_FUNCTIONS called on torch itself: `torch.randn(...)`, under any alias of torch)."""
    found = []
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef) or fn.name == "__init__":
                continue
            for node in ast.walk(fn):
                if not isinstance(node, ast.Call):
                    continue
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                        and node.func.value.id == "self":
                    continue  # a submodule's call: random_modules looks at the module itself
                name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    node.func.id if isinstance(node.func, ast.Name) else None
                if name in DRAW_FUNCTIONS and isinstance(node.func, ast.Attribute) and \
                        isinstance(node.func.value, ast.Name) and node.func.value.id in aliases:
                    continue  # a draw: DrawRecorder
                if name in RANDOM_FUNCTIONS:
                    found.append((node.lineno, f"{ast.unparse(node.func)}(...) in {cls.name}.{fn.name}"))
                elif name in DROPOUT_FUNCTIONS and not zero_dropout(node):
                    found.append((node.lineno, f"{ast.unparse(node.func)}(...) in {cls.name}.{fn.name}"))
    return found


@contextlib.contextmanager
def draw_functions_replaced(torch, replacement):
    """torch's DRAW_FUNCTIONS replaced by replacement(name, original) while the block runs (the
    reader's DrawRecorder, the reference's Draws, the starter writer's trace)."""
    saved = {name: getattr(torch, name) for name in DRAW_FUNCTIONS}
    try:
        for name, fn in saved.items():
            setattr(torch, name, replacement(name, fn))
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch, name, fn)


class DrawRecorder:
    """forward's random calls through torch, recorded while `with recorder:` runs (forward on the
    meta device, or the CPU): per call {"call", "line", "name", "dtype", "shape", "recipe"}, the
    recipe in the reader's GEN form.  A call no generator reproduces (torch.normal of tensors)
    is kept as {"problem": why}."""

    def __init__(self, torch, path, tree):
        import os
        self.torch, self.real = torch, os.path.realpath(path)
        self.targets = assignment_targets(tree)
        self.draws, self.replaced = [], None

    def __enter__(self):
        self.draws = []
        self.replaced = draw_functions_replaced(self.torch, self._recording)
        self.replaced.__enter__()
        return self

    def __exit__(self, kind, value, tb):
        return self.replaced.__exit__(kind, value, tb)

    def _line(self):
        import os
        import sys
        frame, line = sys._getframe(2), 0
        while frame is not None:
            if os.path.realpath(frame.f_code.co_filename) == self.real:
                return frame.f_lineno
            frame = frame.f_back
        return line

    def _recording(self, name, original):
        def record(*args, **kwargs):
            out = original(*args, **kwargs)
            line = self._line()
            entry = {"call": f"torch.{name}(...)", "line": line,
                     "name": self.targets.get(line) or f"draw{len(self.draws) + 1}",
                     "dtype": dtype_short(self.torch, out.dtype), "shape": list(out.shape)}
            recipe = draw_recipe(self.torch, name, args, kwargs)
            if isinstance(recipe, str):
                entry["problem"] = recipe
            else:
                entry["recipe"] = recipe
            self.draws.append(entry)
            return out
        return record


def assignment_targets(tree):
    """line -> the name a call on that line is assigned to (`h0 = ...`, `self.h0 = ...`)."""
    targets = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            name = target.id if isinstance(target, ast.Name) else \
                target.attr if isinstance(target, ast.Attribute) else None
            if name:
                for line in range(node.value.lineno, (node.value.end_lineno or node.value.lineno) + 1):
                    targets.setdefault(line, name)
    return targets


def draw_recipe(torch, name, args, kwargs):
    """The GEN a random call draws from, or why none does."""
    base = name[:-5] if name.endswith("_like") else name
    if base == "randn":
        return {"kind": "normal", "mean": 0.0, "std": 1.0}
    if base == "rand":
        return {"kind": "uniform", "low": 0.0, "high": 1.0}
    if base == "randint":
        numbers = [a for a in (args[1:] if name.endswith("_like") else args) if isinstance(a, int)]
        if "high" in kwargs:  # randint(2, high=10, ...): the one number is low
            low, high = kwargs.get("low", numbers[0] if numbers else 0), kwargs["high"]
        else:
            low, high = (numbers[0], numbers[1]) if len(numbers) >= 2 else (0, numbers[0] if numbers else None)
            low = kwargs.get("low", low)
        if not isinstance(low, int) or not isinstance(high, int):
            return "torch.randint's bounds are not numbers"
        return {"kind": "randint", "low": low, "high": high}
    mean, std = (list(args) + [0.0, 1.0])[:2]
    mean, std = kwargs.get("mean", mean), kwargs.get("std", std)
    if isinstance(mean, torch.Tensor) or isinstance(std, torch.Tensor):
        return "torch.normal with a tensor mean or std: no generator of the workbench draws that"
    return {"kind": "normal", "mean": float(mean), "std": float(std)}


def zero_dropout(call):
    """F.dropout(x, p=0) / training=False: no randomness."""
    p = call.args[1] if len(call.args) > 1 else None
    training = call.args[2] if len(call.args) > 2 else None
    for kw in call.keywords:
        if kw.arg == "p":
            p = kw.value
        if kw.arg == "training":
            training = kw.value
    if isinstance(training, ast.Constant) and training.value is False:
        return True
    return isinstance(p, ast.Constant) and p.value == 0


# ------------------------------------------------------------- sizes

def tensor_bytes(entries):
    return sum(DTYPE_BYTES.get(e["dtype"], 4) * math.prod(e["shape"]) for e in entries)


def total_bytes(evaluation):
    state = [s for s in evaluation["state"] if s["input"]]
    return tensor_bytes([i for i in evaluation["inputs"] if i["kind"] == "tensor"]) + \
        tensor_bytes(state) + tensor_bytes(evaluation["outputs"])


def human(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def structure_change(base, other):
    """Why an evaluation is not the same module as the problem's own (other state tensors, ranks,
    outputs or draws), or None."""
    def ranks(items, shape_of):
        return [len(shape_of(i)) for i in items]
    state_a = {s["key"]: len(s["shape"]) for s in base["state"]}
    state_b = {s["key"]: len(s["shape"]) for s in other["state"]}
    if state_a != state_b:
        moved = sorted(set(state_a) ^ set(state_b)) or sorted(k for k in state_a if state_a[k] != state_b[k])
        return "the module's state differs there (" + ", ".join(moved[:4]) + ")"
    for what in ("inputs", "outputs", "draws"):
        shape_of = (lambda i: i.get("shape") or []) if what != "draws" else (lambda d: d["shape"])
        if ranks(base.get(what, []), shape_of) != ranks(other.get(what, []), shape_of):
            return f"the {what} differ in number or rank there"
    return None


class Planner:
    """Evaluates the problem at assignments of its size constants (memoised)."""

    def __init__(self, evaluate, base, constants, batch, budget_s=PLAN_SECONDS):
        self.evaluate, self.cache = evaluate, {}
        self.base, self.constants, self.batch = dict(base), list(constants), batch
        self.deadline = time.monotonic() + budget_s
        self.out_of_time = False

    def at(self, assign):
        key = tuple(sorted(assign.items()))
        if key not in self.cache:
            if self.cache and time.monotonic() > self.deadline:  # the problem's own sizes always
                self.out_of_time = True
                return TimeoutError(f"the search for configurations ran past {PLAN_SECONDS} s")
            try:
                self.cache[key] = self.evaluate(dict(assign))
            except Exception as err:  # the problem's own code, at sizes it was not written for
                self.cache[key] = err
            base = self.cache.get(tuple(sorted(self.base.items())))
            got = self.cache[key]
            if base is not None and not isinstance(base, Exception) and not isinstance(got, Exception):
                changed = structure_change(base, got)
                if changed:  # another module at these sizes (a shortcut only where channels differ)
                    self.cache[key] = ValueError(changed)
        return self.cache[key]

    def fits(self, assign):
        e = self.at(assign)
        return None if isinstance(e, Exception) else e

    def halve_batch(self, assign, e, floor):
        """The batch halved while too large and above `floor`; (assign, evaluation)."""
        value = assign[self.batch]
        while value > floor and total_bytes(e) > SMALL_BYTES:
            trial = dict(assign, **{self.batch: max(floor, value // 2)})
            got = self.fits(trial)
            if got is None:
                break
            assign, e, value = trial, got, trial[self.batch]
        return assign, e

    def small(self):
        assign = dict(self.base)
        e = self.fits(assign)
        if e is None or total_bytes(e) <= SMALL_BYTES:
            return assign, []
        if self.batch:
            assign, e = self.halve_batch(assign, e, max(MIN_BATCH, min(BATCH_FIRST_FLOOR, assign[self.batch])))
        frozen = {self.batch}
        while total_bytes(e) > SMALL_BYTES:
            options = sorted((c for c in self.constants if c not in frozen and assign[c] // 2 >= MIN_OTHER),
                             key=lambda c: -assign[c])
            moved = False
            for c in options:
                trial = dict(assign, **{c: assign[c] // 2})
                got = self.fits(trial)
                if got is None:
                    frozen.add(c)
                    continue
                assign, e, moved = trial, got, True
                break
            if not moved:
                break
        if self.batch:
            assign, e = self.halve_batch(assign, e, MIN_BATCH)
        steps = [f"{c} {self.base[c]} -> {assign[c]}" for c in self.constants if assign[c] != self.base[c]]
        return assign, steps

    def large(self):
        e = self.fits(self.base)
        if e is None or not self.batch or total_bytes(e) >= LARGE_BYTES:
            return None, None
        k, found = 2, None
        while k <= MAX_LARGE_SCALE:
            trial = dict(self.base, **{self.batch: self.base[self.batch] * k})
            got = self.fits(trial)
            if got is None:
                break
            found = (trial, k)
            if total_bytes(got) >= LARGE_BYTES:
                break
            k *= 2
        return found if found else (None, None)
