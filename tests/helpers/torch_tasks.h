#pragma once
// For the suites that run a task's PyTorch reference with module state (issue 46): a Python with
// PyTorch, a task folder written from text, a generated input as values, and the Linear task
// both the CPU tests (tests/unit/tst_torch_reference.cpp) and the GPU tests
// (tests/gpu/tst_gpu_torch.cpp) check: y = x @ fc.weight^T + fc.bias, the weight and bias given
// to the module as its state and to the candidate as arguments.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/eval/input_generator.h"
#include "core/eval/torch_reference.h"
#include "core/process/child_process.h"
#include "core/task/task.h"

namespace kwb::test {

// An interpreter that imports torch: $KWB_PYTHON, else the workbench's usual venv
// (~/.local/share/kernel-workbench/torch-venv), else python3 on PATH; empty when none does, with
// `looked` saying where it looked.
inline std::string torchPython(std::string &looked) {
  std::vector<std::string> candidates;
  if (const char *env = std::getenv("KWB_PYTHON"); env && *env) candidates.push_back(env);
  if (const char *home = std::getenv("HOME"); home && *home)
    candidates.push_back(std::string(home) + "/.local/share/kernel-workbench/torch-venv/bin/python");
  candidates.push_back("python3");
  for (const auto &c : candidates) {
    std::string problem;
    kwb::TorchSettings s;
    s.python = c;
    const auto path = kwb::findPython(s, problem);
    if (!path) continue;
    kwb::ChildProcessRequest probe;
    probe.argv = {path->string(), "-c", "import torch"};
    if (kwb::runChildProcess(probe).succeeded()) return path->string();
  }
  looked = "no Python with PyTorch ($KWB_PYTHON, ~/.local/share/kernel-workbench/torch-venv/bin/python, python3 on "
           "PATH); set KWB_PYTHON to one";
  return {};
}

// A task folder `dir` (made anew) with task.toml and reference.py, and any more files.
inline std::filesystem::path writeTorchTask(const std::filesystem::path &dir, const std::string &manifest,
                                            const std::string &module,
                                            const std::vector<std::pair<std::string, std::string>> &more = {}) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "task.toml") << manifest;
  std::ofstream(dir / "reference.py") << module;
  for (const auto &[name, text] : more) std::ofstream(dir / name) << text;
  return dir;
}

// A f32 tensor's input for `seed` in `config`, as doubles (its generator, matrix structure too).
inline std::vector<double> inputValues(const kwb::Task &task, const std::string &tensor, const kwb::SizeConfig &config,
                                       std::uint64_t seed) {
  const kwb::Tensor &t = *task.tensor(tensor);
  std::vector<std::int64_t> shape;
  for (const auto &e : t.shape) shape.push_back(e.evaluate(config.values));
  const auto bytes = kwb::generateInput(t, shape, seed);
  std::vector<double> out(bytes.size() / sizeof(float));
  for (std::size_t i = 0; i < out.size(); ++i) {
    float f;
    std::memcpy(&f, bytes.data() + i * sizeof f, sizeof f);
    out[i] = f;
  }
  return out;
}

// A file of f32 values (an output the reference wrote).
inline std::vector<double> f32File(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<double> out;
  for (float f; in.read(reinterpret_cast<char *>(&f), sizeof f);) out.push_back(f);
  return out;
}

// The first element of `got` more than rtol 1e-5 + atol 1e-6 from `want`, in words; empty when
// none.
inline std::string valuesMismatch(const std::vector<double> &got, const std::vector<double> &want) {
  if (got.size() != want.size()) return "sizes " + std::to_string(got.size()) + " and " + std::to_string(want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - want[i]) > 1e-6 + 1e-5 * std::abs(want[i]))
      return "element " + std::to_string(i) + ": " + std::to_string(got[i]) + " against " + std::to_string(want[i]);
  return {};
}

// A manifest's [tensors.NAME] table of an f32 input: its shape (TOML array text), module state
// key (none when empty) and generator (inline table).
inline std::string inputTable(const std::string &name, const std::string &shape, const std::string &state,
                              const std::string &init) {
  return "[tensors." + name + "]\ndtype = \"f32\"\nshape = " + shape + "\nrole = \"in\"\n" +
         (state.empty() ? std::string() : "state = \"" + state + "\"\n") + "init = " + init + "\n\n";
}

// y = x @ w^T + b over [batch, nIn] x [nOut, nIn] in double.
inline std::vector<double> linearOf(const std::vector<double> &x, const std::vector<double> &w,
                                    const std::vector<double> &b, std::int64_t batch, std::int64_t nIn,
                                    std::int64_t nOut) {
  std::vector<double> y(static_cast<std::size_t>(batch * nOut));
  for (std::int64_t r = 0; r < batch; ++r)
    for (std::int64_t c = 0; c < nOut; ++c) {
      double acc = b[c];
      for (std::int64_t k = 0; k < nIn; ++k) acc += x[r * nIn + k] * w[c * nIn + k];
      y[r * nOut + c] = acc;
    }
  return y;
}

// The Linear task's module: nn.Linear(n_in, n_out) as self.fc; forward(x) -> fc(x).
inline const char *const kLinearModule =
    "import torch\n"
    "import torch.nn as nn\n"
    "\n"
    "class Model(nn.Module):\n"
    "    def __init__(self, n_in, n_out):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(n_in, n_out)\n"
    "\n"
    "    def forward(self, x):\n"
    "        return self.fc(x)\n";

// A candidate for it: one thread per output element, f32 accumulation.
inline const char *const kLinearKernel =
    "extern \"C\" __global__ void linear(const float *__restrict__ x, const float *__restrict__ w,\n"
    "                                    const float *__restrict__ b, float *__restrict__ y, long long batch,\n"
    "                                    long long n_in, long long n_out) {\n"
    "  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i >= batch * n_out) return;\n"
    "  const long long r = i / n_out, c = i % n_out;\n"
    "  float acc = 0.0f;\n"
    "  for (long long k = 0; k < n_in; ++k) acc = fmaf(x[r * n_in + k], w[c * n_in + k], acc);\n"
    "  y[i] = acc + b[c];\n"
    "}\n";

inline const char *const kLinearArgs = "\"x\", \"fc_weight\", \"fc_bias\", \"y\", \"batch\", \"n_in\", \"n_out\"";

// The Linear task's manifest: sizes batch, n_in, n_out (one configuration "small": 8, 64, 4),
// Model(n_in, n_out) per configuration, fc_weight and fc_bias as fc's state. `weightInit` is
// fc_weight's generator (inline table); `moreTensors` more [tensors.X] tables; `forward` the
// [reference] forward line, if any; `args` the candidate's launch arguments.
inline std::string linearManifest(const std::string &weightInit, const std::string &moreTensors = {},
                                  const std::string &forward = {}, const std::string &args = kLinearArgs) {
  return "name = \"linear\"\n"
         "description = \"y = x @ fc.weight^T + fc.bias, the weights as module state\"\n"
         "sizes = [\"batch\", \"n_in\", \"n_out\"]\n"
         "seeds = [1, 2]\n"
         "\n"
         "[[configs]]\n"
         "name = \"small\"\n"
         "batch = 8\n"
         "n_in = 64\n"
         "n_out = 4\n"
         "\n"
         "[tensors.x]\n"
         "dtype = \"f32\"\n"
         "shape = [\"batch\", \"n_in\"]\n"
         "role = \"in\"\n"
         "init = { kind = \"uniform\", low = 0.5, high = 1.0 }\n"
         "\n"
         "[tensors.fc_weight]\n"
         "dtype = \"f32\"\n"
         "shape = [\"n_out\", \"n_in\"]\n"
         "role = \"in\"\n"
         "state = \"fc.weight\"\n"
         "init = " + weightInit + "\n"
         "\n"
         "[tensors.fc_bias]\n"
         "dtype = \"f32\"\n"
         "shape = [\"n_out\"]\n"
         "role = \"in\"\n"
         "state = \"fc.bias\"\n"
         "init = { kind = \"uniform\", low = -1.0, high = 1.0 }\n"
         "\n" + moreTensors +
         "[tensors.y]\n"
         "dtype = \"f32\"\n"
         "shape = [\"batch\", \"n_out\"]\n"
         "role = \"out\"\n"
         "tolerance = { rtol = 1e-4, atol = 1e-5 }\n"
         "\n"
         "[reference]\n"
         "python = \"reference.py\"\n"
         "init = [\"n_in\", \"n_out\"]\n" + forward +
         "\n"
         "[launch]\n"
         "kernel = \"linear\"\n"
         "grid = [\"(batch * n_out + 127) / 128\"]\n"
         "block = [128]\n"
         "args = [" + args + "]\n"
         "\n"
         "[cost]\n"
         "flops = \"2 * batch * n_in * n_out\"\n"
         "bytes = \"4 * (batch * n_in + n_in * n_out + n_out + batch * n_out)\"\n"
         "\n"
         "[editor]\n"
         "starter = \"linear.cu\"\n";
}

}  // namespace kwb::test
