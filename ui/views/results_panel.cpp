#include "ui/views/results_panel.h"

#include <algorithm>

#include <QDateTime>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QStringList>
#include <QTreeView>
#include <QVBoxLayout>

#include "ui/models/evaluation_result_model.h"
#include "ui/models/outcome_style.h"

namespace kwb::ui {

ResultsPanel::ResultsPanel(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("resultsPanel"));
  headline_ = new QLabel(this);
  headline_->setObjectName(QStringLiteral("resultsHeadline"));
  headline_->setWordWrap(true);
  headline_->setTextFormat(Qt::PlainText);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = headline_->font();
  bold.setBold(true);
  headline_->setFont(bold);
  details_ = new QLabel(this);
  details_->setObjectName(QStringLiteral("resultsDetails"));
  details_->setWordWrap(true);
  details_->setTextFormat(Qt::PlainText);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setStyleSheet(QStringLiteral("color: #6b7280;"));

  model_ = new EvaluationResultModel(this);
  view_ = new QTreeView(this);
  view_->setObjectName(QStringLiteral("resultsView"));
  view_->setModel(model_);
  view_->setUniformRowHeights(true);
  view_->setAlternatingRowColors(true);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->header()->setStretchLastSection(false);
  // Each column at least as wide as its header (the first, "Configuration / seed", was cut).
  for (int c = 0; c < model_->columnCount(); ++c) {
    const QString title = model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    view_->header()->resizeSection(c, std::max(view_->header()->sectionSize(c), fontMetrics().horizontalAdvance(title) + 28));
  }

  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 0);
  layout->setSpacing(4);
  layout->addWidget(headline_);
  layout->addWidget(details_);
  layout->addWidget(view_, 1);
  clear();
}

void ResultsPanel::clear() {
  run_ = EvaluationRun();
  fromHistory_ = false;
  model_->clear();
  headline_->setText(tr("No run yet"));
  headline_->setStyleSheet(QString());
  details_->setText(
      tr("Run (Ctrl+R) compiles the kernel in the editor and checks it against the task's reference."));
}

void ResultsPanel::showRunning(const QString &taskName, const QString &sourceName) {
  run_ = EvaluationRun();
  fromHistory_ = false;
  model_->clear();
  headline_->setText(tr("Running %1…").arg(QFileInfo(sourceName).fileName()));
  headline_->setStyleSheet(QString());
  details_->setText(tr("Task %1").arg(taskName));
}

void ResultsPanel::showRun(const EvaluationRun &run, bool fromHistory) {
  run_ = run;
  fromHistory_ = fromHistory;
  const QString outcome = outcomeText(run.outcome);
  headline_->setText(run.message.isEmpty() ? outcome : outcome + QStringLiteral(": ") + run.message);
  headline_->setStyleSheet(QStringLiteral("color: %1;").arg(runColour(run.outcome).name()));

  QStringList facts;
  facts << run.taskName << QFileInfo(run.sourceName).fileName();
  if (!run.arch.isEmpty()) facts << run.arch;
  facts << (run.device.isEmpty() ? tr("no GPU") : run.device);
  const QString sandbox = run.result ? QString::fromStdString(run.result->sandbox) : QString();
  if (sandbox == QLatin1String("none")) facts << tr("UNSANDBOXED (the kernel ran without isolation)");
  else if (!sandbox.isEmpty()) facts << tr("sandbox %1").arg(sandbox);
  if (run.result) facts << tr("%1 s").arg(run.result->seconds, 0, 'f', 2);
  if (run.result && run.result->sanitize) facts << tr("sanitizer: %1").arg(QString::fromStdString(run.result->sanitize->summary()));
  const QDateTime started = QDateTime::fromString(run.startedAt, Qt::ISODateWithMs);
  if (started.isValid()) facts << started.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
  if (fromHistory) facts << tr("from the history");
  facts.removeAll(QString());
  details_->setText(facts.join(QStringLiteral(" · ")));

  if (run.result) model_->setResult(*run.result);
  else model_->clear();
  // Open what needs reading: diagnostics, and configurations that did not pass.
  for (int row = 0; row < model_->rowCount(); ++row) {
    const QModelIndex index = model_->index(row, 0);
    const QString rowOutcome = index.data(EvaluationResultModel::OutcomeRole).toString();
    const bool fine = rowOutcome == QLatin1String("correct") || rowOutcome == QLatin1String("not-run") ||
                      rowOutcome == QLatin1String("cancelled");
    const bool compileRow =
        index.data(EvaluationResultModel::KindRole).toInt() == int(EvaluationResultModel::Kind::Compile);
    view_->setExpanded(index, compileRow || !fine);
  }
  for (int column = 0; column < EvaluationResultModel::ColumnCount; ++column)
    view_->resizeColumnToContents(column);
}

void ResultsPanel::onTaskChanged(const WorkbenchContext &context) {
  if (!context.selection()) clear();
}

void ResultsPanel::onSelectionChanged(const WorkbenchContext &context) {
  const auto &selection = context.selection();
  if (!selection) {
    clear();
    return;
  }
  if (!selection->hasRun()) return;  // a lineage step, or a candidate whose run is being read: what ran stays
  showRun(selection->run, selection->origin == CandidateSelection::Origin::History);
}

QString ResultsPanel::summaryText() const {
  return headline_->text() + QLatin1Char('\n') + details_->text();
}

}  // namespace kwb::ui
