// `kwb import kernelbench` (core/import/kernelbench_import.h): the real reader
// (resources/python/kwb_kernelbench.py, run with --no-torch) on each fixture of
// tests/fixtures/kernelbench/, the outputs PyTorch would give put into its JSON by hand, the task
// files made from it, written and loaded with loadTask; the problems a task cannot express refused
// with their messages; and importKernelBench's folder handling, through a stand-in interpreter.
//
// The outputs below are the ones the reader reported with PyTorch 2.11 on the H200 (forward on the
// meta device): relu [16, 16384] f32; sum_dim [16, 1, 256] f32; matmul [1024, 2048] f32; rmsnorm the
// input's shape, [16, 64, 256, 256] f32.
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
#include "helpers/python3.h"
#include "helpers/test_files.h"

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
  void learnedWeights_data();
  void learnedWeights();
  void layerNormRefused();
  void scalarInputRefused();
  void unsupportedInitRefused();
  void unsupportedOutputDtypeRefused();
  void outputsNeedPyTorch();
  void importWritesTheFolder();
  void importFailures();

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
  QCOMPARE(task->bytes.text(), std::string("4 * batch_size * dim + 4 * batch_size * dim"));
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
  QCOMPARE(task->bytes.text(), std::string("2 * name_ * n + 8 * n + 2 * name_ * n + 8 * n"));
  QVERIFY(t->starter.find("#include <cuda_fp16.h>\n") != std::string::npos);
  QVERIFY(t->starter.find("    const __half *__restrict__ x,\n    const long long *__restrict__ idx,\n"
                          "    __half *__restrict__ out0,\n    long long *__restrict__ out1,\n") != std::string::npos);
  QVERIFY(t->starter.find("    float alpha,\n    long long flag) {") != std::string::npos);
  QVERIFY(anyContains(t->warnings, "out0 is f16"));
  QVERIFY(anyContains(t->warnings, "atol 1e-2 is vacuous for outputs whose magnitude is below about 1e-2"));
}

void TestKernelBenchImport::readerCannotExpress() {
  const fs::path problem = fixture("tril_input.py");
  const auto reader = runReader(problem);
  QCOMPARE(reader.exitCode, 2);
  QCOMPARE(reader.result.value("ok", true), false);
  QCOMPARE(reader.result.value("kind", std::string()), std::string("cannot-express"));
  QCOMPARE(reader.result.value("line", 0), 19);
  const std::string expected = problem.string() +
                               ":19: get_inputs: torch.tril(...) is not an input generator the workbench knows "
                               "(randn, rand, randint, ones, zeros, full, empty); write the tensor's init by hand";
  QCOMPARE(reader.result.value("message", std::string()), expected);
  std::string error;
  QVERIFY(!kwb::taskFromKernelBench(reader.result, error));
  QCOMPARE(error, expected);

  kwb::TorchSettings python;
  python.python = python3();
  const auto outcome = kwb::importKernelBench(problem, dir_ / "imported", false, python);
  QVERIFY(!outcome.ok);
  QCOMPARE(outcome.message, expected);
  QVERIFY(!fs::exists(dir_ / "imported" / "tril_input"));
}

void TestKernelBenchImport::learnedWeights_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("found");  // "nn.X at line N", or empty for none
  QTest::newRow("no layers") << "import torch\nreturn torch.relu(x)\n" << "";
  QTest::newRow("nn.Linear") << "class Model:\n    def __init__(self):\n        self.fc = nn.Linear(4, 4)\n"
                             << "nn.Linear at line 3";
  QTest::newRow("torch.nn.Conv2d") << "x = 1\nself.c = torch.nn.Conv2d(3, 8, 3)\n" << "nn.Conv2d at line 2";
  QTest::newRow("nn.ConvTranspose3d") << "self.c = nn.ConvTranspose3d (3, 8, 3)\n" << "nn.ConvTranspose3d at line 1";
  QTest::newRow("nn.Parameter") << "\n\nself.w = nn.Parameter(torch.randn(4))\n" << "nn.Parameter at line 3";
  QTest::newRow("nn.BatchNorm2d") << "self.bn = nn.BatchNorm2d(8)\n" << "nn.BatchNorm2d at line 1";
  QTest::newRow("nn.Embedding") << "self.e = nn.Embedding(10, 4)\n" << "nn.Embedding at line 1";
  QTest::newRow("in a comment") << "# self.fc = nn.Linear(4, 4)\nreturn x  # nn.LayerNorm(x)\n" << "";
  QTest::newRow("functional") << "return nn.functional.conv2d(x, w)\n" << "";
  QTest::newRow("no weights") << "self.act = nn.ReLU()\nself.s = nn.Softmax(dim=1)\n" << "";
  QTest::newRow("named, not called") << "# uses an nn.Linear-like layout\nLinear = nn.Linear\n" << "";
}

void TestKernelBenchImport::learnedWeights() {
  QFETCH(QString, text);
  QFETCH(QString, found);
  const auto message = kwb::learnedWeightsProblem(text.toStdString());
  if (found.isEmpty()) {
    QVERIFY2(!message, message ? message->c_str() : "");
    return;
  }
  QVERIFY(message);
  QCOMPARE(QString::fromStdString(*message),
           "Model holds learned weights (" + found +
               "): their values come from PyTorch's random initialisation, which the task's kernel is not given; "
               "not supported yet: write the task by hand with the weights as input tensors");
}

void TestKernelBenchImport::layerNormRefused() {
  const fs::path problem = fixture("layernorm.py");
  const auto weights = kwb::learnedWeightsProblem(kwb::test::readFile(problem));
  QVERIFY(weights);
  QVERIFY2(weights->find("Model holds learned weights (nn.LayerNorm at line 10)") == 0, weights->c_str());

  // Its constructor argument is a tuple, which [params] cannot hold either.
  const auto reader = runReader(problem);
  QCOMPARE(reader.exitCode, 0);
  std::string error;
  QVERIFY(!kwb::taskFromKernelBench(
      withOutputs(reader.result, {{{"dtype", "f32"}, {"shape", {16, 64, 256, 256}}}}), error));
  QCOMPARE(error, std::string("layernorm.py:29: get_init_inputs: init argument 1 (normalized_shape) is a tuple; "
                              "[params] holds scalars only; write the task by hand"));

  kwb::TorchSettings python;
  python.python = python3();
  const auto outcome = kwb::importKernelBench(problem, dir_ / "imported", false, python);
  QVERIFY(!outcome.ok);
  QCOMPARE(outcome.message, problem.string() + ": " + *weights);
}

void TestKernelBenchImport::scalarInputRefused() {
  const fs::path problem = dir_ / "scalar_in.py";
  writeText(problem, kScalarProblem);
  const auto reader = runReader(problem);
  QCOMPARE(reader.exitCode, 0);
  std::string error;
  QVERIFY(!kwb::taskFromKernelBench(withOutputs(reader.result, {{{"dtype", "f32"}, {"shape", {1024, 512}}}}), error));
  QCOMPARE(error, std::string("scalar_in.py:22: get_inputs: input 's' is a scalar (float 3.14); forward's scalar "
                              "arguments are not supported yet; pass it to Model's constructor through get_init_inputs "
                              "instead, or write the task by hand"));
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
  // A stand-in for a Python with PyTorch: the real reader without torch, its outputs filled as
  // PyTorch fills them for relu.py.
  const fs::path fake = dir_ / "python-with-outputs";
  writeText(fake, "#!/bin/sh\nexec " + python3() +
                      " -c 'import json, subprocess, sys\n"
                      "r = subprocess.run([sys.executable, sys.argv[1], sys.argv[2], \"--no-torch\"], "
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

QTEST_GUILESS_MAIN(TestKernelBenchImport)
#include "tst_kernelbench_import.moc"
