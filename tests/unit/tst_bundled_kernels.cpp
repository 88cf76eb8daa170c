// Every bundled task's reference and starter compile through the production compiler (NVRTC,
// the path device-only candidates take) for sm_90, for every combination of the task's
// tunables, and the compiled code holds the kernel the manifest names. Every task has a lineage
// (naive to expert, each step's header saying what it adds) whose every step compiles with its
// own launch, without spilling registers in its last (expert) step, and launches on an H100/H200
// (sm_90 limits). Needs the CUDA toolkit's NVRTC (and nvcc for host-launcher steps), not a GPU.
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/compile/compiler.h"
#include "core/compile/diagnostics.h"
#include "core/compile/arch_limits.h"
#include "core/compile/occupancy.h"
#include "core/eval/evaluator.h"
#include "core/lineage/lineage.h"
#include "core/task/task_catalog.h"

namespace {

std::string readFile(const std::filesystem::path &p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every combination of the tunables' values (one empty set when there are none).
std::vector<std::map<std::string, std::int64_t>> tunableCombinations(const std::vector<kwb::Tunable> &tunables) {
  std::vector<std::map<std::string, std::int64_t>> out{{}};
  for (const auto &t : tunables) {
    std::vector<std::map<std::string, std::int64_t>> next;
    for (const auto &partial : out)
      for (auto v : t.values) {
        auto values = partial;
        values[t.name] = v;
        next.push_back(values);
      }
    out = next;
  }
  return out;
}

std::string label(const std::map<std::string, std::int64_t> &values) {
  std::string s;
  for (const auto &[name, v] : values) s += " -D" + name + "=" + std::to_string(v);
  return s;
}

}  // namespace

class TestBundledKernels : public QObject {
  Q_OBJECT
 private slots:
  void compileEverySource_data() {
    QTest::addColumn<QString>("folder");
    const auto entries = kwb::listTasks(KWB_SOURCE_DIR "/kernels");
    QVERIFY(entries.size() >= 2);
    for (const auto &e : entries) QTest::newRow(e.folder.filename().c_str()) << QString::fromStdString(e.folder.string());
  }

  void lineageStepsCompile_data() { compileEverySource_data(); }

  void lineageStepsCompile() {
    QFETCH(QString, folder);
    if (!kwb::NvrtcCompiler::shared().available())
      QSKIP(qPrintable("NVRTC is not available: " + QString::fromStdString(kwb::NvrtcCompiler::shared().problem())));
    const auto entries = kwb::listTasks(folder.toStdString());
    QVERIFY2(entries.size() == 1 && entries[0].task, "not a valid task");
    const kwb::Task &task = *entries[0].task;
    QVERIFY2(kwb::hasLineage(task), (task.name + " has no lineage/lineage.toml").c_str());
    kwb::Lineage lineage;
    try {
      lineage = kwb::loadLineage(task);
    } catch (const std::exception &e) {
      QFAIL(e.what());
    }
    QVERIFY2(lineage.steps.size() >= 3, (task.name + ": a lineage needs at least naive, one step and expert").c_str());
    const kwb::Compiler compiler(kwb::CompilerOptions{.useCache = false});
    for (const auto &step : lineage.steps) {
      const kwb::Task stepTask = kwb::taskForStep(task, step);
      const std::string name = step.file.filename().string();
      const auto request = kwb::requestFor(stepTask, readFile(step.file), name, "sm_90", step.tunables);
      const auto result = compiler.compile(request);
      QVERIFY2(result.ok, kwb::describeFailure(name + " does not compile", result.diagnostics).c_str());
      QVERIFY2(!result.kernels.empty() || step.hostLauncher, (name + ": no kernel").c_str());
      if (&step == &lineage.steps.back())
        for (const auto &k : result.kernels)
          QVERIFY2(k.spillStoreBytes == 0 && k.spillLoadBytes == 0,
                   (name + ": the expert step spills registers in " + k.name).c_str());
      if (step.hostLauncher) continue;
      // Its launch fits an sm_90 SM for every configuration.
      const kwb::Launch &launch = stepTask.launch ? *stepTask.launch : task.reference.launch;
      const auto kernel = std::find_if(result.kernels.begin(), result.kernels.end(),
                                       [&](const kwb::KernelResources &k) { return k.name == launch.kernel; });
      QVERIFY2(kernel != result.kernels.end(), (name + ": the launch's kernel is not in the compiled code").c_str());
      const auto limits = kwb::archLimits("sm_90");
      QVERIFY(limits);
      const auto tunables = kwb::effectiveTunables(task, step.tunables);
      for (const auto &config : task.configs) {
        const auto dims = kwb::evaluateLaunch(launch, config, tunables);
        const auto occupancy = kwb::computeOccupancy(*limits.limits, static_cast<int>(dims.threadsPerBlock()),
                                                     kernel->registers, kernel->sharedStaticBytes + dims.sharedBytes);
        QVERIFY2(occupancy.launchable(), (name + " " + config.name + ": " + occupancy.error).c_str());
      }
    }
    qInfo("%s: %zu lineage steps compile", task.name.c_str(), lineage.steps.size());
  }

  void compileEverySource() {
    QFETCH(QString, folder);
    if (!kwb::NvrtcCompiler::shared().available())
      QSKIP(qPrintable("NVRTC is not available: " + QString::fromStdString(kwb::NvrtcCompiler::shared().problem())));
    const auto entries = kwb::listTasks(folder.toStdString());
    QCOMPARE(entries.size(), std::size_t(1));
    QVERIFY2(entries[0].task, entries[0].error.c_str());
    const kwb::Task &task = *entries[0].task;
    const kwb::Compiler compiler(kwb::CompilerOptions{.useCache = false});

    // The reference, with its own kernel name and no tunables.
    kwb::CompileRequest reference;
    reference.source = readFile(task.folder / task.reference.source);
    reference.sourceName = task.reference.source.string();
    reference.expectedKernels = {task.reference.launch.kernel};
    auto result = compiler.compile(reference);
    QVERIFY2(result.ok, kwb::describeFailure(reference.sourceName + " does not compile", result.diagnostics).c_str());

    // The starter, for every combination of tunables, as a candidate is compiled.
    const std::string starter = readFile(task.folder / task.starterSource());
    int built = 0;
    for (const auto &values : tunableCombinations(task.tunables)) {
      const auto request = kwb::requestFor(task, starter, task.starterSource().string(), "sm_90", values);
      result = compiler.compile(request);
      QVERIFY2(result.ok, kwb::describeFailure(request.sourceName + label(values) + " does not compile",
                                               result.diagnostics).c_str());
      QVERIFY(!result.kernels.empty());
      ++built;
    }
    qInfo("%s: reference and %d starter variants compile", task.name.c_str(), built);
  }
};

QTEST_GUILESS_MAIN(TestBundledKernels)
#include "tst_bundled_kernels.moc"
