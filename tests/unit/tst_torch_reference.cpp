// The PyTorch reference process (core/eval/torch_reference.h) where PyTorch may be missing: no
// interpreter, an interpreter without torch (a real python3 started with -S, so no site
// packages), the helper script missing, and an evaluation whose reference is a PyTorch module
// ending in an error that says which and why; the helper's refusals of a bad spec (module state,
// forward's arguments, per-job init, the repeat check), with any python3.
// With a Python that has PyTorch (tests/helpers/torch_tasks.h; skipped, saying so, without one)
// real modules run on the CPU (TorchSettings::cpuForTests): module state loaded into parameters,
// buffers and tensor attributes and put back before every forward, forward's arguments in order
// with parameters as Python numbers, Model built per configuration, the module's own mode, the
// cache keyed by sizes and state mapping, the repeat check. The module's own failures (it raises,
// it returns the wrong shape), and a missing interpreter met by an evaluation on a device, need a
// GPU: tests/gpu/tst_gpu_torch.cpp.
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

#include "core/eval/evaluator.h"
#include "core/eval/torch_reference.h"
#include "core/process/child_process.h"
#include "core/task/manifest_parser.h"
#include "helpers/python3.h"
#include "helpers/test_files.h"
#include "helpers/torch_tasks.h"

namespace fs = std::filesystem;

namespace {

// A task whose reference is only a PyTorch module (a copy of softmax with its CUDA reference dropped).
fs::path torchOnlySoftmax(const fs::path &dir) {
  fs::create_directories(dir);
  const fs::path src = kwb::test::kernelsDir() / "softmax";
  for (const char *f : {"softmax.cu", "reference.py"}) fs::copy_file(src / f, dir / f, fs::copy_options::overwrite_existing);
  std::string manifest = kwb::test::readFile(src / "task.toml");
  const auto from = manifest.find("[reference]");
  const auto to = manifest.find("\n[", from + 1);
  manifest.replace(from, to - from, "[reference]\npython = \"reference.py\"\n");
  std::ofstream(dir / "task.toml", std::ios::trunc) << manifest;
  return dir;
}

// An executable shell script at `path`.
void script(const fs::path &path, const std::string &text) {
  std::ofstream(path, std::ios::trunc) << text;
  ::chmod(path.c_str(), 0755);
}

using kwb::test::python3;

// A task over sizes b and n: x [b, n] in, y [b, n] out, `more` manifest text (tensors, params),
// `reference` lines after python = "reference.py", the configurations `configs` (TOML).
std::string smallManifest(const std::string &more, const std::string &reference = {},
                          const std::string &configs = "[[configs]]\nname = \"small\"\nb = 4\nn = 3\n") {
  // The launch names every tensor: the kernel gets those `more` adds after x and y.
  std::string moreArgs;
  for (auto at = more.find("[tensors."); at != std::string::npos; at = more.find("[tensors.", at + 1))
    moreArgs += "\"" + more.substr(at + 9, more.find(']', at) - at - 9) + "\", ";
  return "name = \"small\"\ndescription = \"a small PyTorch-only task\"\nsizes = [\"b\", \"n\"]\nseeds = [1, 2, 3]\n\n" + configs +
         "\n" + kwb::test::inputTable("x", "[\"b\", \"n\"]", "", "{ kind = \"uniform\", low = -1.0, high = 1.0 }") +
         more +
         "[tensors.y]\ndtype = \"f32\"\nshape = [\"b\", \"n\"]\nrole = \"out\"\n"
         "tolerance = { rtol = 1e-5, atol = 1e-6 }\n\n"
         "[reference]\npython = \"reference.py\"\n" +
         reference +
         "\n[launch]\nkernel = \"k\"\ngrid = [\"b\"]\nblock = [32]\nargs = [\"x\", \"y\", " + moreArgs +
         "\"b\", \"n\"]\n"
         "\n[cost]\nflops = \"b * n\"\nbytes = \"8 * b * n\"\n"
         "\n[editor]\nstarter = \"k.cu\"\n";
}

const char *const kEmptyKernel =
    "extern \"C\" __global__ void k(const float *x, float *y, long long b, long long n) {}\n";

// The lines the helper reported, joined.
std::string joined(const std::vector<std::string> &lines) {
  std::string out;
  for (const auto &l : lines) out += l + "\n";
  return out;
}

std::size_t occurrences(const std::string &text, const std::string &what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

class TestTorchReference : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void torchOnlyTaskParses();
  void missingInterpreter();
  void interpreterWithoutTorch();
  void missingHelperScript();
  void evaluationSaysWhyTheReferenceDidNotRun();
  void cudaReferenceAskedOfATorchOnlyTask();
  void helperRefusesABadSpec_data();
  void helperRefusesABadSpec();
  // With PyTorch, on the CPU.
  void probeWithTorchAndNoDevice();
  void stateReachesTheModule();
  void forwardTakesTensorsAndParamsInOrder();
  void modelPerConfigurationAndCacheKeys();
  void moduleConstantsFollowTheConfiguration();
  void stateTheModuleLacks();
  void moduleKeepsItsMode();
  void stateIsPutBackBeforeEveryForward();
  void randomReferenceIsCaught_data();
  void randomReferenceIsCaught();
  void nondeterminismWithinToleranceIsFlagged();
  void drawsAreHandedToForward();
  void drawsThatDoNotMatchTheCalls_data();
  void drawsThatDoNotMatchTheCalls();
  void repeatCheckedOutputsAreCachedApart();

 private:
  // The module's outputs on the CPU for `seeds` of every configuration; progress lines into `lines`.
  kwb::TorchRun runOnCpu(const kwb::Task &task, const std::vector<std::uint64_t> &seeds, bool repeatCheck = false,
                         std::vector<std::string> *lines = nullptr);
  // skips the calling test (returns true) without a Python that has PyTorch.
  bool noTorch();
  std::vector<double> output(const kwb::TorchRun &run, const kwb::SizeConfig &config, std::uint64_t seed,
                             const std::string &tensor = "y");

  fs::path dir_;
  kwb::Task task_;
  std::string torchPython_, noTorchReason_;
  bool torchLooked_ = false;
};

void TestTorchReference::initTestCase() {
  dir_ = kwb::test::outputDir() / "torch-reference";
  fs::remove_all(dir_);
  task_ = kwb::loadTask(torchOnlySoftmax(dir_ / "softmax-torch"));
}

void TestTorchReference::torchOnlyTaskParses() {
  QVERIFY(!task_.reference.hasCuda());
  QCOMPARE(task_.reference.python.string(), std::string("reference.py"));
  QVERIFY(task_.launch.has_value());
}

void TestTorchReference::missingInterpreter() {
  kwb::TorchSettings settings;
  settings.python = (dir_ / "no-such-python").string();
  kwb::TorchRunRequest request;
  request.outputs.push_back({&task_.configs.front(), 1, false});
  const auto run = kwb::runTorchReference(task_, request, settings);
  QVERIFY(!run.ok);
  QCOMPARE(run.kind, std::string("no-python"));
  QVERIFY2(run.message.find("no-such-python") != std::string::npos, run.message.c_str());
  QVERIFY2(run.message.find("not an executable file") != std::string::npos, run.message.c_str());

  // A bare name looked up on PATH.
  settings.python = "kwb-no-such-python3";
  const auto onPath = kwb::runTorchReference(task_, request, settings);
  QCOMPARE(onPath.kind, std::string("no-python"));
  QVERIFY2(onPath.message.find("kwb-no-such-python3 is not on PATH") != std::string::npos, onPath.message.c_str());
  QVERIFY2(onPath.describe().find("the PyTorch reference: no-python:") == 0, onPath.describe().c_str());
}

void TestTorchReference::interpreterWithoutTorch() {
  const std::string python = python3();
  if (python.empty()) QSKIP("no python3 on PATH");
  // The real interpreter without its site packages: torch cannot be imported, whatever is installed.
  const fs::path wrapper = dir_ / "python-without-site";
  script(wrapper, "#!/bin/sh\nexec " + python + " -S \"$@\"\n");
  kwb::TorchSettings settings;
  settings.python = wrapper.string();
  settings.cacheDir = dir_ / "cache";
  kwb::TorchRunRequest request;
  request.outputs.push_back({&task_.configs.front(), 1, false});
  std::vector<std::string> progress;
  request.onProgress = [&](const std::string &line) { progress.push_back(line); };
  const auto run = kwb::runTorchReference(task_, request, settings);
  QVERIFY(!run.ok);
  QCOMPARE(run.kind, std::string("no-torch"));
  QVERIFY2(run.message.find("PyTorch is not installed") != std::string::npos, run.message.c_str());
  QVERIFY2(run.message.find("pip install torch") != std::string::npos, run.message.c_str());
  // Its inputs were written for it and removed after: only the (empty) cache folder is left.
  std::size_t files = 0;
  for (const auto &e : fs::recursive_directory_iterator(settings.cacheDir)) files += e.is_regular_file();
  QCOMPARE(files, std::size_t(0));

  std::string problem;
  const std::string probe = kwb::probeTorch(settings, problem);
  QVERIFY2(problem.empty(), problem.c_str());
  const auto j = nlohmann::json::parse(probe);
  QCOMPARE(j.value("ok", true), false);
  QCOMPARE(j.value("kind", std::string()), std::string("no-torch"));
}

void TestTorchReference::missingHelperScript() {
  const std::string python = python3();
  if (python.empty()) QSKIP("no python3 on PATH");
  kwb::TorchSettings settings;
  settings.python = python;
  settings.script = dir_ / "no-such-helper.py";
  settings.cacheDir = dir_ / "cache";
  kwb::TorchRunRequest request;
  request.outputs.push_back({&task_.configs.front(), 1, false});
  const auto run = kwb::runTorchReference(task_, request, settings);
  QVERIFY(!run.ok);
  // Python's own complaint, passed on: the helper never printed a result.
  QCOMPARE(run.kind, std::string("crashed"));
  QVERIFY2(run.message.find("no-such-helper.py") != std::string::npos, run.message.c_str());
}

void TestTorchReference::evaluationSaysWhyTheReferenceDidNotRun() {
  // Without a device the evaluation stops before the reference: not run, and no device named.
  // (With one, the module's process must run and a missing interpreter ends the evaluation with
  // that reason: tests/gpu/tst_gpu_torch.cpp, evaluationWithoutTheInterpreterSaysWhy.)
  kwb::EvaluatorSettings settings;
  settings.torch.python = (dir_ / "no-such-python").string();
  settings.useDevice = false;
  kwb::EvaluationOptions options;
  options.configs = {task_.configs.front().name};
  options.freshSeed = false;
  const auto source = kwb::test::readFile(dir_ / "softmax-torch" / "softmax.cu");
  const auto result = kwb::evaluate(task_, source, options, settings);
  QCOMPARE(result.reference, std::string("pytorch"));
  QCOMPARE(result.outcome, kwb::Outcome::NotRun);
  QVERIFY(result.device.empty());
}

void TestTorchReference::cudaReferenceAskedOfATorchOnlyTask() {
  kwb::EvaluationOptions options;
  options.reference = "cuda";
  kwb::EvaluatorSettings settings;
  settings.useDevice = false;
  try {
    kwb::evaluate(task_, "", options, settings);
    QFAIL("a CUDA reference was used that the task does not have");
  } catch (const std::invalid_argument &e) {
    QCOMPARE(std::string(e.what()),
             std::string("task 'softmax' has no CUDA reference (its reference is the PyTorch module reference.py)"));
  }
  options.reference = "numpy";
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::evaluate(task_, "", options, settings));
}

// The helper's own spec checks, before torch is imported (any python3): each refusal names the
// field and what is wrong.
void TestTorchReference::helperRefusesABadSpec_data() {
  QTest::addColumn<QString>("patch");  // a JSON merge into the good spec below ("jobs" replaces)
  QTest::addColumn<QString>("message");
  const std::string x = R"({"name": "x", "dtype": "f32", "shape": [2], "file": "/x", "role": "in"})";
  const std::string w = R"({"name": "w", "dtype": "f32", "shape": [2], "file": "/w", "role": "in", "state": "fc.weight"})";
  const std::string y = R"({"name": "y", "dtype": "f32", "shape": [2], "file": "/y", "role": "out"})";
  auto job = [&](const std::string &inputs, const std::string &extra = {}) {
    return QString::fromStdString(R"({"jobs": [{"id": "j", "inputs": [)" + inputs + R"(], "outputs": [)" + y + "]" +
                                  extra + "}]}");
  };
  QTest::newRow("state not a string")
      << job(x + R"(, {"name": "w", "dtype": "f32", "shape": [2], "file": "/w", "role": "in", "state": 5})")
      << "spec field jobs[0].inputs[1].state: not a non-empty string";
  QTest::newRow("state of an inout tensor")
      << job(R"({"name": "x", "dtype": "f32", "shape": [2], "file": "/x", "role": "inout", "state": "h0"})")
      << "spec field jobs[0].inputs[0].state: 'x' is module state ('h0'); only an \"in\" tensor can be";
  QTest::newRow("forward names a missing input")
      << QString(R"({"forward": ["x", "z"]})") << "spec field spec.forward[1]: 'z' is not an input of jobs[0] (its inputs: x, w)";
  QTest::newRow("forward names module state")
      << QString(R"({"forward": ["x", "w"]})")
      << "spec field spec.forward[1]: 'w' is module state ('fc.weight'), loaded into Model, not an argument of forward";
  QTest::newRow("an input neither state nor argument")
      << QString(R"({"forward": [{"name": "alpha", "value": 2}]})")
      << "spec field jobs[0].inputs[0]: 'x' is neither module state nor an argument of forward (spec.forward names no "
         "tensor)";
  QTest::newRow("a parameter that is not a number")
      << QString(R"({"forward": ["x", {"name": "alpha", "value": "2"}]})") << "spec field spec.forward[1].value: not a number";
  QTest::newRow("a parameter that is a boolean")
      << QString(R"({"forward": ["x", {"name": "alpha", "value": true}]})") << "spec field spec.forward[1].value: not a number";
  QTest::newRow("an argument twice") << QString(R"({"forward": ["x", "x"]})") << "spec field spec.forward[1]: 'x' appears twice";
  QTest::newRow("forward not a list") << QString(R"({"forward": "x"})") << "spec field spec.forward: must be a list or null";
  QTest::newRow("repeat_check not a boolean") << job(x + ", " + w, R"(, "repeat_check": "yes")")
                                              << "spec field jobs[0].repeat_check: not true or false";
  QTest::newRow("a job's init not a list") << job(x + ", " + w, R"(, "init": 3)") << "spec field jobs[0].init: must be a list or null";
  QTest::newRow("a draw of 0")
      << job(x + R"(, {"name": "h0", "dtype": "f32", "shape": [2], "file": "/h", "role": "in", "draw": 0})")
      << "spec field jobs[0].inputs[1].draw: must be an integer >= 1 (forward's random call it stands for)";
  QTest::newRow("a draw that is also state")
      << job(R"({"name": "w", "dtype": "f32", "shape": [2], "file": "/w", "role": "in", "state": "h0", "draw": 1})")
      << "spec field jobs[0].inputs[0].draw: 'w' is a draw; only an \"in\" tensor without state can be";
  QTest::newRow("draws with a gap")
      << job(x + R"(, {"name": "h0", "dtype": "f32", "shape": [2], "file": "/h", "role": "in", "draw": 2})")
      << "spec field jobs[0].inputs: the draws are [2]; expected 1, 2, ... each once (forward's random calls in order)";
  QTest::newRow("forward names a draw")
      << QString(R"({"forward": ["x", "h0"], "jobs": [{"id": "j", "outputs": [{"name": "y", "dtype": "f32", "shape": [2], )"
                 R"("file": "/y", "role": "out"}], "inputs": [{"name": "x", "dtype": "f32", "shape": [2], "file": "/x", "role": "in"}, )"
                 R"({"name": "h0", "dtype": "f32", "shape": [2], "file": "/h", "role": "in", "draw": 1}]}]})")
      << "spec field spec.forward[1]: 'h0' is draw 1, handed to forward's random call, not an argument of forward";
  QTest::newRow("timing on the cpu")
      << QString::fromStdString(R"({"timings": [{"id": "t", "inputs": [)" + x + ", " + w + R"(], "modes": ["eager"]}]})")
      << "spec field spec.timings: timing needs a CUDA device (\"device\": \"cpu\" is for tests of the reference only)";
}

void TestTorchReference::helperRefusesABadSpec() {
  QFETCH(QString, patch);
  QFETCH(QString, message);
  const std::string python = python3();
  if (python.empty()) QSKIP("no python3 on PATH");
  std::string problem;
  const auto helper = kwb::bundledPythonScript("kwb_torch_reference.py", problem);
  QVERIFY2(helper, problem.c_str());
  nlohmann::json spec = nlohmann::json::parse(R"({"module": "/no/such/module.py", "device": "cpu", "forward": ["x"],
    "jobs": [{"id": "j", "outputs": [{"name": "y", "dtype": "f32", "shape": [2], "file": "/y", "role": "out"}],
              "inputs": [{"name": "x", "dtype": "f32", "shape": [2], "file": "/x", "role": "in"},
                         {"name": "w", "dtype": "f32", "shape": [2], "file": "/w", "role": "in", "state": "fc.weight"}]}]})");
  spec.merge_patch(nlohmann::json::parse(patch.toStdString()));
  const fs::path file = dir_ / "bad-spec.json";
  std::ofstream(file, std::ios::trunc) << spec.dump();
  kwb::ChildProcessRequest child;
  child.argv = {python, helper->string(), file.string()};
  const auto out = kwb::runChildProcess(child);
  QCOMPARE(out.exitCode, 2);
  const auto at = out.output.find("{\"result\"");
  QVERIFY2(at != std::string::npos, out.output.c_str());
  const auto result = nlohmann::json::parse(out.output.substr(at, out.output.find('\n', at) - at))["result"];
  QCOMPARE(result.value("kind", std::string()), std::string("bad-spec"));
  QCOMPARE(QString::fromStdString(result.value("message", std::string())), message);
}

bool TestTorchReference::noTorch() {
  if (!torchLooked_) {
    torchPython_ = kwb::test::torchPython(noTorchReason_);
    torchLooked_ = true;
  }
  return torchPython_.empty();
}

// The probe of a PyTorch that sees no CUDA device says "device": null; that is an answer, not an
// exception (the import dialog's check waited forever on one).
void TestTorchReference::probeWithTorchAndNoDevice() {
  if (noTorch()) QSKIP(noTorchReason_.c_str());
  kwb::TorchSettings settings;
  settings.python = torchPython_;
  std::string problem;
  std::string probe;
  try {
    probe = kwb::probeTorch(settings, problem);
  } catch (const std::exception &e) {
    QFAIL(e.what());
  }
  QVERIFY2(problem.empty(), problem.c_str());
  const auto j = nlohmann::json::parse(probe);
  QCOMPARE(j.value("ok", false), true);
  QVERIFY(j["torch"].is_string() && !j["torch"].get<std::string>().empty());
  QVERIFY(j["device"].is_null() || j["device"].is_string());
}

kwb::TorchRun TestTorchReference::runOnCpu(const kwb::Task &task, const std::vector<std::uint64_t> &seeds,
                                           bool repeatCheck, std::vector<std::string> *lines) {
  kwb::TorchSettings settings;
  settings.python = torchPython_;
  settings.cacheDir = dir_ / "cpu-cache";
  settings.cpuForTests = true;
  kwb::TorchRunRequest request;
  for (const auto &config : task.configs)
    for (const auto seed : seeds) request.outputs.push_back({&config, seed, false});
  request.repeatCheck = repeatCheck;
  if (lines) request.onProgress = [lines](const std::string &line) { lines->push_back(line); };
  return kwb::runTorchReference(task, request, settings);
}

std::vector<double> TestTorchReference::output(const kwb::TorchRun &run, const kwb::SizeConfig &config,
                                               std::uint64_t seed, const std::string &tensor) {
  const auto it = run.outputs.find(kwb::torchJobKey({&config, seed, false}));
  if (it == run.outputs.end() || !it->second.count(tensor)) return {};
  return kwb::test::f32File(it->second.at(tensor));
}

using kwb::test::inputTable;

#define REQUIRE_TORCH()                                   \
  do {                                                    \
    if (noTorch()) QSKIP(noTorchReason_.c_str());         \
  } while (false)

// The Linear task: the module's output is x @ W^T + b of the very input bytes (its own random
// init would give anything else), for each seed; Model(n_in, n_out) built once.
void TestTorchReference::stateReachesTheModule() {
  REQUIRE_TORCH();
  const auto dir = kwb::test::writeTorchTask(dir_ / "linear",
                                             kwb::test::linearManifest("{ kind = \"uniform\", low = 0.5, high = 1.0 }"),
                                             kwb::test::kLinearModule, {{"linear.cu", kwb::test::kLinearKernel}});
  const kwb::Task task = kwb::loadTask(dir);
  QCOMPARE(task.tensor("fc_weight")->state, std::string("fc.weight"));
  std::vector<std::string> lines;
  const auto run = runOnCpu(task, {1, 2}, false, &lines);
  QVERIFY2(run.ok, (run.describe() + "\n" + run.traceback).c_str());
  const auto &c = task.configs.front();
  for (const std::uint64_t seed : {1, 2}) {
    const auto want = kwb::test::linearOf(kwb::test::inputValues(task, "x", c, seed),
                                          kwb::test::inputValues(task, "fc_weight", c, seed),
                                          kwb::test::inputValues(task, "fc_bias", c, seed), 8, 64, 4);
    const auto problem = kwb::test::valuesMismatch(output(run, c, seed), want);
    QVERIFY2(problem.empty(), ("seed " + std::to_string(seed) + ": " + problem).c_str());
  }
  const std::string text = joined(lines);
  QCOMPARE(occurrences(text, "building Model(64, 4)"), std::size_t(1));
  QVERIFY2(text.find("does not give") == std::string::npos, text.c_str());  // every state given
}

// [reference] forward = ["alpha", "x", "k"]: a float parameter as a Python float, an integer one
// as an int (the module raises otherwise), in that order.
void TestTorchReference::forwardTakesTensorsAndParamsInOrder() {
  REQUIRE_TORCH();
  const auto dir = kwb::test::writeTorchTask(
      dir_ / "forward-order", smallManifest("[params]\nalpha = 0.5\nk = 3\n\n", "forward = [\"alpha\", \"x\", \"k\"]\n"),
      "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
      "    def forward(self, alpha, x, k):\n"
      "        if type(alpha) is not float or type(k) is not int:\n"
      "            raise TypeError(f'alpha is {type(alpha).__name__}, k is {type(k).__name__}')\n"
      "        return x * alpha + k\n",
      {{"k.cu", kEmptyKernel}});
  const kwb::Task task = kwb::loadTask(dir);
  const auto run = runOnCpu(task, {1});
  QVERIFY2(run.ok, (run.describe() + "\n" + run.traceback).c_str());
  const auto &c = task.configs.front();
  auto want = kwb::test::inputValues(task, "x", c, 1);
  for (auto &v : want) v = static_cast<float>(static_cast<float>(v) * 0.5f) + 3.0f;
  const auto problem = kwb::test::valuesMismatch(output(run, c, 1), want);
  QVERIFY2(problem.empty(), problem.c_str());
}

// init = ["n"] names a size: Model(n) per configuration (once each, whatever the seeds), its
// weights' shapes following. The cache knows a configuration by its sizes, not only its name, and
// knows which input is which state.
void TestTorchReference::modelPerConfigurationAndCacheKeys() {
  REQUIRE_TORCH();
  const std::string weights =
      inputTable("w1", "[\"n\", \"n\"]", "fc.weight", "{ kind = \"uniform\", low = -1.0, high = 1.0 }") +
      inputTable("w2", "[\"n\", \"n\"]", "fc2.weight", "{ kind = \"uniform\", low = -1.0, high = 1.0 }");
  const auto dir = kwb::test::writeTorchTask(
      dir_ / "per-config", smallManifest(weights, "init = [\"n\"]\n",
                                         "[[configs]]\nname = \"four\"\nb = 2\nn = 4\n\n"
                                         "[[configs]]\nname = \"eight\"\nb = 2\nn = 8\n"),
      "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
      "    def __init__(self, n):\n"
      "        super().__init__()\n"
      "        self.fc = nn.Linear(n, n, bias=False)\n"
      "        self.fc2 = nn.Linear(n, n, bias=False)\n"
      "    def forward(self, x):\n"
      "        return self.fc2(self.fc(x))\n",
      {{"k.cu", kEmptyKernel}});
  kwb::Task task = kwb::loadTask(dir);
  // y = x @ first^T @ second^T over [b, n].
  auto expect = [&](const kwb::SizeConfig &c, std::uint64_t seed, const char *first, const char *second) {
    const std::int64_t b = c.values.at("b"), n = c.values.at("n");
    const std::vector<double> zero(static_cast<std::size_t>(n), 0.0);
    auto h = kwb::test::linearOf(kwb::test::inputValues(task, "x", c, seed), kwb::test::inputValues(task, first, c, seed),
                                 zero, b, n, n);
    for (auto &v : h) v = static_cast<float>(v);
    return kwb::test::linearOf(h, kwb::test::inputValues(task, second, c, seed), zero, b, n, n);
  };
  auto check = [&](const kwb::TorchRun &run, const char *first, const char *second) {
    for (const auto &c : task.configs)
      for (const std::uint64_t seed : {1, 2}) {
        const auto problem = kwb::test::valuesMismatch(output(run, c, seed), expect(c, seed, first, second));
        if (!problem.empty()) return c.name + " seed " + std::to_string(seed) + ": " + problem;
      }
    return std::string();
  };

  std::vector<std::string> lines;
  const auto first = runOnCpu(task, {1, 2}, false, &lines);
  QVERIFY2(first.ok, (first.describe() + "\n" + first.traceback).c_str());
  QCOMPARE(first.computedJobs, std::size_t(4));
  QVERIFY2(check(first, "w1", "w2").empty(), check(first, "w1", "w2").c_str());
  QCOMPARE(occurrences(joined(lines), "building Model(4)"), std::size_t(1));
  QCOMPARE(occurrences(joined(lines), "building Model(8)"), std::size_t(1));
  QCOMPARE(occurrences(joined(lines), "building Model("), std::size_t(2));

  const auto again = runOnCpu(task, {1, 2});
  QCOMPARE(again.cachedJobs, std::size_t(4));

  // The same configuration name with other sizes (as --set makes one): computed anew, Model(6).
  task.configs.front().values["n"] = 6;
  lines.clear();
  const auto resized = runOnCpu(task, {1, 2}, false, &lines);
  QVERIFY2(resized.ok, (resized.describe() + "\n" + resized.traceback).c_str());
  QCOMPARE(resized.computedJobs, std::size_t(2));
  QCOMPARE(resized.cachedJobs, std::size_t(2));
  QVERIFY2(check(resized, "w1", "w2").empty(), check(resized, "w1", "w2").c_str());
  QCOMPARE(occurrences(joined(lines), "building Model(6)"), std::size_t(1));

  // The weights swapped between the layers (the task built in code, its manifest unchanged).
  for (auto &t : task.tensors) {
    if (t.name == "w1") t.state = "fc2.weight";
    else if (t.name == "w2") t.state = "fc.weight";
  }
  const auto swapped = runOnCpu(task, {1, 2});
  QVERIFY2(swapped.ok, (swapped.describe() + "\n" + swapped.traceback).c_str());
  QCOMPARE(swapped.computedJobs, std::size_t(4));
  QVERIFY2(check(swapped, "w2", "w1").empty(), check(swapped, "w2", "w1").c_str());
}

// [reference] module_constants = ["n"]: the module file is executed per configuration with its
// top-level n set to the configuration's, so a shape it derives (`shape = (n,)`, a tensor made in
// __init__) and get_init_inputs()' arguments follow: y = x + 10 n.
void TestTorchReference::moduleConstantsFollowTheConfiguration() {
  REQUIRE_TORCH();
  const auto dir = kwb::test::writeTorchTask(
      dir_ / "module-constants",
      smallManifest("", "module_constants = [\"n\"]\n",
                    "[[configs]]\nname = \"three\"\nb = 2\nn = 3\n\n[[configs]]\nname = \"five\"\nb = 2\nn = 5\n"),
      "import torch\nimport torch.nn as nn\n\nn = 4\nshape = (n,)\n\n"
      "class Model(nn.Module):\n"
      "    def __init__(self, k):\n"
      "        super().__init__()\n"
      "        self.h0 = torch.ones(shape) * k\n"
      "    def forward(self, x):\n"
      "        return x + self.h0\n\n"
      "def get_init_inputs():\n"
      "    return [n * 10]\n",
      {{"k.cu", kEmptyKernel}});
  const kwb::Task task = kwb::loadTask(dir);
  QCOMPARE(task.reference.moduleConstants, std::vector<std::string>{"n"});
  std::vector<std::string> lines;
  const auto run = runOnCpu(task, {1, 2}, false, &lines);
  QVERIFY2(run.ok, (run.describe() + "\n" + run.traceback).c_str());
  for (const auto &c : task.configs)
    for (const std::uint64_t seed : {1, 2}) {
      auto want = kwb::test::inputValues(task, "x", c, seed);
      for (auto &v : want) v = static_cast<float>(v + 10.0 * c.values.at("n"));
      const auto problem = kwb::test::valuesMismatch(output(run, c, seed), want);
      QVERIFY2(problem.empty(), (c.name + ": " + problem).c_str());
    }
  const std::string text = joined(lines);
  QCOMPARE(occurrences(text, "building Model(30) [n = 3]"), std::size_t(1));
  QCOMPARE(occurrences(text, "building Model(50) [n = 5]"), std::size_t(1));
}

// A state key the module does not have, and one of another shape: errors naming the input, the
// key, the module's keys or shape, and the task's.
void TestTorchReference::stateTheModuleLacks() {
  REQUIRE_TORCH();
  std::string manifest = kwb::test::linearManifest("{ kind = \"uniform\", low = 0.5, high = 1.0 }");
  manifest.replace(manifest.find("state = \"fc.weight\""), 19, "state = \"fc.wieght\"");
  auto dir = kwb::test::writeTorchTask(dir_ / "unknown-state", manifest, kwb::test::kLinearModule,
                                       {{"linear.cu", kwb::test::kLinearKernel}});
  const auto unknown = runOnCpu(kwb::loadTask(dir), {1});
  QVERIFY(!unknown.ok);
  QCOMPARE(unknown.kind, std::string("module-state"));
  QCOMPARE(unknown.message, std::string("input fc_weight: state 'fc.wieght' is not a parameter, buffer or tensor "
                                        "attribute of Model (its parameters and buffers: fc.weight, fc.bias)"));
  QCOMPARE(unknown.job, std::string("small/seed 1"));

  std::string swapped = kwb::test::kLinearModule;
  swapped.replace(swapped.find("nn.Linear(n_in, n_out)"), 22, "nn.Linear(n_out, n_in)");
  dir = kwb::test::writeTorchTask(dir_ / "state-shape",
                                  kwb::test::linearManifest("{ kind = \"uniform\", low = 0.5, high = 1.0 }"), swapped,
                                  {{"linear.cu", kwb::test::kLinearKernel}});
  const auto shape = runOnCpu(kwb::loadTask(dir), {1});
  QVERIFY(!shape.ok);
  QCOMPARE(shape.kind, std::string("module-state"));
  QCOMPARE(shape.message, std::string("input fc_weight: Model's 'fc.weight' is [64, 4] f32, the task's is [4, 64] f32; "
                                      "make the task's shape and dtype those of the module"));
}

// No eval(): a BatchNorm left in training mode (nn.Module's default) normalises by the batch's
// statistics, and says what the task does not give; one whose constructor calls eval() uses the
// running statistics the task gives.
void TestTorchReference::moduleKeepsItsMode() {
  REQUIRE_TORCH();
  const std::string configs = "[[configs]]\nname = \"small\"\nb = 16\nn = 3\n";
  const std::string module = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                             "    def __init__(self):\n"
                             "        super().__init__()\n"
                             "        self.bn = nn.BatchNorm1d(3)\n"
                             "    def forward(self, x):\n"
                             "        return self.bn(x)\n";
  auto dir = kwb::test::writeTorchTask(dir_ / "training", smallManifest("", "", configs), module, {{"k.cu", kEmptyKernel}});
  kwb::Task task = kwb::loadTask(dir);
  std::vector<std::string> lines;
  const auto training = runOnCpu(task, {1}, false, &lines);
  QVERIFY2(training.ok, (training.describe() + "\n" + training.traceback).c_str());
  const auto y = output(training, task.configs.front(), 1);
  QCOMPARE(y.size(), std::size_t(48));
  for (int c = 0; c < 3; ++c) {
    double mean = 0;
    for (int r = 0; r < 16; ++r) mean += y[r * 3 + c] / 16;
    QVERIFY2(std::abs(mean) < 1e-5, ("column " + std::to_string(c) + " mean " + std::to_string(mean)).c_str());
  }
  const std::string text = joined(lines);
  QVERIFY2(text.find("Model() built") != std::string::npos && text.find("training mode") != std::string::npos,
           text.c_str());
  QVERIFY2(text.find("module state the task does not give, kept as Model built it: bn.weight, bn.bias, "
                     "bn.running_mean, bn.running_var, bn.num_batches_tracked") != std::string::npos,
           text.c_str());

  std::string evalModule = module;
  evalModule.replace(evalModule.find("self.bn = nn.BatchNorm1d(3)\n"), 28,
                     "self.bn = nn.BatchNorm1d(3)\n        self.eval()\n");
  const std::string stats =
      inputTable("mean", "[\"n\"]", "bn.running_mean", "{ kind = \"constant\", value = 0.25 }") +
      inputTable("var", "[\"n\"]", "bn.running_var", "{ kind = \"constant\", value = 4.0 }");
  dir = kwb::test::writeTorchTask(dir_ / "eval", smallManifest(stats, "", configs), evalModule, {{"k.cu", kEmptyKernel}});
  task = kwb::loadTask(dir);
  lines.clear();
  const auto eval = runOnCpu(task, {1}, false, &lines);
  QVERIFY2(eval.ok, (eval.describe() + "\n" + eval.traceback).c_str());
  QVERIFY2(joined(lines).find("eval mode") != std::string::npos, joined(lines).c_str());
  auto want = kwb::test::inputValues(task, "x", task.configs.front(), 1);
  for (auto &v : want) v = (v - 0.25) / std::sqrt(4.0 + 1e-5);
  const auto problem = kwb::test::valuesMismatch(output(eval, task.configs.front(), 1), want);
  QVERIFY2(problem.empty(), problem.c_str());
}

// forward changes a buffer the task gives, one it does not, and reads a tensor attribute the task
// replaces: every job (and the repeat check's second run) starts from the same state, so every
// seed's output is x + (2 + 1) + 10 h0 + 100 x 1.
void TestTorchReference::stateIsPutBackBeforeEveryForward() {
  REQUIRE_TORCH();
  const std::string state =
      inputTable("offset", "[\"n\"]", "offset", "{ kind = \"constant\", value = 2.0 }") +
      inputTable("h0", "[\"n\"]", "h0", "{ kind = \"uniform\", low = -1.0, high = 1.0 }");
  const auto dir = kwb::test::writeTorchTask(
      dir_ / "reload", smallManifest(state, "init = [\"n\"]\n"),
      "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
      "    def __init__(self, n):\n"
      "        super().__init__()\n"
      "        self.register_buffer('calls', torch.zeros(1))\n"
      "        self.register_buffer('offset', torch.zeros(n))\n"
      "        self.h0 = torch.zeros(n)\n"
      "    def forward(self, x):\n"
      "        self.calls += 1\n"
      "        self.offset += 1\n"
      "        return x + self.offset + self.h0 * 10 + self.calls * 100\n",
      {{"k.cu", kEmptyKernel}});
  const kwb::Task task = kwb::loadTask(dir);
  std::vector<std::string> lines;
  const auto run = runOnCpu(task, {1, 2, 3}, true, &lines);
  QVERIFY2(run.ok, (run.describe() + "\n" + run.traceback).c_str());
  QVERIFY2(joined(lines).find("kept as Model built it: calls\n") != std::string::npos, joined(lines).c_str());
  const auto &c = task.configs.front();
  for (const std::uint64_t seed : {1, 2, 3}) {
    const auto x = kwb::test::inputValues(task, "x", c, seed);
    const auto h0 = kwb::test::inputValues(task, "h0", c, seed);
    std::vector<double> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      want[i] = static_cast<float>(static_cast<float>(static_cast<float>(x[i] + 3.0f) + static_cast<float>(h0[i % 3] * 10.0f)) + 100.0f);
    const auto problem = kwb::test::valuesMismatch(output(run, c, seed), want);
    QVERIFY2(problem.empty(), ("seed " + std::to_string(seed) + ": " + problem).c_str());
  }
}

void TestTorchReference::randomReferenceIsCaught_data() {
  QTest::addColumn<QString>("forward");
  QTest::newRow("dropout in training mode") << "return nn.functional.dropout(x, 0.5, self.training)";
  QTest::newRow("torch.rand in forward") << "return x + torch.rand_like(x)";
}

// A reference whose output is random: with the repeat check, a "nondeterministic" failure naming
// the output, how many elements and by how much, and the likely causes; without it, no complaint.
void TestTorchReference::randomReferenceIsCaught() {
  QFETCH(QString, forward);
  REQUIRE_TORCH();
  const auto dir = kwb::test::writeTorchTask(
      dir_ / ("random-" + std::string(QTest::currentDataTag())),
      smallManifest("", "", "[[configs]]\nname = \"small\"\nb = 64\nn = 64\n"),
      "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
      "    def forward(self, x):\n"
      "        " + forward.toStdString() + "\n",
      {{"k.cu", kEmptyKernel}});
  const kwb::Task task = kwb::loadTask(dir);
  const auto checked = runOnCpu(task, {1}, true);
  QVERIFY(!checked.ok);
  QCOMPARE(checked.kind, std::string("nondeterministic"));
  QCOMPARE(checked.job, std::string("small/seed 1"));
  for (const char *part : {"forward run twice on the same inputs (module state reloaded) disagrees with itself: output y "
                           "differs in ",
                           " of 4096 elements (max abs difference ", "dropout (p > 0) in training mode",
                           "random operations in forward", "torch.use_deterministic_algorithms(True) may help"})
    QVERIFY2(checked.message.find(part) != std::string::npos, (std::string(part) + "\n" + checked.message).c_str());
  const auto unchecked = runOnCpu(task, {1}, false);
  QVERIFY2(unchecked.ok, unchecked.describe().c_str());
}

// A reference whose runs differ by less than the output's tolerance (rtol 1e-5, atol 1e-6: atomics
// adding in another order do that) is flagged in the progress, not failed; the first run's
// outputs are the reference.
void TestTorchReference::nondeterminismWithinToleranceIsFlagged() {
  REQUIRE_TORCH();
  const auto dir = kwb::test::writeTorchTask(
      dir_ / "within-tolerance", smallManifest("", "", "[[configs]]\nname = \"small\"\nb = 64\nn = 64\n"),
      "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
      "    def forward(self, x):\n"
      "        return x + torch.rand_like(x) * 1e-8\n",
      {{"k.cu", kEmptyKernel}});
  const kwb::Task task = kwb::loadTask(dir);
  std::vector<std::string> lines;
  const auto checked = runOnCpu(task, {1}, true, &lines);
  QVERIFY2(checked.ok, checked.describe().c_str());
  QVERIFY2(joined(lines).find("forward ran twice, NONDETERMINISTIC within the task's tolerance: y in ") !=
               std::string::npos,
           joined(lines).c_str());
}

namespace {
// x [b, n] and two draws: h0 [b, n] (draw 1) and c0 [n] (draw 2).
const char *const kDrawTensors =
    "[tensors.h0]\ndraw = 1\ndtype = \"f32\"\nshape = [\"b\", \"n\"]\nrole = \"in\"\n"
    "init = { kind = \"normal\", mean = 0.0, std = 1.0 }\n\n"
    "[tensors.c0]\ndraw = 2\ndtype = \"f32\"\nshape = [\"n\"]\nrole = \"in\"\n"
    "init = { kind = \"normal\", mean = 0.0, std = 1.0 }\n\n";

std::string drawModule(const std::string &body) {
  return "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
         "    def forward(self, x, h0=None):\n" + body;
}
}  // namespace

// forward draws h0 and c0 itself (torch.randn, torch.randn_like): the reference hands it the task's
// draw tensors, so its output is x * 2 + h0 - c0 of the very input bytes, the same run after run
// (the repeat check passes bit for bit).
void TestTorchReference::drawsAreHandedToForward() {
  REQUIRE_TORCH();
  const auto dir = kwb::test::writeTorchTask(
      dir_ / "draws", smallManifest(kDrawTensors),
      drawModule("        if h0 is None:\n"
                 "            h0 = torch.randn(x.shape[0], x.size(1), device=x.device)\n"
                 "        c0 = torch.randn_like(x[0])\n"
                 "        return x * 2 + h0 - c0\n"),
      {{"k.cu", "extern \"C\" __global__ void k(const float *x, float *y, const float *h0, const float *c0, "
                "long long b, long long n) {}\n"}});
  const kwb::Task task = kwb::loadTask(dir);
  QCOMPARE(task.tensor("h0")->draw, 1);
  QCOMPARE(task.tensor("c0")->draw, 2);
  QCOMPARE(kwb::forwardArguments(task), std::vector<std::string>{"x"});
  std::vector<std::string> lines;
  const auto run = runOnCpu(task, {1, 2}, true, &lines);
  QVERIFY2(run.ok, (run.describe() + "\n" + run.traceback).c_str());
  QVERIFY2(joined(lines).find("forward ran twice, the same outputs bit for bit") != std::string::npos,
           joined(lines).c_str());
  const auto &c = task.configs.front();
  for (const std::uint64_t seed : {1, 2}) {
    const auto x = kwb::test::inputValues(task, "x", c, seed);
    const auto h0 = kwb::test::inputValues(task, "h0", c, seed);
    const auto c0 = kwb::test::inputValues(task, "c0", c, seed);
    QCOMPARE(c0.size(), std::size_t(3));
    std::vector<double> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      want[i] = static_cast<float>(static_cast<float>(static_cast<float>(x[i] * 2.0f) + static_cast<float>(h0[i])) -
                                   static_cast<float>(c0[i % 3]));
    const auto problem = kwb::test::valuesMismatch(output(run, c, seed), want);
    QVERIFY2(problem.empty(), ("seed " + std::to_string(seed) + ": " + problem).c_str());
  }
}

void TestTorchReference::drawsThatDoNotMatchTheCalls_data() {
  QTest::addColumn<QString>("body");
  QTest::addColumn<QString>("message");
  QTest::newRow("more calls than draws")
      << "        return x + torch.randn_like(x) + torch.randn(3) + torch.rand(4, 3)\n"
      << "forward's random call 3 (torch.rand) has no draw: the task gives 2 (draw = 1 .. 2)";
  QTest::newRow("fewer calls than draws")
      << "        return x + torch.randn_like(x)\n" << "forward made 1 random call(s); the task gives 2 draw(s) (draw = 1 .. 2)";
  QTest::newRow("another shape")
      << "        return x + torch.randn_like(x) + torch.randn(x.shape[1] + 1)[:3]\n"
      << "forward's random call 2 (torch.randn) asks for [4] f32; the task's draw 2 (c0) is [3] f32: make the task's "
         "shape and dtype the call's";
  QTest::newRow("another dtype")
      << "        return x + torch.randn_like(x) + torch.randn(3, dtype=torch.float64)\n"
      << "forward's random call 2 (torch.randn) asks for [3] f64; the task's draw 2 (c0) is [3] f32: make the task's "
         "shape and dtype the call's";
}

// A forward whose random calls are not the task's draws fails with "draw-mismatch", saying which
// call and what it asked for.
void TestTorchReference::drawsThatDoNotMatchTheCalls() {
  QFETCH(QString, body);
  QFETCH(QString, message);
  REQUIRE_TORCH();
  const auto dir = kwb::test::writeTorchTask(dir_ / ("draws-" + std::string(QTest::currentDataTag())),
                                             smallManifest(kDrawTensors), drawModule(body.toStdString()),
                                             {{"k.cu", kEmptyKernel}});
  const auto run = runOnCpu(kwb::loadTask(dir), {1});
  QVERIFY(!run.ok);
  QCOMPARE(run.kind, std::string("draw-mismatch"));
  QCOMPARE(run.job, std::string("small/seed 1"));
  QCOMPARE(QString::fromStdString(run.message), message);
}

// Outputs computed without the repeat check do not answer a run that wants it; outputs computed
// with it answer both.
void TestTorchReference::repeatCheckedOutputsAreCachedApart() {
  REQUIRE_TORCH();
  const auto dir = kwb::test::writeTorchTask(dir_ / "repeat-cache", smallManifest(""),
                                             "import torch.nn as nn\n\nclass Model(nn.Module):\n"
                                             "    def forward(self, x):\n        return x * 2\n",
                                             {{"k.cu", kEmptyKernel}});
  const kwb::Task task = kwb::loadTask(dir);
  const auto plain = runOnCpu(task, {1}, false);
  QVERIFY2(plain.ok, plain.describe().c_str());
  QCOMPARE(plain.computedJobs, std::size_t(1));
  std::vector<std::string> lines;
  const auto checked = runOnCpu(task, {1}, true, &lines);
  QVERIFY2(checked.ok, checked.describe().c_str());
  QCOMPARE(checked.computedJobs, std::size_t(1));
  QVERIFY2(joined(lines).find("forward ran twice, the same outputs bit for bit") != std::string::npos,
           joined(lines).c_str());
  QCOMPARE(runOnCpu(task, {1}, true).cachedJobs, std::size_t(1));
  QCOMPARE(runOnCpu(task, {1}, false).cachedJobs, std::size_t(1));
}

QTEST_GUILESS_MAIN(TestTorchReference)
#include "tst_torch_reference.moc"
