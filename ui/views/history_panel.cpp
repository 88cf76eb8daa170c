#include "ui/views/history_panel.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QTreeView>
#include <QVBoxLayout>

#include "ui/models/run_history_model.h"

namespace kwb::ui {

HistoryPanel::HistoryPanel(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("historyPanel"));
  heading_ = new QLabel(this);
  heading_->setObjectName(QStringLiteral("historyHeading"));
  heading_->setStyleSheet(QStringLiteral("color: #6b7280;"));
  model_ = new RunHistoryModel(this);
  view_ = new QTreeView(this);
  view_->setObjectName(QStringLiteral("historyView"));
  view_->setModel(model_);
  view_->setRootIsDecorated(false);
  view_->setUniformRowHeights(true);
  view_->setAlternatingRowColors(true);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->header()->setStretchLastSection(false);
  view_->header()->setSectionResizeMode(RunHistoryModel::MessageColumn, QHeaderView::Stretch);
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex &current) {
            if (current.isValid() && !quiet_)
              emit runActivated(current.data(RunHistoryModel::HistoryIdRole).toLongLong());
          });

  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 4, 6, 0);
  layout->setSpacing(4);
  layout->addWidget(heading_);
  layout->addWidget(view_, 1);
  updateHeading();
}

void HistoryPanel::setTask(const QString &taskFolder, const QString &taskName) {
  if (taskFolder != taskFolder_) model_->setRuns({});
  taskFolder_ = taskFolder;
  taskName_ = taskName;
  updateHeading();
}

void HistoryPanel::setRuns(const QString &taskFolder, const QList<EvaluationRun> &runs, qint64 selectId) {
  if (taskFolder != taskFolder_) return;
  quiet_ = true;
  model_->setRuns(runs);
  const int row = selectId ? model_->rowOf(selectId) : -1;
  if (row >= 0) {
    view_->selectionModel()->setCurrentIndex(model_->index(row, 0),
                                             QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  }
  quiet_ = false;
  for (int column = 0; column < RunHistoryModel::ColumnCount; ++column)
    if (column != RunHistoryModel::MessageColumn) view_->resizeColumnToContents(column);
  updateHeading();
}

bool HistoryPanel::activateRun(qint64 historyId) {
  const int row = model_->rowOf(historyId);
  if (row < 0) return false;
  view_->selectionModel()->setCurrentIndex(model_->index(row, 0),
                                           QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  return true;
}

void HistoryPanel::updateHeading() {
  if (taskFolder_.isEmpty()) {
    heading_->setText(tr("Open a task to see its runs."));
  } else if (model_->rowCount() == 0) {
    heading_->setText(tr("No runs of %1 in this workspace yet.").arg(taskName_));
  } else {
    heading_->setText(
        tr("%n run(s) of %1, newest first; choose one to see its results.", nullptr, model_->rowCount())
            .arg(taskName_));
  }
}

void HistoryPanel::onTaskChanged(const WorkbenchContext &context) {
  if (context.taskFolder() != taskFolder_ || context.taskName() != taskName_)
    setTask(context.taskFolder(), context.taskName());
}

}  // namespace kwb::ui
