// The Lineage and Skills views (issue 18) over a real library file: the lineage path, a step
// side by side with its parent, its figures; cards filtered, rendered, reviewed and edited, each
// change in the audit trail; an evidence link that opens its lineage step. Offscreen, with
// pictures of both views in the test output folder.
#include <QtTest>
#include <QLineEdit>

#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QTreeWidget>

#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <sstream>

#include "core/lineage/lineage_build.h"
#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_library.h"
#include "core/lineage/skill_markdown.h"
#include "core/lineage/lineage.h"
#include "core/task/manifest_parser.h"
#include "helpers/measured_lineage.h"
#include "core/gpu/device_info.h"
#include "helpers/replay_llm_server.h"
#include "helpers/test_files.h"
#include "ui/services/skill_library_service.h"
#include "ui/views/lineage_panel.h"
#include "ui/views/side_by_side_diff.h"
#include "ui/views/skills_panel.h"
#include "ui/workbench_context.h"
#include "ui/views/skill_card_form.h"

namespace fs = std::filesystem;
using namespace kwb;
using namespace kwb::ui;

namespace {


const kwb::SkillCard *cardOf(const SkillLibraryService &service, const std::string &id) {
  for (const auto &c : service.snapshot().cards)
    if (c.id == id) return &c;
  return nullptr;
}

// A Skills panel over the library at `path`, shown, its first load asked for (wait on `loaded`).
struct ShownPanel {
  SkillLibraryService service;
  SkillsPanel panel;
  QSignalSpy loaded{&service, &SkillLibraryService::loaded};
  explicit ShownPanel(const QString &path, QSize size = {}) : service(path) {
    panel.attach(&service);
    if (size.isValid()) panel.resize(size);
    panel.show();
    service.refresh();
  }
};

// Clicks the panel's Edit button; the form it opens is given to `change` (with the text of its
// labels), then saved. False when no form with a Save button opened: the test has then failed with
// what was missing, and any dialog left open was closed (it waited for a click that never came).
bool editInTheForm(SkillsPanel &panel, const std::function<void(SkillCardForm &, const QString &)> &change) {
  QString missing = QStringLiteral("Edit opened no form");
  QTimer inTheDialog;  // destroyed on return: it cannot fire later, into this function's gone locals
  inTheDialog.setSingleShot(true);
  QObject::connect(&inTheDialog, &QTimer::timeout, &panel, [&] {
    auto *form = panel.findChild<SkillCardForm *>(QStringLiteral("skillCardForm"));
    auto *buttons = form ? form->findChild<QDialogButtonBox *>() : nullptr;
    auto *save = buttons ? buttons->button(QDialogButtonBox::Save) : nullptr;
    if (!save) {
      missing = !form ? QStringLiteral("no skill card form is open after Edit") : QStringLiteral("the form has no Save button");
      for (auto *widget : QApplication::topLevelWidgets())
        if (auto *open = qobject_cast<QDialog *>(widget); open && open->isVisible()) open->reject();
      return;
    }
    missing.clear();
    QString labels;
    for (auto *label : form->findChildren<QLabel *>()) labels += label->text() + QLatin1Char('\n');
    change(*form, labels);
    save->click();
  });
  inTheDialog.start(0);
  panel.findChild<QPushButton *>(QStringLiteral("skillEdit"))->click();
  if (!missing.isEmpty()) QTest::qFail(qPrintable(missing), __FILE__, __LINE__);
  return missing.isEmpty();
}

}  // namespace

class TestSkillsViews : public QObject {
  Q_OBJECT

  fs::path dir_;
  QString library_;

 private slots:
  void initTestCase() {
    dir_ = fs::path(KWB_TEST_OUTPUT_DIR) / "skills-views";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    library_ = QString::fromStdString((dir_ / "library.sqlite").string());
    // gemm-bf16 with step 7 rejected, sgemm whole; their cards; and the published-shaped cards.
    auto lib = SkillLibrary::open(library_.toStdString());
    for (const auto &[name, rejected] : {std::pair<std::string, int>{"gemm-bf16", 7}, {"sgemm", 0}}) {
      auto m = test::measuredLineage(name, rejected);
      // Step k's DRAM throughput reads 10k % at the "large" configuration.
      std::vector<profile::ProfileResult> profiles(m.record.steps.size());
      for (std::size_t i = 0; i < profiles.size(); ++i) {
        profiles[i].outcome = Outcome::Profiled;
        profiles[i].config = "large";
        profiles[i].metrics = {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput", "%", 10.0 * double(i + 1)}};
      }
      recordProfiles(m.record, profiles);
      lib->putLineage(m.record);
      for (const auto &c : liftCards(m.record, m.task)) lib->proposeCard(c, "test", name);
    }
    const fs::path published = fs::path(KWB_SOURCE_DIR) / "tests/fixtures/skills/published-like";
    for (const auto &entry : fs::directory_iterator(published)) {
      const auto read = readSkillMarkdown(test::readFile(entry.path() / "SKILL.md"), entry.path().string());
      QVERIFY(read.card);
      lib->importCards({{*read.card, entry.path().string()}}, SkillLibrary::KnownCards::Refuse, "test");
    }
  }

  void lineagePathAndStep() {
    SkillLibraryService service(library_);
    LineagePanel panel;
    panel.attach(&service);
    panel.resize(1400, 700);
    panel.show();
    QSignalSpy loaded(&service, &SkillLibraryService::loaded);
    service.refresh();
    QVERIFY(loaded.wait(10000));
    QCOMPARE(panel.lineageBox()->count(), 2);
    QVERIFY(panel.showLineage(QStringLiteral("gemm-bf16"), 5));
    QCOMPARE(panel.currentLineage(), QStringLiteral("gemm-bf16"));
    QCOMPARE(panel.currentStep(), 5);
    QVERIFY2(panel.summary().contains(QStringLiteral("11 of 12 steps passed the gate")), qPrintable(panel.summary()));
    // Step 5 against step 4: changed lines, with the part of each that changed marked.
    auto *diff = panel.diff();
    QVERIFY(diff->changedRows() > 0);
    QVERIFY(diff->addedRows() > 0);
    QVERIFY(diff->markedOnTheRight().join(QStringLiteral("\n")).contains(QStringLiteral("cpasync")));
    QVERIFY(diff->left()->toPlainText().contains(QStringLiteral("gemm_bf16_mma(")));
    QVERIFY(diff->right()->toPlainText().contains(QStringLiteral("gemm_bf16_cpasync(")));
    QCOMPARE(diff->left()->document()->blockCount(), diff->right()->document()->blockCount());
    // Its figures: medians before and after, the speedup, the kernel's deltas.
    QStringList rows;
    for (int r = 0; r < panel.figures()->rowCount(); ++r)
      rows << panel.figures()->item(r, 0)->text() + QLatin1Char('=') + panel.figures()->item(r, 2)->text();
    QVERIFY2(rows.join(QLatin1Char(' ')).contains(QStringLiteral("speedup=\u00d72.00")), qPrintable(rows.join(QLatin1Char(' '))));
    QVERIFY2(rows.join(QLatin1Char(' ')).contains(QStringLiteral("registers=37")), qPrintable(rows.join(QLatin1Char(' '))));
    // The profiler's figure before (step 4) and after (step 5).
    const int dram = static_cast<int>(rows.indexOf(QStringLiteral("profile large: DRAM throughput (%)=50")));
    QVERIFY2(dram >= 0, qPrintable(rows.join(QLatin1Char(' '))));
    QCOMPARE(panel.figures()->item(dram, 1)->text(), QStringLiteral("40"));
    // The first step's profile has nothing before it: it stands alone.
    QVERIFY(panel.showLineage(QStringLiteral("gemm-bf16"), 1));
    bool alone = false;
    for (int r = 0; r < panel.figures()->rowCount(); ++r)
      alone = alone || (panel.figures()->item(r, 0)->text() == QStringLiteral("profile large: DRAM throughput (%)") &&
                        panel.figures()->item(r, 1)->text().isEmpty() && panel.figures()->item(r, 2)->text() == QStringLiteral("10"));
    QVERIFY(alone);
    // A click on the third node selects step 3.
    QTest::mouseClick(panel.path(), Qt::LeftButton, {}, panel.path()->nodeRect(2).center());
    QCOMPARE(panel.currentStep(), 3);
    // The rejected step is shown with its reason; its parent is the last accepted step.
    QVERIFY(panel.showLineage(QStringLiteral("gemm-bf16"), 8));
    QVERIFY(panel.showLineage(QStringLiteral("gemm-bf16"), 7));
    QVERIFY(panel.findChild<QLabel *>(QStringLiteral("lineageStepTitle"))->text().contains(QStringLiteral("rejected")));
    QVERIFY(panel.showLineage(QStringLiteral("gemm-bf16"), 5));
    QVERIFY(panel.grab().save(QString::fromStdString((dir_ / "lineage-panel.png").string())));

    // A task's bundled lineage not in the library (softmax here): listed first, read-only, every
    // step with its code and the diff to the one before, nothing measured, and it says why.
    const auto softmax = kwb::loadTask(fs::path(KWB_SOURCE_DIR) / "kernels/softmax");
    panel.setPreview(kwb::unmeasuredLineage(softmax, "no GPU: libcuda is not installed"));
    QCOMPARE(panel.lineageBox()->count(), 3);
    QVERIFY2(panel.lineageBox()->itemText(0).contains(QStringLiteral("softmax  (bundled, 5 steps, not measured)")),
             qPrintable(panel.lineageBox()->itemText(0)));
    panel.lineageBox()->setCurrentIndex(0);
    QVERIFY(panel.isPreview());
    QCOMPARE(panel.currentStep(), 5);  // the last step, against step 4
    QVERIFY2(panel.summary().contains(QStringLiteral("not measured (no GPU: libcuda is not installed)")), qPrintable(panel.summary()));
    QVERIFY(panel.findChild<QLabel *>(QStringLiteral("lineageStepTitle"))->text().contains(QStringLiteral("not measured")));
    QVERIFY(diff->left()->toPlainText().contains(QStringLiteral("Step 4 of 5")));
    QVERIFY(diff->right()->toPlainText().contains(QStringLiteral("Step 5 of 5")));
    QVERIFY(diff->addedRows() + diff->changedRows() > 0);
    QCOMPARE(panel.figures()->rowCount(), 0);  // nothing measured, nothing made up
    // A lineage of that name in the library: the stored one is shown, not the preview.
    panel.setPreview(kwb::unmeasuredLineage(kwb::loadTask(fs::path(KWB_SOURCE_DIR) / "kernels/sgemm"), "not built"));
    QCOMPARE(panel.lineageBox()->count(), 2);
    panel.setPreview(std::nullopt);
    QCOMPARE(panel.lineageBox()->count(), 2);
  }

  // Import and Export in the view (issue 48, 5): what kwb skills import / export do, off the GUI
  // thread; an import with a card already known stores nothing and says so.
  // One selection (issue 48, 2): a card's evidence link selects its lineage step in the window's
  // context, opened, and the Lineage view, which only observes the context, shows that step; a step
  // the user picks in the Lineage view is selected there in turn (not opened).
  void evidenceSelectsTheLineageStep() {
    SkillLibraryService service(library_);
    LineagePanel lineage;
    SkillsPanel skills;
    lineage.attach(&service);
    skills.attach(&service);
    WorkbenchContext context;
    context.addView(&lineage);
    context.addView(&skills);
    QSignalSpy loaded(&service, &SkillLibraryService::loaded);
    service.refresh();
    QVERIFY(loaded.wait(10000));
    QVERIFY(skills.selectCard(QStringLiteral("cp-async")));
    emit skills.view()->anchorClicked(QUrl(QStringLiteral("kwb-lineage:gemm-bf16/5")));
    QVERIFY(context.selection());
    QVERIFY(context.selection()->origin == CandidateSelection::Origin::LineageStep);
    QCOMPARE(context.selection()->lineage, QStringLiteral("gemm-bf16"));
    QCOMPARE(context.selection()->step, 5);
    QVERIFY(context.selection()->activate);
    QCOMPARE(lineage.currentLineage(), QStringLiteral("gemm-bf16"));
    QCOMPARE(lineage.currentStep(), 5);

    QVERIFY(lineage.showLineage(QStringLiteral("sgemm"), 3));  // as a click on step 3 does
    QCOMPARE(context.selection()->lineage, QStringLiteral("sgemm"));
    QCOMPARE(context.selection()->step, 3);
    QVERIFY(!context.selection()->activate);
  }

  void importAndExportInTheView() {
    const QString fresh = QString::fromStdString((dir_ / "import-export.sqlite").string());
    SkillLibraryService service(fresh);
    SkillsPanel panel;
    panel.attach(&service);
    QVERIFY(panel.importButton() && panel.exportButton());
    QSignalSpy imported(&service, &SkillLibraryService::imported);
    const QString published = QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/skills/published-like");
    service.importFrom(published, false, QStringLiteral("reviewer:ada"));
    QVERIFY(imported.wait(20000));
    QVERIFY2(imported.last().at(2).toStringList().isEmpty(), qPrintable(imported.last().at(2).toStringList().join('\n')));
    const QString summary = imported.last().at(1).toString();
    QVERIFY2(summary.contains(QStringLiteral(" new (proposed)")), qPrintable(summary));
    const int cards = static_cast<int>(service.snapshot().cards.size());
    QVERIFY(cards > 0);
    QVERIFY2(panel.message().contains(QStringLiteral("Imported")), qPrintable(panel.message()));
    // Again: every card is known, nothing stored, the count said.
    service.importFrom(published, false, QStringLiteral("reviewer:ada"));
    QVERIFY(imported.wait(20000));
    QCOMPARE(imported.last().at(3).toInt(), cards);
    QVERIFY2(imported.last().at(1).toString().startsWith(QStringLiteral("Nothing imported")), qPrintable(imported.last().at(1).toString()));
    // Export writes each card as FOLDER/<id>/SKILL.md.
    QSignalSpy exported(&service, &SkillLibraryService::exported);
    const fs::path out = dir_ / "exported";
    fs::remove_all(out);
    service.exportTo(QString::fromStdString(out.string()));
    QVERIFY(exported.wait(20000));
    QVERIFY2(exported.last().at(0).toString().startsWith(QStringLiteral("Wrote %1 SKILL.md").arg(cards)),
             qPrintable(exported.last().at(0).toString()));
    for (const auto &c : service.snapshot().cards) QVERIFY(fs::exists(out / c.id / "SKILL.md"));
  }

  void cardReviewAndEdit() {
    ShownPanel view(library_, QSize(1400, 800));
    auto &[service, panel, loaded] = view;
    QVERIFY(loaded.wait(10000));
    const int all = panel.visibleCards();
    // 10 cards lifted from gemm-bf16 (12 steps, step 7 rejected), 5 from sgemm, 2 published-shaped.
    QCOMPARE(all, 17);
    // Filters: status, operator class (the published '*' card covers softmax), text.
    panel.setFilters(QString(), QStringLiteral("softmax"), QString());
    QCOMPARE(panel.visibleCards(), 1);
    panel.setFilters(QString(), QStringLiteral("flash-attention"), QString());
    QCOMPARE(panel.visibleCards(), 2);
    panel.setFilters(QStringLiteral("admitted"), QString(), QString());
    QCOMPARE(panel.visibleCards(), 0);
    panel.setFilters(QString(), QString(), QStringLiteral("CP-ASYNC"));
    QCOMPARE(panel.visibleCards(), 2);  // cp-async and 4-stage-cp-async-pipeline
    panel.setFilters(QString(), QString(), QString());
    QCOMPARE(panel.visibleCards(), all);

    // The card with every field, its evidence linked to its lineage step.
    QVERIFY(panel.selectCard(QStringLiteral("cp-async")));
    const QString text = panel.cardText();
    for (const char *want : {"Preconditions", "Data types:", "Hardware:", "Evidence", "Verification log", "Before", "After",
                             "provides", "cp-async"})
      QVERIFY2(text.contains(QLatin1String(want)), want);
    QVERIFY(panel.cardHtml().contains(QStringLiteral("kwb-lineage:gemm-bf16/5")));
    QSignalSpy step(&panel, &SkillsPanel::lineageStepRequested);
    emit panel.view()->anchorClicked(QUrl(QStringLiteral("kwb-lineage:gemm-bf16/5")));
    QCOMPARE(step.count(), 1);
    QCOMPARE(step.at(0).at(0).toString(), QStringLiteral("gemm-bf16"));
    QCOMPARE(step.at(0).at(1).toInt(), 5);
    QVERIFY(panel.grab().save(QString::fromStdString((dir_ / "skills-panel.png").string())));

    // Approve: stored, with who; the button follows the status.
    QSignalSpy reviewed(&service, &SkillLibraryService::reviewed);
    // The review buttons record a name: none given, they wait for one.
    panel.reviewerField()->clear();
    QVERIFY(!panel.approveButton()->isEnabled());
    QVERIFY(!panel.rejectButton()->isEnabled());
    QVERIFY2(panel.approveButton()->toolTip().contains(QStringLiteral("Enter your name")), qPrintable(panel.approveButton()->toolTip()));
    QTest::keyClicks(panel.reviewerField(), QStringLiteral("ada"));
    QVERIFY(panel.approveButton()->isEnabled());
    QVERIFY2(panel.approveButton()->toolTip().contains(QStringLiteral("reviewer:ada")), qPrintable(panel.approveButton()->toolTip()));
    QTest::mouseClick(panel.approveButton(), Qt::LeftButton);
    QVERIFY(reviewed.wait(10000));
    QVERIFY(loaded.count() >= 2 || loaded.wait(10000));
    // A reviewer approves (the gate alone admits): the status says which.
    QTRY_VERIFY(cardOf(service, "cp-async") && cardOf(service, "cp-async")->status == CardStatus::Approved);
    QTRY_VERIFY(panel.auditText().contains(QStringLiteral("reviewer:ada")));
    QVERIFY(!panel.approveButton()->isEnabled());
    QCOMPARE(SkillLibrary::open(library_.toStdString())->audit("cp-async").back().action, std::string("approved"));

    // Reject with a reason.
    panel.reject(QStringLiteral("reviewer:ada"), QStringLiteral("the carrier misses the wait"));
    QVERIFY(reviewed.wait(10000));
    QTRY_VERIFY(cardOf(service, "cp-async")->status == CardStatus::Rejected);
    QCOMPARE(SkillLibrary::open(library_.toStdString())->audit("cp-async").back().detail,
             std::string("approved -> rejected: the carrier misses the wait"));

    // An edit that does not read back is refused with its line, and changes nothing.
    QSignalSpy refused(&service, &SkillLibraryService::editRefused);
    const std::string before = writeSkillMarkdown(*cardOf(service, "cp-async"));
    panel.editAs(QStringLiteral("reviewer:ada"), QStringLiteral("---\nskill_id: cp-async\nintent: [broken\n---\n"));
    QVERIFY(refused.wait(10000));
    QVERIFY2(refused.at(0).at(1).toStringList().join(QLatin1Char('\n')).contains(QStringLiteral("cp-async/SKILL.md:3: YAML")),
             qPrintable(refused.at(0).at(1).toStringList().join(QLatin1Char('\n'))));
    QCOMPARE(writeSkillMarkdown(*SkillLibrary::open(library_.toStdString())->card("cp-async")), before);
    // An edit with another id is refused too; a good one is stored.
    panel.editAs(QStringLiteral("reviewer:ada"), QString::fromStdString(before).replace(QStringLiteral("skill_id: cp-async"),
                                                                                       QStringLiteral("skill_id: other")));
    QVERIFY(refused.wait(10000));
    QSignalSpy edited(&service, &SkillLibraryService::edited);
    panel.editAs(QStringLiteral("reviewer:ada"), QString::fromStdString(before + "\nThe reviewer's note.\n"));
    QVERIFY(edited.wait(10000));
    QTRY_VERIFY(cardOf(service, "cp-async")->section("Risk").find("The reviewer's note.") != std::string::npos);
    QCOMPARE(SkillLibrary::open(library_.toStdString())->audit("cp-async").back().action, std::string("edited"));
  }

  // Issue 45, 3: the window's Edit changes a card's text, never its status, evidence or log. The
  // dialog does not show them; a text that adds them is refused with the line; the full SKILL.md
  // with them unchanged is accepted, and they stay as stored.
  void editCannotTouchTheRecord() {
    ShownPanel view(library_);
    auto &[service, panel, loaded] = view;
    QVERIFY(loaded.wait(10000));
    QVERIFY(panel.selectCard(QStringLiteral("vectorized-access")));
    panel.setReviewer(QStringLiteral("ada"));  // Edit records who
    const auto stored = [&] { return *SkillLibrary::open(library_.toStdString())->card("vectorized-access"); };
    const SkillCard before = stored();
    QVERIFY(before.status == CardStatus::Proposed);
    QCOMPARE(before.evidence.size(), std::size_t{6});
    QSignalSpy edited(&service, &SkillLibraryService::edited);
    QSignalSpy refused(&service, &SkillLibraryService::editRefused);

    // The form: fields for the text, the record shown in a label and in no field; a saved change
    // (a new intent, a section added) is stored, the record as it was.
    QString labels;
    QStringList fields;
    if (!editInTheForm(panel, [&](SkillCardForm &form, const QString &l) {
          labels = l;
          for (auto *e : form.findChildren<QLineEdit *>()) fields << e->text();
          for (auto *e : form.findChildren<QPlainTextEdit *>()) fields << e->toPlainText();
          form.findChild<QLineEdit *>(QStringLiteral("cardIntent"))->setText(QStringLiteral("Load four floats at once"));
          QVERIFY(form.addSection(QStringLiteral("Reviewer notes")));
          QVERIFY(!form.addSection(QStringLiteral("Reviewer notes")));  // one of that name
          auto *tabs = form.findChild<QTabWidget *>(QStringLiteral("cardSections"));
          qobject_cast<QPlainTextEdit *>(tabs->currentWidget())->setPlainText(QStringLiteral("\nUnaligned rows fault.\n"));
        }))
      return;
    QVERIFY2(labels.contains(QStringLiteral("Status: proposed")) && labels.contains(QStringLiteral("6 lineage measurement(s)")) &&
                 labels.contains(QStringLiteral("not this form")),
             qPrintable(labels));
    for (const QString &f : fields)
      for (const char *key : {"status:", "evidence:", "verification:"}) QVERIFY2(!f.contains(QLatin1String(key)), qPrintable(f));
    QVERIFY(edited.wait(10000));
    auto after = stored();
    QCOMPARE(after.intent, std::string("Load four floats at once"));
    QCOMPARE(after.section("Reviewer notes"), std::string("\nUnaligned rows fault.\n"));
    QCOMPARE(after.preconditions, before.preconditions);  // the fields it was not asked to change
    QCOMPARE(after.scope, before.scope);
    QCOMPARE(after, withRecordOf(after, before));  // the record as it was

    // A status or evidence written into SKILL.md text (an import, the CLI): refused by the store,
    // with the line, and nothing changes.
    {
      std::string text = writeSkillMarkdown(after, false);
      text.insert(text.find("\n---\n"), "\nstatus: admitted");
      panel.editAs(QStringLiteral("reviewer:ada"), QString::fromStdString(text));
    }
    QVERIFY(refused.wait(10000));
    const QString problems = refused.last().at(1).toStringList().join(QLatin1Char('\n'));
    QVERIFY2(problems.contains(QRegularExpression(QStringLiteral(
                 "vectorized-access/SKILL.md:\\d+: status 'admitted' is not taken from the file: the card is proposed"))),
             qPrintable(problems));
    QCOMPARE(stored(), after);
    QVERIFY2(panel.message().contains(QStringLiteral("not taken from the file")), qPrintable(panel.message()));
    const std::string full = writeSkillMarkdown(after);
    SkillCard forged = after;
    forged.evidence.front().speedup = 40;
    panel.editAs(QStringLiteral("reviewer:ada"), QString::fromStdString(writeSkillMarkdown(forged)));
    QVERIFY(refused.wait(10000));
    QVERIFY2(refused.last().at(1).toStringList().join(QLatin1Char('\n')).contains(QStringLiteral(
                 "evidence (6 measurements) is not taken from the file: the card keeps its 6 measurements")),
             qPrintable(refused.last().at(1).toStringList().join(QLatin1Char('\n'))));
    QCOMPARE(stored(), after);
    // The whole SKILL.md, its record as stored: accepted (the record is the stored one).
    panel.editAs(QStringLiteral("reviewer:ada"), QString::fromStdString(full + "\nMore.\n"));
    QVERIFY(edited.wait(10000));
    after = stored();
    QVERIFY(after.section("Reviewer notes").find("More.") != std::string::npos);
    QCOMPARE(after, withRecordOf(after, before));
    QCOMPARE(SkillLibrary::open(library_.toStdString())->audit("vectorized-access").back().action, std::string("edited"));
  }

  // "Try on current kernel": the card applied to a kernel by the replay LLM server (softmax step 1
  // shown, step 2 answered), compile only here. A compile error rejects the proposed card, shown
  // in the list after the refresh; a slow answer is cancelled from the panel's Cancel button.
  void tryOnCurrentKernel() {
    const QString library = QString::fromStdString((dir_ / "try.sqlite").string());
    {
      auto lib = SkillLibrary::open(library.toStdString());
      const auto m = test::measuredLineage("layernorm");
      for (const auto &c : liftCards(m.record, m.task)) lib->proposeCard(c, "test", "layernorm");
    }
    kwb::test::ReplayLlmServer server(test::kernelsDir() / "softmax");
    server.script({kwb::test::ReplayFault::CompileError});
    ShownPanel view(library);
    auto &[service, panel, loaded] = view;
    QVERIFY(loaded.wait(10000));
    QVERIFY(panel.selectCard(QStringLiteral("warp-shuffle")));
    QVERIFY(panel.tryButton()->isEnabled());
    QVERIFY(panel.cancelTryButton()->isHidden());
    const Task task = loadTask(test::kernelsDir() / "softmax");
    CardTryRequest request;
    request.id = QStringLiteral("warp-shuffle");
    request.taskFolder = QString::fromStdString(task.folder.string());
    request.kernel = QString::fromStdString(server.stepSource(1));
    request.kernelName = QStringLiteral("01-naive.cu");
    request.provider = QString::fromStdString(server.baseUrl());
    request.useDevice = false;
    // The panel asks; the window (here: the test) answers with the kernel and the model.
    connect(&panel, &SkillsPanel::tryRequested, &service, [&](const QString &) { QVERIFY(service.tryCard(request)); });
    QSignalSpy tried(&service, &SkillLibraryService::tried);
    QSignalSpy progress(&service, &SkillLibraryService::tryProgress);
    panel.tryButton()->click();
    QVERIFY(service.isTrying());
    QVERIFY(!panel.tryButton()->isEnabled());
    QVERIFY(!panel.cancelTryButton()->isHidden());
    QVERIFY(!service.tryCard(request));  // one at a time
    QVERIFY(tried.wait(120000));
    QCOMPARE(tried.at(0).at(1).toString(), QStringLiteral("compile-error"));
    QCOMPARE(tried.at(0).at(3).toString(), QStringLiteral("evidence added; the card is now rejected"));
    QVERIFY(progress.count() >= 2);  // measuring the kernel, asking the model, ...
    QVERIFY2(panel.message().contains(QStringLiteral("compile-error")), qPrintable(panel.message()));
    if (cardOf(service, "warp-shuffle")->status != CardStatus::Rejected) QVERIFY(loaded.wait(10000));
    QVERIFY(cardOf(service, "warp-shuffle")->status == CardStatus::Rejected);
    QVERIFY(panel.cancelTryButton()->isHidden());
    QVERIFY(panel.tryButton()->isEnabled());

    // A model that would answer only after ten minutes: Cancel ends the try (the wait below is far
    // shorter than the answer, so its end is the cancel's), nothing recorded.
    server.setDelays(std::chrono::minutes(10), std::chrono::milliseconds(0));
    QVERIFY(panel.selectCard(QStringLiteral("vectorized-access")));
    tried.clear();
    QSignalSpy asking(&service, &SkillLibraryService::tryProgress);
    panel.tryButton()->click();
    QVERIFY(service.isTrying());
    while (std::none_of(asking.begin(), asking.end(),
                        [](const QList<QVariant> &a) { return a.at(0).toString().startsWith(QStringLiteral("asking")); }))
      QVERIFY(asking.wait(60000));
    panel.cancelTryButton()->click();
    QVERIFY(tried.wait(60000));
    QCOMPARE(tried.at(0).at(1).toString(), QStringLiteral("not-gated"));
    QCOMPARE(tried.at(0).at(2).toString(), QStringLiteral("cancelled"));
    QCOMPARE(tried.at(0).at(3).toString(), QStringLiteral("not recorded (not-gated)"));
  }

  // Build lineage and De-optimize current kernel from the Lineage view, without a GPU: the build
  // says why nothing is stored; the de-optimization by the replay LLM server (backward mode:
  // softmax step 4 down to step 1, each answer compiled) writes its versions forward into the
  // library's deoptimized/ folder with progress, and says they were compiled only; a slow model
  // is cancelled from the panel's Cancel button.
  void buildFromTheLineageView() {
    if (probeGpus().hasDevices()) QSKIP("a GPU here: the answers without one cannot be checked (tst_gpu_lineage_build builds on it)");
    const fs::path folder = dir_ / "build";
    fs::remove_all(folder);
    fs::create_directories(folder);
    const QString library = QString::fromStdString((folder / "library.sqlite").string());
    const QString softmax = QString::fromStdString((test::kernelsDir() / "softmax").string());
    kwb::test::ReplayLlmServer server(test::kernelsDir() / "softmax");
    server.setBackward(true);
    SkillLibraryService service(library);
    LineagePanel panel;
    panel.attach(&service);
    panel.resize(1200, 600);
    panel.show();
    LineageBuildRequest bundled;
    bundled.taskFolder = softmax;
    LineageBuildRequest deopt = bundled;
    deopt.expert = QString::fromStdString(server.stepSource(4));
    deopt.expertName = QStringLiteral("04-float4.cu");
    deopt.provider = QString::fromStdString(server.baseUrl());
    // The panel asks; the window (here: the test) answers with the task, the kernel and the model.
    connect(&panel, &LineagePanel::buildRequested, &service, [&] {
      QVERIFY(service.buildLineage(bundled));
      panel.buildStarted(QStringLiteral("Building the lineage of softmax…"));
    });
    connect(&panel, &LineagePanel::deoptimizeRequested, &service, [&] {
      QVERIFY(service.buildLineage(deopt));
      panel.buildStarted(QStringLiteral("De-optimizing 04-float4.cu…"));
    });
    QSignalSpy failed(&service, &SkillLibraryService::failed);
    QSignalSpy progress(&service, &SkillLibraryService::buildProgress);
    QVERIFY(panel.cancelButton()->isHidden());
    panel.buildButton()->click();
    QVERIFY(service.isBuilding());
    QVERIFY(!panel.buildButton()->isEnabled());
    QVERIFY(!panel.cancelButton()->isHidden());
    QVERIFY(!service.buildLineage(bundled));  // one at a time
    QVERIFY(failed.wait(60000));
    QVERIFY2(failed.at(0).at(0).toString().contains(QStringLiteral("no GPU")), qPrintable(failed.at(0).at(0).toString()));
    QVERIFY2(panel.buildStatus().contains(QStringLiteral("no GPU")), qPrintable(panel.buildStatus()));
    QVERIFY(panel.cancelButton()->isHidden());
    QVERIFY(panel.buildButton()->isEnabled());
    QVERIFY(SkillLibrary::open(library.toStdString())->lineages().empty());

    // De-optimization: three answers accepted (compiled), four versions written forward.
    failed.clear();
    progress.clear();
    panel.deoptimizeButton()->click();
    QVERIFY(failed.wait(120000));
    const QString message = failed.at(0).at(0).toString();
    QVERIFY2(message.contains(QStringLiteral("compiled only")) && message.contains(QStringLiteral("4 versions in")),
             qPrintable(message));
    QVERIFY2(panel.buildStatus() == message, qPrintable(panel.buildStatus()));
    std::vector<fs::path> runs;
    for (const auto &e : fs::directory_iterator(folder / "deoptimized")) runs.push_back(e.path());
    QCOMPARE(runs.size(), std::size_t{1});
    QVERIFY2(runs[0].filename().string().rfind("softmax-04-float4-", 0) == 0, runs[0].string().c_str());
    QVERIFY(fs::exists(runs[0] / "lineage.toml"));
    QVERIFY(fs::exists(runs[0] / "deoptimize.json"));
    std::size_t kernels = 0;
    for (const auto &e : fs::directory_iterator(runs[0])) kernels += e.path().extension() == ".cu";
    QCOMPARE(kernels, std::size_t{4});
    QVERIFY(progress.count() >= 3);
    QCOMPARE(progress.last().at(2).toInt(), 15);  // counted against the step limit
    QCOMPARE(server.answeredSteps(), (std::vector<std::size_t>{3, 2, 1, 0}));

    // A model that would answer only after ten minutes: Cancel ends it (the wait below is far
    // shorter than the answer, so its end is the cancel's), nothing stored.
    server.setDelays(std::chrono::minutes(10), std::chrono::milliseconds(0));
    failed.clear();
    progress.clear();
    panel.deoptimizeButton()->click();
    QVERIFY(progress.wait(20000));
    panel.cancelButton()->click();
    QVERIFY(failed.wait(60000));
    QVERIFY2(failed.at(0).at(0).toString().contains(QStringLiteral("cancelled")), qPrintable(failed.at(0).at(0).toString()));
    QVERIFY(!service.isBuilding());
    QVERIFY(panel.buildButton()->isEnabled());
    QVERIFY(SkillLibrary::open(library.toStdString())->lineages().empty());
    QVERIFY(panel.grab().save(QString::fromStdString((dir_ / "lineage-build-cancelled.png").string())));
  }
};

QTEST_MAIN(TestSkillsViews)
#include "tst_skills_views.moc"
