#pragma once
// A task whose PyTorch module has a weight (issue 46): x (randint scaled and shifted to -1 or 1),
// w the module's `fc.weight` (a symmetric normal matrix), y out; [reference] python = "ref.py"
// with init = ["k"] and forward = ["x", "alpha"]; [editor] starter = "k.cu". Tests write the
// files it names (ref.py, k.cu) where they load it from a folder.
namespace kwb::test {

inline constexpr const char *kModuleStateManifest = R"(name = "scaled-linear"
description = "y = alpha * x W^T"
sizes = ["n", "k"]
[[configs]]
name = "c"
n = 4
k = 8
[params]
alpha = 0.5
[tensors.x]
dtype = "f32"
shape = ["n", "k"]
role = "in"
init = { kind = "randint", low = 0, high = 2, scale = 2.0, shift = -1.0 }
[tensors.w]
dtype = "f32"
shape = ["k", "k"]
role = "in"
init = { kind = "normal", mean = 0.0, std = 1.0, matrix = "symmetric", seed_offset = 1 }
state = "fc.weight"
[tensors.y]
dtype = "f32"
shape = ["n", "k"]
role = "out"
tolerance = { rtol = 1e-5, atol = 1e-6 }
[reference]
python = "ref.py"
init = ["k"]
forward = ["x", "alpha"]
[launch]
kernel = "k"
grid = ["n"]
block = [32]
args = ["x", "w", "y", "n", "k", "alpha"]
[editor]
starter = "k.cu"
[cost]
flops = "2 * n * k * k"
bytes = "4 * n * k"
)";

}  // namespace kwb::test
