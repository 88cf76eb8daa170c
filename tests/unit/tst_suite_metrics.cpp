// KernelBench's metrics over a suite (core/eval/suite_metrics.h): the correctness rate and fast_p
// over PyTorch eager and torch.compile, from evaluation results built here; the geometric mean of
// a task's configurations; a task without a candidate counted in N.
#include <QtTest>

#include <cmath>

#include "core/eval/suite_metrics.h"

namespace {

kwb::ConfigOutcome timedConfig(const std::string &name, double candidateMs, double eagerMs, double compiledMs) {
  kwb::ConfigOutcome c;
  c.config = name;
  c.outcome = kwb::Outcome::Correct;
  kwb::TimingOutcome t;
  t.ok = true;
  t.candidate.median = candidateMs;
  c.timing = t;
  kwb::TorchBaseline b;
  b.eagerMs = eagerMs;
  b.compiledMs = compiledMs;
  b.speedupEager = eagerMs / candidateMs;
  b.speedupCompiled = compiledMs > 0 ? compiledMs / candidateMs : 0;
  c.torch = b;
  return c;
}

}  // namespace

class TestSuiteMetrics : public QObject {
  Q_OBJECT
 private slots:
  void entryIsTheGeometricMeanOverConfigurations();
  void fastPCountsCorrectAndFaster();
};

void TestSuiteMetrics::entryIsTheGeometricMeanOverConfigurations() {
  kwb::EvaluationResult r;
  r.outcome = kwb::Outcome::Correct;
  r.configs = {timedConfig("a", 1.0, 2.0, 1.0), timedConfig("b", 1.0, 8.0, 0.0)};
  r.configs.push_back(kwb::ConfigOutcome{});  // untimed: left out
  const auto e = kwb::suiteEntry("t", "t.cu", r);
  QVERIFY(e.correct);
  QCOMPARE(e.configsTimed, std::size_t(2));
  QVERIFY(std::abs(e.speedupEager - 4.0) < 1e-12);  // sqrt(2 * 8)
  QVERIFY(std::abs(e.eagerMs - 4.0) < 1e-12);
  QVERIFY(std::abs(e.speedupCompiled - 1.0) < 1e-12);  // the configuration without a figure left out
  QCOMPARE(e.outcome, std::string("correct"));
}

void TestSuiteMetrics::fastPCountsCorrectAndFaster() {
  std::vector<kwb::SuiteEntry> entries(5);
  entries[0] = {"fast", "f.cu", "correct", "", true, 1, 3, 2, 3.0, 2.0, 1};
  entries[1] = {"even", "e.cu", "correct", "", true, 1, 1.2, 1, 1.2, 1.0, 1};  // 1.0 is not faster than 1
  entries[2] = {"wrong-fast", "w.cu", "incorrect", "mismatch", false, 1, 9, 9, 9.0, 9.0, 1};
  entries[3] = {"slow", "s.cu", "correct", "", true, 2, 1, 1, 0.5, 0.5, 1};
  entries[4] = {"missing", "", "no-candidate", "", false};
  const auto m = kwb::suiteMetrics(entries);
  QCOMPARE(m.tasks, std::size_t(5));
  QCOMPARE(m.correct, std::size_t(3));
  QCOMPARE(m.correctnessRate, 0.6);
  QCOMPARE(m.fastEager.size(), std::size_t(3));
  QCOMPARE(m.fastEager[0].count, std::size_t(2));  // fast (3x), even (1.2x)
  QCOMPARE(m.fastEager[0].fraction, 0.4);
  QCOMPARE(m.fastEager[1].count, std::size_t(1));  // p = 1.5: fast only
  QCOMPARE(m.fastEager[2].count, std::size_t(1));  // p = 2: 3x > 2
  QCOMPARE(m.fastCompiled[0].count, std::size_t(1));
  QCOMPARE(m.fastCompiled[2].count, std::size_t(0));  // 2.0 is not more than 2
  const auto j = kwb::toJson(m);
  QCOMPARE(j["over_eager"]["fast_1.5"]["count"].get<int>(), 1);
  QCOMPARE(j["correctness_rate"].get<double>(), 0.6);
}

QTEST_GUILESS_MAIN(TestSuiteMetrics)
#include "tst_suite_metrics.moc"
