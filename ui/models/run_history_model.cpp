#include "ui/models/run_history_model.h"

#include <QBrush>
#include <QColor>
#include <QDateTime>
#include <QFileInfo>

#include "ui/models/outcome_style.h"

namespace kwb::ui {

namespace {

QDateTime parsed(const QString &isoUtc) {
  return QDateTime::fromString(isoUtc, Qt::ISODateWithMs);
}

QString duration(const EvaluationRun &run) {
  const QDateTime start = parsed(run.startedAt);
  const QDateTime end = parsed(run.finishedAt);
  if (!start.isValid() || !end.isValid()) return {};
  return QStringLiteral("%1 s").arg(static_cast<double>(start.msecsTo(end)) / 1000.0, 0, 'f', 1);
}

}  // namespace

RunHistoryModel::RunHistoryModel(QObject *parent) : QAbstractTableModel(parent) {}

void RunHistoryModel::setRuns(const QList<EvaluationRun> &runs) {
  beginResetModel();
  runs_ = runs;
  endResetModel();
}

int RunHistoryModel::rowOf(qint64 historyId) const {
  for (qsizetype i = 0; i < runs_.size(); ++i)
    if (runs_[i].historyId == historyId) return static_cast<int>(i);
  return -1;
}

int RunHistoryModel::rowCount(const QModelIndex &parent) const {
  return parent.isValid() ? 0 : static_cast<int>(runs_.size());
}

int RunHistoryModel::columnCount(const QModelIndex &parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunHistoryModel::data(const QModelIndex &index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const EvaluationRun &run = runs_[index.row()];
  if (role == HistoryIdRole) return run.historyId;
  if (role == OutcomeRole) return QLatin1String(toString(run.outcome));
  if (role == Qt::ToolTipRole) {
    if (index.column() == MessageColumn) return run.message;
    if (index.column() == SourceColumn) return run.sourceName;
    if (index.column() == StartedColumn) return run.startedAt;
    return {};
  }
  if (role == Qt::ForegroundRole && index.column() == OutcomeColumn) {
    return QBrush(runColour(run.outcome));
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case StartedColumn: {
      const QDateTime start = parsed(run.startedAt);
      return start.isValid() ? start.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"))
                             : run.startedAt;
    }
    case OutcomeColumn:
      return outcomeText(run.outcome);
    case MessageColumn:
      return run.message;
    case SourceColumn:
      return QFileInfo(run.sourceName).fileName();
    case ArchColumn:
      return run.arch;
    case DeviceColumn:
      return run.device.isEmpty() ? tr("none") : run.device;
    case DurationColumn:
      return duration(run);
    default:
      return {};
  }
}

QVariant RunHistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case StartedColumn:
      return tr("Started");
    case OutcomeColumn:
      return tr("Outcome");
    case MessageColumn:
      return tr("Message");
    case SourceColumn:
      return tr("Source");
    case ArchColumn:
      return tr("Arch");
    case DeviceColumn:
      return tr("GPU");
    case DurationColumn:
      return tr("Took");
    default:
      return {};
  }
}

}  // namespace kwb::ui
