#pragma once
// The History panel's list: a task's evaluation runs from the workspace, newest first, one row
// per run (when it started, outcome, message, architecture, device, how long it took).
#include <QAbstractTableModel>
#include <QList>

#include "ui/models/evaluation_run.h"

namespace kwb::ui {

class RunHistoryModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    StartedColumn,
    OutcomeColumn,
    MessageColumn,
    SourceColumn,
    ArchColumn,
    DeviceColumn,
    DurationColumn,
    ColumnCount
  };
  enum Role {
    HistoryIdRole = Qt::UserRole + 1,  // qint64: the run's workspace id
    OutcomeRole,                       // QString: kwb::toString(Outcome), "not-run", "compile-error", ...
  };

  explicit RunHistoryModel(QObject *parent = nullptr);

  void setRuns(const QList<EvaluationRun> &runs);
  const QList<EvaluationRun> &runs() const { return runs_; }
  // The row of the run with that workspace id; -1 when it is not listed.
  int rowOf(qint64 historyId) const;

  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QList<EvaluationRun> runs_;
};

}  // namespace kwb::ui
