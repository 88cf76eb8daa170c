// EvaluationResultModel alone, over small fixtures: a compile row with its diagnostics, a row per
// configuration (outcome, launch, occupancy, time, speedup, checks) with its seeds, and a run row
// when no configuration says what happened; with the sanitizer, a row per tool with its findings
// under it. Every change goes through QAbstractItemModelTester.
#include <QAbstractItemModelTester>
#include <QtTest>

#include <sstream>

#include <nlohmann/json.hpp>

#include "core/eval/evaluation_result.h"
#include "helpers/model_cells.h"
#include "ui/models/evaluation_result_model.h"

using kwb::ui::EvaluationResultModel;

using kwb::test::cell;

namespace {

// The top-level rows of a kind.
QList<QModelIndex> rowsOf(const EvaluationResultModel *model, EvaluationResultModel::Kind kind) {
  return kwb::test::topLevelRows(model, EvaluationResultModel::KindRole, int(kind));
}

}  // namespace

class TestEvaluationResultModel : public QObject {
  Q_OBJECT

 private slots:
  void readsEveryKindOfResult() {
    // What a GPU machine reports, as the run history stores it (the JSON of kwb::EvaluationResult,
    // read back through its from_json): one configuration incorrect, one timed out, one whose
    // worker was killed, one correct and timed.
    const auto result = nlohmann::json::parse(
        kwb::test::readBytes(QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/results/every-kind-of-result.json")).toStdString());
    EvaluationResultModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setResult(result.get<kwb::EvaluationResult>());
    QCOMPARE(model.rowCount(), 5);  // compile and four configurations; no run row needed

    const QModelIndex compile = model.firstOf(EvaluationResultModel::Kind::Compile);
    QCOMPARE(cell(compile, EvaluationResultModel::OutcomeColumn), QStringLiteral("ok"));
    QVERIFY(cell(compile, EvaluationResultModel::DetailColumn).contains(QLatin1String("40 registers")));
    QVERIFY(cell(compile, EvaluationResultModel::DetailColumn).contains(QLatin1String("16 B spilled")));
    QCOMPARE(model.rowCount(compile), 1);
    const QModelIndex warning = model.index(0, 0, compile);
    QCOMPARE(warning.data().toString(), QStringLiteral("softmax.cu:7:9"));
    QCOMPARE(cell(warning, EvaluationResultModel::OutcomeColumn), QStringLiteral("warning"));

    const auto configs = rowsOf(&model, EvaluationResultModel::Kind::Config);
    QCOMPARE(configs.size(), 4);
    const QModelIndex small = configs[0];
    QCOMPARE(small.data().toString(), QStringLiteral("small"));
    QCOMPARE(cell(small, EvaluationResultModel::OutcomeColumn), QStringLiteral("incorrect"));
    QCOMPARE(cell(small, EvaluationResultModel::LaunchColumn),
             QStringLiteral("grid 1024 · block 128 · 4096 B shared"));
    QCOMPARE(cell(small, EvaluationResultModel::OccupancyColumn), QStringLiteral("50% · 8 blocks/SM"));
    QVERIFY(small.siblingAtColumn(EvaluationResultModel::OccupancyColumn)
                .data(Qt::ToolTipRole)
                .toString()
                .contains(QLatin1String("registers")));
    QCOMPARE(model.rowCount(small), 2);
    const QModelIndex passed = model.index(0, 0, small);
    const QModelIndex failed = model.index(1, 0, small);
    QCOMPARE(cell(passed, EvaluationResultModel::OutcomeColumn), QStringLiteral("passed"));
    QCOMPARE(cell(failed, EvaluationResultModel::OutcomeColumn), QStringLiteral("failed"));
    QCOMPARE(failed.data().toString(), QStringLiteral("seed 2"));
    QCOMPARE(cell(failed, EvaluationResultModel::DetailColumn),
             QStringLiteral("y: 12 of 1048576 elements differ"));
    QCOMPARE(cell(failed, EvaluationResultModel::ErrorColumn),
             QStringLiteral("abs 0.021 · rel 0.04 · L2 3.4e-06"));
    QCOMPARE(cell(failed, EvaluationResultModel::MismatchColumn),
             QStringLiteral("y[0, 3]: got 0.51, want 0.49; y[0, 9]: got NaN, want 0.1"));
    QCOMPARE(cell(failed, EvaluationResultModel::ChecksColumn),
             QStringLiteral("3 unwritten, race, inputs modified"));

    // Runs that never came back say what happened.
    QCOMPARE(cell(configs[1], EvaluationResultModel::OutcomeColumn), QStringLiteral("timeout"));
    QVERIFY(cell(configs[1], EvaluationResultModel::DetailColumn).contains(QLatin1String("never returns")));
    QCOMPARE(cell(configs[2], EvaluationResultModel::OutcomeColumn), QStringLiteral("runtime error"));
    QCOMPARE(cell(configs[2], EvaluationResultModel::DetailColumn),
             QStringLiteral("worker-died: the GPU worker died: killed by signal SIGKILL"));

    const QModelIndex tiny = configs[3];
    QCOMPARE(cell(tiny, EvaluationResultModel::LaunchColumn), QStringLiteral("grid 4×4 · block 32×8"));
    QCOMPARE(cell(tiny, EvaluationResultModel::TimeColumn), QStringLiteral("200.0 µs (IQR 4.00 µs)"));
    QCOMPARE(cell(tiny, EvaluationResultModel::SpeedupColumn), QStringLiteral("1.50×"));
    QCOMPARE(cell(tiny, EvaluationResultModel::ChecksColumn), QStringLiteral("suspicious"));
    QVERIFY(tiny.siblingAtColumn(EvaluationResultModel::ChecksColumn)
                .data(Qt::ToolTipRole)
                .toString()
                .contains(QLatin1String("roofline")));

    // A result with nothing per configuration gets a row saying why.
    kwb::EvaluationResult notLoaded;
    notLoaded.outcome = kwb::Outcome::Error;
    notLoaded.message = "the task did not load: boom";
    model.setResult(notLoaded);
    QCOMPARE(model.rowCount(), 1);
    const QModelIndex run = model.firstOf(EvaluationResultModel::Kind::Run);
    QCOMPARE(cell(run, EvaluationResultModel::OutcomeColumn), QStringLiteral("error"));
    QCOMPARE(cell(run, EvaluationResultModel::DetailColumn), QStringLiteral("the task did not load: boom"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);
  }

  // A candidate timed alone (the autotuner's way) has no speedup to show, and says why.
  void timedAloneHasNoSpeedup() {
    kwb::EvaluationResult r;
    r.outcome = kwb::Outcome::Correct;
    r.candidate.ok = true;
    r.candidate.seconds = 0.1;
    kwb::ConfigOutcome c;
    c.config = "small";
    c.outcome = kwb::Outcome::Correct;
    kwb::TimingOutcome t;
    t.ok = true;
    t.referenceTimed = false;
    t.candidate.median = 2.5;
    t.candidate.iqr = 0.01;
    c.timing = t;
    r.configs.push_back(c);
    EvaluationResultModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setResult(r);
    QCOMPARE(model.rowCount(), 2);
    const QModelIndex small = rowsOf(&model, EvaluationResultModel::Kind::Config).at(0);
    QCOMPARE(cell(small, EvaluationResultModel::TimeColumn), QStringLiteral("2.500 ms (IQR 10.0 µs)"));
    QCOMPARE(cell(small, EvaluationResultModel::SpeedupColumn), QString());
    QCOMPARE(small.siblingAtColumn(EvaluationResultModel::SpeedupColumn).data(Qt::ToolTipRole).toString(),
             QStringLiteral("the reference was not timed"));
    QCOMPARE(small.siblingAtColumn(EvaluationResultModel::OutcomeColumn).data(EvaluationResultModel::OutcomeRole).toString(),
             QStringLiteral("correct"));
    QCOMPARE(cell(small, EvaluationResultModel::TorchColumn), QString());  // no PyTorch module timed

    // With the task's PyTorch module timed: both speedups, and why one is missing.
    kwb::TorchBaseline b;
    b.eagerMs = 5.0;
    b.eagerSamples = 40;
    b.eagerSpread = 0.012;
    b.speedupEager = 2.0;
    b.compiledError = "torch.compile failed: RuntimeError: no triton";
    b.timer = "cupti";
    r.configs.front().torch = b;
    model.setResult(r);
    const QModelIndex timed = rowsOf(&model, EvaluationResultModel::Kind::Config).at(0);
    QCOMPARE(cell(timed, EvaluationResultModel::TorchColumn), QStringLiteral("eager 2.00× · compile –"));
    const QString tip = timed.siblingAtColumn(EvaluationResultModel::TorchColumn).data(Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QLatin1String("PyTorch eager: 5.000 ms (n=40, IQR/median 1.2%)")), qPrintable(tip));
    QVERIFY2(tip.contains(QLatin1String("torch.compile: not measured: torch.compile failed: RuntimeError: no triton")),
             qPrintable(tip));
    QCOMPARE(model.headerData(EvaluationResultModel::TorchColumn, Qt::Horizontal).toString(), QStringLiteral("vs PyTorch"));
  }

  // compute-sanitizer's real reports (tests/fixtures/sanitizer) as a result carries them: a row
  // per tool, each finding under its tool named by its source line.
  void sanitizerRowsAndFindings() {
    auto report = [](kwb::SanitizerTool tool, const char *fixture, const char *file) {
      std::istringstream in(kwb::test::readBytes(QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/sanitizer/") +
                                                 QLatin1String(fixture))
                                .toStdString());
      std::vector<std::string> lines;
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      kwb::SanitizerAttribution a;
      a.candidateFile = file;
      a.candidateKernels = {"softmax"};
      auto r = kwb::parseSanitizerReport(tool, lines, a);
      r.seconds = 1.5;
      r.evaluation = "correct";
      return r;
    };
    kwb::EvaluationResult r;
    r.outcome = kwb::Outcome::Correct;
    kwb::SanitizeResult s;
    s.config = "small";
    s.seed = 1;
    s.reports.push_back(report(kwb::SanitizerTool::Racecheck, "racy-softmax-racecheck.log", "racy-softmax.cu"));
    s.reports.push_back(report(kwb::SanitizerTool::Memcheck, "overrun-softmax-memcheck.log", "racy-softmax.cu"));
    s.reports.push_back(report(kwb::SanitizerTool::Synccheck, "softmax-racecheck.log", "racy-softmax.cu"));
    s.reports.back().tool = kwb::SanitizerTool::Synccheck;
    r.sanitize = s;
    // Stored and read back, as the run history does.
    const auto stored = nlohmann::json(r).get<kwb::EvaluationResult>();
    EvaluationResultModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setResult(stored);
    const auto tools = rowsOf(&model, EvaluationResultModel::Kind::Sanitizer);
    QCOMPARE(tools.size(), 3);
    QCOMPARE(cell(tools[0], EvaluationResultModel::NameColumn), QStringLiteral("racecheck"));
    QCOMPARE(cell(tools[0], EvaluationResultModel::OutcomeColumn), QStringLiteral("1 error(s)"));
    QVERIFY2(cell(tools[0], EvaluationResultModel::DetailColumn).contains(QLatin1String("configuration small, seed 1")),
             qPrintable(cell(tools[0], EvaluationResultModel::DetailColumn)));
    QCOMPARE(model.rowCount(tools[0]), 1);
    const QModelIndex race = model.index(0, 0, tools[0]);
    QCOMPARE(race.data(EvaluationResultModel::KindRole).toInt(), int(EvaluationResultModel::Kind::SanitizerFinding));
    QCOMPARE(cell(race, EvaluationResultModel::NameColumn), QStringLiteral("racy-softmax.cu:23"));
    QVERIFY2(cell(race, EvaluationResultModel::DetailColumn).contains(QLatin1String("Race reported between Read access")) &&
                 cell(race, EvaluationResultModel::DetailColumn).contains(QLatin1String("11632 hazards")),
             qPrintable(cell(race, EvaluationResultModel::DetailColumn)));
    // memcheck: the overrun (the candidate's, in another file name here: still its kernel) and
    // the launch failure on the workbench's own call, said to be the workbench's.
    QCOMPARE(model.rowCount(tools[1]), 2);
    QVERIFY(cell(model.index(1, 0, tools[1]), EvaluationResultModel::DetailColumn).contains(QLatin1String("workbench")));
    QCOMPARE(cell(tools[2], EvaluationResultModel::OutcomeColumn), QStringLiteral("clean"));
    QCOMPARE(model.rowCount(tools[2]), 0);
  }
};

QTEST_MAIN(TestEvaluationResultModel)
#include "tst_evaluation_result_model.moc"
