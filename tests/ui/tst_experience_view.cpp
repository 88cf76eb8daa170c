// The Experience view (issue 19 item 5) over a real library file: the memory's Cases drawn as a
// graph (Graphviz on its own thread), filters, search stepping through matches, a node clicked and
// inspected with its diff against its parent, the overview moving the view; in the window, a Case
// selected reaches the workbench context (Results follows, with the run's table per configuration
// when the Case is a run of the open workspace) and "continue from here" opens its kernel, its task
// opened first. Offscreen, with pictures in the test output folder.
#include <QtTest>

#include <QComboBox>
#include <QDockWidget>
#include <QPlainTextEdit>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTextBrowser>

#include <filesystem>

#include "core/memory/case_sources.h"
#include "core/memory/experience_store.h"
#include "core/store/workspace.h"
#include "helpers/memory_fixtures.h"
#include "isolated_home.h"
#include "signal_wait.h"
#include "window_parts.h"
#include "ui/main_window.h"
#include "ui/views/work_area.h"
#include "ui/services/memory_service.h"
#include "ui/views/cuda_editor.h"
#include "ui/views/experience_graph_view.h"
#include "ui/views/experience_panel.h"
#include "ui/models/evaluation_result_model.h"
#include "ui/views/results_panel.h"
#include "ui/views/side_by_side_diff.h"
#include "ui/workbench_context.h"

namespace fs = std::filesystem;
using namespace kwb;
using namespace kwb::ui;
using kwb::memory::Case;

namespace {

bool settle(ExperiencePanel &panel) { return waitFor(&panel, &ExperiencePanel::settled, panel.isSettled()); }

// The panel on the service, on screen, the memory read and drawn.
bool showMemory(MemoryService &service, ExperiencePanel &panel) {
  panel.attach(&service);
  panel.resize(1400, 700);
  panel.show();
  panel.refresh();
  return settle(panel);
}

std::string kernel(const std::string &name, const std::string &body) {
  return "extern \"C\" __global__ void " + name + "(const float *x, float *y, int n) {\n" + body + "\n}\n";
}

}  // namespace

class TestExperienceView : public QObject {
  Q_OBJECT

  IsolatedHome home_;
  fs::path dir_;
  QString library_;
  std::map<std::string, std::int64_t> ids_;

 private slots:
  void initTestCase() {
    dir_ = fs::path(KWB_TEST_OUTPUT_DIR) / "experience-view";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    library_ = QString::fromStdString((dir_ / "library.sqlite").string());
    auto store = memory::ExperienceStore::open(library_.toStdString());
    auto add = [&](const std::string &key, const std::string &task, std::optional<std::string> parent, bool correct,
                   double speedup, const std::string &idea, const std::string &body, const std::string &gpu = "NVIDIA H200") {
      Case c = test::memoryCase(idea, correct, speedup, kernel(task, body));
      c.sourceRef = key;
      c.task = task;
      c.operatorClass = task == "sgemm" ? "gemm" : "reduction";
      c.gpu = gpu;
      c.session = task == "softmax" ? "s-1" : "";
      if (parent) {
        c.parent = ids_.at(*parent);
        c.before = store->get(*c.parent, true)->after;
      }
      ids_[key] = store->record(c);
    };
    add("s1", "softmax", {}, true, 1.0, "the starter", "  y[0] = x[0];");
    add("s2", "softmax", "s1", true, 1.8, "one warp per row with warp shuffle reductions", "  y[0] = x[0] * 2;");
    add("s3", "softmax", "s2", true, 1.85, "vectorized float4 loads", "  y[0] = x[0] * 2; // float4");
    add("s4", "softmax", "s2", false, 0, "skip the max subtraction", "  y[0] = 0;");
    add("s5", "softmax", "s1", true, 0.9, "shared memory staging", "  __shared__ float t[32]; y[0] = x[0];");
    add("l1", "layernorm", {}, true, 1.2, "welford in one pass", "  y[1] = x[1];", "NVIDIA A100");
    add("l2", "layernorm", "l1", true, 2.4, "warp shuffle welford", "  y[1] = x[1] * 3;", "NVIDIA A100");
    add("g1", "sgemm", {}, true, 0.5, "tiled shared memory gemm", "  y[2] = x[2];");
    add("g2", "sgemm", "g1", true, 2.0, "register blocking 8x8", "  y[2] = x[2] + 1;");
    add("g3", "sgemm", "g2", true, 2.02, "double buffering", "  y[2] = x[2] + 2;");
  }

  void drawsFiltersAndSearches() {
    MemoryService service(library_);
    ExperiencePanel panel;
    QVERIFY(showMemory(service, panel));
    auto *graph = panel.graph();
    QVERIFY2(graph->nodeCount() == 10, qPrintable(panel.statusText()));
    QVERIFY2(panel.statusText().contains(QStringLiteral("10 of 10 Cases shown")), qPrintable(panel.statusText()));
    QVERIFY2(panel.statusText().contains(QStringLiteral("laid out in")), qPrintable(panel.statusText()));
    // Each child to the right of its parent; each task in a frame of its own.
    QVERIFY(graph->nodeCentre(ids_["s2"]).x() > graph->nodeCentre(ids_["s1"]).x());
    QVERIFY(graph->nodeCentre(ids_["g3"]).x() > graph->nodeCentre(ids_["g2"]).x());
    QVERIFY(graph->nodeCentre(ids_["l1"]).y() != graph->nodeCentre(ids_["s1"]).y());
    QVERIFY(graph->grab().save(QString::fromStdString((dir_ / "experience-graph.png").string())));

    // The task filter: softmax's five.
    auto *task = panel.taskFilter();
    const int softmax = task->findData(QStringLiteral("softmax"));
    QVERIFY(softmax > 0);
    QVERIFY2(task->itemText(softmax).contains(QStringLiteral("(5)")), qPrintable(task->itemText(softmax)));
    task->setCurrentIndex(softmax);
    QVERIFY(settle(panel));
    QCOMPARE(graph->nodeCount(), 5);
    QVERIFY(!graph->hasNode(ids_["l1"]));
    // And the label: softmax's effective Cases (s2 at x1.8; s3 is x1.03 of s2: partial).
    auto *label = panel.labelFilter();
    label->setCurrentIndex(label->findData(QStringLiteral("effective")));
    QVERIFY(settle(panel));
    QCOMPARE(graph->nodeCount(), 1);
    QVERIFY(graph->hasNode(ids_["s2"]));
    label->setCurrentIndex(0);
    task->setCurrentIndex(0);
    QVERIFY(settle(panel));
    QCOMPARE(graph->nodeCount(), 10);

    // Search: "shuffle" is in two ideas; Enter selects the first, then the next, then wraps.
    panel.searchBox()->setText(QStringLiteral("shuffle"));
    QTest::keyClick(panel.searchBox(), Qt::Key_Return);
    QVERIFY(settle(panel));
    QVERIFY2(panel.statusText().contains(QStringLiteral("2 match(es)")), qPrintable(panel.statusText()));
    QCOMPARE(graph->selectedCase(), ids_["s2"]);
    QVERIFY(panel.inspected() && panel.inspected()->c.id == ids_["s2"]);
    QTest::keyClick(panel.searchBox(), Qt::Key_Return);
    QVERIFY(settle(panel));
    QCOMPARE(graph->selectedCase(), ids_["l2"]);
    QTest::keyClick(panel.searchBox(), Qt::Key_Return);
    QVERIFY(settle(panel));
    QCOMPARE(graph->selectedCase(), ids_["s2"]);
    QVERIFY(graph->grab().save(QString::fromStdString((dir_ / "experience-search.png").string())));
    panel.searchBox()->clear();
    QVERIFY(settle(panel));
    QVERIFY2(!panel.statusText().contains(QStringLiteral("match")), qPrintable(panel.statusText()));
  }

  void clickInspectsTheCase() {
    MemoryService service(library_);
    ExperiencePanel panel;
    QVERIFY(showMemory(service, panel));
    auto *graph = panel.graph();
    graph->fit();
    QSignalSpy selected(&panel, &ExperiencePanel::caseSelected);
    // A click on s4 (the incorrect one) in the view.
    const QPoint at = graph->mapFromScene(graph->nodeCentre(ids_["s4"]));
    QTest::mouseClick(graph->viewport(), Qt::LeftButton, {}, at);
    QVERIFY(settle(panel));
    QCOMPARE(selected.count(), 1);
    const auto detail = selected.at(0).at(0).value<CaseDetail>();
    QCOMPARE(detail.c.id, ids_["s4"]);
    QVERIFY(detail.parent && detail.parent->id == ids_["s2"]);
    const QString text = panel.inspectorText();
    for (const QString &part : {QStringLiteral("skip the max subtraction"), QStringLiteral("negative"),
                                QStringLiteral("mismatch at y[17]"), QStringLiteral("incorrect"),
                                QStringLiteral("NVIDIA H200 (sm_90)")})
      QVERIFY2(text.contains(part), qPrintable(QStringLiteral("%1 not in:\n%2").arg(part, text)));
    // Its code against its parent's: one line changed.
    QCOMPARE(panel.diff()->changedRows(), 1);
    QCOMPARE(panel.diff()->right()->toPlainText().trimmed(), QString::fromStdString(detail.c.after).trimmed());
    QCOMPARE(panel.diff()->left()->toPlainText().trimmed(), QString::fromStdString(detail.parent->after).trimmed());
    QVERIFY(panel.findChild<QPushButton *>(QStringLiteral("experienceOpen"))->isEnabled());
    QVERIFY(panel.grab().save(QString::fromStdString((dir_ / "experience-panel.png").string())));

    // Zoom and the overview: zoomed in, a click on the overview's far corner moves the view there.
    graph->zoomBy(4);
    auto *overview = panel.findChild<GraphOverview *>();
    QVERIFY(overview && overview->isVisible());
    const int before = graph->verticalScrollBar()->value() + graph->horizontalScrollBar()->value();
    QTest::mouseClick(overview, Qt::LeftButton, {}, QPoint(overview->width() - 3, overview->height() - 3));
    const int after = graph->verticalScrollBar()->value() + graph->horizontalScrollBar()->value();
    QVERIFY2(after > before, qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(after)));
    QTest::keyClick(graph, Qt::Key_F);  // the whole graph again: fitted, never past 3x
    QVERIFY(graph->zoom() < 3.01);
    QVERIFY(graph->mapToScene(graph->viewport()->rect()).boundingRect().adjusted(-1, -1, 1, 1).contains(graph->sceneRect()));
  }

  void windowFollowsAndContinues() {
    qputenv("KWB_LIBRARY", library_.toUtf8());
    MainWindow window(home_.path(QStringLiteral("workspace/test.kwb")));
    window.resize(1600, 1000);
    window.show();
    QVERIFY_SETTLED(window);
    QVERIFY(window.openTask(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax")));
    QVERIFY_SETTLED(window);
    window.workArea()->reveal(kwb::ui::WorkArea::Page::Experience);
    auto *panel = window.experiencePanel();
    panel->refresh();  // as showing the dock does, once it is on screen
    QVERIFY(!window.isSettled());
    QVERIFY_SETTLED(window);
    QCOMPARE(panel->graph()->nodeCount(), 10);
    QCOMPARE(panel->bestCase(QStringLiteral("softmax")), ids_["s3"]);

    // Selected in the graph: the context carries it, Results shows it.
    panel->selectCase(ids_["s3"]);
    QVERIFY_SETTLED(window);
    const auto &selection = window.context()->selection();
    QVERIFY(selection && selection->origin == CandidateSelection::Origin::GraphNode);
    QCOMPARE(selection->run.sourceName, QStringLiteral("softmax-case-%1.cu").arg(ids_["s3"]));
    QCOMPARE(selection->run.taskFolder, window.context()->taskFolder());
    QCOMPARE(selection->run.device, QStringLiteral("NVIDIA H200"));
    QVERIFY(window.findChild<ResultsPanel *>()->summaryText().contains(QStringLiteral("1.85x the reference")));

    // Open in editor: the kernel in a file of its own.
    panel->findChild<QPushButton *>(QStringLiteral("experienceOpen"))->click();
    auto *editor = window.currentEditor();
    QVERIFY(editor);
    QCOMPARE(QFileInfo(editor->fileName()).fileName(), QStringLiteral("softmax-case-%1.cu").arg(ids_["s3"]));
    QCOMPARE(editor->text(), QString::fromStdString(kernel("softmax", "  y[0] = x[0] * 2; // float4")));

    // A layernorm Case: the bundled layernorm task opened first.
    panel->selectCase(ids_["l2"]);
    QVERIFY_SETTLED(window);
    QVERIFY(panel->inspected() && panel->inspected()->c.id == ids_["l2"]);
    QVERIFY(window.continueFromCase(*panel->inspected(), false));
    QCOMPARE(window.context()->taskName(), QStringLiteral("layernorm"));
    QCOMPARE(QFileInfo(window.currentEditor()->fileName()).fileName(), QStringLiteral("layernorm-case-%1.cu").arg(ids_["l2"]));
    // A task that is nowhere to be found: refused, said in the log.
    CaseDetail stray = *panel->inspected();
    stray.c.task = "no-such-task";
    QVERIFY(!window.continueFromCase(stray, false));
    QVERIFY_SETTLED(window);
    QVERIFY(window.grab().save(QString::fromStdString((dir_ / "experience-window.png").string())));
    qunsetenv("KWB_LIBRARY");
  }

  // A Case made from a run of the open workspace: Results gets the run's full evaluation (a row
  // per configuration), the Case's summary as its message; a Case of another workspace keeps its
  // summary alone.
  void caseOfThisWorkspaceShowsItsRun() {
    const fs::path wsPath = dir_ / "runs.kwb";
    const QString library = QString::fromStdString((dir_ / "runs-library.sqlite").string());
    std::int64_t caseId = 0, stranger = 0;
    {
      auto ws = Workspace::open(wsPath);
      const auto task = ws->recordTaskOpened("softmax", KWB_SOURCE_DIR "/kernels/softmax", "hash");
      test::addMemoryRun(*ws, task.id, kernel("softmax", "  y[0] = 1;"), test::memoryRunResult(true, {1.0, 1.0, 1.0}));
      test::addMemoryRun(*ws, task.id, kernel("softmax", "  y[0] = 2;"), test::memoryRunResult(true, {2.0, 2.0, 2.0}));
      auto store = memory::ExperienceStore::open(library.toStdString());
      QCOMPARE(memory::syncWorkspace(*store, *ws).added, std::size_t{2});
      caseId = store->cases("softmax").back().id;
      Case other = *store->get(caseId, true);
      other.sourceRef = "workspace:0123#evaluation-2";  // the same run number, another workspace
      other.parent.reset();
      stranger = store->record(other);
    }
    qputenv("KWB_LIBRARY", library.toUtf8());
    MainWindow window(QString::fromStdString(wsPath.string()));
    window.resize(1600, 1000);
    window.show();
    QVERIFY_SETTLED(window);
    QVERIFY(window.openTask(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax")));
    QVERIFY_SETTLED(window);
    window.workArea()->reveal(kwb::ui::WorkArea::Page::Experience);
    auto *panel = window.experiencePanel();
    panel->refresh();
    QVERIFY_SETTLED(window);
    auto *results = window.findChild<ResultsPanel *>();

    panel->selectCase(caseId);
    QVERIFY_SETTLED(window);
    auto selection = window.context()->selection();
    QVERIFY(selection && selection->origin == CandidateSelection::Origin::GraphNode);
    QCOMPARE(selection->run.sourceName, QStringLiteral("softmax-case-%1.cu").arg(caseId));
    QVERIFY(selection->run.result);
    QCOMPARE(selection->run.result->configs.size(), std::size_t{3});
    QVERIFY(selection->run.historyId > 0);
    QCOMPARE(results->model()->rowCount(), 3);
    QVERIFY2(results->summaryText().contains(QStringLiteral("Case %1: 2.00x the reference").arg(caseId)),
             qPrintable(results->summaryText()));

    panel->selectCase(stranger);
    QVERIFY_SETTLED(window);
    selection = window.context()->selection();
    QVERIFY(selection && selection->origin == CandidateSelection::Origin::GraphNode);
    QCOMPARE(selection->run.sourceName, QStringLiteral("softmax-case-%1.cu").arg(stranger));
    QVERIFY(!selection->run.result || selection->run.result->configs.empty());
    QCOMPARE(results->model()->rowCount(), 0);
    qunsetenv("KWB_LIBRARY");
  }
};

QTEST_MAIN(TestExperienceView)
#include "tst_experience_view.moc"
