// The main workflow walked through in a real window (issue 48, Verify): under Xvfb with the xcb
// platform, not offscreen, a fresh home and workspace; the window's own actions and widgets
// drive each step: the start page, the bundled softmax task opened and run (compile-only here),
// optimized by an agent session against the replay LLM server, a candidate and its context
// opened, the Library (softmax's bundled lineage, a proposed skill card approved by a named
// reviewer), the Experience view with a Case selected, File ▸ Export, Help ▸ User Guide and the
// import dialog. Each step saves a picture (walkthrough-NN-STEP.png into $KWB_WALKTHROUGH_SHOTS,
// else a temporary folder) and checks what it shows. Throughout, a 5 ms timer on the GUI thread
// records the longest gap between its ticks (the test's own picture-taking left out): no step
// may stall the GUI thread for more than 50 ms.
#include <QtTest>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSplitter>
#include <QTabBar>
#include <QTableWidget>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QFile>
#include <QTimer>
#include <QTreeView>
#include <QHeaderView>
#include <QProgressBar>
#include <QScrollBar>
#include <QTreeView>

#include <filesystem>
#include <memory>
#include <optional>

#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_library.h"
#include "core/llm/provider_config.h"
#include "core/memory/experience_store.h"
#include "helpers/measured_lineage.h"
#include "helpers/memory_fixtures.h"
#include "helpers/model_cells.h"
#include "helpers/replay_llm_server.h"
#include "isolated_home.h"
#include "signal_wait.h"
#include "window_parts.h"
#include "ui/main_window.h"
#include "ui/models/evaluation_result_model.h"
#include "ui/models/evaluation_run.h"
#include "ui/models/session_candidates_model.h"
#include "ui/models/skill_cards_model.h"
#include "ui/services/agent_service.h"
#include "ui/services/import_service.h"
#include "ui/services/memory_service.h"
#include "ui/services/skill_library_service.h"
#include "ui/services/workspace_service.h"
#include "ui/views/cuda_editor.h"
#include "ui/views/experience_graph_view.h"
#include "ui/views/experience_panel.h"
#include "ui/views/export_dialog.h"
#include "ui/views/help_view.h"
#include "ui/views/import_dialog.h"
#include "ui/views/lineage_panel.h"
#include "ui/views/results_panel.h"
#include "ui/views/session_panel.h"
#include "ui/views/session_settings_dialog.h"
#include "ui/views/side_by_side_diff.h"
#include "ui/views/skills_panel.h"
#include "ui/views/start_page.h"
#include "ui/views/work_area.h"
#include "ui/workbench_context.h"

namespace fs = std::filesystem;
using namespace kwb;
using namespace kwb::ui;

namespace {

const QString kSoftmax = QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax");
constexpr qint64 kLongestPauseMs = 50;

// The GUI thread's longest pause: a 5 ms timer whose ticks should come every 5 ms; the largest
// gap between two ticks is the longest time the event loop did not run. Kept per step. The test's
// own work (taking pictures, writing PNGs) is left out: the probe is suspended around it, and the
// time up to the suspension still counts. The time the thread was ready but waited for a CPU (the
// kernel's run_delay in /proc/thread-self/schedstat: other programs of a loaded test machine) is
// taken off a gap, and said when a gap was over the limit: it is not the window's doing.
qint64 runQueueWaitMs() {
  QFile stat(QStringLiteral("/proc/thread-self/schedstat"));
  if (!stat.open(QIODevice::ReadOnly)) return 0;  // no schedstat: the whole gap counts
  const QList<QByteArray> fields = stat.readAll().split(' ');
  return fields.size() >= 2 ? fields[1].trimmed().toLongLong() / 1000000 : 0;
}

class PauseProbe : public QObject {
 public:
  PauseProbe() {
    timer_.setInterval(5);
    timer_.setTimerType(Qt::PreciseTimer);
    connect(&timer_, &QTimer::timeout, this, [this] { tick(); });
    clock_.start();
  }
  // Ends the step before (if any) and starts measuring `step`.
  void beginStep(const QString &step) {
    endStep();
    step_ = step;
    stepWorst_ = 0;
    phase(QStringLiteral("start"));
    resume();
  }
  // What the step does from now on: the longest pause is said with the part it fell in (the time
  // up to here counts for the part before).
  void phase(const QString &what) {
    if (timer_.isActive()) tick();
    phase_ = what;
  }
  void endStep() {
    if (step_.isEmpty()) return;
    suspend();
    steps_.append({step_ + QStringLiteral(", ") + worstPhase_, stepWorst_});
    qInfo("GUI thread's longest pause: %lld ms (during %s, %s)", static_cast<long long>(stepWorst_), qPrintable(step_),
          qPrintable(worstPhase_));
    step_.clear();
  }
  void suspend() {
    if (!timer_.isActive()) return;
    tick();
    timer_.stop();
  }
  void resume() {
    last_ = clock_.elapsed();
    waited_ = runQueueWaitMs();
    timer_.start();
  }
  const QList<QPair<QString, qint64>> &steps() const { return steps_; }

 private:
  void tick() {
    const qint64 now = clock_.elapsed();
    const qint64 waited = runQueueWaitMs();
    const qint64 gap = now - last_, pause = gap - (waited - waited_);
    if (last_ >= 0 && gap > kLongestPauseMs)
      qInfo("a gap of %lld ms, %lld of them waiting for a CPU (during %s, %s)", static_cast<long long>(gap),
            static_cast<long long>(waited - waited_), qPrintable(step_), qPrintable(phase_));
    if (last_ >= 0 && pause >= stepWorst_) {
      stepWorst_ = pause;
      worstPhase_ = phase_;
    }
    last_ = now;
    waited_ = waited;
  }
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = -1;
  qint64 waited_ = 0;  // runQueueWaitMs() at the last tick
  qint64 stepWorst_ = 0;
  QString step_, phase_, worstPhase_;
  QList<QPair<QString, qint64>> steps_;
};

// Clicks a row of a tree view (scrolled into view first): what a user's click does.
void clickItem(QAbstractItemView *tree, const QModelIndex &item, bool twice = false) {
  tree->scrollTo(item);
  const QPoint at = tree->visualRect(item).center();
  if (twice) QTest::mouseDClick(tree->viewport(), Qt::LeftButton, {}, at);
  else QTest::mouseClick(tree->viewport(), Qt::LeftButton, {}, at);
}

// The window's action of that objectName (its menus' and toolbar's); the test fails without one.
QAction *action(const QWidget &window, const char *name) {
  auto *found = window.findChild<QAction *>(QLatin1String(name));
  if (!found) qFatal("the window has no action %s", name);
  return found;
}

// Every column of the view that is shown lies inside its viewport: nothing cut at the side or
// behind a horizontal scroll bar (issue 48, 8).
bool columnsInView(QTreeView *view, QString *why) {
  const int room = view->viewport()->width();
  for (int c = 0; c < view->header()->count(); ++c) {
    if (view->isColumnHidden(c)) continue;
    const int right = view->header()->sectionViewportPosition(c) + view->header()->sectionSize(c);
    if (right > room) {
      *why = QStringLiteral("%1: column %2 ends at %3 of %4").arg(view->objectName()).arg(c).arg(right).arg(room);
      return false;
    }
  }
  return true;
}

const SkillCard *cardOf(const SkillLibraryService &service, const std::string &id) {
  for (const auto &c : service.snapshot().cards)
    if (c.id == id) return &c;
  return nullptr;
}

}  // namespace

class TestWalkthrough : public QObject {
  Q_OBJECT

  std::unique_ptr<IsolatedHome> home_;
  std::unique_ptr<QTemporaryDir> shotsTemp_;
  QDir shots_;
  QTemporaryDir exports_;
  std::map<std::string, std::int64_t> cases_;
  int shotNumber_ = 0;
  PauseProbe probe_;

  // The widget as it is now, to walkthrough-NN-NAME.png; the probe does not count the picture.
  bool shoot(QWidget *widget, const QString &name) {
    probe_.suspend();
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);  // labels changed this turn
    const QString file = shots_.filePath(QStringLiteral("walkthrough-%1-%2.png").arg(++shotNumber_, 2, 10, QLatin1Char('0')).arg(name));
    const bool ok = widget->grab().save(file, "PNG");
    qInfo("screenshot: %s", qPrintable(file));
    probe_.resume();
    return ok;
  }

  // The library this window reads ($KWB_LIBRARY): skill cards lifted from a measured layernorm
  // lineage (proposed, as lifted cards are), and softmax Cases in the experience memory.
  void seedLibrary(const QString &path) {
    auto lib = SkillLibrary::open(path.toStdString());
    const auto m = test::measuredLineage("layernorm");
    lib->putLineage(m.record);
    for (const auto &c : liftCards(m.record, m.task)) lib->proposeCard(c, "test", "layernorm");
    // Compile-only runs record no Case (nothing was measured), and this machine has no GPU: the
    // memory's Cases are a fixture here, as in tst_experience_view, marked as from an H200.
    auto store = memory::ExperienceStore::open(path.toStdString());
    auto add = [&](const std::string &key, std::optional<std::string> parent, bool correct, double speedup,
                   const std::string &idea, const std::string &body) {
      memory::Case c = test::memoryCase(
          idea, correct, speedup, "extern \"C\" __global__ void softmax(const float *x, float *y, int n) {\n" + body + "\n}\n");
      c.sourceRef = "walkthrough-" + key;
      c.task = "softmax";
      c.operatorClass = "softmax";  // operatorClassOf(softmax), as the workbench records it
      c.gpu = "NVIDIA H200";
      c.session = "s-walkthrough";
      if (parent) {
        c.parent = cases_.at(*parent);
        c.before = store->get(*c.parent, true)->after;
      }
      cases_[key] = store->record(c);
    };
    add("s1", {}, true, 1.0, "the starter", "  y[0] = x[0];");
    add("s2", "s1", true, 1.8, "one warp per row with warp shuffle reductions", "  y[0] = x[0] * 2;");
    add("s3", "s2", true, 1.85, "vectorized float4 loads", "  y[0] = x[0] * 2; // float4");
    add("s4", "s2", false, 0, "skip the max subtraction", "  y[0] = 0;");
    add("s5", "s1", true, 0.9, "shared memory staging", "  __shared__ float t[32]; y[0] = x[0];");
  }

 private slots:
  void initTestCase() {
    QCOMPARE(QGuiApplication::platformName(), QStringLiteral("xcb"));  // a real window under Xvfb
    home_ = std::make_unique<IsolatedHome>();
    QVERIFY(home_->isValid());
    QVERIFY(exports_.isValid());
    const QString wanted = qEnvironmentVariable("KWB_WALKTHROUGH_SHOTS");
    if (wanted.isEmpty()) {
      shotsTemp_ = std::make_unique<QTemporaryDir>();
      QVERIFY(shotsTemp_->isValid());
      shots_ = QDir(shotsTemp_->path());
    } else {
      QVERIFY(QDir().mkpath(wanted));
      shots_ = QDir(wanted);
    }
    const QString library = home_->path(QStringLiteral("library.sqlite"));
    qputenv("KWB_LIBRARY", library.toUtf8());
    seedLibrary(library);
    qputenv("KWB_PROVIDERS_FILE", home_->path(QStringLiteral("providers.json")).toUtf8());
  }

  void walkthrough() {
    kwb::test::ReplayLlmServer server{fs::path(kSoftmax.toStdString())};
    server.setDelays(std::chrono::milliseconds(0), std::chrono::milliseconds(5));  // answers stream in pieces
    kwb::llm::ProviderConfig replay = kwb::llm::adHocProvider(server.baseUrl());
    replay.name = "replay";
    replay.model = "replay-lineage";
    kwb::llm::saveProviders({replay}, home_->path(QStringLiteral("providers.json")).toStdString());

    // 1. The window on its start page; the softmax task opened. (Its construction, before the
    // event loop runs at all, is startup: timed apart.)
    QElapsedTimer constructing;
    constructing.start();
    MainWindow window(home_->path(QStringLiteral("workspace/walkthrough.kwb")));
    qInfo("The window was constructed in %lld ms", static_cast<long long>(constructing.elapsed()));
    probe_.beginStep(QStringLiteral("1 start page"));
    window.resize(1600, 1000);
    probe_.phase(QStringLiteral("show"));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    probe_.phase(QStringLiteral("waiting to settle"));
    QVERIFY_SETTLED(window);
    QCOMPARE(window.size(), QSize(1600, 1000));
    QVERIFY(partOf<kwb::ui::StartPage>(window)->isVisible());
    QVERIFY(partOf<kwb::ui::StartPage>(window)->openButton()->isVisible());
    auto *llm = partOf<kwb::ui::StartPage>(window)->findChild<QLabel *>(QStringLiteral("startLlmStatus"));
    QVERIFY(llm);
    QVERIFY2(llm->text().contains(QStringLiteral("replay")), qPrintable(llm->text()));  // the provider Optimize uses
    QVERIFY2(window.gpuStatusText().contains(QStringLiteral("compile-only")), qPrintable(window.gpuStatusText()));
    QVERIFY(shoot(&window, QStringLiteral("start")));

    probe_.beginStep(QStringLiteral("2 open task"));
    probe_.phase(QStringLiteral("openTask"));
    QVERIFY(window.openTask(kSoftmax));
    probe_.phase(QStringLiteral("waiting to settle"));
    QVERIFY_SETTLED(window);
    QCOMPARE(window.currentTaskName(), QStringLiteral("softmax"));
    QVERIFY(!partOf<kwb::ui::StartPage>(window)->isVisible());
    QVERIFY(window.currentEditor());
    QVERIFY(window.currentEditor()->text().contains(QStringLiteral("__global__")));
    QVERIFY(action(window, "actionRun")->isEnabled());
    QVERIFY(shoot(&window, QStringLiteral("task")));

    // 2. Run: compiled, not run (no CUDA device), and said so in Results.
    probe_.beginStep(QStringLiteral("3 run"));
    {
      QSignalSpy finished(&window, &MainWindow::runFinished);
      probe_.phase(QStringLiteral("Run triggered"));
      action(window, "actionRun")->trigger();
      QVERIFY(window.isRunning());
      probe_.phase(QStringLiteral("waiting for the run"));
      QVERIFY(finished.wait(120000));
      const auto run = finished.first().first().value<EvaluationRun>();
      QCOMPARE(run.outcome, kwb::Outcome::NotRun);
      QVERIFY_SETTLED(window);
      const QString summary = partOf<kwb::ui::ResultsPanel>(window)->summaryText();
      QVERIFY2(summary.contains(QStringLiteral("no CUDA device here, compiled only")), qPrintable(summary));
      const EvaluationResultModel *model = partOf<kwb::ui::ResultsPanel>(window)->model();
      QCOMPARE(kwb::test::cell(model->firstOf(EvaluationResultModel::Kind::Compile), EvaluationResultModel::OutcomeColumn),
               QStringLiteral("ok"));
      const auto configs = kwb::test::topLevelRows(model, EvaluationResultModel::KindRole, int(EvaluationResultModel::Kind::Config));
      QCOMPARE(configs.size(), 3);  // small, wide, h200: each not run, said why
      for (const QModelIndex &config : configs)
        QCOMPARE(kwb::test::cell(config, EvaluationResultModel::DetailColumn), QStringLiteral("no CUDA device here, compiled only"));
      // The long details wrap in their column; launch and occupancy are in view beside them.
      QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
      QTreeView *resultsView = partOf<kwb::ui::ResultsPanel>(window)->view();
      QString why;
      QVERIFY2(columnsInView(resultsView, &why), qPrintable(why));
      QVERIFY(!resultsView->isColumnHidden(EvaluationResultModel::LaunchColumn));
      QVERIFY(!resultsView->isColumnHidden(EvaluationResultModel::OccupancyColumn));
    }
    QVERIFY(shoot(&window, QStringLiteral("run")));

    // 3. Optimize with the replay model: the session's settings, Start, every candidate compiled.
    probe_.beginStep(QStringLiteral("4 optimize"));
    {
      QSignalSpy finished(partOf<kwb::ui::AgentService>(window), &AgentService::finished);
      QVERIFY(action(window, "actionOptimize")->isEnabled());
      probe_.phase(QStringLiteral("Optimize triggered"));
      action(window, "actionOptimize")->trigger();
      auto *dialog = window.findChild<SessionSettingsDialog *>(QStringLiteral("sessionSettingsDialog"));
      QVERIFY(dialog && dialog->isVisible());
      QCOMPARE(dialog->provider(), QStringLiteral("replay"));
      auto *candidates = dialog->findChild<QSpinBox *>(QStringLiteral("candidates"));
      auto *groups = dialog->findChild<QSpinBox *>(QStringLiteral("groups"));
      auto *start = dialog->findChild<QDialogButtonBox *>()->button(QDialogButtonBox::Ok);
      QVERIFY(candidates && groups && start && start->isEnabled());
      candidates->setValue(3);
      groups->setValue(2);
      probe_.phase(QStringLiteral("Start clicked"));
      QTest::mouseClick(start, Qt::LeftButton);
      QVERIFY(partOf<kwb::ui::AgentService>(window)->isRunning());
      QVERIFY(window.workArea()->current() == WorkArea::Page::Session);
      probe_.phase(QStringLiteral("waiting for the session"));
      QVERIFY(finished.wait(300000));
      QVERIFY2(finished.first().at(1).toString() == QStringLiteral("finished"), qPrintable(finished.first().at(2).toString()));
      QVERIFY_SETTLED(window);
    }
    SessionPanel *session = partOf<kwb::ui::SessionPanel>(window);
    QCOMPARE(session->candidateRows(), 6);
    QVERIFY2(session->statusText().contains(QStringLiteral("6 answers: 6 compiled")), qPrintable(session->statusText()));
    // Compile-only: the chart has no point and says why; the tokens meter says its count.
    QVERIFY2(session->chartNote().contains(QStringLiteral("compile-only")), qPrintable(session->chartNote()));
    QVERIFY2(session->tokensBar()->text().contains(QStringLiteral("no budget")), qPrintable(session->tokensBar()->text()));
    QVERIFY(session->tokensBar()->maximum() > 0);  // a meter, not a busy bar (which draws no text)
    {
      QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
      QString why;
      QVERIFY2(columnsInView(session->tree(), &why), qPrintable(why));
      // A group's row spans the columns; "Line n" is whole in its column (two levels in).
      QVERIFY(session->tree()->isFirstColumnSpanned(0, QModelIndex()));
      const QString line = session->model()->indexOf(1, 1, 1).data().toString();
      const int needed = session->tree()->fontMetrics().horizontalAdvance(line);
      QVERIFY2(session->tree()->header()->sectionSize(0) - 3 * session->tree()->indentation() >= needed,
               qPrintable(QStringLiteral("%1 px for %2").arg(session->tree()->header()->sectionSize(0)).arg(line)));
    }
    QVERIFY(shoot(&window, QStringLiteral("session")));

    // A candidate: selected (its answer shown), then opened by a double click.
    probe_.beginStep(QStringLiteral("5 open candidate"));
    const QModelIndex candidate = session->model()->indexOf(1, 1, 1);
    QVERIFY(candidate.isValid());
    probe_.phase(QStringLiteral("candidate clicked"));
    clickItem(session->tree(), candidate);
    QCOMPARE(session->tree()->currentIndex().siblingAtColumn(0), candidate);
    QVERIFY(session->answerView()->toPlainText().contains(QStringLiteral("__global__")));
    {
      QSignalSpy fetched(partOf<kwb::ui::WorkspaceService>(window), &WorkspaceService::evaluationFetched);
      probe_.phase(QStringLiteral("candidate double-clicked"));
      clickItem(session->tree(), candidate, true);
      QVERIFY(window.currentEditor());
      QVERIFY2(window.currentEditor()->filePath().endsWith(QStringLiteral("/g1-l1-t1.cu")), qPrintable(window.currentEditor()->filePath()));
      probe_.phase(QStringLiteral("waiting for its evaluation"));
      QVERIFY(fetched.wait(30000));  // its compile, from the run history, into Results
      QVERIFY_SETTLED(window);
    }
    // Opened: the editor page came forward with the candidate's code in it.
    QVERIFY(window.workArea()->current() == WorkArea::Page::Editor);
    QVERIFY(window.currentEditor()->isVisible());
    QVERIFY(shoot(&window, QStringLiteral("candidate")));

    // Its context: what the prompt carried (the Context tab beside the answer).
    probe_.beginStep(QStringLiteral("6 candidate context"));
    probe_.phase(QStringLiteral("View > Session"));
    action(window, "actionShowSession")->trigger();
    QVERIFY(window.workArea()->current() == WorkArea::Page::Session);
    auto *tabs = session->findChild<QTabWidget *>(QStringLiteral("sessionCandidateTabs"));
    QVERIFY(tabs);
    probe_.phase(QStringLiteral("Context tab clicked"));
    QTest::mouseClick(tabs->tabBar(), Qt::LeftButton, {}, tabs->tabBar()->tabRect(1).center());
    QCOMPARE(tabs->currentWidget(), session->contextView());
    const QString context = session->contextView()->toPlainText();
    // The memory's softmax Cases (the fixture) went into the prompt, each said why.
    for (const QString &part : {QStringLiteral("tokens of experience"), QStringLiteral("Included"), QStringLiteral("Case %1").arg(cases_.at("s2")),
                                QStringLiteral("this task: effective")})
      QVERIFY2(context.contains(part), qPrintable(QStringLiteral("%1 not in:\n%2").arg(part, context)));
    QVERIFY(shoot(&window, QStringLiteral("context")));

    // 4. The Library: softmax's bundled lineage read-only (no GPU to measure it), and a proposed
    // card approved by a named reviewer through the Skills view's buttons.
    probe_.beginStep(QStringLiteral("7 library"));
    {
      QSignalSpy loaded(window.skillLibrary(), &SkillLibraryService::loaded);
      probe_.phase(QStringLiteral("View > Library"));
      action(window, "actionShowLibrary")->trigger();
      QVERIFY(window.workArea()->current() == WorkArea::Page::Library);
      probe_.phase(QStringLiteral("waiting for the library"));
      QVERIFY(loaded.count() > 0 || loaded.wait(30000));
      QVERIFY_SETTLED(window);
    }
    LineagePanel *lineage = window.lineagePanel();
    QVERIFY2(lineage->lineageBox()->itemText(0).contains(QStringLiteral("softmax  (bundled, 5 steps, not measured)")),
             qPrintable(lineage->lineageBox()->itemText(0)));
    QVERIFY2(lineage->isPreview(), qPrintable(lineage->currentLineage()));
    QVERIFY2(lineage->summary().contains(QStringLiteral("not measured (no GPU")), qPrintable(lineage->summary()));
    QCOMPARE(lineage->currentStep(), 5);
    QCOMPARE(lineage->figures()->rowCount(), 0);  // nothing measured, nothing shown: said why
    QVERIFY2(lineage->figuresNote().contains(QStringLiteral("not measured")), qPrintable(lineage->figuresNote()));
    auto *configBox = lineage->findChild<QComboBox *>(QStringLiteral("lineageConfigBox"));
    QVERIFY(configBox && configBox->count() == 0 && configBox->placeholderText() == QStringLiteral("not measured"));
    SkillsPanel *skills = window.skillsPanel();
    const QModelIndex card = skills->cards()->index(skills->cards()->rowOf(QStringLiteral("warp-shuffle")), 0);
    QVERIFY(card.isValid());
    probe_.phase(QStringLiteral("card clicked"));
    clickItem(skills->list(), card);
    QCOMPARE(skills->currentCard(), QStringLiteral("warp-shuffle"));
    QVERIFY(cardOf(*window.skillLibrary(), "warp-shuffle")->status == CardStatus::Proposed);
    QVERIFY(skills->cardText().contains(QStringLiteral("warp-shuffle")));
    {
      QSignalSpy reviewed(window.skillLibrary(), &SkillLibraryService::reviewed);
      QSignalSpy loaded(window.skillLibrary(), &SkillLibraryService::loaded);
      probe_.phase(QStringLiteral("reviewer typed"));
      // The field may hold $USER: emptied first, the review waits for a name.
      skills->reviewerField()->setFocus();
      skills->reviewerField()->selectAll();
      QTest::keyClick(skills->reviewerField(), Qt::Key_Backspace);
      QVERIFY(skills->reviewerField()->text().isEmpty());
      QVERIFY(!skills->approveButton()->isEnabled());
      // Key by key, the event loop running between them as between a person's keystrokes (the
      // pause measured is one keystroke's, not three back to back).
      for (const QChar key : QStringLiteral("ada")) {
        QTest::keyClicks(skills->reviewerField(), QString(key));
        QCoreApplication::processEvents();
      }
      QCOMPARE(skills->reviewerField()->text(), QStringLiteral("ada"));
      QVERIFY(skills->approveButton()->isEnabled());
      probe_.phase(QStringLiteral("Approve clicked"));
      QTest::mouseClick(skills->approveButton(), Qt::LeftButton);
      probe_.phase(QStringLiteral("waiting for the review"));
      QVERIFY(reviewed.wait(30000));
      QCOMPARE(reviewed.first().at(0).toString(), QStringLiteral("warp-shuffle"));
      QVERIFY(loaded.count() > 0 || loaded.wait(30000));
      QVERIFY_SETTLED(window);
    }
    QVERIFY(cardOf(*window.skillLibrary(), "warp-shuffle")->status == CardStatus::Approved);
    QCOMPARE(skills->currentCard(), QStringLiteral("warp-shuffle"));
    QVERIFY2(skills->auditText().contains(QStringLiteral("reviewer:ada")), qPrintable(skills->auditText()));
    QVERIFY(!skills->approveButton()->isEnabled());
    {
      QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
      QString why;
      QVERIFY2(columnsInView(skills->list(), &why), qPrintable(why));  // Evidence and Scope in view
    }
    QVERIFY(shoot(&window, QStringLiteral("library")));

    // 5. The Experience view: the memory's softmax Cases drawn; one clicked and inspected.
    probe_.beginStep(QStringLiteral("8 experience"));
    probe_.phase(QStringLiteral("View > Experience"));
    action(window, "actionShowExperience")->trigger();
    QVERIFY(window.workArea()->current() == WorkArea::Page::Experience);
    ExperiencePanel *experience = window.experiencePanel();
    probe_.phase(QStringLiteral("waiting for the graph"));
    QVERIFY(waitFor(experience, &ExperiencePanel::settled, experience->isSettled()));
    QVERIFY_SETTLED(window);
    QCOMPARE(experience->graph()->nodeCount(), 5);
    {
      QSignalSpy selected(experience, &ExperiencePanel::caseSelected);
      auto *graph = experience->graph();
      const QPoint at = graph->mapFromScene(graph->nodeCentre(cases_.at("s3")));
      QVERIFY2(graph->viewport()->rect().contains(at), "Case s3 is not in view");
      probe_.phase(QStringLiteral("Case clicked"));
      QTest::mouseClick(graph->viewport(), Qt::LeftButton, {}, at);
      probe_.phase(QStringLiteral("waiting for the Case"));
      QVERIFY(selected.count() > 0 || selected.wait(30000));
      QVERIFY(waitFor(experience, &ExperiencePanel::settled, experience->isSettled()));
      QVERIFY_SETTLED(window);
    }
    QVERIFY(experience->inspected() && experience->inspected()->c.id == cases_.at("s3"));
    QVERIFY2(experience->inspectorText().contains(QStringLiteral("vectorized float4 loads")), qPrintable(experience->inspectorText()));
    QCOMPARE(experience->diff()->changedRows(), 1);  // against its parent, s2
    QVERIFY(window.context()->selection() && window.context()->selection()->origin == CandidateSelection::Origin::GraphNode);
    QVERIFY2(partOf<kwb::ui::ResultsPanel>(window)->summaryText().contains(QStringLiteral("1.85x the reference")),
             qPrintable(partOf<kwb::ui::ResultsPanel>(window)->summaryText()));
    // A Case keeps its numbers, not its rows: Results says so in the tree's place.
    QVERIFY(!partOf<kwb::ui::ResultsPanel>(window)->emptyNote().isEmpty());
    // The graph fills its view (fitted once the page is on screen); every filter reads whole.
    {
      auto *graph = experience->graph();
      const QRectF shown = graph->mapToScene(graph->viewport()->rect()).boundingRect();
      QVERIFY(shown.adjusted(-1, -1, 1, 1).contains(graph->sceneRect()));
      QVERIFY2(graph->sceneRect().width() * graph->zoom() > 0.6 * graph->viewport()->width() ||
                   graph->sceneRect().height() * graph->zoom() > 0.6 * graph->viewport()->height() || graph->zoom() > 2.99,
               qPrintable(QStringLiteral("zoom %1").arg(graph->zoom())));
      for (QComboBox *box : experience->findChildren<QComboBox *>())
        QVERIFY2(box->width() >= box->sizeHint().width(), qPrintable(box->objectName()));
    }
    QVERIFY(shoot(&window, QStringLiteral("experience")));

    // 6. File ▸ Export Kernel…: the editor's kernel (the candidate) as a CUDA package.
    probe_.beginStep(QStringLiteral("9 export"));
    QVERIFY(action(window, "actionExport")->isEnabled());
    probe_.phase(QStringLiteral("Export triggered"));
    action(window, "actionExport")->trigger();
    auto *exportDialog = window.findChild<ExportDialog *>(QStringLiteral("exportDialog"));
    QVERIFY(exportDialog && exportDialog->isVisible());
    QVERIFY(QTest::qWaitForWindowExposed(exportDialog));
    const QString exportDir = QDir(exports_.path()).filePath(QStringLiteral("softmax-cuda"));
    auto *folder = exportDialog->findChild<QLineEdit *>(QStringLiteral("exportFolder"));
    QVERIFY(folder);
    folder->selectAll();
    probe_.phase(QStringLiteral("folder typed"));
    QTest::keyClicks(folder, exportDir);
    QCOMPARE(exportDialog->folder(), exportDir);
    {
      QSignalSpy exported(exportDialog, &ExportDialog::exported);
      probe_.phase(QStringLiteral("Export clicked"));
      QTest::mouseClick(exportDialog->findChild<QPushButton *>(QStringLiteral("exportStart")), Qt::LeftButton);
      probe_.phase(QStringLiteral("waiting for the export"));
      QVERIFY(exported.count() > 0 || exported.wait(60000));
    }
    QVERIFY(exportDialog->outcome());
    QVERIFY2(exportDialog->outcome()->ok, qPrintable(exportDialog->outcome()->error));
    QVERIFY2(exportDialog->outcome()->what.contains(QStringLiteral("g1-l1-t1.cu")), qPrintable(exportDialog->outcome()->what));
    QVERIFY(exportDialog->outcome()->files.size() > 3);
    for (const QString &file : exportDialog->outcome()->files)
      QVERIFY2(QFileInfo(QDir(exportDir).filePath(file)).isFile() || QFileInfo(QDir(exportDir).filePath(file)).isDir(),
               qPrintable(file));
    QVERIFY(QFileInfo(QDir(exportDir).filePath(QStringLiteral("README.md"))).size() > 0);
    QVERIFY(exportDialog->findChild<QListWidget *>(QStringLiteral("exportFiles"))->count() > 3);
    QVERIFY(shoot(exportDialog, QStringLiteral("export")));
    probe_.phase(QStringLiteral("dialog closed"));
    exportDialog->close();
    QVERIFY_SETTLED(window);

    // 7. Help ▸ User Guide, and File ▸ Import…: each in its own window.
    probe_.beginStep(QStringLiteral("10 user guide"));
    QAction *guideAction = action(window, "actionUserGuide");
    probe_.phase(QStringLiteral("User Guide triggered"));
    guideAction->trigger();
    auto *guide = window.findChild<HelpView *>(QStringLiteral("helpView"));
    QVERIFY(guide && guide->isWindow() && guide->isVisible());
    QVERIFY(QTest::qWaitForWindowExposed(guide));
    QVERIFY(guide->chapters().size() >= 10);
    QVERIFY(!guide->currentChapter().isEmpty());
    QCOMPARE(guide->listedChapters().size(), guide->chapters().size());
    QVERIFY(guide->findChild<QTextBrowser *>(QStringLiteral("helpBrowser"))->toPlainText().size() > 200);
    QVERIFY(!guide->findChild<QListWidget *>(QStringLiteral("helpChapters"))->horizontalScrollBar()->isVisible());
    QVERIFY(shoot(guide, QStringLiteral("user-guide")));
    probe_.phase(QStringLiteral("guide closed"));
    guide->close();

    probe_.beginStep(QStringLiteral("11 import dialog"));
    auto *importService = window.findChild<ImportService *>();
    QVERIFY(importService);
    QSignalSpy checked(importService, &ImportService::pythonChecked);
    QAction *importAction = action(window, "actionImportKernelBench");
    probe_.phase(QStringLiteral("Import triggered"));
    importAction->trigger();
    auto *importDialog = window.findChild<ImportDialog *>(QStringLiteral("importDialog"));
    QVERIFY(importDialog && importDialog->isVisible());
    QVERIFY(QTest::qWaitForWindowExposed(importDialog));
    probe_.phase(QStringLiteral("waiting for the Python check"));
    QVERIFY(checked.count() > 0 || checked.wait(60000));  // the Python asked for PyTorch first
    auto *pythonStatus = importDialog->findChild<QLabel *>(QStringLiteral("importPythonStatus"));
    QVERIFY(pythonStatus && !pythonStatus->text().isEmpty());
    QVERIFY(!importDialog->python().isEmpty());
    QVERIFY(!importDialog->findChild<QPushButton *>(QStringLiteral("importStart"))->isEnabled());  // no modules chosen
    // The form's labels are real, each the buddy of its field (its mnemonic works, no "&" shown).
    for (const auto &[text, field] : {std::pair{QStringLiteral("&Python:"), QStringLiteral("importPython")},
                                      std::pair{QStringLiteral("&Modules:"), QStringLiteral("importModules")},
                                      std::pair{QStringLiteral("&Into folder:"), QStringLiteral("importFolder")}}) {
      QLabel *found = nullptr;
      for (QLabel *l : importDialog->findChildren<QLabel *>())
        if (l->text() == text) found = l;
      QVERIFY2(found && found->buddy() && found->buddy()->objectName() == field, qPrintable(text));
    }
    // The whole message: its label as tall as its wrapped text needs.
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    QVERIFY2(pythonStatus->height() >= pythonStatus->heightForWidth(pythonStatus->width()),
             qPrintable(QStringLiteral("%1 < %2").arg(pythonStatus->height()).arg(pythonStatus->heightForWidth(pythonStatus->width()))));
    QVERIFY(shoot(importDialog, QStringLiteral("import")));
    probe_.phase(QStringLiteral("dialog closed"));
    importDialog->close();
    QVERIFY_SETTLED(window);
    probe_.endStep();

    // Every step within 50 ms.
    qint64 worst = 0;
    QString worstStep;
    QStringList over;
    for (const auto &[step, ms] : probe_.steps()) {
      if (ms > worst) {
        worst = ms;
        worstStep = step;
      }
      if (ms > kLongestPauseMs) over << QStringLiteral("%1: %2 ms").arg(step).arg(ms);
    }
    qInfo("GUI thread's longest pause: %lld ms (during %s), over the whole walkthrough", static_cast<long long>(worst),
          qPrintable(worstStep));
    QVERIFY2(over.isEmpty(), qPrintable(QStringLiteral("the GUI thread stalled over %1 ms: %2").arg(kLongestPauseMs).arg(over.join(QStringLiteral("; ")))));
  }
};

QTEST_MAIN(TestWalkthrough)
#include "tst_walkthrough.moc"
