# kwb_problem_module.py: loads a problem file in KernelBench's format (class Model, get_inputs,
# get_init_inputs) as a Python module with some of its top-level constants replaced.
#
# Shared by the KernelBench reader (kwb_kernelbench.py: shapes at other sizes) and the PyTorch
# reference process (kwb_torch_reference.py: [reference] module_constants, the module built with a
# configuration's sizes). Standard library only.
#
# load_problem(path, overrides, name): the module, executed from its source with every top-level
# assignment to a name in `overrides` followed by `NAME = VALUE` (the override's value), so that
# what the file derives from the constant afterwards (`bias_shape = (out_channels, 1, 1)`,
# `self.h0 = torch.randn(num_layers, batch_size, hidden)` in __init__, a global read in forward)
# follows the new value, as if the file had been written with it. A name never assigned at the
# top level is set before the first statement. The module is registered in sys.modules as `name`
# (classes pickle and inspect there) and its file is `path`, so tracebacks name the problem's
# lines. Raises what executing the file raises (SyntaxError included).
import ast
import importlib.util
import sys


def _assigned_names(stmt):
    targets = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    names = []
    for target in targets:
        names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    return names


def _setter(name, value, at):
    node = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Constant(value=value))
    return ast.copy_location(ast.fix_missing_locations(node), at)


def _literal(value):
    """`value` as a constant the AST can hold: ints, floats, bools, strings, None, tuples."""
    if isinstance(value, list):
        return tuple(_literal(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_literal(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"override value {value!r} is not a number, bool, string, None or tuple")


def rewritten_tree(source, path, overrides):
    """The parsed file with the overrides applied (see the header)."""
    tree = ast.parse(source, filename=path)
    if not overrides:
        return tree
    values = {name: _literal(v) for name, v in overrides.items()}
    body, assigned = [], set()
    for stmt in tree.body:
        body.append(stmt)
        for name in _assigned_names(stmt):
            if name in values:
                body.append(_setter(name, values[name], stmt))
                assigned.add(name)
    first = tree.body[0] if tree.body else ast.Pass(lineno=1, col_offset=0)
    head = [_setter(n, v, first) for n, v in values.items() if n not in assigned]
    tree.body = head + body
    return tree


def load_problem(path, overrides=None, name="kwb_problem"):
    with open(path, "rb") as f:
        source = f.read().decode("utf-8-sig")
    tree = rewritten_tree(source, path, overrides or {})
    code = compile(tree, path, "exec")
    spec = importlib.util.spec_from_loader(name, loader=None, origin=path)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = path
    sys.modules[name] = module
    exec(code, module.__dict__)
    return module
