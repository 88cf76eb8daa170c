#!/usr/bin/env python3
# kwb_kernelbench.py: reads one KernelBench-format problem file for
# `kwb import kernelbench` and prints what the importer needs, as JSON.
#
# Usage: python3 kwb_kernelbench.py [--no-torch] [--double-batch] [--set NAME=INT]... [--] PROBLEM.py
#   After `--` every argument is a file, so a problem named `--no-torch.py` is read as one.
#   --set replaces a module-level constant's value (before anything uses it); --double-batch adds
#   "doubled": {"constant", "value", "outputs", "outputs_problem"}, the outputs read again with
#   the first input's first dimension (when it is a module constant) doubled.
#   Prints ONE JSON object on stdout (with --configs, what it is doing meanwhile on stderr as
#   lines "kwb-progress: TEXT").  Exit status: 0 ok; 2 the problem
#   cannot be read (the error object is printed); 1 usage error (message
#   on stderr, nothing on stdout).
#
# The static read runs under its own limits (lowered soft RLIMIT_DATA and
# RLIMIT_CPU: STATIC_MEMORY_BYTES, STATIC_CPU_SECONDS), and a constant it
# folds holds at most MAX_CONSTANT_ITEMS items and integers at most
# MAX_INT_BITS bits; the file's folding as a whole at most FOLD_BUDGET
# (error kind "too-large").
#
# The problem is read statically with `ast`: it is never executed, except
# for the optional output-shape step, which imports it under PyTorch and
# runs Model.forward on the meta device (skipped with --no-torch or when
# torch cannot be imported).  Standard library only; Python 3.10+.
#
# Success object:
#   {"ok": true,
#    "file": absolute path, "name": file stem,
#    "description": first line of Model's docstring, or null,
#    "constants": [{"name": str, "value": V, "line": int}],
#        module-level constants in file order (a reassigned name appears
#        once, at its last assignment); V is a number, bool, string, null
#        or an array of those
#    "inputs": [INPUT], in get_inputs' return order, where INPUT is
#      {"name": str, "kind": "tensor", "dtype": DTYPE, "shape": [int],
#       "shape_names": [str or null], "generator": GEN, "line": int}
#      or {"name": str, "kind": "scalar", "value": number or bool,
#          "type": "int" | "float" | "bool", "line": int}
#      name: the variable's name in get_inputs; for an inline expression,
#      forward's parameter at that position, else "in0", "in1", ...
#      (names are made unique: a repeat gets "_2", "_3", ...)
#      shape_names[i]: the module constant's name when dimension i was
#      written as that bare name, else null
#    "init": [{"value": V, "type": "int" | "float" | "bool" | "tuple" |
#              "str" | "none", "name": str or null, "line": int}]
#        get_init_inputs' return list ("tuple" also covers lists); name is
#        set when the element was a bare name
#    "init_defined": bool (false: no get_init_inputs, init is [])
#    "init_params": [{"name": str, "default": V}]  Model.__init__'s
#        parameters after self; "default" only when it is a literal
#    "forward_params": [{"name": str, "default": V}]  likewise for forward
#    "forward_source": source text of forward's return expression, or null
#    "outputs": [{"dtype": DTYPE, "shape": [int]}] or null, one per tensor
#        forward returns (a tuple/list gives several); read by running
#        forward on the meta device, or on the CPU with real inputs when
#        meta fails and the inputs hold at most 2**22 elements
#    "outputs_problem": why outputs is null, or null
#    "torch": torch version string, or null when torch was not used
#    "notes": [str]  things the importer should show the user}
#   Default dtypes: f32 for randn/rand/ones/zeros/empty, i64 for randint;
#   torch.full follows torch: bool fill -> bool, int fill -> i64, else f32.
#   torch.empty becomes constant 0 with a note.  `t * c`, `c * t`, `t + c`,
#   `t - c`, `c - t`, `t / c` rescale normal/uniform/constant generators.
#   DTYPE: "f64" "f32" "f16" "bf16" "i64" "i32" "i8" "u8" "bool" (outputs may
#     also hold another torch dtype's name, e.g. "int16", "complex64")
#   GEN: {"kind": "normal", "mean": float, "std": float}
#      | {"kind": "uniform", "low": float, "high": float}
#      | {"kind": "randint", "low": int, "high": int}   (high exclusive)
#      | {"kind": "constant", "value": number}  (int for integer/bool dtypes)
#
# Error object (exit 2):
#   {"ok": false,
#    "kind": "cannot-express" | "syntax" | "no-model" | "no-get-inputs" | "io"
#            | "too-large" | "random-output"
#            | "missing-module" (the problem imports a package this Python lacks),
#    "part": "get_inputs" | "get_init_inputs" | "Model" | "file",
#    "line": int or null,
#    "message": "PROBLEM.py:LINE: PART: why; what the user can do"}

import ast
import contextlib
import json
import math
import operator
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kwb_problem_module  # noqa: E402  (beside this file)
import kwb_problem_state  # noqa: E402

GENERATORS = ("randn", "rand", "randint", "ones", "zeros", "full", "empty")
LIKE_GENERATORS = ("randn_like", "rand_like", "ones_like", "zeros_like")
TORCH_DTYPES = {
    "float32": "f32", "float": "f32", "float16": "f16", "half": "f16",
    "bfloat16": "bf16", "float64": "f64", "double": "f64", "int64": "i64",
    "long": "i64", "int32": "i32", "int": "i32", "int8": "i8", "uint8": "u8",
    "bool": "bool",
}
FLOAT_DTYPES = ("f64", "f32", "f16", "bf16")
CAST_METHODS = {"float": "f32", "half": "f16", "bfloat16": "bf16",
                "double": "f64", "long": "i64", "int": "i32", "bool": "bool"}
NEUTRAL_METHODS = ("cuda", "cpu", "contiguous", "detach", "clone",
                   "requires_grad_")
IGNORED_KEYWORDS = ("device", "requires_grad", "layout", "pin_memory",
                    "memory_format", "generator")
BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub,
          ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
          ast.Pow: operator.pow}
CPU_RETRY_LIMIT = 2 ** 22
# Bounds of the static read (a constant folded from `s = s + s` fourteen times reached 618 MB):
# a constant's items (a string's characters; a tuple's or list's elements, nested ones counted;
# a number is one), an integer's bits, the items folded in the whole file, and the soft memory
# and CPU limits the static read runs under. KernelBench's constants are sizes and short tuples.
MAX_CONSTANT_ITEMS = 10000
MAX_INT_BITS = 4096
FOLD_BUDGET = 1000000
STATIC_MEMORY_BYTES = 256 << 20
STATIC_CPU_SECONDS = 20
TOO_LARGE_FIX = ("KernelBench constants are sizes and short tuples: write the value out, "
                 "or write the task by hand")
TENSOR_FIX = "write the tensor's init by hand"
FIXES = {"get_inputs": "write that input by hand in the task",
         "get_init_inputs": "write Model's constructor arguments by hand",
         "Model": "KernelBench problems define `class Model(nn.Module)` "
                  "with a forward method; rename or add it"}


# ---------------------------------------------------------------- errors

class ProblemError(Exception):
    """A reportable reason why the problem cannot be imported."""

    def __init__(self, kind, part, line, why, fix):
        super().__init__(why)
        self.kind, self.part, self.line = kind, part, line
        self.why, self.fix = why, fix

    def to_json(self, display):
        where = f"{display}:{self.line}" if self.line else display
        message = f"{where}: {self.part}: {self.why}; {self.fix}"
        return {"ok": False, "kind": self.kind, "part": self.part,
                "line": self.line, "message": message}


class Unreadable(Exception):
    """An expression the static reader cannot reduce (internal)."""

    def __init__(self, node, why, fix=None):
        super().__init__(why)
        self.line = getattr(node, "lineno", None)
        self.why, self.fix = why, fix

    def as_problem(self, part):
        return ProblemError("cannot-express", part, self.line, self.why,
                            self.fix or FIXES[part])


class TooLarge(ProblemError):
    """The static read ran past one of its bounds: refused, whatever uses the constant."""

    def __init__(self, line, why, fix=TOO_LARGE_FIX):
        super().__init__("too-large", "file", line, why, fix)


class StaticReadTimeout(Exception):
    """SIGXCPU: the static read ran past STATIC_CPU_SECONDS of CPU time."""


class TorchDType(str):
    """A torch dtype named in the source, e.g. torch.float16 -> 'f16'."""


def src(node):
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."


# ------------------------------------------------------- constant values

FOLDED = [0]  # items folded so far in this file (FOLD_BUDGET)


def eval_const(node, env, aliases):
    """Reduces a constant expression to a Python value, or raises."""
    value = eval_node(node, env, aliases)
    FOLDED[0] += 1 + value_size(value, MAX_CONSTANT_ITEMS, node)
    if FOLDED[0] > FOLD_BUDGET:
        raise TooLarge(getattr(node, "lineno", None),
                       f"folding the file's constants took more than {FOLD_BUDGET} items "
                       "(the reader's limit for a whole file)")
    return value


def value_size(value, limit, node):
    """Items in value: a string's characters (at least 1), a number 1, a tuple or list 1 and
    its elements'; raises TooLarge past limit (or for an integer past MAX_INT_BITS)."""
    size, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (str, bytes)):
            size += max(len(item), 1)
        elif isinstance(item, (tuple, list)):
            size += 1
            stack.extend(item)
        else:
            size += 1
            if isinstance(item, int) and item.bit_length() > MAX_INT_BITS:
                raise too_large_int(node, f"{item.bit_length()} bits")
        if size > limit:
            raise too_large(node, f"more than {limit}")
    return size


def too_large(node, items):
    return TooLarge(getattr(node, "lineno", None),
                    f"{src(node)} makes a value of {items} items, past the reader's limit of "
                    f"{MAX_CONSTANT_ITEMS} items for one constant (characters of a string, "
                    "elements of a tuple or list, nested ones counted)")


def too_large_int(node, bits):
    return TooLarge(getattr(node, "lineno", None),
                    f"{src(node)} makes an integer of {bits}, past the reader's limit of "
                    f"{MAX_INT_BITS} bits for an integer")


def eval_node(node, env, aliases):
    if isinstance(node, ast.Constant):
        return const_literal(node)
    if isinstance(node, (ast.Tuple, ast.List)):
        items = const_items(node.elts, env, aliases)
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise Unreadable(node, f"'{node.id}' is not a constant the "
                               "workbench can read")
    if isinstance(node, ast.Attribute):
        return const_dtype(node, aliases)
    if isinstance(node, ast.UnaryOp):
        return const_unary(node, env, aliases)
    if isinstance(node, ast.BinOp):
        return const_binop(node, env, aliases)
    if isinstance(node, ast.Call):
        return const_call(node, env, aliases)
    raise Unreadable(node, f"{src(node)} is not a constant expression")


def const_literal(node):
    value = node.value
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise Unreadable(node, f"{src(node)} is not a number, bool, string or "
                           "None")


def const_items(elts, env, aliases):
    items, size = [], 1
    for elt in elts:
        if isinstance(elt, ast.Starred):
            inner = eval_const(elt.value, env, aliases)
            if not isinstance(inner, (tuple, list)):
                raise Unreadable(elt, f"{src(elt)} unpacks something that "
                                      "is not a tuple")
            items.extend(inner)
            size += value_size(inner, MAX_CONSTANT_ITEMS, elt) - 1
        else:
            items.append(eval_const(elt, env, aliases))
            size += value_size(items[-1], MAX_CONSTANT_ITEMS, elt)
        if size > MAX_CONSTANT_ITEMS:
            raise too_large(elt, f"more than {MAX_CONSTANT_ITEMS}")
    return items


def const_dtype(node, aliases):
    if isinstance(node.value, ast.Name) and node.value.id in aliases:
        if node.attr in TORCH_DTYPES:
            return TorchDType(TORCH_DTYPES[node.attr])
        raise Unreadable(node, f"{src(node)} is not a dtype the workbench "
                               "knows (" + ", ".join(TORCH_DTYPES) + ")")
    raise Unreadable(node, f"{src(node)} is not a constant expression")


def const_unary(node, env, aliases):
    value = eval_const(node.operand, env, aliases)
    if isinstance(node.op, (ast.USub, ast.UAdd)) and is_number(value):
        return -value if isinstance(node.op, ast.USub) else +value
    raise Unreadable(node, f"{src(node)} is not a constant expression")


def const_binop(node, env, aliases):
    left = eval_const(node.left, env, aliases)
    right = eval_const(node.right, env, aliases)
    op = BINOPS.get(type(node.op))
    if op is None or isinstance(left, TorchDType) or \
            isinstance(right, TorchDType) or too_big(node.op, left, right, node):
        raise Unreadable(node, f"{src(node)} is not a constant expression")
    try:
        value = op(left, right)
    except (ArithmeticError, TypeError, ValueError) as err:
        raise Unreadable(node, f"{src(node)} fails: {err}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise Unreadable(node, f"{src(node)} is not a finite number")
    return value


def too_big(op, left, right, node=None):
    """Guards against constants that would take long to compute or hold too much: raises
    TooLarge for a result past the bounds, before computing it; true for forms not read."""
    if isinstance(op, ast.Mod) and isinstance(left, str):
        return True  # '%' formatting: a width makes any length
    if isinstance(op, ast.Pow) and is_number(left) and is_number(right):
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1 \
                and (abs(left).bit_length() - 1) * right > MAX_INT_BITS:
            raise too_large_int(node, f"at least {(abs(left).bit_length() - 1) * right} bits")
        return abs(right) > 256 and abs(left) > 1
    if isinstance(op, ast.Mult):
        if isinstance(left, int) and isinstance(right, int) and \
                left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
            raise too_large_int(node, f"about {left.bit_length() + right.bit_length()} bits")
        seq, count = (left, right) if is_number(right) else (right, left)
        if isinstance(seq, (str, tuple, list)) and is_number(count):
            each = value_size(seq, MAX_CONSTANT_ITEMS, node) - (0 if isinstance(seq, str) else 1)
            if count * each > MAX_CONSTANT_ITEMS:
                raise too_large(node, f"{int(count * each)}")
    if isinstance(op, ast.Add) and isinstance(left, (str, tuple, list)) and type(left) is type(right):
        joined = sum(value_size(v, MAX_CONSTANT_ITEMS, node) for v in (left, right)) - \
            (0 if isinstance(left, str) else 1)
        if joined > MAX_CONSTANT_ITEMS:
            raise too_large(node, f"{joined}")
    return False


def const_call(node, env, aliases):
    func = node.func
    if not (isinstance(func, ast.Name) and func.id in ("int", "float",
                                                       "tuple", "list")):
        raise Unreadable(node, f"{src(node)} is not a constant expression")
    if len(node.args) != 1 or node.keywords or \
            isinstance(node.args[0], ast.Starred):
        raise Unreadable(node, f"{src(node)} is not a constant expression")
    arg = eval_const(node.args[0], env, aliases)
    try:
        value = {"int": int, "float": float, "tuple": tuple,
                 "list": list}[func.id](arg)
    except (TypeError, ValueError, OverflowError) as err:
        raise Unreadable(node, f"{src(node)} fails: {err}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise Unreadable(node, f"{src(node)} is not a finite number")
    return value


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_plain(value):
    """True for values that JSON and Model(...) can take as they are."""
    if isinstance(value, TorchDType):
        return False
    if isinstance(value, (tuple, list)):
        return all(is_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


# ------------------------------------------------------ module constants

def torch_aliases(tree):
    aliases = {"torch"}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "torch" and alias.asname:
                    aliases.add(alias.asname)
    return aliases


class ModuleNames:
    """Module-level names: readable constants and unreadable assignments."""

    def __init__(self):
        self.env, self.entries, self.broken = {}, {}, {}

    def forget(self, names):
        for name in names:
            for table in (self.env, self.entries, self.broken):
                table.pop(name, None)

    def constants(self):
        return list(self.entries.values())


def module_constants(tree, aliases):
    """Reads the module body's constants into a ModuleNames."""
    names = ModuleNames()
    for stmt in tree.body:
        pairs = assignment_pairs(stmt)
        if pairs is None:
            names.forget(bound_names(stmt))
            continue
        for target, value in pairs:
            bind_module(target, value, stmt.lineno, names, aliases)
    return names


def assignment_pairs(stmt):
    """(target, value node) pairs of an assignment statement, else None."""
    if isinstance(stmt, ast.Assign):
        return [(t, stmt.value) for t in stmt.targets]
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        return [(stmt.target, stmt.value)]
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        load = ast.Name(id=stmt.target.id, ctx=ast.Load())
        value = ast.BinOp(left=load, op=stmt.op, right=stmt.value)
        return [(stmt.target, ast.copy_location(value, stmt))]
    return None


def target_names(target):
    return [n.id for n in ast.walk(target)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]


def bound_names(stmt):
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    return target_names(stmt)


def bind_module(target, value_node, line, names, aliases):
    try:
        value = eval_const(value_node, names.env, aliases)
        pairs = unpack_target(target, value, value_node)
    except Unreadable as err:
        unreadable_module_name(target, value_node, err, names)
        return
    for name, item in pairs:
        item = OVERRIDES.get(name, item)
        names.forget([name])
        names.env[name] = item
        if is_plain(item):
            names.entries[name] = {"name": name, "value": item, "line": line}


def unreadable_module_name(target, value_node, err, names):
    for name in target_names(target):
        names.forget([name])
        names.broken[name] = Unreadable(
            value_node, f"the module constant {name} = {src(value_node)} "
                        f"is not one the workbench can read ({err.why})")


def unpack_target(target, value, node):
    """[(name, value)] for `name = v` or `a, b = (x, y)`; else raises."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, (ast.Tuple, ast.List)) and \
            all(isinstance(t, ast.Name) for t in target.elts) and \
            isinstance(value, (tuple, list)) and \
            len(value) == len(target.elts):
        return [(t.id, v) for t, v in zip(target.elts, value)]
    raise Unreadable(node, f"{src(target)} = ... is not an assignment the "
                           "workbench can read")


# ------------------------------------------------------------- function scope

class Scope:
    """Names visible inside get_inputs / get_init_inputs."""

    def __init__(self, module, aliases):
        self.env = dict(module.env)
        self.module_names = set(module.env)
        self.aliases = set(aliases)
        self.tensors = {}
        self.broken = dict(module.broken)

    def shadow(self, name):
        for table in (self.env, self.tensors, self.broken):
            table.pop(name, None)
        self.module_names.discard(name)
        self.aliases.discard(name)

    def const(self, node):
        self.check_broken(node)
        return eval_const(node, self.env, self.aliases)

    def check_broken(self, node):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in self.broken:
                raise self.broken[sub.id]

    def is_torch(self, node):
        return isinstance(node, ast.Name) and node.id in self.aliases


def find_function(tree, name):
    found = None
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            found = stmt
    return found


def is_docstring(stmt):
    return isinstance(stmt, ast.Expr) and \
        isinstance(stmt.value, ast.Constant) and \
        isinstance(stmt.value.value, str)


def is_seed_call(stmt, scope):
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    return isinstance(func, ast.Attribute) and scope.is_torch(func.value) \
        and func.attr in ("manual_seed", "seed")


def local_imports(stmt, scope):
    for alias in stmt.names:
        name = (alias.asname or alias.name).split(".")[0]
        scope.shadow(name)
        if alias.name == "torch":
            scope.aliases.add(name)


def walk_body(fn, scope, part, bind):
    """Runs the statements of fn before its return; returns the Return."""
    for stmt in fn.body:
        if is_docstring(stmt) or isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Return):
            return stmt
        if isinstance(stmt, ast.Import):
            local_imports(stmt, scope)
        elif is_seed_call(stmt, scope):
            continue
        elif assignment_pairs(stmt) is not None:
            for target, value in assignment_pairs(stmt):
                bind(target, value, scope)
        else:
            kind = type(stmt).__name__.lower()
            raise ProblemError(
                "cannot-express", part, stmt.lineno,
                f"a '{kind}' statement ({src(stmt).splitlines()[0]}) is not "
                f"something the workbench can follow in {part} (it reads "
                "assignments and one `return [...]`)", FIXES[part])
    raise ProblemError("cannot-express", part, fn.lineno,
                       f"{part}() does not end with `return [...]`",
                       FIXES[part])


def returned_items(ret, part):
    if not isinstance(ret.value, (ast.List, ast.Tuple)):
        what = src(ret.value) if ret.value is not None else "nothing"
        raise ProblemError("cannot-express", part, ret.lineno,
                           f"{part}() returns {what}, not a list [a, b, ...]",
                           FIXES[part])
    for elt in ret.value.elts:
        if isinstance(elt, ast.Starred):
            raise ProblemError("cannot-express", part, elt.lineno,
                               f"{src(elt)} unpacks a sequence into the "
                               "returned list; the workbench reads one "
                               "element per input", FIXES[part])
    return ret.value.elts


# --------------------------------------------------------- tensor expressions

def looks_like_tensor(node, scope):
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in scope.tensors:
            return True
        if isinstance(sub, ast.Call) and is_tensor_call(sub.func, scope):
            return True
    return False


def is_tensor_call(func, scope):
    """torch.f(...), tensor.method(...) or a call of some other function."""
    if isinstance(func, ast.Attribute):
        return scope.is_torch(func.value) or \
            looks_like_tensor(func.value, scope)
    return not (isinstance(func, ast.Name) and
                func.id in ("int", "float", "tuple", "list"))


def read_tensor(node, scope):
    """Reads a tensor expression into an input spec, or raises."""
    if isinstance(node, ast.Name):
        return read_tensor_name(node, scope)
    if isinstance(node, ast.BinOp):
        return read_arith(node, scope)
    if isinstance(node, ast.UnaryOp) and \
            isinstance(node.op, (ast.USub, ast.UAdd)):
        spec = read_tensor(node.operand, scope)
        sign = -1 if isinstance(node.op, ast.USub) else 1
        return affine(spec, sign, 0, node)
    if isinstance(node, ast.Call):
        return read_call(node, scope)
    if isinstance(node, (ast.List, ast.Tuple)):
        raise Unreadable(node, f"{src(node)} is a list of values; the "
                               "workbench reads one tensor or number per "
                               "input", TENSOR_FIX)
    raise Unreadable(node, f"{src(node)} is not a tensor expression the "
                           "workbench can read", TENSOR_FIX)


def read_tensor_name(node, scope):
    if node.id in scope.tensors:
        return dict(scope.tensors[node.id])
    if node.id in scope.broken:
        raise scope.broken[node.id]
    raise Unreadable(node, f"'{node.id}' is not a tensor made in this "
                           "function", TENSOR_FIX)


def read_call(node, scope):
    func = node.func
    if isinstance(func, ast.Name):
        raise Unreadable(node, f"{src(node)} computes the input by calling "
                               "a function; the workbench reads only "
                               "torch." + ", ".join(GENERATORS) + " calls",
                         TENSOR_FIX)
    if not isinstance(func, ast.Attribute):
        raise Unreadable(node, f"{src(node)} is not a tensor expression the "
                               "workbench can read", TENSOR_FIX)
    if scope.is_torch(func.value):
        if func.attr in ("triu", "tril") and node.args:
            call = ast.Call(func=func, args=node.args[1:], keywords=node.keywords)
            return read_triangle(ast.copy_location(call, node), func.attr, node.args[0], scope)
        if func.attr in LIKE_GENERATORS and node.args:
            return read_like(node, func.attr, scope)
        return read_generator(node, func.attr, scope)
    if func.attr in ("triu", "tril"):
        return read_triangle(node, func.attr, func.value, scope)
    return read_method(node, read_tensor(func.value, scope), scope)


def read_like(node, name, scope):
    """torch.randn_like(x) / rand_like / ones_like / zeros_like: x's shape and dtype."""
    base = read_tensor(node.args[0], scope)
    keywords = generator_keywords(node)
    dtype_node = keywords.pop("dtype", None)
    if len(node.args) > 1 or keywords:
        raise Unreadable(node, f"{src(node)}: the workbench reads torch.{name}(x) and a dtype",
                         TENSOR_FIX)
    generator = {"randn_like": {"kind": "normal", "mean": 0.0, "std": 1.0},
                 "rand_like": {"kind": "uniform", "low": 0.0, "high": 1.0},
                 "ones_like": {"kind": "constant", "value": 1.0},
                 "zeros_like": {"kind": "constant", "value": 0.0}}[name]
    spec = tensor_spec(base["dtype"], list(base["shape"]), list(base["shape_names"]), generator)
    if dtype_node is not None:
        spec["dtype"] = read_dtype(dtype_node, scope)
    check_dtype(spec, name.replace("_like", ""), node)
    spec["line"] = node.lineno
    return spec


def read_generator(node, name, scope):
    if name not in GENERATORS:
        raise Unreadable(node, f"torch.{name}(...) is not an input generator"
                               " the workbench knows (" +
                         ", ".join(GENERATORS) + ")", TENSOR_FIX)
    keywords = generator_keywords(node)
    dtype_node = keywords.pop("dtype", None)
    if name == "randint":
        spec = read_randint(node, keywords, scope)
    elif name == "full":
        spec = read_full(node, keywords, scope)
    else:
        spec = read_fill(node, name, keywords, scope)
    if keywords:
        raise Unreadable(node, f"torch.{name}: keyword "
                               f"'{next(iter(keywords))}' is not one the "
                               "workbench can read", TENSOR_FIX)
    if dtype_node is not None:
        spec["dtype"] = read_dtype(dtype_node, scope)
    check_dtype(spec, name, node)
    spec["line"] = node.lineno
    return spec


def generator_keywords(node):
    keywords = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise Unreadable(node, f"{src(node)} passes **kwargs; the "
                                   "workbench cannot follow them", TENSOR_FIX)
        if kw.arg not in IGNORED_KEYWORDS:
            keywords[kw.arg] = kw.value
    return keywords


def read_dtype(node, scope):
    value = scope.const(node)
    if isinstance(value, TorchDType):
        return str(value)
    raise Unreadable(node, f"dtype={src(node)} is not a torch dtype the "
                           "workbench knows (" + ", ".join(TORCH_DTYPES) +
                     ")", TENSOR_FIX)


def check_dtype(spec, name, node):
    if name in ("randn", "rand") and spec["dtype"] not in FLOAT_DTYPES:
        raise Unreadable(node, f"torch.{name} makes only floating-point "
                               f"tensors, not {spec['dtype']}", TENSOR_FIX)
    gen = spec["generator"]
    if gen["kind"] == "constant":
        gen["value"] = convert_value(gen["value"], spec["dtype"])


def convert_value(value, dtype):
    if dtype in FLOAT_DTYPES:
        return float(value)
    if dtype == "bool":
        return int(bool(value))
    return int(value)


def read_fill(node, name, keywords, scope):
    size_node = keywords.pop("size", None)
    shape, names = read_size_args(node, node.args, size_node, scope)
    generator = {"randn": {"kind": "normal", "mean": 0.0, "std": 1.0},
                 "rand": {"kind": "uniform", "low": 0.0, "high": 1.0},
                 "ones": {"kind": "constant", "value": 1.0}}.get(
        name, {"kind": "constant", "value": 0.0})
    spec = tensor_spec("f32", shape, names, generator)
    if name == "empty":
        spec["empty"] = True
    return spec


def tensor_spec(dtype, shape, names, generator):
    return {"kind": "tensor", "dtype": dtype, "shape": shape,
            "shape_names": names, "generator": generator}


def read_randint(node, keywords, scope):
    args = list(node.args)
    if any(isinstance(a, ast.Starred) for a in args):
        raise Unreadable(node, f"{src(node)}: the workbench reads "
                               "torch.randint(low, high, size) with plain "
                               "arguments", TENSOR_FIX)
    if "size" in keywords:
        order = ["high"] if len(args) == 1 else ["low", "high"]
    else:
        order = {1: ["high"], 2: ["high", "size"]}.get(
            len(args), ["low", "high", "size"])
    if len(args) > len(order):
        raise Unreadable(node, f"{src(node)} has more arguments than "
                               "torch.randint(low, high, size)", TENSOR_FIX)
    params = dict(zip(order, args))
    for key in ("low", "high", "size"):
        if key in keywords:
            params[key] = keywords.pop(key)
    return randint_spec(node, params, scope)


def randint_spec(node, params, scope):
    if "high" not in params or "size" not in params:
        raise Unreadable(node, f"{src(node)} lacks high or size",
                         TENSOR_FIX)
    low = scope.const(params["low"]) if "low" in params else 0
    high = scope.const(params["high"])
    if not (type(low) is int and type(high) is int and low < high):
        raise Unreadable(node, f"{src(node)}: low and high must be integers "
                               "with low < high", TENSOR_FIX)
    shape, names = read_size(params["size"], scope)
    return tensor_spec("i64", shape, names,
                       {"kind": "randint", "low": low, "high": high})


def read_full(node, keywords, scope):
    args = list(node.args)
    if len(args) > 2 or any(isinstance(a, ast.Starred) for a in args):
        raise Unreadable(node, f"{src(node)}: the workbench reads "
                               "torch.full(size, fill_value)", TENSOR_FIX)
    params = dict(zip(["size", "fill_value"], args))
    for key in ("size", "fill_value"):
        if key in keywords:
            params[key] = keywords.pop(key)
    if len(params) != 2:
        raise Unreadable(node, f"{src(node)} lacks size or fill_value",
                         TENSOR_FIX)
    shape, names = read_size(params["size"], scope)
    value = scope.const(params["fill_value"])
    if not isinstance(value, (bool, int, float)):
        raise Unreadable(node, f"{src(node)}: fill_value is not a number",
                         TENSOR_FIX)
    dtype = "bool" if isinstance(value, bool) else \
        "i64" if isinstance(value, int) else "f32"
    return tensor_spec(dtype, shape, names,
                       {"kind": "constant", "value": value})


# ------------------------------------------------------------------ shapes

def read_size_args(node, args, size_node, scope):
    """Shape of randn(*dims) / randn(tuple) / randn(size=...)."""
    if size_node is not None:
        if args:
            raise Unreadable(node, f"{src(node)} gives the size twice",
                             TENSOR_FIX)
        return read_size(size_node, scope)
    if len(args) == 1 and not isinstance(args[0], ast.Starred):
        if shape_of(args[0], scope) is not None or \
                isinstance(scope.const(args[0]), (tuple, list)):
            return read_size(args[0], scope)
    return read_dims(args, scope)


def shape_of(node, scope):
    """(shape, names) when node is X.shape or X.size() of a tensor X made earlier, else None."""
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        base = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "size" and not node.args and not node.keywords:
        base = node.func.value
    else:
        return None
    if isinstance(base, ast.Name) and base.id in scope.tensors:
        spec = scope.tensors[base.id]
        return list(spec["shape"]), list(spec["shape_names"])
    return None


def dim_of(node, scope):
    """(value, name) when node is X.shape[i] or X.size(i), else None."""
    if isinstance(node, ast.Subscript):
        whole = shape_of(node.value, scope)
        index = node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "size" and len(node.args) == 1:
        whole = shape_of(ast.Call(func=node.func, args=[], keywords=[]), scope)
        index = node.args[0]
    else:
        return None
    if whole is None:
        return None
    i = scope.const(index)
    if type(i) is not int or not -len(whole[0]) <= i < len(whole[0]):
        raise Unreadable(node, f"{src(node)}: index {i!r} is not a dimension of that tensor",
                         TENSOR_FIX)
    return whole[0][i], whole[1][i]


def read_size(node, scope):
    """Shape from one size argument: a tuple/list literal or a constant."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return read_dims(node.elts, scope)
    whole = shape_of(node, scope)
    if whole is not None:
        return whole
    value = scope.const(node)
    if isinstance(value, (tuple, list)):
        return [check_dim(v, node) for v in value], [None] * len(value)
    return [check_dim(value, node)], [dim_name(node, scope)]


def read_dims(elts, scope):
    shape, names = [], []
    for elt in elts:
        if isinstance(elt, ast.Starred) and shape_of(elt.value, scope) is not None:
            more, more_names = shape_of(elt.value, scope)
            shape += more
            names += more_names
        elif dim_of(elt, scope) is not None:
            value, name = dim_of(elt, scope)
            shape.append(value)
            names.append(name)
        elif isinstance(elt, ast.Starred):
            value = scope.const(elt.value)
            if not isinstance(value, (tuple, list)):
                raise Unreadable(elt, f"{src(elt)} unpacks something that "
                                      "is not a tuple", TENSOR_FIX)
            shape += [check_dim(v, elt) for v in value]
            names += [None] * len(value)
        else:
            shape.append(check_dim(scope.const(elt), elt))
            names.append(dim_name(elt, scope))
    return shape, names


def check_dim(value, node):
    if type(value) is int and value >= 0:
        return value
    raise Unreadable(node, f"{src(node)} gives a dimension of {value!r}, not "
                           "a non-negative integer", TENSOR_FIX)


def dim_name(node, scope):
    if isinstance(node, ast.Name) and node.id in scope.module_names:
        return node.id
    return None


# ------------------------------------------------ methods and arithmetic

def read_method(node, spec, scope):
    name = node.func.attr
    if name in NEUTRAL_METHODS:
        return spec
    if name in CAST_METHODS and not node.args and not node.keywords:
        return cast(spec, CAST_METHODS[name], node)
    if name == "to":
        dtype = read_to_dtype(node, scope)
        return cast(spec, dtype, node) if dtype else spec
    raise Unreadable(node, f".{name}(...) in {src(node)} is not a method the"
                           " workbench can follow (" +
                     ", ".join(NEUTRAL_METHODS + tuple(CAST_METHODS)) +
                     ", to)", TENSOR_FIX)


def read_to_dtype(node, scope):
    """The dtype a .to(...) call asks for, or None for a device move."""
    dtype = None
    for arg in list(node.args) + [k.value for k in node.keywords
                                  if k.arg in ("dtype", "device", None)]:
        if isinstance(arg, ast.Name) and arg.id in scope.tensors:
            raise Unreadable(node, f"{src(node)} takes the dtype of another "
                                   "tensor; write dtype=torch.X instead",
                             TENSOR_FIX)
        try:
            value = scope.const(arg)
        except Unreadable:
            continue  # a device such as torch.device("cuda")
        if isinstance(value, TorchDType):
            dtype = str(value)
    for kw in node.keywords:
        if kw.arg == "dtype" and dtype is None:
            return read_dtype(kw.value, scope)
    return dtype


def cast(spec, dtype, node):
    spec = dict(spec, dtype=dtype)
    gen = spec["generator"]
    if gen["kind"] == "constant":
        spec["generator"] = dict(gen, value=convert_value(gen["value"],
                                                          dtype))
    elif dtype not in FLOAT_DTYPES and gen["kind"] != "randint":
        raise Unreadable(node, f"{src(node)} turns {gen['kind']} random "
                               f"values into {dtype}; the workbench cannot "
                               "generate that", TENSOR_FIX)
    return spec


def read_arith(node, scope):
    """tensor * c, c * tensor, tensor + c, tensor - c, c - tensor, t / c."""
    op = type(node.op)
    left_tensor = looks_like_tensor(node.left, scope)
    tensor_node, const_node = (node.left, node.right) if left_tensor else \
        (node.right, node.left)
    if looks_like_tensor(const_node, scope):
        if op is ast.Add:
            return read_symmetric(node, scope)
        c, note = random_scalar(const_node, scope, node)
        spec = read_tensor(tensor_node, scope)
        spec["note"] = note
    else:
        spec = read_tensor(tensor_node, scope)
        c = scope.const(const_node)
    if not is_number(c):
        raise Unreadable(node, f"{src(node)}: {src(const_node)} is not a "
                               "number", TENSOR_FIX)
    scale, shift = affine_terms(op, c, left_tensor, node)
    return affine(spec, scale, shift, node)


def random_scalar(node, scope, whole):
    """A 0-dimensional random tensor (`scale = torch.rand(())`) used as a factor: its mean, with
    the note that says so; raises for anything else."""
    try:
        spec = read_tensor(node, scope)
    except Unreadable:
        spec = None
    if spec is None or spec["shape"] != [] or spec["dtype"] not in FLOAT_DTYPES:
        raise Unreadable(whole, f"{src(whole)} combines two tensors; the "
                                "workbench reads one generator per input",
                         TENSOR_FIX)
    gen = spec["generator"]
    mean = {"normal": lambda: gen["mean"], "uniform": lambda: (gen["low"] + gen["high"]) / 2,
            "constant": lambda: gen["value"]}.get(gen["kind"], lambda: None)()
    if mean is None:
        raise Unreadable(whole, f"{src(whole)} scales by a random {gen['kind']} number; the "
                                "workbench cannot generate that", TENSOR_FIX)
    note = (f"{src(node)} is one random number drawn anew on each call of get_inputs; the import "
            f"uses its mean, {mean:g}, as a constant in {src(whole)}")
    return mean, note


def affine_terms(op, c, left_tensor, node):
    """(a, b) such that the result is a * tensor + b."""
    if op is ast.Mult:
        return c, 0
    if op is ast.Add:
        return 1, c
    if op is ast.Sub:
        return (1, -c) if left_tensor else (-1, c)
    if op is ast.Div and left_tensor and c != 0:
        return 1 / c, 0
    raise Unreadable(node, f"{src(node)} is not a scaling the workbench can "
                           "read (tensor * c, + c, - c, / c)", TENSOR_FIX)


def affine(spec, a, b, node):
    gen, dtype = spec["generator"], spec["dtype"]
    if dtype not in FLOAT_DTYPES:
        raise Unreadable(node, f"{src(node)} scales a {gen['kind']} {dtype} "
                               "tensor; the workbench scales only "
                               "floating-point tensors", TENSOR_FIX)
    if gen["kind"] == "randint" or "scale" in gen:
        # integers drawn, then scaled and shifted (`randint(0, 2, s).float() * 2 - 1`)
        new = dict(gen, scale=a * gen.get("scale", 1.0),
                   shift=a * gen.get("shift", 0.0) + b)
    elif gen["kind"] == "normal":
        new = {"kind": "normal", "mean": a * gen["mean"] + b,
               "std": abs(a) * gen["std"]}
    elif gen["kind"] == "uniform":
        ends = sorted([a * gen["low"] + b, a * gen["high"] + b])
        new = {"kind": "uniform", "low": ends[0], "high": ends[1]}
    else:
        new = {"kind": "constant", "value": a * gen["value"] + b}
    for key in ("matrix", "diagonal"):
        if key in gen:
            if gen.get("matrix") in ("upper", "lower") and b != 0:
                raise Unreadable(node, f"{src(node)} shifts a triangular matrix (its zeros "
                                       "would move); the workbench cannot generate that",
                                 TENSOR_FIX)
            new[key] = gen[key]
    return finite_spec(dict(spec, generator=new), node)


def finite_spec(spec, node):
    gen = spec["generator"]
    for key, value in gen.items():
        if key not in ("kind", "matrix", "diagonal"):
            if not math.isfinite(value):
                raise Unreadable(node, f"{src(node)} gives a non-finite "
                                       f"{key}", TENSOR_FIX)
            if not (gen["kind"] == "randint" and key in ("low", "high")):
                gen[key] = float(value)
    return spec


def transposed_of(node, scope):
    """The tensor name X when node is X.T, X.t(), X.mT or X.transpose(-2, -1) / (0, 1)."""
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT") and \
            isinstance(node.value, ast.Name) and node.value.id in scope.tensors:
        return node.value.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            isinstance(node.func.value, ast.Name) and node.func.value.id in scope.tensors:
        if node.func.attr == "t" and not node.args:
            return node.func.value.id
        if node.func.attr == "transpose" and len(node.args) == 2:
            dims = [scope.const(a) for a in node.args]
            rank = len(scope.tensors[node.func.value.id]["shape"])
            if sorted(d % rank if type(d) is int and rank else d for d in dims) == [rank - 2, rank - 1]:
                return node.func.value.id
    return None


def read_symmetric(node, scope):
    """X + X.T (and X.T + X): X's generator, mirrored across the diagonal, doubled."""
    for a, b in ((node.left, node.right), (node.right, node.left)):
        if isinstance(a, ast.Name) and transposed_of(b, scope) == a.id:
            spec = dict(scope.tensors[a.id])
            shape = spec["shape"]
            if len(shape) < 2 or shape[-1] != shape[-2]:
                raise Unreadable(node, f"{src(node)}: a symmetric matrix needs square last "
                                       "dimensions", TENSOR_FIX)
            gen = dict(spec["generator"])
            if gen.get("matrix") not in (None, "symmetric"):
                break
            gen["matrix"] = "symmetric"
            gen.pop("diagonal", None)
            return affine(dict(spec, generator=gen), 2, 0, node)
    raise Unreadable(node, f"{src(node)} combines two tensors; the workbench reads one "
                           "generator per input (and X + X.T as a symmetric matrix)", TENSOR_FIX)


def read_triangle(node, name, source, scope):
    """torch.triu(X, diagonal=k) / X.tril(k): X's generator with the other triangle 0."""
    args = list(node.args)
    diagonal = args[0] if args else None
    for kw in node.keywords:
        if kw.arg == "diagonal":
            diagonal = kw.value
        else:
            raise Unreadable(node, f"{src(node)}: keyword '{kw.arg}' is not one the workbench "
                                   "can read", TENSOR_FIX)
    k = scope.const(diagonal) if diagonal is not None else 0
    if type(k) is not int:
        raise Unreadable(node, f"{src(node)}: diagonal is not an integer", TENSOR_FIX)
    spec = read_tensor(source, scope)
    if len(spec["shape"]) < 2:
        raise Unreadable(node, f"{src(node)}: {name} needs a tensor of 2 or more dimensions",
                         TENSOR_FIX)
    gen = dict(spec["generator"])
    if "matrix" in gen:
        raise Unreadable(node, f"{src(node)} applies {name} to a structured matrix; the "
                               "workbench cannot generate that", TENSOR_FIX)
    gen["matrix"] = "upper" if name == "triu" else "lower"
    gen["diagonal"] = k
    return dict(spec, generator=gen)


# ----------------------------------------------------------- get_inputs

def bind_input_local(target, value, scope):
    if isinstance(target, ast.Name):
        bind_input_name(target.id, value, scope)
    elif isinstance(target, (ast.Tuple, ast.List)) and \
            isinstance(value, (ast.Tuple, ast.List)) and \
            len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts):
            bind_input_local(t, v, scope)
    elif isinstance(target, (ast.Tuple, ast.List)) and \
            all(isinstance(t, ast.Name) for t in target.elts):
        bind_init_local(target, value, scope)
    else:
        raise ProblemError("cannot-express", "get_inputs", target.lineno,
                           f"{src(target)} = ... is not an assignment the "
                           "workbench can follow", FIXES["get_inputs"])


def bind_input_name(name, value, scope):
    try:
        kind, result = read_value(value, scope)
    except Unreadable as err:
        scope.shadow(name)
        scope.broken[name] = err
        return
    scope.shadow(name)
    (scope.tensors if kind == "tensor" else scope.env)[name] = result


def read_value(node, scope):
    if looks_like_tensor(node, scope):
        return "tensor", read_tensor(node, scope)
    return "const", scope.const(node)


def read_inputs(tree, module, aliases, forward_names, notes):
    fn = find_function(tree, "get_inputs")
    if fn is None:
        raise ProblemError("no-get-inputs", "get_inputs", None,
                           "the file has no get_inputs() function",
                           "KernelBench problems define get_inputs() "
                           "returning forward's arguments; add it")
    scope = Scope(module, aliases)
    ret = walk_body(fn, scope, "get_inputs", bind_input_local)
    inputs = []
    for index, elt in enumerate(returned_items(ret, "get_inputs")):
        try:
            item = read_input(elt, index, scope, forward_names)
        except Unreadable as err:
            raise err.as_problem("get_inputs") from None
        note = item.pop("note", None)
        if note:
            notes.append(f"{item['name']}: {note}")
        if item.pop("empty", False):
            notes.append(f"{item['name']}: torch.empty has no values; "
                         "filled with 0")
        inputs.append(item)
    unique_names(inputs, notes)
    return inputs


def read_input(elt, index, scope, forward_names):
    if isinstance(elt, ast.Name):
        name = elt.id
    else:
        name = forward_names[index] if index < len(forward_names) \
            else f"in{index}"
    kind, value = read_value(elt, scope)
    if kind == "tensor":
        item = {"name": name}
        item.update(value)
        item["line"] = item.get("line", elt.lineno)
        return order_tensor(item)
    return scalar_input(name, value, elt)


def order_tensor(item):
    keys = ("name", "kind", "dtype", "shape", "shape_names", "generator",
            "line", "empty", "note")
    return {k: item[k] for k in keys if k in item}


def scalar_input(name, value, elt):
    if not isinstance(value, (bool, int, float)):
        raise Unreadable(elt, f"{src(elt)} is {value!r}, not a tensor or a "
                              "number", FIXES["get_inputs"])
    kind = "bool" if isinstance(value, bool) else \
        "int" if isinstance(value, int) else "float"
    return {"name": name, "kind": "scalar", "value": value, "type": kind,
            "line": elt.lineno}


def unique_names(inputs, notes):
    seen = {}
    for item in inputs:
        base = item["name"]
        seen[base] = seen.get(base, 0) + 1
        if seen[base] > 1:
            item["name"] = f"{base}_{seen[base]}"
            notes.append(f"{item['name']}: get_inputs returns '{base}' more "
                         "than once; the workbench makes a separate input")


# ------------------------------------------------------ get_init_inputs

def bind_init_local(target, value, scope):
    try:
        pairs = unpack_target(target, scope.const(value), value)
    except Unreadable as err:
        for name in target_names(target):
            scope.shadow(name)
            scope.broken[name] = err
        return
    for name, item in pairs:
        scope.shadow(name)
        scope.env[name] = item


def read_init(tree, module, aliases):
    """([init entries], [python values], init_defined)."""
    fn = find_function(tree, "get_init_inputs")
    if fn is None:
        return [], [], False
    scope = Scope(module, aliases)
    ret = walk_body(fn, scope, "get_init_inputs", bind_init_local)
    entries, values = [], []
    for elt in returned_items(ret, "get_init_inputs"):
        try:
            value = init_value(elt, scope)
        except Unreadable as err:
            raise err.as_problem("get_init_inputs") from None
        values.append(value)
        name = elt.id if isinstance(elt, ast.Name) else None
        entries.append({"value": value, "type": init_type(value),
                        "name": name, "line": elt.lineno})
    return entries, values, True


def init_value(elt, scope):
    try:
        value = scope.const(elt)
    except Unreadable as err:
        detail = "" if err.why.startswith(src(elt)) else f" ({err.why})"
        raise Unreadable(elt, f"{src(elt)} is not a value the workbench can "
                              "pass to Model (numbers, bools, strings, None"
                              f" and tuples of those){detail}") from None
    if not is_plain(value):
        raise Unreadable(elt, f"{src(elt)} is not a value the workbench can "
                              "pass to Model (numbers, bools, strings, None "
                              "and tuples of those)")
    return value


def init_type(value):
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    for kind, types in (("int", int), ("float", float), ("str", str)):
        if isinstance(value, types):
            return kind
    return "tuple"


# ------------------------------------------------------------------ Model

def read_model(tree, source, env, aliases):
    cls = None
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == "Model":
            cls = stmt
    if cls is None:
        others = [s.name for s in tree.body if isinstance(s, ast.ClassDef)]
        found = f" (it defines {', '.join(others)})" if others else ""
        raise ProblemError("no-model", "Model", None,
                           f"the file has no class Model{found}",
                           FIXES["Model"])
    methods = {s.name: s for s in cls.body if isinstance(s, ast.FunctionDef)}
    if "forward" not in methods:
        raise ProblemError("no-model", "Model", cls.lineno,
                           "class Model has no forward method",
                           FIXES["Model"])
    doc = ast.get_docstring(cls)
    init = methods.get("__init__")
    forward = methods["forward"]
    return {"description": doc.strip().splitlines()[0] if doc else None,
            "init_params": params_of(init, env, aliases) if init else [],
            "forward_params": params_of(forward, env, aliases),
            "forward_source": return_source(forward, source),
            "forward_varargs": forward.args.vararg is not None,
            "forward_required": len(forward.args.posonlyargs +
                                    forward.args.args) - 1 -
            len(forward.args.defaults)}


def params_of(fn, env, aliases):
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + \
        list(args.defaults)
    pairs = list(zip(positional, defaults))[1:]
    pairs += list(zip(args.kwonlyargs, args.kw_defaults))
    return [param_entry(arg, default, env, aliases)
            for arg, default in pairs]


def param_entry(arg, default, env, aliases):
    entry = {"name": arg.arg}
    if default is not None:
        try:
            value = eval_const(default, env, aliases)
            if is_plain(value):
                entry["default"] = value
        except Unreadable:
            pass
    return entry


def return_source(fn, source):
    returns = [s for s in fn.body if isinstance(s, ast.Return)]
    if not returns:
        returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    returns = [r for r in returns if r.value is not None]
    if not returns:
        return None
    return ast.get_source_segment(source, returns[-1].value)


# ------------------------------------------------------------- the file

def read_source(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
        return data.decode("utf-8-sig")
    except OSError as err:
        why = f"cannot read the file: {err.strerror or err}"
    except UnicodeDecodeError as err:
        why = f"the file is not UTF-8 text ({err.reason} at byte {err.start})"
    raise ProblemError("io", "file", None, why,
                       "check the path and that the file is a Python "
                       "source file")


def parse_source(source, path):
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as err:
        why = f"Python cannot parse the file: {err.msg}"
        line = err.lineno
    except ValueError as err:  # e.g. null bytes in the source
        why, line = f"Python cannot parse the file: {err}", None
    raise ProblemError("syntax", "file", line, why,
                       "fix the file so that `python3 -m py_compile` "
                       "accepts it")


def read_problem(path):
    """Everything static; returns (result dict, init values)."""
    source = read_source(path)
    tree = parse_source(source, path)
    aliases = torch_aliases(tree)
    module = module_constants(tree, aliases)
    model = read_model(tree, source, module.env, aliases)
    notes = []
    forward_names = [p["name"] for p in model["forward_params"]]
    inputs = read_inputs(tree, module, aliases, forward_names, notes)
    init, init_values, init_defined = read_init(tree, module, aliases)
    check_arity(inputs, model, notes)
    result = {"ok": True, "file": os.path.abspath(path),
              "name": os.path.splitext(os.path.basename(path))[0],
              "description": model["description"],
              "constants": module.constants(),
              "inputs": inputs, "init": init, "init_defined": init_defined,
              "init_params": model["init_params"],
              "forward_params": model["forward_params"],
              "forward_source": model["forward_source"],
              "outputs": None, "outputs_problem": None, "torch": None,
              "notes": notes}
    return result, init_values


def check_arity(inputs, model, notes):
    params, required = model["forward_params"], model["forward_required"]
    if len(inputs) > len(params) and not model["forward_varargs"]:
        notes.append(f"get_inputs returns {len(inputs)} inputs but forward "
                     f"takes {len(params)} parameters")
    elif len(inputs) < required:
        notes.append(f"get_inputs returns {len(inputs)} inputs but forward "
                     f"needs {required}")


# ------------------------------------------------- output shapes (torch)

def problem_frame(err, path):
    """'file:line' of the innermost frame of err inside the problem file."""
    real = os.path.realpath(path)
    where = None
    for frame in traceback.extract_tb(err.__traceback__):
        if os.path.realpath(frame.filename) == real:
            where = f"{path}:{frame.lineno}"
    return where or path


def describe_error(err, path, doing):
    lines = str(err).strip().splitlines()
    first = type(err).__name__ + (f": {lines[0]}" if lines else "")
    return f"{problem_frame(err, path)}: {doing} raised {first}"


def torch_dtype(torch, name):
    names = {"f64": torch.float64, "f32": torch.float32,
             "f16": torch.float16, "bf16": torch.bfloat16,
             "i64": torch.int64, "i32": torch.int32, "i8": torch.int8,
             "u8": torch.uint8, "bool": torch.bool}
    return names[name]


def dtype_name(torch, dtype):
    for short in ("f64", "f32", "f16", "bf16", "i64", "i32", "i8", "u8",
                  "bool"):
        if dtype == torch_dtype(torch, short):
            return short
    return str(dtype).replace("torch.", "")


def import_problem(path):
    """The problem as a module, with the --set / configuration constants (OVERRIDES) applied."""
    with contextlib.redirect_stdout(sys.stderr):
        return kwb_problem_module.load_problem(path, dict(OVERRIDES))


def meta_inputs(torch, inputs):
    return [torch.empty(i["shape"], dtype=torch_dtype(torch, i["dtype"]),
                        device="meta") if i["kind"] == "tensor"
            else i["value"] for i in inputs]


def real_input(torch, item):
    if item["kind"] == "scalar":
        return item["value"]
    gen, shape = item["generator"], item["shape"]
    if gen["kind"] == "normal":
        t = torch.randn(shape) * gen["std"] + gen["mean"]
    elif gen["kind"] == "uniform":
        t = torch.rand(shape) * (gen["high"] - gen["low"]) + gen["low"]
    elif gen["kind"] == "randint":
        t = torch.randint(gen["low"], gen["high"], shape)
    else:
        t = torch.full(shape, gen["value"])
    return t.to(torch_dtype(torch, item["dtype"]))


def build_model(torch, module, init_values, device):
    with contextlib.redirect_stdout(sys.stderr):
        if device == "meta":
            try:
                with torch.device("meta"):
                    model = module.Model(*init_values)
            except Exception:  # __init__ needs real data: build on the CPU
                model = module.Model(*init_values)
            return model.to("meta")
        return module.Model(*init_values)


# While the configurations are read: forward's random calls are recorded (draws).
DRAW_RECORDER = None


def run_forward(torch, model, args, device):
    """model(*args); tensors that forward makes itself land on device."""
    with contextlib.redirect_stdout(sys.stderr), torch.no_grad(), \
            torch.device(device), DRAW_RECORDER or contextlib.nullcontext():
        return model(*args)


def describe_outputs(torch, out):
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    if not items or not all(isinstance(t, torch.Tensor) for t in items):
        kinds = ", ".join(type(t).__name__ for t in items) or "nothing"
        return None, (f"forward returned {kinds}, not a tensor or a tuple of "
                      "tensors; enter the output by hand")
    return [{"dtype": dtype_name(torch, t.dtype), "shape": list(t.shape)}
            for t in items], None


def outputs_on_cpu(torch, module, result, init_values, meta_err, path):
    inputs = result["inputs"]
    total = sum(math.prod(i["shape"]) for i in inputs
                if i["kind"] == "tensor")
    meta_why = describe_error(meta_err, path, "forward on the meta device")
    if total > CPU_RETRY_LIMIT:
        return None, (f"forward did not run on the meta device: {meta_why}; "
                      f"the inputs hold {total} elements, more than 2**22, "
                      "too many to run it on the CPU instead; enter the "
                      "output's shape and dtype by hand")
    try:
        torch.manual_seed(0)
        model = build_model(torch, module, init_values, "cpu")
        args = [real_input(torch, i) for i in inputs]
        out = run_forward(torch, model, args, "cpu")
    except Exception as err:
        return None, (f"forward did not run on the meta device ({meta_why}) "
                      "nor on the CPU: " +
                      describe_error(err, path, "forward on the CPU") +
                      "; fix the problem or enter the output by hand")
    return describe_outputs(torch, out)


def read_outputs(torch, path, result, init_values):
    """(outputs, problem, the Model built on the meta device or None) from running forward on
    meta, else the CPU."""
    try:
        module = import_problem(path)
    except ModuleNotFoundError as err:  # a package the problem needs (einops)
        where = problem_frame(err, path)
        line = int(where.rsplit(":", 1)[1]) if where != path else None
        raise ProblemError("missing-module", "file", line,
                           f"the problem imports {err.name}, which {sys.executable} lacks",
                           f"install it there ({sys.executable} -m pip install {err.name}) or import with "
                           "another Python (--python PATH)")
    except (Exception, SystemExit) as err:  # the problem's own code
        return None, describe_error(err, path, "importing the problem") + \
            "; the file must import cleanly to read the output's shape", None
    try:
        model = build_model(torch, module, init_values, "meta")
    except Exception as err:
        return None, describe_error(err, path, "Model(*get_init_inputs())") \
            + "; fix the problem or enter the output by hand", None
    try:
        out = run_forward(torch, model, meta_inputs(torch, result["inputs"]),
                          "meta")
    except Exception as err:
        return (*outputs_on_cpu(torch, module, result, init_values, err, path), model)
    return (*describe_outputs(torch, out), model)


def add_outputs(result, init_values, path):
    try:
        import torch
    except ImportError as err:
        result["outputs_problem"] = (
            f"PyTorch is not installed for {sys.executable}: {err}; the "
            "output's shape and dtype are read by running forward on "
            "PyTorch's meta device")
        return
    except Exception as err:
        result["outputs_problem"] = (
            f"PyTorch could not be imported by {sys.executable}: "
            f"{type(err).__name__}: {err}; the output's shape and dtype are "
            "read by running forward on PyTorch's meta device")
        return
    result["torch"] = str(torch.__version__)
    outputs, problem, _ = read_outputs(torch, path, result, init_values)
    result["outputs"], result["outputs_problem"] = outputs, problem


def add_doubled(result, path):
    """--double-batch: the outputs again with the first input's first dimension (a module
    constant) doubled, as "doubled": {"constant", "value", "outputs", "outputs_problem"}; the
    importer tells from the two which size each output dimension follows."""
    first = result["inputs"][0] if result["inputs"] else None
    if not first or first.get("kind") != "tensor" or not first["shape"] or not first["shape_names"][0] \
            or result.get("outputs") is None:
        return
    name = first["shape_names"][0]
    OVERRIDES[name] = 2 * first["shape"][0]
    try:
        again, init_values = read_problem_bounded(path)
    except ProblemError as err:
        result["doubled"] = {"constant": name, "value": OVERRIDES[name], "outputs": None,
                             "outputs_problem": err.to_json(path)["message"]}
        return
    finally:
        OVERRIDES.pop(name, None)
    add_outputs(again, init_values, path)
    result["doubled"] = {"constant": name, "value": 2 * first["shape"][0],
                         "outputs": again["outputs"], "outputs_problem": again["outputs_problem"]}


# ------------------------------------------------- --configs (module state, sizes)

def progress(text):
    """One line for the importer to show while the reader works (stderr, "kwb-progress: TEXT")."""
    print("kwb-progress: " + text, file=sys.stderr, flush=True)


DROPOUT_FIX = ("a task's reference must give the same output for the same inputs: set the dropout "
               "probability to 0 (or call eval()) in the problem, or remove the random call")
DRAW_FIX = ("a task's reference must give the same output for the same inputs: make the random tensor "
            "an argument of forward that get_inputs() returns (e.g. h0), or remove the random call")


class RandomOutput(ProblemError):
    def __init__(self, line, why, fix=DROPOUT_FIX):
        super().__init__("random-output", "Model", line, why, fix)


@contextlib.contextmanager
def overridden(assign):
    """The module constants in `assign` set (OVERRIDES) while the block runs."""
    saved = dict(OVERRIDES)
    OVERRIDES.update(assign)
    try:
        yield
    finally:
        OVERRIDES.clear()
        OVERRIDES.update(saved)


def evaluate_at(torch, path, tree, assign):
    """Shapes of every tensor with the size constants set as `assign` (meta device), the random
    tensors forward draws ("draws"), and the Model built there ("model")."""
    global DRAW_RECORDER
    progress("shapes with " + (", ".join(f"{k} = {v}" for k, v in assign.items()) or "the problem's sizes"))
    with overridden(assign):
        result, init_values = read_problem_bounded(path)
        DRAW_RECORDER = kwb_problem_state.DrawRecorder(torch, path, tree)
        try:
            outputs, problem, model = read_outputs(torch, path, result, init_values)
        finally:
            draws, DRAW_RECORDER = DRAW_RECORDER.draws, None
        if outputs is None:
            raise RuntimeError(problem)
        state = [{"key": key, "dtype": kwb_problem_state.dtype_short(torch, t.dtype),
                  "shape": list(t.shape), "input": True}
                 for key, t, _, _, _ in kwb_problem_state.enumerate_state(torch, model)]
    return {"set": dict(assign), "inputs": result["inputs"], "state": state, "outputs": outputs,
            "draws": draws, "init": init_values, "model": model}


def size_constants(result):
    """The module constants an input's shape names, first seen first; the batch (the first
    input's first dimension when named), or None."""
    names = []
    for item in result["inputs"]:
        if item["kind"] == "tensor":
            for name in item["shape_names"]:
                if name and name not in names:
                    names.append(name)
    first = result["inputs"][0] if result["inputs"] else None
    batch = first["shape_names"][0] if first and first["kind"] == "tensor" and first["shape"] \
        and first["shape_names"][0] else None
    return names, batch


def check_random(torch, tree, aliases, model):
    calls = kwb_problem_state.random_calls(tree, aliases)
    if calls:
        line, what = calls[0]
        fix = DROPOUT_FIX if "dropout" in what.split("(")[0].lower() else DRAW_FIX
        raise RandomOutput(line, f"forward's output is random: {what} draws random numbers on "
                                 "every call", fix)
    modules = kwb_problem_state.random_modules(torch, model)
    if modules:
        raise RandomOutput(None, "forward's output is random: " + "; ".join(modules))


def check_draws(draws, path):
    """forward's draws at the problem's sizes, each one a generator reproduces."""
    for d in draws:
        if "problem" in d:
            raise ProblemError("cannot-express", "Model", d["line"] or None,
                               f"forward's random call {d['call']} cannot be made an input: {d['problem']}",
                               DRAW_FIX)
    if draws:
        progress("forward draws " + ", ".join(f"{d['name']} ({d['call']}, line {d['line']})" for d in draws) +
                 ": the task gives them as inputs")
    return draws


def same_draws(draws, evaluation, name):
    """The draws' shapes at one configuration, which must make the same calls."""
    found = evaluation["draws"]
    calls = [(d["call"], d["line"], d["dtype"]) for d in found]
    if calls != [(d["call"], d["line"], d["dtype"]) for d in draws]:
        raise ProblemError("cannot-express", "Model", None,
                           f"forward makes {len(draws)} random call(s) at the problem's sizes and {len(found)} "
                           f"with the sizes of the configuration '{name}' (or others): the draws change with the sizes",
                           "write the task by hand")
    return [d["shape"] for d in found]


def add_configs(result, path):
    """--configs: "state", "size_constants", "batch" and "configs" (kwb_problem_state.py)."""
    import torch
    tree = ast.parse(read_source(path), filename=path)
    aliases = torch_aliases(tree)
    constants, batch = size_constants(result)
    values = {c["name"]: c["value"] for c in result["constants"]}
    base = {name: values[name] for name in constants if type(values.get(name)) is int}
    constants = list(base)
    batch = batch if batch in base else None
    planner = kwb_problem_state.Planner(lambda a: evaluate_at(torch, path, tree, a), base, constants, batch)
    kernelbench = planner.fits(base)
    if kernelbench is None:
        err = planner.at(base)
        raise ProblemError("cannot-express", "Model", None,
                           f"the shapes could not be read again: {type(err).__name__}: {err}",
                           "write the task by hand")
    meta_model = kernelbench["model"]
    check_random(torch, tree, aliases, meta_model)
    result["draws"] = check_draws(kernelbench["draws"], path)
    small, steps = planner.small()
    configs = [("kernelbench", base, "the problem's own sizes")]
    if small != base:
        configs.append(("small", small, "for a quick correctness check: " + ", ".join(steps)))
    large, k = planner.large()
    if large:
        configs.append(("large", large, f"the batch ({batch}) x{k}"))
    if batch:
        configs.append(("probe", dict(base, **{batch: 2 * base[batch]}), None))
    # One more probe per other size constant, doubled alone (where the module builds and runs
    # there, within the search's time): a weight's dimension that merely equals a size at every
    # configuration (a 3 x 3 kernel beside 3 input channels) does not follow it.
    for name in constants:
        if name != batch:
            configs.append(("probe " + name, dict(base, **{name: 2 * base[name]}), None))
    # Values of the module state, read on the CPU at the small sizes (kwb_problem_state.py, 1.)
    cpu_model, small_eval = None, planner.fits(small)
    state_bytes = kwb_problem_state.tensor_bytes(small_eval["state"]) if small_eval else None
    if state_bytes is not None and state_bytes <= kwb_problem_state.CPU_STATE_LIMIT:
        progress("the module's weights and buffers: built on the CPU to read their values")
        try:
            with overridden(small):
                torch.manual_seed(0)
                cpu_model = build_model(torch, import_problem(path), small_eval["init"], "cpu")
        except Exception as err:  # noqa: BLE001  the problem's own code
            result["notes"].append(f"the module state's values could not be read on the CPU "
                                   f"({type(err).__name__}: {err}); PyTorch's defaults are assumed")
    state = kwb_problem_state.read_state(torch, meta_model, cpu_model)
    keep = {s["key"]: s["input"] for s in state}
    result["state"] = state
    result["size_constants"], result["batch"] = constants, batch
    result["configs"] = []
    for name, assign, comment in configs:
        e = planner.fits(assign)
        if e is None:
            continue
        for s in e["state"]:
            s["input"] = keep.get(s["key"], True)
        result["configs"].append({
            "name": name, "set": assign, "comment": comment,
            "bytes": kwb_problem_state.total_bytes(e),
            "inputs": [i["shape"] if i["kind"] == "tensor" else None for i in e["inputs"]],
            "state": {s["key"]: s["shape"] for s in e["state"]},
            "draws": same_draws(result["draws"], e, name),
            "outputs": [o["shape"] for o in e["outputs"]],
            "init": e["init"]})
    if cpu_model is not None and small_eval is not None:
        with overridden(small):
            result["conditioning"] = conditioning(torch, cpu_model, small_eval, "small" if small != base else "kernelbench")


CONDITIONING_SECONDS = 20  # the f32 forward on the CPU past which f64 is not tried
CONDITIONING_BYTES = 256 << 20  # every tensor together at the configuration, beyond which it is not measured
TOLERANCES = (1e-4, 1e-3, 1e-2, 1e-1)


def conditioning(torch, model, evaluation, config):
    """How far PyTorch's own f32 forward is from the same forward in f64 (CPU, the small
    configuration when every tensor together is at most CONDITIONING_BYTES, the module as built with seed 0, generated inputs): per floating output its
    largest difference, the elements beyond rtol = atol = 1e-4, and the smallest of TOLERANCES
    that covers every element twice over ("needed", null when none does).  An ill-conditioned
    problem (BatchNorm in training mode over a few values per channel, a deep network at tiny
    sizes) gives PyTorch's own f32 output errors no f32 kernel can beat, so its tolerance must
    be looser.  None when forward is too slow on the CPU or fails there."""
    import copy
    if kwb_problem_state.total_bytes(evaluation) > CONDITIONING_BYTES:
        progress(f"conditioning not measured: the {config} configuration holds "
                 f"{kwb_problem_state.human(kwb_problem_state.total_bytes(evaluation))}, more than "
                 f"{kwb_problem_state.human(CONDITIONING_BYTES)} to run in f32 and f64 on the CPU")
        return None
    if evaluation.get("draws"):  # forward's draws differ between an f32 and an f64 run
        progress("conditioning not measured: forward draws random tensors")
        return None
    if any(o["dtype"] != "f32" for o in evaluation["outputs"]) or \
            any(i["kind"] == "tensor" and i["dtype"] not in ("f32", "i64", "i32", "bool") for i in evaluation["inputs"]):
        return None
    progress(f"conditioning: forward in f32 and in f64 on the CPU at the {config} configuration")
    try:
        torch.manual_seed(1)
        args = [real_input(torch, i) for i in evaluation["inputs"]]
        wide = copy.deepcopy(model).double()
        torch.manual_seed(2)
        start = time.monotonic()
        narrow_out = run_forward(torch, model, args, "cpu")
        took = time.monotonic() - start
        if took > CONDITIONING_SECONDS:
            progress(f"conditioning not measured: forward took {took:.0f} s on the CPU")
            return None
        torch.manual_seed(2)
        with time_limit(max(5.0, 4 * took)):  # f64 convolutions can be much slower
            wide_out = run_forward(torch, wide, [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point()
                                                 else a for a in args], "cpu")
    except Exception as err:  # noqa: BLE001  the problem's own code, or the time limit
        progress(f"conditioning not measured: {type(err).__name__}: {err}")
        return None
    narrow_out = list(narrow_out) if isinstance(narrow_out, (tuple, list)) else [narrow_out]
    wide_out = list(wide_out) if isinstance(wide_out, (tuple, list)) else [wide_out]
    outputs = []
    for a, b in zip(narrow_out, wide_out):
        a = a.double()
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))  # the same inf, or NaN in both
        diff = torch.where(same, torch.zeros_like(b), (a - b).abs())  # NaN where one run alone has it
        scale = b.abs().nan_to_num(posinf=0.0)
        finite = diff[torch.isfinite(diff)]
        exact = bool(torch.isfinite(diff).all())
        needed = next((t for t in TOLERANCES if exact and bool((2 * diff <= t + t * scale).all())), None)
        outputs.append({"max_abs": float(finite.max()) if finite.numel() else 0.0,
                        "beyond": int((~(diff <= 1e-4 + 1e-4 * scale)).sum()), "elements": diff.numel(),
                        "needed": needed})
    return {"config": config, "outputs": outputs}


class TimeLimit(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    """TimeLimit raised in the block after `seconds` (between Python steps; SIGALRM)."""
    import signal

    def expired(signum, frame):
        raise TimeLimit(f"past {seconds:.0f} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------- main

USAGE = ("usage: python3 kwb_kernelbench.py [--no-torch] [--double-batch] [--configs] "
         "[--set NAME=INT]... [--] PROBLEM.py")


# --set NAME=INT: module-level constants replaced (the importer reads a problem a second time with
# its batch size changed, to tell which size each output dimension follows).
OVERRIDES = {}


def take_overrides(argv):
    """argv without its --set NAME=INT pairs, which go into OVERRIDES."""
    rest, i = [], 0
    while i < len(argv):
        if argv[i] == "--set" and i + 1 < len(argv):
            name, _, value = argv[i + 1].partition("=")
            try:
                OVERRIDES[name] = int(value)
            except ValueError:
                print(f"kwb_kernelbench.py: --set {argv[i + 1]}: expected NAME=INTEGER", file=sys.stderr)
                sys.exit(1)
            i += 2
            continue
        rest.append(argv[i])
        i += 1
    return rest


def parse_args(argv):
    files = []
    if "--" in argv:  # after it, every argument is a file (`-- --no-torch.py`)
        at = argv.index("--")
        argv, files = argv[:at], argv[at + 1:]
    argv = take_overrides(argv)
    paths = [a for a in argv if not a.startswith("--")] + files
    options = [a for a in argv if a.startswith("--")]
    if "--help" in options:
        print(USAGE)
        sys.exit(0)
    unknown = [o for o in options if o not in ("--no-torch", "--double-batch", "--configs")]
    if len(paths) != 1 or unknown:
        why = f"unknown option {unknown[0]}" if unknown else \
            "give exactly one problem file"
        print(f"kwb_kernelbench.py: {why}\n{USAGE}", file=sys.stderr)
        sys.exit(1)
    return paths[0], "--no-torch" in options, "--double-batch" in options, "--configs" in options


@contextlib.contextmanager
def static_limits():
    """The static read under its own soft limits: RLIMIT_DATA at STATIC_MEMORY_BYTES, RLIMIT_CPU
    STATIC_CPU_SECONDS beyond what was used so far (SIGXCPU raises StaticReadTimeout); the
    process's limits again afterwards (soft limits are raised back, up to the hard ones)."""
    try:
        import resource
        import signal
    except ImportError:  # not a POSIX system: the bounds on folding still hold
        yield
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    wanted = {resource.RLIMIT_DATA: STATIC_MEMORY_BYTES,
              resource.RLIMIT_CPU: int(usage.ru_utime + usage.ru_stime) + 1 + STATIC_CPU_SECONDS}
    saved = {}
    for which, value in wanted.items():
        soft, hard = resource.getrlimit(which)
        lower = [v for v in (soft, hard) if v != resource.RLIM_INFINITY]
        try:
            resource.setrlimit(which, (min([value] + lower), hard))
            saved[which] = (soft, hard)
        except (ValueError, OSError):
            pass

    def on_cpu_limit(_signum, _frame):
        raise StaticReadTimeout()
    previous = signal.signal(signal.SIGXCPU, on_cpu_limit)
    try:
        yield
    finally:
        for which, limits in saved.items():
            resource.setrlimit(which, limits)
        signal.signal(signal.SIGXCPU, previous)


def read_problem_bounded(path):
    """read_problem under static_limits, its running out of them as a TooLarge."""
    FOLDED[0] = 0
    fix = "KernelBench problems are short files; check this one is one"
    try:
        with static_limits():
            return read_problem(path)
    except MemoryError:
        why = (f"reading the file statically needed more than {STATIC_MEMORY_BYTES >> 20} MiB "
               "(the static reader's memory limit)")
    except StaticReadTimeout:
        why = (f"reading the file statically took more than {STATIC_CPU_SECONDS} s of CPU time "
               "(the static reader's limit)")
    except RecursionError:
        why = "the file nests expressions too deeply to read"
    raise TooLarge(None, why, fix)


def main(argv):
    path, no_torch, double_batch, configs = parse_args(argv)
    try:
        result, init_values = read_problem_bounded(path)
    except ProblemError as err:
        print(json.dumps(err.to_json(path)))
        return 2
    if no_torch:
        result["outputs_problem"] = "not read: --no-torch was given"
    else:
        if configs:
            progress("PyTorch: building the module and running forward on the meta device")
        try:
            add_outputs(result, init_values, path)
            if double_batch:
                add_doubled(result, path)
            if configs and result["outputs"] is not None:
                add_configs(result, path)
        except ProblemError as err:
            print(json.dumps(err.to_json(path)))
            return 2
    sys.stdout.flush()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
