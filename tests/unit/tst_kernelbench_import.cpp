// `kwb import kernelbench` (core/import/kernelbench_import.h): the real reader
// (resources/python/kwb_kernelbench.py, run with --no-torch) on each fixture of
// tests/fixtures/kernelbench/, the outputs PyTorch would give put into its JSON by hand, the task
// files made from it, written and loaded with loadTask; the problems a task cannot express refused
// with their messages; and importKernelBench's folder handling, through a stand-in interpreter.
//
// The outputs below are the ones the reader reported with PyTorch 2.11 on the H200 (forward on the
// meta device): relu [16, 16384] f32; sum_dim [16, 1, 256] f32; matmul [1024, 2048] f32; rmsnorm the
// input's shape, [16, 64, 256, 256] f32.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "core/eval/torch_reference.h"
#include "core/import/kernelbench_import.h"
#include "core/process/child_process.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"
#include "helpers/python3.h"
#include "helpers/test_files.h"
#include "helpers/torch_tasks.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path fixture(const std::string &name) {
  return fs::path(KWB_SOURCE_DIR) / "tests" / "fixtures" / "kernelbench" / name;
}

fs::path readerScript() { return fs::path(KWB_SOURCE_DIR) / "resources" / "python" / "kwb_kernelbench.py"; }

using kwb::test::python3;

struct ReaderRun {
  int exitCode = -1;
  json result;
};

// The reader's JSON for `problem`, without PyTorch.
ReaderRun runReader(const fs::path &problem) {
  kwb::ChildProcessRequest child;
  child.argv = {python3(), readerScript().string(), problem.string(), "--no-torch"};
  std::string line;
  child.onLine = [&](const std::string &l) {
    if (l.rfind("{\"ok\"", 0) == 0) line = l;
  };
  const auto out = kwb::runChildProcess(child);
  return {out.exitCode, json::parse(line, nullptr, false)};
}

// The reader's JSON with `outputs` as PyTorch gives them.
json withOutputs(json reader, const json &outputs) {
  reader["outputs"] = outputs;
  reader["outputs_problem"] = nullptr;
  return reader;
}

void writeText(const fs::path &path, const std::string &text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// The task files written to `dir` (the problem copied as reference.py) and loaded; nullopt with
// `error` when loadTask refuses them.
std::optional<kwb::Task> loadWritten(const kwb::ImportedTask &t, const fs::path &dir, const fs::path &problem,
                                     std::string &error) {
  fs::create_directories(dir);
  writeText(dir / "task.toml", t.manifest);
  writeText(dir / "reference.py", kwb::test::readFile(problem));
  writeText(dir / t.starterFile, t.starter);
  try {
    return kwb::loadTask(dir);
  } catch (const std::exception &e) {
    error = e.what() + std::string("\n") + t.manifest;
    return std::nullopt;
  }
}

std::vector<std::string> shapeTexts(const kwb::Tensor &t) {
  std::vector<std::string> out;
  for (const auto &e : t.shape) out.push_back(e.text());
  return out;
}

bool anyContains(const std::vector<std::string> &lines, const std::string &part) {
  for (const auto &l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

// A stand-in for a Python with PyTorch, in `dir`: the real reader without torch, its outputs
// filled as PyTorch fills them for relu.py.
kwb::TorchSettings pythonWithOutputs(const fs::path &dir) {
  const fs::path fake = dir / "python-with-outputs";
  writeText(fake, "#!/bin/sh\nexec " + python3() +
                      " -c 'import json, subprocess, sys\n"
                      "r = subprocess.run([sys.executable, sys.argv[1], \"--no-torch\"] + sys.argv[2:], "
                      "capture_output=True, text=True)\n"
                      "j = json.loads(r.stdout)\n"
                      "if j.get(\"ok\"):\n"
                      "    j[\"outputs\"] = [{\"dtype\": \"f32\", \"shape\": [16, 16384]}]\n"
                      "    j[\"outputs_problem\"] = None\n"
                      "print(json.dumps(j))\n"
                      "sys.exit(r.returncode)' \"$@\"\n");
  ::chmod(fake.c_str(), 0755);
  kwb::TorchSettings python;
  python.python = fake.string();
  return python;
}

// The reader (without PyTorch) on `problem`, in a process of its own whose only child it is: its
// JSON, exit status, peak memory and CPU time; under a 4 GiB address-space limit, so that a reader
// without bounds fails the test instead of taking the machine.
struct MeasuredReaderRun {
  int exitCode = -1;
  json result;
  double peakMiB = 0, cpuSeconds = 0;
};

MeasuredReaderRun measuredReaderRun(const fs::path &problem) {
  kwb::ChildProcessRequest child;
  child.argv = {python3(), "-c",
                "import json, resource, subprocess, sys\n"
                "def guard():\n"
                "    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))\n"
                "r = subprocess.run(sys.argv[1:], capture_output=True, text=True, preexec_fn=guard)\n"
                "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
                "print(json.dumps({'status': r.returncode, 'out': r.stdout, 'peak_kib': u.ru_maxrss,\n"
                "                  'cpu': u.ru_utime + u.ru_stime}))\n",
                python3(), readerScript().string(), "--no-torch", problem.string()};
  std::string line;
  child.onLine = [&](const std::string &l) {
    if (l.rfind("{\"status\"", 0) == 0) line = l;
  };
  kwb::runChildProcess(child);
  const json j = json::parse(line, nullptr, false);
  MeasuredReaderRun r;
  if (!j.is_object()) return r;
  r.exitCode = j.value("status", -1);
  std::string out = j.value("out", std::string());
  r.result = json::parse(out.substr(0, out.find('\n')), nullptr, false);
  r.peakMiB = j.value("peak_kib", 0.0) / 1024;
  r.cpuSeconds = j.value("cpu", 0.0);
  return r;
}

// A problem with a scalar argument of forward.
const char *const kScalarProblem = R"(import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales a matrix by a scalar."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        return A * s


M = 1024
N = 512


def get_inputs():
    A = torch.randn(M, N)
    s = 3.14
    return [A, s]


def get_init_inputs():
    return []
)";

// f16 and i64 tensors, two outputs, a size named like a [[configs]] key, float and bool
// constructor arguments, and inputs too small for the large configuration to reach 1 GiB.
const char *const kMixedProblem = R"(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float, flag: bool):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, idx):
        return x * self.alpha, idx


name = 8
n = 100


def get_inputs():
    return [torch.randn(name, n, dtype=torch.float16), torch.randint(0, 10, (n,))]


def get_init_inputs():
    return [0.5, True]
)";

}  // namespace

class TestKernelBenchImport : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void relu();
  void sumDim();
  void matmul();
  void squareMatmulFollowsTheRightSize();
  void rmsnorm();
  void mixedDtypesAndOutputs();
  void readerCannotExpress();
  void weightsBecomeInputs();
  void tupleInitAndDerivedSizes();
  void randomOutputRefused();
  void forwardDrawsBecomeInputs();
  void illConditionedOutputGetsALooserTolerance();
  void structuredInputs();
  void layerNormImports();
  void scalarInputIsAParam();
  void unsupportedInitRefused();
  void unsupportedOutputDtypeRefused();
  void outputsNeedPyTorch();
  void importWritesTheFolder();
  void importFailures();
  void constantsPastTheLimitsAreRefused_data();
  void constantsPastTheLimitsAreRefused();
  void staticReadMemoryLimit();
  void problemNamedLikeAnOption();
  void tooLargeProblemMessage();
  void forceNeverWritesThroughLinks();

 private:
  QTemporaryDir tmp_;
  fs::path dir_;
};

void TestKernelBenchImport::initTestCase() {
  if (python3().empty()) QSKIP("no python3 on PATH: the KernelBench reader is a Python script");
  QVERIFY(tmp_.isValid());
  dir_ = tmp_.path().toStdString();
}

void TestKernelBenchImport::relu() {
  const auto reader = runReader(fixture("relu.py"));
  QCOMPARE(reader.exitCode, 0);
  std::string error;
  const auto t = kwb::taskFromKernelBench(withOutputs(reader.result, {{{"dtype", "f32"}, {"shape", {16, 16384}}}}), error);
  QVERIFY2(t, error.c_str());
  QCOMPARE(t->name, std::string("relu"));
  QCOMPARE(t->starterFile, std::string("relu.cu"));
  const auto task = loadWritten(*t, dir_ / "relu", fixture("relu.py"), error);
  QVERIFY2(task, error.c_str());

  QCOMPARE(task->name, std::string("relu"));
  QCOMPARE(task->description, std::string("Applies ReLU elementwise to a batch of vectors."));
  QCOMPARE(task->sizeNames, (std::vector<std::string>{"batch_size", "dim"}));
  QCOMPARE(task->seeds, (std::vector<std::uint64_t>{1, 2, 3}));
  QCOMPARE(task->configs.size(), std::size_t{2});
  QCOMPARE(task->configs[0].name, std::string("kernelbench"));
  QCOMPARE(task->configs[0].values.at("batch_size"), std::int64_t{16});
  QCOMPARE(task->configs[0].values.at("dim"), std::int64_t{16384});
  // 2 MiB in all: the batch x512 brings x and out to 1 GiB.
  QCOMPARE(task->configs[1].name, std::string("large"));
  QCOMPARE(task->configs[1].values.at("batch_size"), std::int64_t{8192});
  QCOMPARE(task->configs[1].values.at("dim"), std::int64_t{16384});

  QCOMPARE(task->tensors.size(), std::size_t{2});
  const kwb::Tensor &x = task->tensors[0];
  QCOMPARE(x.name, std::string("x"));
  QCOMPARE(x.dtype, kwb::DType::F32);
  QCOMPARE(x.role, kwb::TensorRole::In);
  QCOMPARE(shapeTexts(x), (std::vector<std::string>{"batch_size", "dim"}));
  QVERIFY(x.init);
  QCOMPARE(x.init->kind, kwb::Generator::Kind::Normal);
  QCOMPARE(x.init->a, 0.0);
  QCOMPARE(x.init->b, 1.0);
  const kwb::Tensor &out = task->tensors[1];
  QCOMPARE(out.name, std::string("out"));
  QCOMPARE(out.dtype, kwb::DType::F32);
  QCOMPARE(out.role, kwb::TensorRole::Out);
  QCOMPARE(shapeTexts(out), (std::vector<std::string>{"batch_size", "dim"}));
  QVERIFY(out.tolerance && !out.tolerance->exact);
  QCOMPARE(out.tolerance->rtol, 1e-4);
  QCOMPARE(out.tolerance->atol, 1e-4);

  QVERIFY(task->params.empty());
  QVERIFY(!task->reference.hasCuda());
  QCOMPARE(task->reference.python, fs::path("reference.py"));
  QVERIFY(task->reference.init);  // get_init_inputs() is defined: Model() with no arguments
  QVERIFY(task->reference.init->empty());
  QVERIFY(task->launch);
  QCOMPARE(task->launch->kernel, std::string("relu_kernel"));
  QCOMPARE(task->launch->grid.size(), std::size_t{1});
  QCOMPARE(task->launch->grid[0].text(), std::string("ceil_div(batch_size * dim, 256)"));
  QCOMPARE(task->launch->block[0].text(), std::string("256"));
  QCOMPARE(task->launch->args, (std::vector<std::string>{"x", "out", "batch_size", "dim"}));
  QCOMPARE(task->flops.text(), std::string("batch_size * dim"));
  QCOMPARE(task->bytes.text(), std::string("8 * batch_size * dim"));
  QCOMPARE(task->starterSource(), fs::path("relu.cu"));

  const std::string kernel =
      "extern \"C\" __global__ void relu_kernel(\n"
      "    const float *__restrict__ x,\n"
      "    float *__restrict__ out,\n"
      "    long long batch_size,\n"
      "    long long dim) {\n"
      "  // TODO: compute forward's result (see above)\n"
      "}\n";
  QVERIFY2(t->starter.size() > kernel.size() && t->starter.substr(t->starter.size() - kernel.size()) == kernel,
           t->starter.c_str());
  QVERIFY(t->starter.find("// forward returns: torch.relu(x)") != std::string::npos);
  QVERIFY(t->starter.find("#include") == std::string::npos);  // f32 only
  QVERIFY(anyContains(t->warnings, "scales the batch size (batch_size) only"));
  QVERIFY(anyContains(t->warnings, "flops is a placeholder"));
}

void TestKernelBenchImport::sumDim() {
  const auto reader = runReader(fixture("sum_dim.py"));
  QCOMPARE(reader.exitCode, 0);
  std::string error;
  const auto t =
      kwb::taskFromKernelBench(withOutputs(reader.result, {{{"dtype", "f32"}, {"shape", {16, 1, 256}}}}), error);
  QVERIFY2(t, error.c_str());
  const auto task = loadWritten(*t, dir_ / "sum_dim", fixture("sum_dim.py"), error);
  QVERIFY2(task, error.c_str());

  QCOMPARE(task->sizeNames, (std::vector<std::string>{"batch_size", "dim1", "dim2"}));
  QCOMPARE(task->configs.size(), std::size_t{2});
  QCOMPARE(task->configs[0].values.at("batch_size"), std::int64_t{16});
  QCOMPARE(task->configs[1].values.at("batch_size"), std::int64_t{4096});  // 4.02 MiB x256 >= 1 GiB
  QCOMPARE(task->configs[1].values.at("dim1"), std::int64_t{256});
  QCOMPARE(task->tensors.size(), std::size_t{2});
  QCOMPARE(shapeTexts(task->tensors[0]), (std::vector<std::string>{"batch_size", "dim1", "dim2"}));
  // 16 and 256 follow the input's sizes at their positions; 1 is no size's value.
  QCOMPARE(shapeTexts(task->tensors[1]), (std::vector<std::string>{"batch_size", "1", "dim2"}));
  QCOMPARE(task->params.size(), std::size_t{1});
  QCOMPARE(task->params[0].name, std::string("reduce_dim"));
  QCOMPARE(task->params[0].dtype, kwb::DType::I64);
  QCOMPARE(task->params[0].integer, std::int64_t{1});
  QVERIFY(task->reference.init);
  QCOMPARE(*task->reference.init, (std::vector<std::string>{"reduce_dim"}));
  QCOMPARE(task->launch->grid[0].text(), std::string("ceil_div(batch_size * dim2, 256)"));
  QCOMPARE(task->launch->args,
           (std::vector<std::string>{"x", "out", "batch_size", "dim1", "dim2", "reduce_dim"}));
  QCOMPARE(task->flops.text(), std::string("batch_size * dim2"));
  QCOMPARE(task->bytes.text(), std::string("4 * batch_size * dim1 * dim2 + 4 * batch_size * dim2"));
  QVERIFY(t->starter.find("    long long reduce_dim) {") != std::string::npos);
}

void TestKernelBenchImport::matmul() {
  const auto reader = runReader(fixture("matmul.py"));
  QCOMPARE(reader.exitCode, 0);
  std::string error;
  const auto t =
      kwb::taskFromKernelBench(withOutputs(reader.result, {{{"dtype", "f32"}, {"shape", {1024, 2048}}}}), error);
  QVERIFY2(t, error.c_str());
  const auto task = loadWritten(*t, dir_ / "matmul", fixture("matmul.py"), error);
  QVERIFY2(task, error.c_str());

  QCOMPARE(task->description, std::string("Multiplies an (M, K) matrix by a (K, N) matrix: C = A @ B."));
  QCOMPARE(task->sizeNames, (std::vector<std::string>{"M", "K", "N"}));
  // 56 MiB; A and C grow with M, B does not: M x64 is the first power of two past 1 GiB.
  QCOMPARE(task->configs[1].name, std::string("large"));
  QCOMPARE(task->configs[1].values.at("M"), std::int64_t{65536});
  QCOMPARE(task->configs[1].values.at("K"), std::int64_t{4096});
  QCOMPARE(task->configs[1].values.at("N"), std::int64_t{2048});
  QCOMPARE(task->tensors.size(), std::size_t{3});
  QCOMPARE(shapeTexts(task->tensors[0]), (std::vector<std::string>{"M", "K"}));
  QCOMPARE(shapeTexts(task->tensors[1]), (std::vector<std::string>{"K", "N"}));
  QCOMPARE(task->tensors[2].name, std::string("out"));
  QCOMPARE(shapeTexts(task->tensors[2]), (std::vector<std::string>{"M", "N"}));
  QCOMPARE(task->launch->args, (std::vector<std::string>{"A", "B", "out", "M", "K", "N"}));
  QCOMPARE(task->launch->grid[0].text(), std::string("ceil_div(M * N, 256)"));
  QCOMPARE(task->bytes.text(), std::string("4 * M * K + 4 * K * N + 4 * M * N"));
  QVERIFY(task->reference.init && task->reference.init->empty());
}

// M = N: by value alone the output's second dimension could be M; read again with M doubled (as
// importKernelBench does, through the reader's --set), it is N. A dimension that follows no size
// is refused.
void TestKernelBenchImport::squareMatmulFollowsTheRightSize() {
  const fs::path problem = dir_ / "square_matmul.py";
  writeText(problem, kwb::test::readFile(fixture("matmul.py")).replace(
                         kwb::test::readFile(fixture("matmul.py")).find("N = 2048"), 8, "N = 1024"));
  const auto reader = runReader(problem);
  QCOMPARE(reader.exitCode, 0);
  std::string error;
  const json outputs = {{{"dtype", "f32"}, {"shape", {1024, 1024}}}};
  const json doubledOutputs = {{{"dtype", "f32"}, {"shape", {2048, 1024}}}};
  const json doubled = withOutputs(reader.result, doubledOutputs);
  const auto t = kwb::taskFromKernelBench(withOutputs(reader.result, outputs), error, &doubled);
  QVERIFY2(t, error.c_str());
  const auto task = loadWritten(*t, dir_ / "square_matmul", problem, error);
  QVERIFY2(task, error.c_str());
  QCOMPARE(shapeTexts(task->tensors[2]), (std::vector<std::string>{"M", "N"}));
  QVERIFY(std::any_of(t->warnings.begin(), t->warnings.end(),
                      [](const std::string &w) { return w.find("were read again with M doubled") != std::string::npos; }));

  const json strange = withOutputs(reader.result, json{{{"dtype", "f32"}, {"shape", {2048, 1000}}}});
  QVERIFY(!kwb::taskFromKernelBench(withOutputs(reader.result, outputs), error, &strange));
  QVERIFY2(error.find("dimension 1 of forward's result is 1024 at the problem's sizes and 1000 with M doubled: it "
                      "follows no single size") != std::string::npos,
           error.c_str());
}

void TestKernelBenchImport::rmsnorm() {
  const auto reader = runReader(fixture("rmsnorm.py"));
  QCOMPARE(reader.exitCode, 0);
  std::string error;
  const auto t = kwb::taskFromKernelBench(
      withOutputs(reader.result, {{{"dtype", "f32"}, {"shape", {16, 64, 256, 256}}}}), error);
  QVERIFY2(t, error.c_str());
  const auto task = loadWritten(*t, dir_ / "rmsnorm", fixture("rmsnorm.py"), error);
  QVERIFY2(task, error.c_str());

  QCOMPARE(task->description, std::string("Simple model that performs RMS Normalization."));
  QCOMPARE(task->sizeNames, (std::vector<std::string>{"batch_size", "features", "dim1", "dim2"}));
  QCOMPARE(task->configs[0].values.at("batch_size"), std::int64_t{16});
  QCOMPARE(task->configs[1].values.at("batch_size"), std::int64_t{32});  // 512 MiB x2
  QCOMPARE(shapeTexts(task->tensors[1]), (std::vector<std::string>{"batch_size", "features", "dim1", "dim2"}));
  // get_init_inputs() returns `features`, a size's name: the parameter takes Model's own name.
  QCOMPARE(task->params.size(), std::size_t{1});
  QCOMPARE(task->params[0].name, std::string("num_features"));
  QCOMPARE(task->params[0].dtype, kwb::DType::I64);
  QCOMPARE(task->params[0].integer, std::int64_t{64});
  QCOMPARE(*task->reference.init, (std::vector<std::string>{"num_features"}));
  QCOMPARE(task->launch->args, (std::vector<std::string>{"x", "out", "batch_size", "features", "dim1", "dim2",
                                                         "num_features"}));
  QVERIFY(t->starter.find("// forward returns: x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)") !=
          std::string::npos);
}

void TestKernelBenchImport::mixedDtypesAndOutputs() {
  const fs::path problem = dir_ / "mixed.py";
  writeText(problem, kMixedProblem);
  const auto reader = runReader(problem);
  QCOMPARE(reader.exitCode, 0);
  std::string error;
  const json outputs = {{{"dtype", "f16"}, {"shape", {8, 100}}}, {{"dtype", "i64"}, {"shape", {100}}}};
  const auto t = kwb::taskFromKernelBench(withOutputs(reader.result, outputs), error);
  QVERIFY2(t, error.c_str());
  const auto task = loadWritten(*t, dir_ / "mixed", problem, error);
  QVERIFY2(task, error.c_str());

  QCOMPARE(task->description, std::string("KernelBench problem mixed"));  // no docstring
  QCOMPARE(task->sizeNames, (std::vector<std::string>{"name_", "n"}));  // `name` is a [[configs]] key
  QCOMPARE(task->configs[1].values.at("name_"), std::int64_t{8192});   // x1024, the most
  QVERIFY(anyContains(t->warnings, "the most it does"));
  QCOMPARE(task->tensors.size(), std::size_t{4});
  QCOMPARE(task->tensors[1].init->kind, kwb::Generator::Kind::RandInt);
  QCOMPARE(task->tensors[1].init->b, 10.0);
  QCOMPARE(task->tensors[2].name, std::string("out0"));
  QCOMPARE(task->tensors[2].dtype, kwb::DType::F16);
  QCOMPARE(task->tensors[2].tolerance->rtol, 1e-2);
  QCOMPARE(task->tensors[2].tolerance->atol, 1e-2);
  QCOMPARE(task->tensors[3].name, std::string("out1"));
  QCOMPARE(task->tensors[3].dtype, kwb::DType::I64);
  QVERIFY(task->tensors[3].tolerance->exact);
  QCOMPARE(shapeTexts(task->tensors[3]), (std::vector<std::string>{"n"}));
  QCOMPARE(task->params.size(), std::size_t{2});
  QCOMPARE(task->params[0].name, std::string("alpha"));  // Model's parameter names: the values are literals
  QCOMPARE(task->params[0].dtype, kwb::DType::F32);
  QCOMPARE(task->params[0].real, 0.5);
  QCOMPARE(task->params[1].name, std::string("flag"));
  QCOMPARE(task->params[1].dtype, kwb::DType::I64);
  QCOMPARE(task->params[1].integer, std::int64_t{1});
  QCOMPARE(*task->reference.init, (std::vector<std::string>{"alpha", "flag"}));
  QCOMPARE(task->bytes.text(), std::string("4 * name_ * n + 16 * n"));
  QVERIFY(t->starter.find("#include <cuda_fp16.h>\n") != std::string::npos);
  QVERIFY(t->starter.find("    const __half *__restrict__ x,\n    const long long *__restrict__ idx,\n"
                          "    __half *__restrict__ out0,\n    long long *__restrict__ out1,\n") != std::string::npos);
  QVERIFY(t->starter.find("    float alpha,\n    long long flag) {") != std::string::npos);
  QVERIFY(anyContains(t->warnings, "out0 is f16"));
  QVERIFY(anyContains(t->warnings, "atol 1e-2 is vacuous for outputs whose magnitude is below about 1e-2"));
}

void TestKernelBenchImport::readerCannotExpress() {
  // torch.tril of a generator is read (the lower triangle, issue 46); a softmax of one is not.
  const auto tril = runReader(fixture("tril_input.py"));
  QCOMPARE(tril.exitCode, 0);
  QCOMPARE(tril.result["inputs"][0]["generator"].value("matrix", std::string()), std::string("lower"));
  QCOMPARE(tril.result["inputs"][0]["generator"].value("diagonal", -1), 0);
  const fs::path problem = fixture("softmax_input.py");
  const auto reader = runReader(problem);
  QCOMPARE(reader.exitCode, 2);
  QCOMPARE(reader.result.value("ok", true), false);
  QCOMPARE(reader.result.value("kind", std::string()), std::string("cannot-express"));
  QCOMPARE(reader.result.value("line", 0), 20);
  const std::string expected = problem.string() +
                               ":20: get_inputs: .softmax(...) in torch.rand(batch_size, classes).softmax(dim=-1) is not a "
                               "method the workbench can follow (cuda, cpu, contiguous, detach, clone, requires_grad_, "
                               "float, half, bfloat16, double, long, int, bool, to); write the tensor's init by hand";
  QCOMPARE(reader.result.value("message", std::string()), expected);
  std::string error;
  QVERIFY(!kwb::taskFromKernelBench(reader.result, error));
  QCOMPARE(error, expected);

  kwb::TorchSettings python;
  python.python = python3();
  const auto outcome = kwb::importKernelBench(problem, dir_ / "imported", false, python);
  QVERIFY(!outcome.ok);
  QCOMPARE(outcome.message, expected);
  QVERIFY(!fs::exists(dir_ / "imported" / "softmax_input"));
}

// The real import with PyTorch (the reader's --configs, the starter writer): the task folder, loaded.
struct TorchImport {
  kwb::ImportOutcome outcome;
  std::optional<kwb::Task> task;
  std::string manifest, starter;
  std::vector<std::string> progress;  // what the import reported while it ran
};

TorchImport importWithTorch(const fs::path &problem, const fs::path &to, const std::string &torchPython) {
  kwb::TorchSettings python;
  python.python = torchPython;
  TorchImport r;
  r.outcome = kwb::importKernelBench(problem, to, true, python, [&](const std::string &step) { r.progress.push_back(step); });
  if (!r.outcome.ok) return r;
  r.task = kwb::loadTask(r.outcome.folder);
  r.manifest = kwb::test::readFile(r.outcome.folder / "task.toml");
  r.starter = kwb::test::readFile(r.outcome.folder / (r.outcome.name + ".cu"));
  return r;
}

#define NEED_TORCH(python)                          \
  std::string looked;                               \
  const std::string python = kwb::test::torchPython(looked); \
  if (python.empty()) QSKIP(looked.c_str())

std::vector<std::string> tensorNames(const kwb::Task &task) {
  std::vector<std::string> names;
  for (const auto &t : task.tensors) names.push_back(t.name);
  return names;
}

const kwb::Tensor &tensorNamed(const kwb::Task &task, const std::string &name) {
  const kwb::Tensor *t = task.tensor(name);
  if (!t) throw std::runtime_error("no tensor " + name);
  return *t;
}

// nn.Linear's weight and bias and a learned shift become inputs named after their state-dict
// keys, with PyTorch's default init (uniform(+-1/sqrt(fan_in))) and the measured one of the shift
// (randn * 0.02); the kernel takes them after x; Model gets in_features from the configuration.
void TestKernelBenchImport::weightsBecomeInputs() {
  NEED_TORCH(python);
  const auto r = importWithTorch(fixture("linear_shift.py"), dir_ / "weights", python);
  QVERIFY2(r.outcome.ok, r.outcome.message.c_str());
  const kwb::Task &task = *r.task;
  QCOMPARE(tensorNames(task), (std::vector<std::string>{"x", "shift", "fc_weight", "fc_bias", "out"}));
  QCOMPARE(tensorNamed(task, "x").state, std::string());
  QCOMPARE(tensorNamed(task, "fc_weight").state, std::string("fc.weight"));
  QCOMPARE(tensorNamed(task, "fc_bias").state, std::string("fc.bias"));
  QCOMPARE(tensorNamed(task, "shift").state, std::string("shift"));
  QCOMPARE(shapeTexts(tensorNamed(task, "fc_weight")), (std::vector<std::string>{"1024", "in_features"}));
  QCOMPARE(shapeTexts(tensorNamed(task, "out")), (std::vector<std::string>{"batch_size", "1024"}));
  const auto &w = *tensorNamed(task, "fc_weight").init;
  QCOMPARE(w.kind, kwb::Generator::Kind::Uniform);
  QCOMPARE(w.b, 0.0220971);  // 1/sqrt(2048), 6 digits
  QCOMPARE(w.a, -0.0220971);
  const auto &shift = *tensorNamed(task, "shift").init;
  QCOMPARE(shift.kind, kwb::Generator::Kind::Normal);
  QCOMPARE(shift.a, 0.0);
  QCOMPARE(shift.b, 0.02);
  QVERIFY2(r.manifest.find("state = \"shift\"   # measured: normal(0, 0.02)") != std::string::npos, r.manifest.c_str());
  // in_features is a size (an input's dimension): Model gets it from the configuration.
  QVERIFY(task.reference.init);
  QCOMPARE(*task.reference.init, (std::vector<std::string>{"in_features", "out_features"}));
  QCOMPARE(task.params.size(), std::size_t{1});
  QCOMPARE(task.params[0].name, std::string("out_features"));
  QVERIFY(!task.reference.forward);
  QCOMPARE(task.launch->args, (std::vector<std::string>{"x", "shift", "fc_weight", "fc_bias", "out", "batch_size",
                                                        "in_features", "out_features"}));
  // 104 MiB at the problem's sizes: the small configuration halves the batch once.
  std::vector<std::string> configs;
  for (const auto &c : task.configs) configs.push_back(c.name);
  QCOMPARE(configs, (std::vector<std::string>{"kernelbench", "small", "large"}));
  QCOMPARE(task.configs[1].values.at("batch_size"), std::int64_t{4096});
  QCOMPARE(task.configs[2].values.at("batch_size"), std::int64_t{131072});
  QCOMPARE(task.reference.moduleConstants, (std::vector<std::string>{"batch_size", "in_features"}));
  // The starter: a host launcher of naive steps, correct by construction.
  QVERIFY2(r.starter.find("kwb_launch") != std::string::npos, r.starter.c_str());
  QVERIFY(anyContains(r.outcome.warnings, "the starter is a host launcher of"));
  // Progress while it ran: each configuration's shapes, the weights' values, the starter.
  QVERIFY(anyContains(r.progress, "shapes with batch_size = 4096"));
  QVERIFY(anyContains(r.progress, "the module's weights and buffers: built on the CPU"));
  QVERIFY(anyContains(r.progress, "the starter: tracing forward"));
}

// A level-2 shape: a tuple argument (bias_shape) leaves Model's arguments to get_init_inputs(),
// run with the configuration's sizes (module_constants); the convolution's output height and
// width follow no input size alone, so they are sizes of their own with a value per configuration.
void TestKernelBenchImport::tupleInitAndDerivedSizes() {
  NEED_TORCH(python);
  const auto r = importWithTorch(fixture("conv_bias_norm.py"), dir_ / "conv", python);
  QVERIFY2(r.outcome.ok, r.outcome.message.c_str());
  const kwb::Task &task = *r.task;
  QVERIFY(!task.reference.init);
  QCOMPARE(task.reference.moduleConstants,
           (std::vector<std::string>{"batch_size", "in_channels", "height", "width"}));
  QCOMPARE(shapeTexts(tensorNamed(task, "out")), (std::vector<std::string>{"batch_size", "16", "out_d2", "out_d3"}));
  QCOMPARE(shapeTexts(tensorNamed(task, "bias")), (std::vector<std::string>{"16", "1", "1"}));
  QCOMPARE(tensorNamed(task, "norm_weight").init->kind, kwb::Generator::Kind::Constant);
  QCOMPARE(tensorNamed(task, "norm_weight").init->a, 1.0);
  const kwb::SizeConfig *own = task.config("kernelbench");
  const kwb::SizeConfig *small = task.config("small");
  QVERIFY(own && small);
  QCOMPARE(own->values.at("out_d2"), std::int64_t{510});
  QCOMPARE(small->values.at("out_d2"), small->values.at("height") - 2);
  QCOMPARE(small->values.at("out_d3"), small->values.at("width") - 2);
  QVERIFY(small->values.at("height") < 512);
  // kernel_size and groups are numbers: [params], passed to the kernel.
  QVERIFY(task.param("kernel_size") && task.param("groups"));
  QVERIFY(anyContains(r.outcome.warnings, "out_d2, out_d3 are dimensions of a tensor that follow no size"));
}

void TestKernelBenchImport::randomOutputRefused() {
  NEED_TORCH(python);
  const fs::path problem = fixture("dropout_softmax.py");
  const auto r = importWithTorch(problem, dir_ / "random", python);
  QVERIFY(!r.outcome.ok);
  QCOMPARE(r.outcome.message,
           problem.string() + ": Model: forward's output is random: drop (Dropout) drops values at random with p = 0.25 "
                              "in training mode; a task's reference must give the same output for the same inputs: set "
                              "the dropout probability to 0 (or call eval()) in the problem, or remove the random call");
  QVERIFY(!fs::exists(dir_ / "random" / "dropout_softmax"));
}

// The random tensors forward draws itself (h0 = torch.randn(...), torch.rand_like(...)) become
// inputs after the GRU's weights (draw = 1, 2), with the calls' recipes; the task's reference,
// run on the CPU, is handed them and gives the same outputs twice, bit for bit.
void TestKernelBenchImport::forwardDrawsBecomeInputs() {
  NEED_TORCH(python);
  const auto r = importWithTorch(fixture("recurrent_draws.py"), dir_ / "draws", python);
  QVERIFY2(r.outcome.ok, r.outcome.message.c_str());
  const kwb::Task &task = *r.task;
  QCOMPARE(tensorNames(task), (std::vector<std::string>{"x", "gru_weight_ih_l0", "gru_weight_hh_l0", "gru_bias_ih_l0", "gru_bias_hh_l0",
                                            "gru_weight_ih_l1", "gru_weight_hh_l1", "gru_bias_ih_l1", "gru_bias_hh_l1",
                                            "h0", "draw2", "out"}));
  const auto &h0 = tensorNamed(task, "h0");
  QCOMPARE(h0.draw, 1);
  QCOMPARE(h0.state, std::string());
  QCOMPARE(shapeTexts(h0).front(), std::string("2"));
  QCOMPARE(shapeTexts(h0)[1], std::string("batch_size"));
  QCOMPARE(h0.init->kind, kwb::Generator::Kind::Normal);
  QCOMPARE(h0.init->a, 0.0);
  QCOMPARE(h0.init->b, 1.0);
  const auto &noise = tensorNamed(task, "draw2");
  QCOMPARE(noise.draw, 2);
  QCOMPARE(noise.init->kind, kwb::Generator::Kind::Uniform);
  QCOMPARE(shapeTexts(noise).front(), std::string("batch_size"));
  QCOMPARE(kwb::forwardArguments(task), std::vector<std::string>{"x"});
  // The f32-vs-f64 conditioning run is not made with draws (an f64 run draws other values): the
  // output keeps 1e-4 rather than being called ill-conditioned.
  QCOMPARE(tensorNamed(task, "out").tolerance->rtol, 1e-4);
  QVERIFY(anyContains(r.progress, "conditioning not measured: forward draws random tensors"));
  QVERIFY2(r.manifest.find("draw = 1   # torch.randn(...) at line 17\n") != std::string::npos, r.manifest.c_str());
  QVERIFY2(r.manifest.find("draw = 2   # torch.rand_like(...) at line 20\n") != std::string::npos, r.manifest.c_str());
  QVERIFY(anyContains(r.progress, "forward draws h0 (torch.randn(...), line 17), draw2 (torch.rand_like(...), line 20)"));

  kwb::TorchSettings settings;
  settings.python = python;
  settings.cacheDir = dir_ / "draws-cache";
  settings.cpuForTests = true;
  kwb::TorchRunRequest request;
  const kwb::SizeConfig *small = nullptr;
  for (const auto &c : task.configs)
    if (!small || c.name == "small") small = &c;
  request.outputs.push_back({small, 1, false});
  request.repeatCheck = true;
  std::vector<std::string> lines;
  request.onProgress = [&lines](const std::string &line) { lines.push_back(line); };
  const auto run = kwb::runTorchReference(task, request, settings);
  QVERIFY2(run.ok, (run.describe() + "\n" + run.traceback).c_str());
  QVERIFY(anyContains(lines, "forward ran twice, the same outputs bit for bit"));
}

// (x + 1e4) - 1e4 in f32 loses x's low bits: PyTorch's own f32 output is about 5e-4 from the f64
// one, beyond rtol = atol = 1e-4, so the output's tolerance is 1e-3 with a warning saying why; a
// well-conditioned module (the Linear with a shift) keeps 1e-4.
void TestKernelBenchImport::illConditionedOutputGetsALooserTolerance() {
  NEED_TORCH(python);
  const auto r = importWithTorch(fixture("cancellation.py"), dir_ / "cancellation", python);
  QVERIFY2(r.outcome.ok, r.outcome.message.c_str());
  const auto &out = tensorNamed(*r.task, "out");
  QVERIFY(out.tolerance);
  QCOMPARE(out.tolerance->rtol, 1e-3);
  QCOMPARE(out.tolerance->atol, 1e-3);
  QVERIFY(anyContains(r.outcome.warnings, "PyTorch's own f32 out is up to 0.000"));
  QVERIFY(anyContains(r.outcome.warnings, "from the same forward in f64 at the kernelbench configuration"));
  QVERIFY(anyContains(r.outcome.warnings, "so an exact f32 kernel would fail rtol = atol = 1e-4; out's tolerance is 0.001"));
  QVERIFY2(r.manifest.find("tolerance = { rtol = 0.001, atol = 0.001 }   # PyTorch's own f32 out is up to ") !=
               std::string::npos,
           r.manifest.c_str());

  const auto linear = importWithTorch(fixture("linear_shift.py"), dir_ / "conditioned", python);
  QVERIFY2(linear.outcome.ok, linear.outcome.message.c_str());
  QCOMPARE(tensorNamed(*linear.task, "out").tolerance->rtol, 1e-4);
  QVERIFY(!anyContains(linear.outcome.warnings, "ill-conditioned"));
}

// X + X.T, torch.triu(..., diagonal=1), a size written as A.shape, randint(0, 2).float() * 2 - 1
// and a scalar argument of forward.
void TestKernelBenchImport::structuredInputs() {
  NEED_TORCH(python);
  const auto r = importWithTorch(fixture("structured_inputs.py"), dir_ / "structured", python);
  QVERIFY2(r.outcome.ok, r.outcome.message.c_str());
  const kwb::Task &task = *r.task;
  const auto &a = *tensorNamed(task, "A").init;
  QCOMPARE(a.matrix, kwb::Generator::Matrix::Symmetric);
  QCOMPARE(a.kind, kwb::Generator::Kind::Normal);
  const auto &b = *tensorNamed(task, "B").init;
  QCOMPARE(b.matrix, kwb::Generator::Matrix::Upper);
  QCOMPARE(b.diagonal, std::int64_t{1});
  QCOMPARE(shapeTexts(tensorNamed(task, "mask")), (std::vector<std::string>{"N", "N"}));
  QCOMPARE(tensorNamed(task, "mask").dtype, kwb::DType::Bool);
  const auto &signs = *tensorNamed(task, "signs").init;
  QCOMPARE(signs.kind, kwb::Generator::Kind::RandInt);
  QCOMPARE(signs.scale, 2.0);
  QCOMPARE(signs.shift, -1.0);
  QCOMPARE(tensorNamed(task, "signs").dtype, kwb::DType::F32);
  QVERIFY(task.param("factor"));
  QCOMPARE(task.param("factor")->real, 0.5);
  QVERIFY(task.reference.forward);
  QCOMPARE(*task.reference.forward, (std::vector<std::string>{"A", "B", "mask", "signs", "factor"}));
}

// LayerNorm's weight and bias (ones and zeros) are inputs; its normalized_shape tuple goes to
// Model through get_init_inputs(). The sizes it covers are not named, so only the batch can be
// divided down, and the import says the small configuration is not that small.
void TestKernelBenchImport::layerNormImports() {
  NEED_TORCH(python);
  const auto r = importWithTorch(fixture("layernorm.py"), dir_ / "ln", python);
  QVERIFY2(r.outcome.ok, r.outcome.message.c_str());
  const kwb::Task &task = *r.task;
  QCOMPARE(tensorNamed(task, "ln_weight").state, std::string("ln.weight"));
  QCOMPARE(tensorNamed(task, "ln_weight").init->a, 1.0);
  QCOMPARE(tensorNamed(task, "ln_bias").init->a, 0.0);
  QVERIFY(!task.reference.init);
  QCOMPARE(task.config("small")->values.at("batch_size"), std::int64_t{2});
}

// Without the reader's configurations (a reader JSON as before --configs), a scalar argument of
// forward is a [params] entry that [reference] forward passes in its place.
void TestKernelBenchImport::scalarInputIsAParam() {
  const fs::path problem = dir_ / "scalar_in.py";
  writeText(problem, kScalarProblem);
  const auto reader = runReader(problem);
  QCOMPARE(reader.exitCode, 0);
  std::string error;
  const auto t = kwb::taskFromKernelBench(withOutputs(reader.result, {{{"dtype", "f32"}, {"shape", {1024, 512}}}}), error);
  QVERIFY2(t, error.c_str());
  const auto task = loadWritten(*t, dir_ / "scalar_in", problem, error);
  QVERIFY2(task, error.c_str());
  QVERIFY(task->param("s"));
  QCOMPARE(task->param("s")->real, 3.14);
  QVERIFY(task->reference.forward);
  QCOMPARE(*task->reference.forward, (std::vector<std::string>{"A", "s"}));
}

void TestKernelBenchImport::unsupportedInitRefused() {
  auto reader = runReader(fixture("sum_dim.py"));
  QCOMPARE(reader.exitCode, 0);
  json j = withOutputs(reader.result, {{{"dtype", "f32"}, {"shape", {16, 1, 256}}}});
  j["init"][0]["type"] = "str";
  j["init"][0]["value"] = "sum";
  std::string error;
  QVERIFY(!kwb::taskFromKernelBench(j, error));
  QCOMPARE(error, std::string("sum_dim.py:28: get_init_inputs: init argument 1 (reduce_dim) is a string; [params] "
                              "holds scalars only; write the task by hand"));
  j["init"][0] = {{"type", "tuple"}, {"value", {1, 2}}, {"name", nullptr}, {"line", 28}};
  QVERIFY(!kwb::taskFromKernelBench(j, error));
  QCOMPARE(error, std::string("sum_dim.py:28: get_init_inputs: init argument 1 (dim) is a tuple; [params] holds "
                              "scalars only; write the task by hand"));
}

void TestKernelBenchImport::unsupportedOutputDtypeRefused() {
  const auto reader = runReader(fixture("relu.py"));
  std::string error;
  QVERIFY(!kwb::taskFromKernelBench(withOutputs(reader.result, {{{"dtype", "complex64"}, {"shape", {16, 16384}}}}),
                                    error));
  QCOMPARE(error, std::string("relu.py: outputs: forward's result is a complex64 tensor, a dtype the workbench lacks; "
                              "the workbench's dtypes are f64, f32, f16, bf16, i64, i32, i8, u8, bool; write the task "
                              "by hand"));
}

void TestKernelBenchImport::outputsNeedPyTorch() {
  const auto reader = runReader(fixture("relu.py"));
  std::string error;
  QVERIFY(!kwb::taskFromKernelBench(reader.result, error));  // --no-torch: outputs null
  QCOMPARE(error, std::string("relu.py: outputs: the output's shape and dtype need PyTorch: not read: --no-torch was "
                              "given; import with a Python that has PyTorch (--python PATH or $KWB_PYTHON; pip install "
                              "torch)"));

  kwb::ChildProcessRequest probe;
  probe.argv = {python3(), "-c", "import torch"};
  if (kwb::runChildProcess(probe).succeeded()) QSKIP("this machine's python3 has PyTorch: the reader fills the outputs");
  kwb::TorchSettings python;
  python.python = python3();
  const auto outcome = kwb::importKernelBench(fixture("relu.py"), dir_ / "imported", false, python);
  QVERIFY(!outcome.ok);
  QVERIFY2(outcome.message.find("relu.py: outputs: the output's shape and dtype need PyTorch: PyTorch is not "
                                "installed for ") == 0,
           outcome.message.c_str());
}

void TestKernelBenchImport::importWritesTheFolder() {
  const kwb::TorchSettings python = pythonWithOutputs(dir_);
  const fs::path to = dir_ / "tasks";

  const auto outcome = kwb::importKernelBench(fixture("relu.py"), to, false, python);
  QVERIFY2(outcome.ok, outcome.message.c_str());
  QCOMPARE(outcome.name, std::string("relu"));
  QCOMPARE(outcome.folder, to / "relu");
  QCOMPARE(outcome.configs, (std::vector<std::string>{"kernelbench", "large"}));
  QCOMPARE(outcome.inputs, std::size_t{1});
  QCOMPARE(outcome.outputs, std::size_t{1});
  QVERIFY(anyContains(outcome.warnings, "flops is a placeholder"));
  QCOMPARE(kwb::test::readFile(to / "relu" / "reference.py"), kwb::test::readFile(fixture("relu.py")));
  QVERIFY(fs::is_regular_file(to / "relu" / "task.toml"));
  QVERIFY(fs::is_regular_file(to / "relu" / "relu.cu"));
  QCOMPARE(kwb::loadTask(to / "relu").launch->kernel, std::string("relu_kernel"));

  const auto again = kwb::importKernelBench(fixture("relu.py"), to, false, python);
  QVERIFY(!again.ok);
  QCOMPARE(again.message, (to / "relu").string() + ": already holds files; pass --force to write over them");
  const auto forced = kwb::importKernelBench(fixture("relu.py"), to, true, python);
  QVERIFY2(forced.ok, forced.message.c_str());
}

void TestKernelBenchImport::importFailures() {
  kwb::TorchSettings python;
  python.python = python3();
  const auto missing = kwb::importKernelBench(dir_ / "no-such-problem.py", dir_ / "imported", false, python);
  QVERIFY(!missing.ok);
  QCOMPARE(missing.message, (dir_ / "no-such-problem.py").string() +
                                ": file: not a readable file; give the path of a KernelBench problem (.py)");

  python.python = (dir_ / "no-such-python").string();
  const auto noPython = kwb::importKernelBench(fixture("relu.py"), dir_ / "imported", false, python);
  QVERIFY(!noPython.ok);
  QVERIFY2(noPython.message.find(fixture("relu.py").string() + ": python: the Python interpreter " +
                                 (dir_ / "no-such-python").string()) == 0,
           noPython.message.c_str());
}

// Issue 45 item 6: the static reader folds constants within stated bounds: one constant holds at
// most 10000 items, an integer at most 4096 bits, the file's folding at most 1000000 items.
// `s = s + s` fourteen times reached 618 MB: now refused at the doubling past the bound, with
// the file, line and limit, in well under a second and about 20 MB.
void TestKernelBenchImport::constantsPastTheLimitsAreRefused_data() {
  QTest::addColumn<QString>("extra");    // appended to relu.py
  QTest::addColumn<int>("line");         // of `extra` (1: its first), where it is refused; 0: not checked
  QTest::addColumn<QString>("message");  // after "FILE:LINE: "
  const QString perConstant = QStringLiteral(
      ", past the reader's limit of 10000 items for one constant (characters of a string, elements of a tuple or "
      "list, nested ones counted); KernelBench constants are sizes and short tuples: write the value out, or write the "
      "task by hand");
  const QString doubled = QStringLiteral("file: s + s makes a value of 16384 items") + perConstant;
  QTest::newRow("s + s fourteen times") << QStringLiteral("s = \"x\"\n") + QStringLiteral("s = s + s\n").repeated(14) << 15 << doubled;
  QTest::newRow("s + s forty times") << QStringLiteral("s = \"x\"\n") + QStringLiteral("s = s + s\n").repeated(40) << 15 << doubled;
  QTest::newRow("a tuple doubled") << QStringLiteral("t = (1, 2, 3, 4)\n") + QStringLiteral("t = t + t\n").repeated(40) << 13
                                   << QStringLiteral("file: t + t makes a value of 16385 items") + perConstant;
  QTest::newRow("repeated") << QStringLiteral("s = \"x\" * 100000\n") << 1
                            << QStringLiteral("file: 'x' * 100000 makes a value of 100000 items") + perConstant;
  QTest::newRow("a list of long strings") << QStringLiteral("s = \"x\" * 5000\nt = [s] * 50\n") << 2
                                          << QStringLiteral("file: [s] * 50 makes a value of 250000 items") + perConstant;
  QTest::newRow("unpacked") << QStringLiteral("s = tuple(\"x\" * 6000)\nt = (*s, *s)\n") << 2
                            << QStringLiteral("file: *s makes a value of more than 10000 items") + perConstant;
  QTest::newRow("an integer's power") << QStringLiteral("a = 10 ** 256\nb = a ** 256\nc = b ** 256\n") << 2
                                      << QStringLiteral("file: a ** 256 makes an integer of at least 217600 bits, past the reader's "
                                                        "limit of 4096 bits for an integer; KernelBench constants are sizes and short "
                                                        "tuples: write the value out, or write the task by hand");
  QString many;
  for (int i = 0; i < 200; ++i) many += QStringLiteral("a%1 = \"x\" * 9000\n").arg(i);
  QTest::newRow("the whole file") << many << 0
                                  << QStringLiteral("file: folding the file's constants took more than 1000000 items (the reader's "
                                                    "limit for a whole file); KernelBench constants are sizes and short tuples: write "
                                                    "the value out, or write the task by hand");
}

void TestKernelBenchImport::constantsPastTheLimitsAreRefused() {
  QFETCH(QString, extra);
  QFETCH(int, line);
  QFETCH(QString, message);
  const std::string base = kwb::test::readFile(fixture("relu.py"));
  const int baseLines = static_cast<int>(std::count(base.begin(), base.end(), '\n'));
  const fs::path problem = dir_ / "constants.py";
  writeText(problem, base + extra.toStdString());
  const auto r = measuredReaderRun(problem);
  QCOMPARE(r.exitCode, 2);
  QCOMPARE(r.result.value("kind", std::string()), std::string("too-large"));
  const std::string text = r.result.value("message", std::string());
  const std::string where = problem.string() + ":" + std::to_string(baseLines + line) + ": ";
  if (line) QCOMPARE(text, where + message.toStdString());
  else QVERIFY2(text.find(": " + message.toStdString()) != std::string::npos, text.c_str());
  QVERIFY2(r.peakMiB < 100, std::to_string(r.peakMiB).c_str());  // about 18 MiB here
  QVERIFY2(r.cpuSeconds < 10, std::to_string(r.cpuSeconds).c_str());  // about 0.2 s here

  // Through the importer: the same message, said once.
  const auto outcome = kwb::importKernelBench(problem, dir_ / "too-large", false, pythonWithOutputs(dir_));
  QVERIFY(!outcome.ok);
  QCOMPARE(outcome.message, text);
}

// The static read runs under its own memory limit (a soft RLIMIT_DATA of 256 MiB; CPU: 20 s):
// a 4 MB file of small constants, whose syntax tree alone took 1.6 GB and 12 s to build, is
// refused when the read passes the limit, at about the limit.
void TestKernelBenchImport::staticReadMemoryLimit() {
  const std::string base = kwb::test::readFile(fixture("relu.py"));
  const std::string line = "a = [[1, 2], [3, 4], [5, 6], [7, 8]]\n";
  std::string text = base;
  while (text.size() + line.size() < kwb::kMaxSourceBytes) text += line;
  const fs::path problem = dir_ / "many_constants.py";
  writeText(problem, text);
  const auto r = measuredReaderRun(problem);
  QCOMPARE(r.exitCode, 2);
  QCOMPARE(r.result.value("message", std::string()),
           problem.string() + ": file: reading the file statically needed more than 256 MiB (the static reader's memory "
                              "limit); KernelBench problems are short files; check this one is one");
  QVERIFY2(r.peakMiB < 320, std::to_string(r.peakMiB).c_str());
}

// Issue 45 item 8: a problem file named like one of the reader's options is read as a file.
void TestKernelBenchImport::problemNamedLikeAnOption() {
  const fs::path folder = dir_ / "option-named";
  fs::create_directories(folder);
  fs::copy_file(fixture("relu.py"), folder / "--no-torch.py");
  const QString before = QDir::currentPath();
  QVERIFY(QDir::setCurrent(QString::fromStdString(folder.string())));
  const auto outcome = kwb::importKernelBench("--no-torch.py", folder / "tasks", false, pythonWithOutputs(dir_));
  QVERIFY(QDir::setCurrent(before));
  QVERIFY2(outcome.ok, outcome.message.c_str());
  QCOMPARE(outcome.name, std::string("--no-torch"));
  QCOMPARE(kwb::test::readFile(folder / "tasks" / "--no-torch" / "reference.py"), kwb::test::readFile(fixture("relu.py")));
}

// Issue 45 item 8: the size message says "the problem" once.
void TestKernelBenchImport::tooLargeProblemMessage() {
  const fs::path problem = dir_ / "huge.py";
  writeText(problem, std::string(kwb::kMaxSourceBytes + 1, '#'));
  kwb::TorchSettings python;
  python.python = python3();
  const auto outcome = kwb::importKernelBench(problem, dir_ / "imported", false, python);
  QVERIFY(!outcome.ok);
  QCOMPARE(outcome.message, "the problem " + problem.string() + " is " + std::to_string(kwb::kMaxSourceBytes + 1) +
                                " bytes or more; at most " + std::to_string(kwb::kMaxSourceBytes) + " are read");
}

// Issue 45 item 4: --force replaces links planted in the task folder, never writing through them;
// a task folder that is itself a link is refused.
void TestKernelBenchImport::forceNeverWritesThroughLinks() {
  const kwb::TorchSettings python = pythonWithOutputs(dir_);
  const fs::path to = dir_ / "linked-tasks", outside = dir_ / "outside";
  fs::create_directories(to / "relu");
  fs::create_directories(outside);
  for (const char *name : {"task.toml", "reference.py", "relu.cu"}) {
    writeText(outside / name, "keep me\n");
    fs::create_symlink(outside / name, to / "relu" / name);
  }
  const auto refused = kwb::importKernelBench(fixture("relu.py"), to, false, python);
  QVERIFY(!refused.ok);  // not empty
  const auto forced = kwb::importKernelBench(fixture("relu.py"), to, true, python);
  QVERIFY2(forced.ok, forced.message.c_str());
  for (const char *name : {"task.toml", "reference.py", "relu.cu"}) {
    QCOMPARE(kwb::test::readFile(outside / name), std::string("keep me\n"));
    QVERIFY2(!fs::is_symlink(to / "relu" / name) && fs::is_regular_file(to / "relu" / name), name);
  }
  QCOMPARE(kwb::test::readFile(to / "relu" / "reference.py"), kwb::test::readFile(fixture("relu.py")));
  QCOMPARE(kwb::loadTask(to / "relu").name, std::string("relu"));

  const fs::path to2 = dir_ / "linked-folder";
  fs::create_directories(to2);
  fs::create_symlink(outside, to2 / "relu");
  const auto linked = kwb::importKernelBench(fixture("relu.py"), to2, true, python);
  QVERIFY(!linked.ok);
  QCOMPARE(linked.message, (to2 / "relu").string() +
                               ": is a symbolic link; an import is not written through links: remove it or choose another --to");
  for (const char *name : {"task.toml", "reference.py", "relu.cu"})
    QCOMPARE(kwb::test::readFile(outside / name), std::string("keep me\n"));
}

QTEST_GUILESS_MAIN(TestKernelBenchImport)
#include "tst_kernelbench_import.moc"
