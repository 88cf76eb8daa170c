// The PyTorch reference process (core/eval/torch_reference.h) where PyTorch may be missing: no
// interpreter, an interpreter without torch (a real python3 started with -S, so no site
// packages), the helper script missing, and an evaluation whose reference is a PyTorch module
// ending in an error that says which and why. The module's own failures (it raises, it returns
// the wrong shape), and a missing interpreter met by an evaluation on a device, need a GPU:
// tests/gpu/tst_gpu_torch.cpp.
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

#include "core/eval/evaluator.h"
#include "core/eval/torch_reference.h"
#include "core/task/manifest_parser.h"
#include "helpers/python3.h"
#include "helpers/test_files.h"

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

 private:
  fs::path dir_;
  kwb::Task task_;
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

QTEST_GUILESS_MAIN(TestTorchReference)
#include "tst_torch_reference.moc"
