// On a machine with a GPU and PyTorch: the PyTorch reference process end to end. A module that
// raises, one that returns the wrong shape and one that does not load each end in an error
// naming the file, the line and why; outputs are cached per configuration and seed; every
// bundled task's PyTorch twin (its reference.py) gives the same verdicts as its CUDA reference;
// a timed evaluation reports the speedup over PyTorch eager and torch.compile. Module state
// (issue 46): a Linear layer's weight and bias given as state give the reference x @ W^T + b of
// the very input bytes, and one weight changed moves the reference's output and the candidate's
// alike (the candidate stays correct), while a reference and a candidate one weight apart
// disagree. Draws: a forward that draws its own h0 (torch.randn) is handed the task's h0, so a
// candidate that adds h0 is correct and one that leaves it out is not, and the timed evaluation
// times eager and torch.compile with the draw handed over. Skips, saying why, without a device or
// without PyTorch.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <functional>

#include "core/eval/evaluator.h"
#include "core/eval/torch_reference.h"
#include "core/task/manifest_parser.h"
#include "helpers/test_files.h"
#include "helpers/torch_tasks.h"

namespace fs = std::filesystem;
using kwb::test::kernelsDir;
using kwb::test::readFile;

namespace {

// A copy of a bundled task under the test's output; `edit` changes its task.toml, `module`
// (when given) replaces its reference.py.
fs::path taskCopy(const std::string &task, const std::string &name, const std::function<void(std::string &)> &edit,
                  const std::string &module = {}) {
  const fs::path dir = kwb::test::outputDir() / "torch" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto &e : fs::directory_iterator(kernelsDir() / task))
    if (e.is_regular_file()) fs::copy_file(e.path(), dir / e.path().filename());
  std::string manifest = readFile(dir / "task.toml");
  if (edit) edit(manifest);
  std::ofstream(dir / "task.toml", std::ios::trunc) << manifest;
  if (!module.empty()) std::ofstream(dir / "reference.py", std::ios::trunc) << module;
  return dir;
}

// softmax with only its PyTorch module as the reference.
void dropCudaReference(std::string &manifest) {
  const auto from = manifest.find("[reference]");
  const auto to = manifest.find("\n[", from + 1);
  manifest.replace(from, to - from, "[reference]\npython = \"reference.py\"\n");
}

const char *const kModuleHead =
    "import torch\n"            // 1
    "import torch.nn as nn\n"   // 2
    "\n"                        // 3
    "class Model(nn.Module):\n"  // 4
    "    def forward(self, x):\n";  // 5

std::string describe(const kwb::TorchRun &r) { return r.describe() + "\n" + r.traceback; }

}  // namespace

class TestGpuTorch : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void moduleThatRaises();
  void moduleWithTheWrongShape();
  void moduleThatDoesNotLoad();
  void outputsAreCached();
  void twinsGiveTheSameVerdicts_data();
  void twinsGiveTheSameVerdicts();
  void wrongCandidateFailsAgainstBoth();
  void speedupOverPyTorch();
  void evaluationWithoutTheInterpreterSaysWhy();
  void linearStateGivesTheReferenceItsOutput();
  void oneWeightMovesReferenceAndCandidate();
  void drawsReachReferenceAndCandidate();

 private:
  kwb::TorchRun runOn(const fs::path &dir, std::uint64_t seed = 1) {
    const kwb::Task task = kwb::loadTask(dir);
    kwb::TorchRunRequest r;
    r.outputs.push_back({&task.configs.front(), seed, false});
    return kwb::runTorchReference(task, r, settings_);
  }
  kwb::TorchSettings settings_;
};

void TestGpuTorch::initTestCase() {
  std::string problem;
  settings_.cacheDir = kwb::test::outputDir() / "torch" / "cache";
  fs::remove_all(settings_.cacheDir);
  const std::string probe = kwb::probeTorch(settings_, problem);
  if (probe.empty()) QSKIP(("the PyTorch helper did not run: " + problem).c_str());
  const auto j = nlohmann::json::parse(probe);
  if (!j.value("ok", false)) QSKIP(("no PyTorch: " + j.value("message", std::string())).c_str());
  if (!j.value("cuda", false)) QSKIP("PyTorch sees no CUDA device");
  qInfo("%s", probe.c_str());
}

void TestGpuTorch::moduleThatRaises() {
  const auto dir = taskCopy("softmax", "raises", dropCudaReference,
                            std::string(kModuleHead) + "        raise RuntimeError('the module broke')\n");  // line 6
  const auto run = runOn(dir);
  QVERIFY2(!run.ok, describe(run).c_str());
  QCOMPARE(run.kind, std::string("forward-raised"));
  QVERIFY2(run.message.find("RuntimeError") != std::string::npos, run.message.c_str());
  QVERIFY2(run.message.find("the module broke") != std::string::npos, run.message.c_str());
  QVERIFY2(fs::path(run.file).filename() == "reference.py", run.file.c_str());
  QCOMPARE(run.line, 6);
  QVERIFY2(run.job.find("seed 1") != std::string::npos, run.job.c_str());
}

void TestGpuTorch::moduleWithTheWrongShape() {
  const auto dir = taskCopy("softmax", "wrong-shape", dropCudaReference,
                            std::string(kModuleHead) + "        return torch.softmax(x, dim=1)[:, :-1]\n");
  const auto run = runOn(dir);
  QVERIFY2(!run.ok, describe(run).c_str());
  QCOMPARE(run.kind, std::string("wrong-output"));
  const kwb::Task task = kwb::loadTask(dir);
  const auto &c = task.configs.front();
  const std::string want = "[" + std::to_string(c.values.at("rows")) + ", " + std::to_string(c.values.at("cols")) + "]";
  QVERIFY2(run.message.find(want) != std::string::npos, run.message.c_str());
  QVERIFY2(run.message.find("y") != std::string::npos, run.message.c_str());

  // The same through the evaluator: an error that says so, no verdict on the candidate.
  kwb::EvaluatorSettings settings;
  settings.torch = settings_;
  kwb::EvaluationOptions options;
  options.configs = {c.name};
  options.freshSeed = false;
  const auto result = kwb::evaluate(task, readFile(dir / "softmax.cu"), options, settings);
  QCOMPARE(result.outcome, kwb::Outcome::Error);
  QVERIFY2(result.message.find("wrong-output") != std::string::npos, result.message.c_str());
}

void TestGpuTorch::moduleThatDoesNotLoad() {
  const auto dir = taskCopy("softmax", "syntax", dropCudaReference,
                            std::string(kModuleHead) + "        return torch.softmax(x, dim=1\n");  // line 6
  const auto run = runOn(dir);
  QVERIFY2(!run.ok, describe(run).c_str());
  QCOMPARE(run.kind, std::string("module-load"));
  QVERIFY2(fs::path(run.file).filename() == "reference.py", run.file.c_str());
  QVERIFY2(run.line >= 6, std::to_string(run.line).c_str());
}

void TestGpuTorch::outputsAreCached() {
  const auto dir = taskCopy("softmax", "cached", dropCudaReference);
  const auto first = runOn(dir, 7);
  QVERIFY2(first.ok, describe(first).c_str());
  QCOMPARE(first.computedJobs, std::size_t(1));
  QCOMPARE(first.cachedJobs, std::size_t(0));
  const auto &files = first.outputs.begin()->second;
  QVERIFY(fs::exists(files.at("y")));
  const auto second = runOn(dir, 7);
  QVERIFY2(second.ok, describe(second).c_str());
  QCOMPARE(second.cachedJobs, std::size_t(1));
  QCOMPARE(second.computedJobs, std::size_t(0));
  QCOMPARE(second.outputs.begin()->second.at("y"), files.at("y"));
}

void TestGpuTorch::twinsGiveTheSameVerdicts_data() {
  QTest::addColumn<QString>("task");
  for (const char *t : {"softmax", "layernorm", "sgemm", "gemm-bf16", "blur", "histogram", "reduce-sum", "transpose"})
    QTest::newRow(t) << t;
}

// The starter (correct) against the CUDA reference and against the PyTorch twin: the same verdict
// on the smallest configuration, every seed.
void TestGpuTorch::twinsGiveTheSameVerdicts() {
  QFETCH(QString, task);
  const kwb::Task t = kwb::loadTask(kernelsDir() / task.toStdString());
  QVERIFY(t.reference.hasCuda() && !t.reference.python.empty());
  const auto *config = kwb::smallestConfiguration(t);
  kwb::EvaluatorSettings settings;
  settings.torch = settings_;
  kwb::Evaluator evaluator(settings);
  kwb::EvaluationOptions options;
  options.configs = {config->name};
  options.freshSeed = false;
  const std::string source = readFile(t.folder / t.starterSource());
  options.reference = "cuda";
  const auto cuda = evaluator.evaluate(t, source, options);
  options.reference = "pytorch";
  const auto torch = evaluator.evaluate(t, source, options);
  QVERIFY2(cuda.outcome == kwb::Outcome::Correct, (cuda.message + "\n" + nlohmann::json(cuda).dump(1)).c_str());
  QVERIFY2(torch.outcome == cuda.outcome, (torch.message + "\n" + nlohmann::json(torch).dump(1)).c_str());
  QCOMPARE(torch.reference, std::string("pytorch"));
  QCOMPARE(torch.configs.front().seeds.size(), cuda.configs.front().seeds.size());
}

void TestGpuTorch::wrongCandidateFailsAgainstBoth() {
  const kwb::Task t = kwb::loadTask(kernelsDir() / "softmax");
  // Every output 1% too large: beyond the tolerance, against either reference, on every seed.
  const std::string wrong = kwb::test::fileVariant(t.folder / "softmax.cu", "* inv;", "* inv * 1.01f;");
  kwb::EvaluatorSettings settings;
  settings.torch = settings_;
  kwb::Evaluator evaluator(settings);
  kwb::EvaluationOptions options;
  options.configs = {kwb::smallestConfiguration(t)->name};
  options.freshSeed = false;
  for (const char *reference : {"cuda", "pytorch"}) {
    options.reference = reference;
    const auto r = evaluator.evaluate(t, wrong, options);
    QVERIFY2(r.outcome == kwb::Outcome::Incorrect, (std::string(reference) + ": " + r.message).c_str());
    QCOMPARE(r.configs.front().reason, std::string("mismatch"));
    for (const auto &seed : r.configs.front().seeds) QVERIFY(!seed.passed);
  }
}

void TestGpuTorch::speedupOverPyTorch() {
  const kwb::Task t = kwb::loadTask(kernelsDir() / "softmax");
  kwb::EvaluatorSettings settings;
  settings.torch = settings_;
  kwb::EvaluationOptions options;
  options.configs = {"small"};
  options.freshSeed = false;
  options.time = true;
  options.timingCap = std::chrono::milliseconds(1000);
  const auto r = kwb::evaluate(t, readFile(t.folder / t.starterSource()), options, settings);
  QVERIFY2(r.outcome == kwb::Outcome::Correct, r.message.c_str());
  const auto &co = r.configs.front();
  QVERIFY(co.timing && co.timing->ok);
  QVERIFY2(co.torch.has_value(), r.torchProblem.c_str());
  QVERIFY2(co.torch->eagerMs > 0, co.torch->eagerError.c_str());
  QVERIFY(co.torch->eagerSamples >= 10);
  QCOMPARE(co.torch->speedupEager, co.torch->eagerMs / co.timing->candidate.median);
  // torch.compile: a figure, or the reason it has none.
  QVERIFY(co.torch->compiledMs > 0 || !co.torch->compiledError.empty());
  qInfo("softmax small: candidate %.4f ms, PyTorch eager %.4f ms (%.2fx), torch.compile %s",
        co.timing->candidate.median, co.torch->eagerMs, co.torch->speedupEager,
        co.torch->compiledMs > 0 ? (std::to_string(co.torch->compiledMs) + " ms").c_str() : co.torch->compiledError.c_str());
}

void TestGpuTorch::evaluationWithoutTheInterpreterSaysWhy() {
  // On a device the PyTorch reference's process must run: an interpreter that is not there ends
  // the evaluation with that reason (tst_torch_reference checks the same task without a device).
  const auto dir = taskCopy("softmax", "no-python", dropCudaReference);
  const kwb::Task task = kwb::loadTask(dir);
  kwb::EvaluatorSettings settings;
  settings.torch.python = (dir / "no-such-python").string();
  kwb::EvaluationOptions options;
  options.configs = {task.configs.front().name};
  options.freshSeed = false;
  const auto result = kwb::evaluate(task, readFile(dir / "softmax.cu"), options, settings);
  QCOMPARE(result.reference, std::string("pytorch"));
  QCOMPARE(result.outcome, kwb::Outcome::Error);
  QVERIFY2(result.message.find("the PyTorch reference: no-python") == 0, result.message.c_str());
}

namespace {

// The Linear task (tests/helpers/torch_tasks.h) under the test's output as `name`.
kwb::Task linearTask(const std::string &name, const std::string &weightInit, const std::string &moreTensors = {},
                     const std::string &forward = {}, const std::string &args = kwb::test::kLinearArgs,
                     const std::string &module = kwb::test::kLinearModule) {
  return kwb::loadTask(kwb::test::writeTorchTask(kwb::test::outputDir() / "torch" / name,
                                                 kwb::test::linearManifest(weightInit, moreTensors, forward, args),
                                                 module, {{"linear.cu", kwb::test::kLinearKernel}}));
}

const char *const kRandomWeights = "{ kind = \"uniform\", low = 0.5, high = 1.0 }";
// The same draws with element (3, 0) zeroed: torch.triu(W, -2) of a 4-row W zeroes only the
// element with c - r = -3.
const char *const kOneWeightZeroed = "{ kind = \"uniform\", low = 0.5, high = 1.0, matrix = \"upper\", diagonal = -2 }";

}  // namespace

// (a) fc.weight and fc.bias as state: the module's output for each seed is x @ W^T + b computed
// here in double from the inputs the workbench generates (its own random init would differ).
void TestGpuTorch::linearStateGivesTheReferenceItsOutput() {
  const kwb::Task task = linearTask("linear-a", kRandomWeights);
  QCOMPARE(task.tensor("fc_weight")->state, std::string("fc.weight"));
  kwb::TorchRunRequest r;
  const auto &c = task.configs.front();
  for (const std::uint64_t seed : {1, 2}) r.outputs.push_back({&c, seed, false});
  const auto run = kwb::runTorchReference(task, r, settings_);
  QVERIFY2(run.ok, describe(run).c_str());
  for (const std::uint64_t seed : {1, 2}) {
    const auto want = kwb::test::linearOf(kwb::test::inputValues(task, "x", c, seed),
                                          kwb::test::inputValues(task, "fc_weight", c, seed),
                                          kwb::test::inputValues(task, "fc_bias", c, seed), 8, 64, 4);
    const auto got = kwb::test::f32File(run.outputs.at(kwb::torchJobKey({&c, seed, false})).at("y"));
    const auto problem = kwb::test::valuesMismatch(got, want);
    QVERIFY2(problem.empty(), ("seed " + std::to_string(seed) + ": " + problem).c_str());
  }
}

// (b) Two tasks one weight apart (fc_weight's element (3, 0) zeroed in the second, every other
// input the same bytes): the reference's output moves in column 3 by x[r][0] * W[3][0] (at least
// 0.25, 2500 times the tolerance), and the candidate, given the weights as arguments, is correct
// against both, so its output moved the same way. A reference and a candidate given weights one
// element apart (the module's fc.weight from one tensor, the kernel's weight from another) fail.
void TestGpuTorch::oneWeightMovesReferenceAndCandidate() {
  const kwb::Task before = linearTask("linear-before", kRandomWeights);
  const kwb::Task after = linearTask("linear-after", kOneWeightZeroed);
  const auto &cb = before.configs.front();
  const auto &ca = after.configs.front();
  kwb::TorchRunRequest rb, ra;
  for (const std::uint64_t seed : {1, 2}) {
    rb.outputs.push_back({&cb, seed, false});
    ra.outputs.push_back({&ca, seed, false});
  }
  const auto runBefore = kwb::runTorchReference(before, rb, settings_);
  const auto runAfter = kwb::runTorchReference(after, ra, settings_);
  QVERIFY2(runBefore.ok, describe(runBefore).c_str());
  QVERIFY2(runAfter.ok, describe(runAfter).c_str());
  for (const std::uint64_t seed : {1, 2}) {
    const auto wb = kwb::test::inputValues(before, "fc_weight", cb, seed);
    const auto wa = kwb::test::inputValues(after, "fc_weight", ca, seed);
    const auto x = kwb::test::inputValues(before, "x", cb, seed);
    QCOMPARE(x, kwb::test::inputValues(after, "x", ca, seed));
    QCOMPARE(kwb::test::inputValues(before, "fc_bias", cb, seed), kwb::test::inputValues(after, "fc_bias", ca, seed));
    std::vector<std::size_t> changed;
    for (std::size_t i = 0; i < wb.size(); ++i)
      if (wb[i] != wa[i]) changed.push_back(i);
    QCOMPARE(changed, std::vector<std::size_t>{3 * 64});
    QCOMPARE(wa[3 * 64], 0.0);
    const auto yb = kwb::test::f32File(runBefore.outputs.at(kwb::torchJobKey({&cb, seed, false})).at("y"));
    const auto ya = kwb::test::f32File(runAfter.outputs.at(kwb::torchJobKey({&ca, seed, false})).at("y"));
    QCOMPARE(yb.size(), std::size_t(32));
    QCOMPARE(ya.size(), std::size_t(32));
    for (std::size_t r = 0; r < 8; ++r)
      for (std::size_t c = 0; c < 4; ++c) {
        const double moved = yb[r * 4 + c] - ya[r * 4 + c];
        const double want = c == 3 ? x[r * 64] * wb[3 * 64] : 0.0;
        QVERIFY2(std::abs(moved - want) <= 1e-5 * (1 + std::abs(yb[r * 4 + c])),
                 ("seed " + std::to_string(seed) + " y[" + std::to_string(r) + "][" + std::to_string(c) + "] moved " +
                  std::to_string(moved) + ", expected " + std::to_string(want)).c_str());
        if (c == 3) QVERIFY(moved >= 0.25);
      }
  }

  kwb::EvaluatorSettings settings;
  settings.torch = settings_;
  kwb::Evaluator evaluator(settings);
  kwb::EvaluationOptions options;
  options.configs = {"small"};
  options.freshSeed = false;
  const std::string candidate = kwb::test::kLinearKernel;
  for (const kwb::Task *task : {&before, &after}) {
    const auto result = evaluator.evaluate(*task, candidate, options);
    QVERIFY2(result.outcome == kwb::Outcome::Correct,
             (task->folder.filename().string() + ": " + result.message + "\n" + nlohmann::json(result).dump(1)).c_str());
    QCOMPARE(result.reference, std::string("pytorch"));
    QCOMPARE(result.configs.front().seeds.size(), std::size_t(2));
  }

  // The negative: the module loads constant weights, the kernel gets the same with element (3, 0)
  // zeroed: w_kernel as its weight (forward takes it and ignores it), fc_weight last, ignored.
  const kwb::Task apart = linearTask(
      "linear-apart", "{ kind = \"constant\", value = 0.75 }",
      kwb::test::inputTable("w_kernel", "[\"n_out\", \"n_in\"]", "",
                            "{ kind = \"constant\", value = 0.75, matrix = \"upper\", diagonal = -2 }"),
      "forward = [\"x\", \"w_kernel\"]\n",
      "\"x\", \"w_kernel\", \"fc_bias\", \"y\", \"batch\", \"n_in\", \"n_out\", \"fc_weight\"",
      kwb::test::fileVariant(kwb::test::outputDir() / "torch" / "linear-before" / "reference.py",
                             "def forward(self, x):", "def forward(self, x, w_kernel):"));
  std::string ignoring = candidate;
  ignoring.replace(ignoring.find("long long n_out)"), 16, "long long n_out, const float *ignored)");
  const auto result = evaluator.evaluate(apart, ignoring, options);
  QVERIFY2(result.outcome == kwb::Outcome::Incorrect, (result.message + "\n" + nlohmann::json(result).dump(1)).c_str());
  QCOMPARE(result.configs.front().reason, std::string("mismatch"));
  for (const auto &seed : result.configs.front().seeds) QVERIFY(!seed.passed);
}

// forward draws h0 = torch.randn(batch, n_out, device=x.device) and returns fc(x) + h0; the task
// gives h0 as draw 1. The candidate that adds h0 is correct against the reference for each seed
// (it got the same draw), the one that ignores it is not; timed, eager and torch.compile have
// figures (the draw is kept out of the compiled graph).
void TestGpuTorch::drawsReachReferenceAndCandidate() {
  std::string module = kwb::test::kLinearModule;
  module.replace(module.find("        return self.fc(x)\n"), 26,
                 "        h0 = torch.randn(x.size(0), self.fc.out_features, device=x.device)\n"
                 "        return self.fc(x) + h0\n");
  const kwb::Task task = linearTask(
      "linear-draw", kRandomWeights,
      "[tensors.h0]\ndraw = 1\ndtype = \"f32\"\nshape = [\"batch\", \"n_out\"]\nrole = \"in\"\n"
      "init = { kind = \"normal\", mean = 0.0, std = 1.0 }\n\n",
      {}, "\"x\", \"fc_weight\", \"fc_bias\", \"y\", \"batch\", \"n_in\", \"n_out\", \"h0\"", module);
  QCOMPARE(task.tensor("h0")->draw, 1);
  std::string adding = kwb::test::kLinearKernel;
  adding.replace(adding.find("long long n_out)"), 16, "long long n_out, const float *__restrict__ h0)");
  adding.replace(adding.find("y[i] = acc + b[c];"), 18, "y[i] = (acc + b[c]) + h0[i];");
  std::string ignoring = kwb::test::kLinearKernel;
  ignoring.replace(ignoring.find("long long n_out)"), 16, "long long n_out, const float *ignored)");

  kwb::EvaluatorSettings settings;
  settings.torch = settings_;
  kwb::Evaluator evaluator(settings);
  kwb::EvaluationOptions options;
  options.configs = {"small"};
  options.freshSeed = false;
  const auto right = evaluator.evaluate(task, adding, options);
  QVERIFY2(right.outcome == kwb::Outcome::Correct, (right.message + "\n" + nlohmann::json(right).dump(1)).c_str());
  QCOMPARE(right.reference, std::string("pytorch"));
  const auto wrong = evaluator.evaluate(task, ignoring, options);
  QVERIFY2(wrong.outcome == kwb::Outcome::Incorrect, (wrong.message + "\n" + nlohmann::json(wrong).dump(1)).c_str());
  QCOMPARE(wrong.configs.front().reason, std::string("mismatch"));

  options.time = true;
  options.timingCap = std::chrono::milliseconds(1000);
  const auto timed = evaluator.evaluate(task, adding, options);
  QVERIFY2(timed.outcome == kwb::Outcome::Correct, timed.message.c_str());
  const auto &co = timed.configs.front();
  QVERIFY2(co.torch.has_value(), timed.torchProblem.c_str());
  QVERIFY2(co.torch->eagerMs > 0, co.torch->eagerError.c_str());
  QVERIFY2(co.torch->compiledMs > 0, co.torch->compiledError.c_str());
  qInfo("linear + drawn h0, small: candidate %.4f ms, PyTorch eager %.4f ms, torch.compile %.4f ms",
        co.timing->candidate.median, co.torch->eagerMs, co.torch->compiledMs);
}

QTEST_GUILESS_MAIN(TestGpuTorch)
#include "tst_gpu_torch.moc"
