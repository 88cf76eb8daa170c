#!/usr/bin/env python3
# The command-line contract of resources/python/kwb_starter.py (its header): one JSON line on
# stdout and exit 0 for a starter and for a refusal, exit 1 and nothing on stdout for a usage
# error; the refusals that keep a starter correct by construction. Run by run-starter-check.sh
# with the torch venv's python (real processes, real problem files).

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "resources", "python", "kwb_starter.py")
FIXTURES = os.path.join(HERE, "fixtures")


def linear_spec(module, init, features="features", extra=None):
    spec = {
        "module": module, "init": init, "forward": ["x"], "outputs": ["out"],
        "kernel_args": [
            {"name": "x", "kind": "tensor", "dtype": "f32", "shape": ["batch_size", features], "role": "in"},
            {"name": "fc_weight", "kind": "tensor", "dtype": "f32", "shape": [features, features], "role": "in", "state": "fc.weight"},
            {"name": "fc_bias", "kind": "tensor", "dtype": "f32", "shape": [features], "role": "in", "state": "fc.bias"},
            {"name": "out", "kind": "tensor", "dtype": "f32", "shape": ["batch_size", features], "role": "out"},
            {"name": "batch_size", "kind": "size"},
            {"name": "features", "kind": "size"}],
        "sizes": {"batch_size": 4, "features": 32},
        "configs": [{"name": "small", "values": {"batch_size": 2, "features": 16}, "init": [16]}],
    }
    spec.update(extra or {})
    return spec


def run(spec_text, stdin=False):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(spec_text)
    try:
        argv = [sys.executable, SCRIPT, "-" if stdin else f.name]
        return subprocess.run(argv, input=spec_text if stdin else None, capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(f.name)


def write_problem(dir, body):
    path = os.path.join(dir, "problem.py")
    with open(path, "w") as f:
        f.write("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n" + body +
                "\n\ndef get_inputs():\n    return [torch.rand(4, 32)]\n\n\ndef get_init_inputs():\n    return [32]\n")
    return path


LINEAR_INIT = "    def __init__(self, features, scale=2.0):\n        super().__init__()\n        self.fc = nn.Linear(features, features)\n        self.scale = scale\n"


class StarterCli(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def test_starter_from_stdin_is_one_json_line(self):
        path = write_problem(self.dir, LINEAR_INIT + "\n    def forward(self, x):\n        return torch.relu(self.fc(x)) * self.scale\n")
        r = run(json.dumps(linear_spec(path, [32])), stdin=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.splitlines()), 1, r.stdout)
        out = json.loads(r.stdout)
        self.assertTrue(out["ok"], out)
        self.assertEqual(out["steps"], ["linear (fc)", "relu", "mul"])
        src = out["source"]
        self.assertIn('extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream)', src)
        self.assertIn("const float *x = *static_cast<const float *const *>(args[0]);", src)
        self.assertIn("float *out = *static_cast<float *const *>(args[3]);", src)
        self.assertIn("const long long batch_size = *static_cast<const long long *>(args[4]);", src)
        # sizes come from the arguments: neither configuration's values is a literal in a launch
        for line in src.splitlines():
            if "<<<" in line:
                self.assertNotIn(", 32,", line)
                self.assertNotIn(", 4,", line)
        self.assertIn("2.0f", src)  # the module constant self.scale is baked in

    def test_usage_errors_exit_1_with_nothing_on_stdout(self):
        r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout), (1, ""))
        self.assertIn("usage", r.stderr)
        r = run("[1, 2]")
        self.assertEqual((r.returncode, r.stdout), (1, ""))
        spec = linear_spec("/nonexistent.py", [32])
        del spec["kernel_args"]
        r = run(json.dumps(spec))
        self.assertEqual((r.returncode, r.stdout), (1, ""))
        self.assertIn("kernel_args", r.stderr)
        spec = linear_spec("/nonexistent.py", [32])
        spec["forward"] = ["y"]
        r = run(json.dumps(spec))
        self.assertEqual((r.returncode, r.stdout), (1, ""))
        self.assertIn("'y'", r.stderr)

    def refusal(self, spec):
        r = run(json.dumps(spec))
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertFalse(out["ok"], out.get("source", "")[:200])
        return out["reason"]

    def test_unknown_operation_is_refused_with_file_and_line(self):
        spec = linear_spec(os.path.join(FIXTURES, "cumsum_after_linear.py"), [32],
                           extra={"configs": [], "sizes": {"batch_size": 4, "features": 32}})
        spec["kernel_args"][1]["state"] = "fc.weight"
        reason = self.refusal(spec)
        self.assertIn("torch.cumsum", reason)
        self.assertIn("cumsum_after_linear.py:12", reason)

    def test_random_dropout_is_refused(self):
        path = write_problem(self.dir, LINEAR_INIT + "        self.drop = nn.Dropout(0.25)\n\n    def forward(self, x):\n        return self.drop(self.fc(x))\n")
        self.assertIn("random", self.refusal(linear_spec(path, [32])))

    def test_dropout_in_eval_mode_is_the_identity(self):
        path = write_problem(self.dir, LINEAR_INIT + "        self.drop = nn.Dropout(0.25)\n        self.eval()\n\n    def forward(self, x):\n        return self.drop(self.fc(x))\n")
        r = run(json.dumps(linear_spec(path, [32])))
        out = json.loads(r.stdout)
        self.assertTrue(out["ok"], out)
        self.assertEqual(out["steps"], ["linear (fc)"])

    def test_a_constant_that_changes_with_the_configuration_is_refused(self):
        # Model(features, scale): the small configuration passes another scale, which a starter
        # with the scale as a literal would get wrong there.
        path = write_problem(self.dir, LINEAR_INIT + "\n    def forward(self, x):\n        return self.fc(x) * self.scale\n")
        spec = linear_spec(path, [32, 2.0])
        spec["configs"][0]["init"] = [16, 3.0]
        reason = self.refusal(spec)
        self.assertIn("configuration small", reason)
        self.assertIn("3.0f", reason)

    def test_a_state_shape_unlike_the_module_is_refused(self):
        path = write_problem(self.dir, LINEAR_INIT + "\n    def forward(self, x):\n        return self.fc(x)\n")
        spec = linear_spec(path, [32])
        spec["kernel_args"][1]["shape"] = ["features", "batch_size"]
        reason = self.refusal(spec)
        self.assertIn("fc_weight", reason)

    def test_an_inplace_operation_read_again_is_refused(self):
        spec = linear_spec(os.path.join(FIXTURES, "inplace_reread.py"), [32])
        self.assertIn("in place", self.refusal(spec))

    def test_integer_outputs_are_refused(self):
        path = write_problem(self.dir, LINEAR_INIT + "\n    def forward(self, x):\n        return torch.argmax(self.fc(x), dim=1)\n")
        spec = linear_spec(path, [32])
        spec["kernel_args"][3].update({"dtype": "i64", "shape": ["batch_size"]})
        self.assertIn("i64", self.refusal(spec))


if __name__ == "__main__":
    unittest.main()
