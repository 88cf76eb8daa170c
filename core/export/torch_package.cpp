// The PyTorch extension (issue 20 item 1): the CUDA package's launcher bound to torch tensors
// (dtype, dimension and device checks, sizes read from the shapes, outputs allocated, the current
// stream), built by torch.utils.cpp_extension (setup.py, or load() from the test), and a test that
// checks it against the task's reference and times it beside the PyTorch operation it replaces.
#include <set>

#include "core/export/kernel_export.h"
#include "core/export/package_parts.h"

namespace kwb::exporting {

namespace fs = std::filesystem;
using namespace parts;

namespace {

std::string atType(DType d) {
  switch (d) {
    case DType::F64: return "at::kDouble";
    case DType::F32: return "at::kFloat";
    case DType::F16: return "at::kHalf";
    case DType::BF16: return "at::kBFloat16";
    case DType::I64: return "at::kLong";
    case DType::I32: return "at::kInt";
    case DType::I8: return "at::kChar";
    case DType::U8: return "at::kByte";
    case DType::Bool: return "at::kBool";
  }
  return "at::kFloat";
}

std::string torchType(DType d) {
  switch (d) {
    case DType::F64: return "torch.float64";
    case DType::F32: return "torch.float32";
    case DType::F16: return "torch.float16";
    case DType::BF16: return "torch.bfloat16";
    case DType::I64: return "torch.int64";
    case DType::I32: return "torch.int32";
    case DType::I8: return "torch.int8";
    case DType::U8: return "torch.uint8";
    case DType::Bool: return "torch.bool";
  }
  return "torch.float32";
}

// An output the binding allocates: `out` tensors, and `inout` ones whose every seed starts from one
// constant (a sum or a histogram starting at zero): the function makes them, filled.
bool allocated(const Tensor &t) {
  if (t.role == TensorRole::Out) return true;
  if (t.role != TensorRole::InOut || !t.init || t.init->kind != Generator::Kind::Constant) return false;
  for (const auto &g : t.moreInits)
    if (g.kind != Generator::Kind::Constant || g.a != t.init->a) return false;
  return true;
}

struct Binding {
  std::vector<const Tensor *> passed;     // the function's tensor arguments, in manifest order
  std::vector<const Tensor *> made;       // outputs it allocates
  std::vector<const Tensor *> returned;   // what it returns: what it made, then the inputs it wrote in place
  std::map<std::string, std::pair<const Tensor *, std::size_t>> sizeFrom;  // size -> (tensor, dim)
  std::vector<std::string> sizeArgs;      // sizes no passed tensor's shape gives: arguments
};

Binding bindingOf(const Task &task) {
  Binding b;
  for (const auto &t : task.tensors) (allocated(t) ? b.made : b.passed).push_back(&t);
  b.returned = b.made;
  for (const Tensor *t : b.passed)
    if (t->role == TensorRole::InOut) b.returned.push_back(t);  // written in place, and returned
  for (const auto &s : task.sizeNames) {
    for (const Tensor *t : b.passed) {
      for (std::size_t i = 0; i < t->shape.size(); ++i)
        if (t->shape[i].text() == s) {
          b.sizeFrom.emplace(s, std::make_pair(t, i));
          break;
        }
      if (b.sizeFrom.count(s)) break;
    }
    if (!b.sizeFrom.count(s)) b.sizeArgs.push_back(s);
  }
  return b;
}

std::string bindingText(const ExportInput &in, const Layout &l, const Binding &b) {
  const Task &task = in.task;
  std::string s = commented(task.name + " as a PyTorch operation: the exported kernel's launcher bound to tensors.\n" +
                            provenanceComment(in));
  s += "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n\n";
  s += "#include <vector>\n\n#include \"" + l.id + ".h\"\n\n";
  std::vector<std::string> params;
  for (const auto &t : task.tensors) params.push_back(std::string(t.role == TensorRole::In ? "const " : "") + cppType(t.dtype) + " *" + t.name);
  for (const auto &n : task.sizeNames) params.push_back("long long " + n);
  params.push_back("cudaStream_t kwb_stream");
  s += "namespace kwb_reference {\ncudaError_t " + l.id + "(" + joined(params, ", ") + ");\n}\n\nnamespace {\n\n";
  s += "// A tensor as the kernel needs it: on the GPU, of its dtype and rank, contiguous.\n"
       "void expect(const torch::Tensor &t, const char *name, at::ScalarType dtype, int64_t dims) {\n"
       "  TORCH_CHECK(t.is_cuda(), name, \" must be a CUDA tensor\");\n"
       "  TORCH_CHECK(t.scalar_type() == dtype, name, \" must be \", dtype, \", not \", t.scalar_type());\n"
       "  TORCH_CHECK(t.dim() == dims, name, \" must have \", dims, \" dimension(s), not \", t.dim());\n"
       "  TORCH_CHECK(t.is_contiguous(), name, \" must be contiguous (call .contiguous())\");\n}\n\n";
  // The shared body.
  std::vector<std::string> args;
  for (const Tensor *t : b.passed) args.push_back(std::string(t->role == TensorRole::In ? "const " : "") + "torch::Tensor &" + t->name);
  for (const auto &n : b.sizeArgs) args.push_back("int64_t " + n);
  const std::string ret = b.returned.size() == 1 ? "torch::Tensor" : "std::vector<torch::Tensor>";
  s += ret + " call(bool kwb_use_reference" + (args.empty() ? "" : ", " + joined(args, ", ")) + ") {\n";
  s += "  using namespace ::" + l.ns + "::expr;\n";
  for (const Tensor *t : b.passed)
    s += "  expect(" + t->name + ", " + cString(t->name) + ", " + atType(t->dtype) + ", " + std::to_string(t->shape.size()) + ");\n";
  for (const auto &n : task.sizeNames) {
    if (const auto it = b.sizeFrom.find(n); it != b.sizeFrom.end())
      s += "  const long long " + n + " = " + it->second.first->name + ".size(" + std::to_string(it->second.second) + ");\n";
  }
  std::vector<std::string> positive;
  for (const auto &n : task.sizeNames) positive.push_back(n + " > 0");
  s += "  TORCH_CHECK(" + joined(positive, " && ") + ", \"every size must be positive\");\n";
  for (const Tensor *t : b.passed)
    for (std::size_t i = 0; i < t->shape.size(); ++i) {
      const auto from = b.sizeFrom.find(t->shape[i].text());
      if (from != b.sizeFrom.end() && from->second.first == t && from->second.second == i) continue;  // read from here
      const std::string want = cppExpression(t->shape[i], l.tunables);
      s += "  TORCH_CHECK(" + t->name + ".size(" + std::to_string(i) + ") == " + want + ", \"" + t->name + "'s dimension " +
           std::to_string(i) + " must be " + t->shape[i].text() + " = \", " + want + ", \", not \", " + t->name + ".size(" +
           std::to_string(i) + "));\n";
    }
  for (std::size_t i = 1; i < b.passed.size(); ++i)
    s += "  TORCH_CHECK(" + b.passed[i]->name + ".device() == " + b.passed[0]->name + ".device(), \"" + b.passed[i]->name +
         " must be on the same GPU as " + b.passed[0]->name + "\");\n";
  const std::string device =
      b.passed.empty() ? "at::Device(at::kCUDA, at::cuda::current_device())" : b.passed[0]->name + ".device()";
  s += "  const c10::cuda::CUDAGuard kwb_guard(" + device + ");\n";
  s += "  const auto kwb_options = at::TensorOptions().device(" + device + ");\n";
  for (const Tensor *t : b.made) {
    std::vector<std::string> dims;
    for (const auto &d : t->shape) dims.push_back(cppExpression(d, l.tunables));
    const std::string shape = "std::vector<int64_t>{" + joined(dims, ", ") + "}";
    if (t->role == TensorRole::Out)
      s += "  torch::Tensor " + t->name + " = torch::empty(" + shape + ", kwb_options.dtype(" + atType(t->dtype) + "));\n";
    else
      s += "  torch::Tensor " + t->name + " = torch::full(" + shape + ", " + number(t->init->a) + ", kwb_options.dtype(" + atType(t->dtype) +
           "));  // every run starts from " + number(t->init->a) + "\n";
  }
  s += "  const cudaStream_t kwb_stream = at::cuda::getCurrentCUDAStream();\n";
  std::vector<std::string> callArgs;
  for (const auto &t : task.tensors)
    callArgs.push_back("reinterpret_cast<" + std::string(t.role == TensorRole::In ? "const " : "") + cppType(t.dtype) + " *>(" + t.name +
                       ".data_ptr())");
  for (const auto &n : task.sizeNames) callArgs.push_back(n);
  callArgs.push_back("kwb_stream");
  s += "  const cudaError_t kwb_error = kwb_use_reference ? kwb_reference::" + l.id + "(" + joined(callArgs, ", ") + ")\n";
  s += "                                              : " + l.ns + "::" + l.id + "(" + joined(callArgs, ", ") + ");\n";
  s += "  TORCH_CHECK(kwb_error == cudaSuccess, \"" + task.name + ": the launch failed: \", cudaGetErrorString(kwb_error));\n";
  if (b.returned.size() == 1) {
    s += "  return " + b.returned.front()->name + ";\n";
  } else {
    std::vector<std::string> names;
    for (const Tensor *t : b.returned) names.push_back(t->name);
    s += "  return {" + joined(names, ", ") + "};\n";
  }
  s += "}\n\n}  // namespace\n\n";
  std::vector<std::string> forward, pyArgs;
  for (const Tensor *t : b.passed) {
    forward.push_back(t->name);
    pyArgs.push_back("py::arg(" + cString(t->name) + ")");
  }
  for (const auto &n : b.sizeArgs) {
    forward.push_back(n);
    pyArgs.push_back("py::arg(" + cString(n) + ")");
  }
  std::string doc;
  for (const Tensor *t : b.passed) doc += describe(*t) + "; ";
  for (const Tensor *t : b.returned) doc += "returns " + describe(*t) + "; ";
  if (!doc.empty()) doc.resize(doc.size() - 2);
  s += "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n";
  s += "  m.doc() = " + cString(task.name + ": " + task.description + " (exported by Kernel Workbench)") + ";\n";
  const std::string fwd = joined(forward, ", ");
  const std::string lambdaArgs = joined(args, ", ");
  s += "  m.def(" + cString(l.id) + ", [](" + lambdaArgs + ") { return call(false" + (fwd.empty() ? "" : ", " + fwd) + "); },\n        " +
       cString(doc) + (pyArgs.empty() ? "" : ", " + joined(pyArgs, ", ")) + ");\n";
  s += "  m.def(\"reference\", [](" + lambdaArgs + ") { return call(true" + (fwd.empty() ? "" : ", " + fwd) + "); },\n        " +
       cString("the task's reference, for the test: " + doc) + (pyArgs.empty() ? "" : ", " + joined(pyArgs, ", ")) + ");\n";
  return s + "}\n";
}


std::string pyGenerator(const Generator &g) {
  const char *kind = "";
  switch (g.kind) {
    case Generator::Kind::Uniform: kind = "uniform"; break;
    case Generator::Kind::Normal: kind = "normal"; break;
    case Generator::Kind::RandInt: kind = "randint"; break;
    case Generator::Kind::Arange: kind = "arange"; break;
    case Generator::Kind::Constant: kind = "constant"; break;
  }
  return "(" + cString(kind) + ", " + pyNumber(g.a) + ", " + pyNumber(g.b) + ", " + pyNumber(g.scale) + ", " + pyNumber(g.shift) +
         ", " + cString(std::string(generatorMatrixName(g.matrix))) + ", " + std::to_string(g.diagonal) + ")";
}

std::string setupText(const ExportInput &in, const Layout &l) {
  std::string s = commented("Builds " + in.task.name + "'s kernel as a PyTorch extension: pip install --no-build-isolation . (it builds\nagainst the PyTorch installed), or python setup.py build_ext --inplace.\n" +
                            provenanceComment(in), "# ");
  s += "import os\nimport sys\n\nfrom setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\n\n";
  s += "here = os.path.dirname(os.path.abspath(__file__))\nsys.path.insert(0, here)\n";
  s += "from setup_flags import NVCC_FLAGS  # noqa: E402\n\n";
  s += "setup(\n    name=\"" + l.id + "_ext\",\n    version=\"1.0\",\n    description=" + cString(in.task.description) + ",\n";
  s += "    ext_modules=[\n        CUDAExtension(\n            name=\"" + l.id + "_ext\",\n";
  s += "            sources=[\"" + l.id + "_binding.cpp\", \"src/" + l.id + ".cu\", \"test/reference_launch.cu\"],\n";
  s += "            include_dirs=[os.path.join(here, \"include\")],\n";
  s += "            extra_compile_args={\"cxx\": [\"-O3\", \"-std=c++17\"], \"nvcc\": NVCC_FLAGS},\n        )\n    ],\n";
  s += "    cmdclass={\"build_ext\": BuildExtension},\n)\n";
  return s;
}

std::string testPyText(const ExportInput &in, const Layout &l, const Binding &b) {
  const Task &task = in.task;
  std::string s = "\"\"\"Checks " + task.name + "'s exported kernel, as a PyTorch operation, against the task's reference, and\n"
                  "times it beside " + (task.torchEquivalent.empty() ? std::string("the reference") : "the PyTorch operation it replaces") +
                  " (CUDA events, the L2 flushed before each sample, the median).\n\n"
                  "Usage: python test_" + l.id + ".py [--config NAME] [--samples N] [--json FILE]\n"
                  "Exit status: 0 every check passed; 1 a mismatch.\n\n" + provenanceComment(in) + "\"\"\"\n";
  s += "import argparse\nimport json\nimport os\nimport sys\n\nimport torch\n\n";
  s += "ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package\nNAME = \"" + l.id + "\"\n";
  s += "# The PyTorch operation the kernel replaces (the task's [export] torch), over the tensors and sizes by name.\n";
  s += "TORCH_EQUIVALENT = " + cString(task.torchEquivalent) + "\n\n";
  s += "# (name, dtype, role, generators (the seeds cycle through them), (exact, rtol, atol)); in manifest order.\n";
  s += "TENSORS = [\n";
  for (const auto &t : task.tensors) {
    std::string gens = "[";
    if (t.init) {
      gens += pyGenerator(*t.init);
      for (const auto &g : t.moreInits) gens += ", " + pyGenerator(g);
    }
    gens += "]";
    const Tolerance tol = t.tolerance.value_or(Tolerance{});
    s += "    (" + cString(t.name) + ", " + torchType(t.dtype) + ", " + cString(std::string(roleName(t.role))) + ", " + gens + ", (" +
         (tol.exact ? "True" : "False") + ", " + pyNumber(tol.rtol) + ", " + pyNumber(tol.atol) + ")),\n";
  }
  s += "]\n";
  std::vector<std::string> passed, returned, sizeArgs;
  for (const Tensor *t : b.passed) passed.push_back(cString(t->name));
  for (const Tensor *t : b.returned) returned.push_back(cString(t->name));
  for (const auto &n : b.sizeArgs) sizeArgs.push_back(cString(n));
  s += "PASSED = [" + joined(passed, ", ") + "]  # the function's tensor arguments\n";
  s += "RETURNED = [" + joined(returned, ", ") + "]  # what it returns\n";
  s += "SIZE_ARGS = [" + joined(sizeArgs, ", ") + "]  # sizes passed as arguments\n\n";
  s += "# Each configuration: its sizes and every tensor's shape.\nCONFIGS = [\n";
  for (const auto &c : task.configs) {
    std::map<std::string, std::int64_t> values = c.values;
    values.insert(l.tunables.begin(), l.tunables.end());
    std::string sizes, shapes;
    for (const auto &n : task.sizeNames) sizes += (sizes.empty() ? "" : ", ") + cString(n) + ": " + std::to_string(values[n]);
    for (const auto &t : task.tensors) {
      std::vector<std::string> dims;
      for (const auto &d : t.shape) {
        std::int64_t v = 0;
        try {
          v = d.evaluate(values);
        } catch (const std::exception &) {
        }
        dims.push_back(std::to_string(v));
      }
      shapes += (shapes.empty() ? "" : ", ") + cString(t.name) + ": [" + joined(dims, ", ") + "]";
    }
    s += "    {\"name\": " + cString(c.name) + ", \"sizes\": {" + sizes + "}, \"shapes\": {" + shapes + "}},\n";
  }
  s += "]\nSEEDS = [";
  {
    std::vector<std::string> seeds;
    for (const auto seed : task.seeds) seeds.push_back(std::to_string(seed));
    s += joined(seeds.empty() ? std::vector<std::string>{"1"} : seeds, ", ");
  }
  s += "]\n\n";
  s += R"py(
def load_extension():
    """The extension built by setup.py when it is installed, else built now by torch.utils.cpp_extension.load."""
    sys.path.insert(0, ROOT)  # setup.py build_ext --inplace leaves the module there
    try:
        return __import__(NAME + "_ext")
    except ImportError:
        from torch.utils.cpp_extension import load
        import setup_flags  # the flags setup.py uses (and the architecture)
        return load(name=NAME + "_ext",
                    sources=[os.path.join(ROOT, NAME + "_binding.cpp"), os.path.join(ROOT, "src", NAME + ".cu"),
                             os.path.join(ROOT, "test", "reference_launch.cu")],
                    extra_include_paths=[os.path.join(ROOT, "include")],
                    extra_cflags=["-O3", "-std=c++17"], extra_cuda_cflags=setup_flags.NVCC_FLAGS, verbose=False)


def generate(dtype, shape, generator, seed, offset):
    """An input tensor on the GPU from its generator (PyTorch's random numbers, not the workbench's bytes)."""
    kind, a, b, scale, shift, matrix, diagonal = generator
    g = torch.Generator(device="cuda")
    g.manual_seed(seed * 1000003 + offset)
    n = 1
    for d in shape:
        n *= d
    if kind == "uniform":
        x = torch.rand(n, generator=g, device="cuda", dtype=torch.float64) * (b - a) + a
    elif kind == "normal":
        x = torch.randn(n, generator=g, device="cuda", dtype=torch.float64) * b + a
    elif kind == "randint":
        x = torch.randint(int(-(-a // 1)), int(-(-b // 1)), (n,), generator=g, device="cuda", dtype=torch.int64)
    elif kind == "arange":
        x = torch.arange(n, device="cuda", dtype=torch.float64) * b + a
    else:
        x = torch.full((n,), a, device="cuda", dtype=torch.float64)
    if scale != 1.0 or shift != 0.0:
        x = x.double() * scale + shift
    if not dtype.is_floating_point and dtype != torch.bool:
        x = x.floor()
    x = x.to(dtype).reshape(shape)
    if matrix == "symmetric":  # the upper triangle mirrored below the diagonal
        below = torch.ones(shape[-2], shape[-1], dtype=torch.bool, device="cuda").tril(-1)
        x = torch.where(below, x.transpose(-2, -1), x)
    elif matrix == "upper":
        x = x.triu(diagonal)
    elif matrix == "lower":
        x = x.tril(diagonal)
    return x


def compare(got, want, tolerance):
    """(passed, mismatches, max abs error) as the workbench compares: |got - want| <= atol + rtol * |want|."""
    exact, rtol, atol = tolerance
    if got.shape != want.shape:
        return False, got.numel(), float("inf")
    g, w = got.double(), want.double()
    if exact or not got.dtype.is_floating_point:
        bad = g != w
        err = (g - w).abs().max().item() if g.numel() else 0.0
    else:
        finite = torch.isfinite(g) & torch.isfinite(w)
        diff = torch.where(finite, (g - w).abs(), torch.zeros_like(g))
        bad = torch.isnan(g) | torch.isnan(w) | (~finite & (g != w)) | (diff > atol + rtol * w.abs())
        err = diff.max().item() if g.numel() else 0.0
    mismatches = int(bad.sum().item())
    return mismatches == 0, mismatches, err


def median_ms(fn, samples, flush):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for i in range(samples):
        flush.fill_(i & 0xFF)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def as_list(result):
    return list(result) if isinstance(result, (list, tuple)) else [result]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    # FP32 as FP32: PyTorch's TF32 defaults would make its operation neither as exact nor as slow as FP32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ext = load_extension()
    kernel, reference = getattr(ext, NAME), ext.reference
    torch_op = compile(TORCH_EQUIVALENT, "<[export] torch>", "eval") if TORCH_EQUIVALENT else None
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    print(f"{NAME}: the exported kernel as a PyTorch operation on {props.name} (torch {torch.__version__})")
    l2 = getattr(props, "L2_cache_size", 64 << 20) or (64 << 20)
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    failed, results = 0, []
    specs = {t[0]: t for t in TENSORS}
    for config in CONFIGS:
        if args.config and config["name"] != args.config:
            continue
        config_failed = 0
        for index, seed in enumerate(SEEDS):
            tensors = {}
            for offset, (name, dtype, role, generators, _) in enumerate(TENSORS):
                if generators:
                    generator = generators[(seed - 1) % len(generators)] if seed else generators[0]
                    tensors[name] = generate(dtype, config["shapes"][name], generator, seed, offset)
            sizes = [config["sizes"][n] for n in SIZE_ARGS]
            # inout tensors passed in are written in place: each call gets its own copy.
            call = lambda fn: as_list(fn(*[tensors[n].clone() for n in PASSED], *sizes))
            got, want = call(kernel), call(reference)
            outputs = dict(zip(RETURNED, got))
            for name, g, w in zip(RETURNED, got, want):
                ok, bad, err = compare(g, w, specs[name][4])
                line = f"  {config['name']:<10} seed {seed}  {name}: "
                if ok:
                    print(line + f"ok ({g.numel()} elements, max abs err {err:.3g})")
                else:
                    failed += 1
                    config_failed += 1
                    print(line + f"MISMATCH: {bad} of {g.numel()} elements differ from the task's reference (max abs err {err:.3g})")
            torch_ms = None
            if torch_op:
                scope = {"torch": torch, "tensors": tensors, **tensors, **config["sizes"]}
                expected = as_list(eval(torch_op, scope))
                for name, e in zip(RETURNED, expected):
                    ok, bad, err = compare(outputs[name], e.reshape(outputs[name].shape).to(outputs[name].dtype), specs[name][4])
                    print(f"  {config['name']:<10} seed {seed}  {name} against {TORCH_EQUIVALENT}: "
                          + ("within the task's tolerance" if ok else f"{bad} elements beyond the task's tolerance")
                          + f" (max abs err {err:.3g}; the verdict is the reference's)")
            if index == 0 and not config_failed:
                fixed = [tensors[n] for n in PASSED]
                kernel_ms = median_ms(lambda: kernel(*fixed, *sizes), args.samples, flush)
                reference_ms = median_ms(lambda: reference(*fixed, *sizes), args.samples, flush)
                row = {"config": config["name"], "kernel_ms": kernel_ms, "reference_ms": reference_ms}
                text = f"  {config['name']:<10} kernel {kernel_ms:.4f} ms, reference {reference_ms:.4f} ms ({reference_ms / kernel_ms:.2f}x)"
                if torch_op:
                    scope = {"torch": torch, "tensors": tensors, **tensors, **config["sizes"]}
                    torch_ms = median_ms(lambda: eval(torch_op, scope), args.samples, flush)
                    row["torch_ms"] = torch_ms
                    row["speedup_over_torch"] = torch_ms / kernel_ms
                    text += f", PyTorch {torch_ms:.4f} ms ({torch_ms / kernel_ms:.2f}x)"
                print(text + f"  (median of {args.samples}, L2 flushed)")
                results.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"task": NAME, "gpu": props.name, "torch": torch.__version__, "torch_equivalent": TORCH_EQUIVALENT,
                       "failed": failed, "results": results}, f, indent=2)
    print("FAILED" if failed else "passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
)py";
  return s;
}

std::string setupFlagsText(const Layout &l) {
  std::string s = "import os\n\n"
                  "# The nvcc flags setup.py and the test's load() share: PyTorch turns off half and bfloat16 operators\n"
                  "# and conversions for extensions; the kernel may use them.\n"
                  "NVCC_FLAGS = [\"-O3\", \"-std=c++17\", \"-U__CUDA_NO_HALF_OPERATORS__\", \"-U__CUDA_NO_HALF_CONVERSIONS__\",\n"
                  "              \"-U__CUDA_NO_HALF2_OPERATORS__\", \"-U__CUDA_NO_BFLOAT16_CONVERSIONS__\", \"-U__CUDA_NO_BFLOAT16_OPERATORS__\"]\n";
  if (!l.torchArch.empty())
    s += "# The architecture it was measured on (TORCH_CUDA_ARCH_LIST set before building names another).\n"
         "os.environ.setdefault(\"TORCH_CUDA_ARCH_LIST\", \"" + l.torchArch + "\")\n";
  return s;
}

std::string torchReadmeText(const ExportInput &in, const Layout &l, const Binding &b) {
  const Task &task = in.task;
  std::string s = "# " + task.name + " as a PyTorch operation\n\n" + task.description + ".\n\n" + provenanceComment(in) + "\n";
  if (!l.tunables.empty()) s += "Tunables baked in: " + tunablesText(l.tunables) + ".\n\n";
  std::vector<std::string> args;
  for (const Tensor *t : b.passed) args.push_back(t->name);
  for (const auto &n : b.sizeArgs) args.push_back(n);
  std::vector<std::string> rets;
  for (const Tensor *t : b.returned) rets.push_back(t->name);
  s += "```python\nimport torch\nimport " + l.id + "_ext\n\n" + joined(rets, ", ") + " = " + l.id + "_ext." + l.id + "(" + joined(args, ", ") +
       ")\n```\n\n";
  for (const Tensor *t : b.passed) s += "- argument `" + describe(*t) + "`\n";
  for (const auto &n : b.sizeArgs) s += "- argument `" + n + "`: an int (no argument's shape gives it)\n";
  for (const Tensor *t : b.returned) s += "- returns `" + describe(*t) + "`\n";
  s += "\nTensors must be CUDA tensors of these dtypes and ranks, contiguous, on one GPU; the kernel runs on the\n"
       "current stream. Sizes are read from the shapes and every dimension is checked.\n\n";
  s += "## Build and test\n\n```sh\npip install --no-build-isolation .   # against the PyTorch installed; or: python setup.py build_ext --inplace\npython test/test_" + l.id +
       ".py        # builds with torch.utils.cpp_extension.load when not installed\n```\n\n";
  s += "The test checks the kernel against the task's reference (`reference()`, built into the extension) on\n"
       "random inputs with the task's tolerances";
  if (!task.torchEquivalent.empty()) s += ", compares it with `" + task.torchEquivalent + "`,";
  s += " and times it (CUDA events, L2 flushed, median)" +
       std::string(task.torchEquivalent.empty() ? "" : " beside that PyTorch operation") + ".\n";
  return s;
}

}  // namespace

ExportedPackage exportTorchPackage(const ExportInput &given, const fs::path &dir, bool overwrite) {
  ExportInput in = prepared(given);
  const Layout l = layoutOf(in);
  in.tunables = l.tunables;
  const Binding b = bindingOf(in.task);
  if (b.returned.empty())
    throw ExportError("task " + in.task.name + " has no output the extension could return (every written tensor is also read)");
  const std::string referenceText = readTaskReference(in.task);
  PackageWriter writer(dir, overwrite, in.notes);
  ExportedPackage &out = writer.package;
  auto put = [&](const std::string &name, const std::string &text) { writer.put(name, text); };
  put("README.md", torchReadmeText(in, l, b));
  put("setup.py", setupText(in, l));
  put("setup_flags.py", setupFlagsText(l));
  put(l.id + "_binding.cpp", bindingText(in, l, b));
  put("include/" + l.id + ".h", headerText(in, l));
  put("src/" + l.id + "_kernel.cu", kernelText(in, l));
  put("src/" + l.id + ".cu", launcherText(in, l));
  put("test/reference.cu", referenceText);
  put("test/reference_launch.cu", referenceLaunchText(in, l));
  put("test/test_" + l.id + ".py", testPyText(in, l, b));
  put("provenance.json", provenanceJson(in));
  if (!b.sizeArgs.empty()) out.notes.push_back("sizes no tensor's shape gives are arguments: " + joined(b.sizeArgs, ", "));
  if (in.task.torchEquivalent.empty())
    out.notes.push_back("the task names no PyTorch operation ([export] torch): the test times the kernel beside the reference only");
  return out;
}

}  // namespace kwb::exporting
