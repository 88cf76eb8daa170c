#include "ui/models/tune_points_model.h"

#include <cmath>

#include "ui/models/outcome_style.h"

#include <QBrush>
#include <QFont>
#include <QPalette>

namespace kwb::ui {

namespace {
// Fixed columns: order, then one per tunable, then these.
enum Tail { OutcomeColumn, TimeColumn, DeviceColumn, SourceColumn, TailCount };
}  // namespace

QString formatMs(double ms) {
  if (std::isnan(ms)) return QStringLiteral("—");
  if (ms >= 1.0) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 3);
  return QStringLiteral("%1 µs").arg(ms * 1000.0, 0, 'f', 1);
}

TunePointsModel::TunePointsModel(QObject *parent) : QAbstractTableModel(parent) {}

void TunePointsModel::clear() {
  beginResetModel();
  rows_.clear();
  tunables_.clear();
  best_ = -1;
  endResetModel();
}

void TunePointsModel::append(const QList<TunePointRow> &rows) {
  if (rows.isEmpty()) return;
  if (rows_.isEmpty() && tunables_.isEmpty()) {
    beginResetModel();
    for (const auto &[name, value] : rows.front().point) tunables_ << QString::fromStdString(name);
    rows_ = rows;
    endResetModel();
    return;
  }
  beginInsertRows(QModelIndex(), rows_.size(), rows_.size() + rows.size() - 1);
  rows_ += rows;
  endInsertRows();
}

void TunePointsModel::setBest(int order) {
  if (order == best_) return;
  const int before = best_;
  best_ = order;
  // Only the rows that lose and gain the mark change: a change over every row would make the
  // sorting proxy sort the whole table again, many times over in a long run.
  for (int i = 0; i < rows_.size(); ++i)
    if (rows_[i].order == before || rows_[i].order == order)
      emit dataChanged(index(i, 0), index(i, columnCount() - 1), {Qt::FontRole, Qt::DisplayRole});
}

int TunePointsModel::rowCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : rows_.size(); }

int TunePointsModel::columnCount(const QModelIndex &parent) const {
  return parent.isValid() ? 0 : 1 + tunables_.size() + TailCount;
}

QVariant TunePointsModel::data(const QModelIndex &index, int role) const {
  if (!index.isValid() || index.row() >= rows_.size()) return {};
  const auto &r = rows_[index.row()];
  const int c = index.column();
  const int tail = c - 1 - static_cast<int>(tunables_.size());
  if (role == ObjectiveRole) return r.objectiveMs;
  if (role == OutcomeRole) return QLatin1String(toString(r.outcome));
  if (role == Qt::FontRole && r.order == best_) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::ToolTipRole && !r.message.isEmpty()) return r.message;
  if (role == Qt::ForegroundRole && tail == OutcomeColumn && r.outcome != Outcome::Correct &&
      r.outcome != Outcome::NotRun)
    return QBrush(Qt::darkRed);
  if (role == Qt::TextAlignmentRole && (c == 0 || tail == TimeColumn || (c >= 1 && tail < 0)))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::UserRole) {  // sort keys
    if (c == 0) return r.order;
    if (tail < 0) return static_cast<qlonglong>(r.point.at(tunables_[c - 1].toStdString()));
    if (tail == TimeColumn) return std::isnan(r.objectiveMs) ? 1e300 : r.objectiveMs;
  }
  if (role != Qt::DisplayRole) return {};
  if (c == 0) return r.order + 1;
  if (tail < 0) {
    const auto it = r.point.find(tunables_[c - 1].toStdString());
    return it == r.point.end() ? QVariant() : QVariant(static_cast<qlonglong>(it->second));
  }
  switch (tail) {
    case OutcomeColumn: return r.order == best_ ? outcomeText(r.outcome) + tr(" (best)") : outcomeText(r.outcome);
    case TimeColumn: return formatMs(r.objectiveMs);
    case DeviceColumn: return r.device;
    case SourceColumn:
      return r.outcome == Outcome::NotRun ? tr("compiled only") : r.cached ? tr("cached") : tr("measured");
  }
  return {};
}

QVariant TunePointsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  if (section == 0) return tr("#");
  if (section - 1 < tunables_.size()) return tunables_[section - 1];
  switch (section - 1 - static_cast<int>(tunables_.size())) {
    case OutcomeColumn: return tr("Outcome");
    case TimeColumn: return tr("Time");
    case DeviceColumn: return tr("GPU");
    case SourceColumn: return tr("Came from");
  }
  return {};
}

}  // namespace kwb::ui
