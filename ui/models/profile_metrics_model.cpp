#include "ui/models/profile_metrics_model.h"

#include <algorithm>
#include <cmath>

namespace kwb::ui {

namespace {

QString number(double v) {
  if (std::abs(v) >= 1000 || (std::abs(v) < 0.01 && v != 0)) return QString::number(v, 'g', 4);
  return QString::number(v, 'f', 2);
}

}  // namespace

const MetricRow *findMetric(const ProfileRow &row, const QString &name) {
  for (const auto &m : row.metrics)
    if (m.name == name) return &m;
  return nullptr;
}

ProfileMetricsModel::ProfileMetricsModel(QObject *parent) : QAbstractTableModel(parent) {}

void ProfileMetricsModel::setProfile(const ProfileRow &shown, const std::optional<ProfileRow> &baseline) {
  beginResetModel();
  metrics_ = shown.metrics;
  baseline_ = baseline;
  endResetModel();
}

void ProfileMetricsModel::clear() {
  beginResetModel();
  metrics_.clear();
  baseline_.reset();
  endResetModel();
}

QString ProfileMetricsModel::withUnit(double v, const QString &unit) {
  if (unit == QLatin1String("ns") && std::abs(v) >= 1e6) return QString::number(v / 1e6, 'f', 3) + QStringLiteral(" ms");
  if (unit == QLatin1String("ns") && std::abs(v) >= 1e3) return QString::number(v / 1e3, 'f', 1) + QStringLiteral(" µs");
  return unit.isEmpty() ? number(v) : number(v) + QLatin1Char(' ') + unit;
}

const MetricRow *ProfileMetricsModel::baselineOf(const QString &name) const {
  return baseline_ ? findMetric(*baseline_, name) : nullptr;
}

std::optional<double> ProfileMetricsModel::delta(const QString &name) const {
  const MetricRow *then = baselineOf(name);
  if (!then || then->value == 0) return std::nullopt;
  for (const auto &now : metrics_)
    if (now.name == name) return 100.0 * (now.value - then->value) / std::abs(then->value);
  return std::nullopt;
}

QString ProfileMetricsModel::deltaText(const QString &name) const {
  const MetricRow *then = baselineOf(name);
  const auto now = std::find_if(metrics_.begin(), metrics_.end(), [&](const MetricRow &m) { return m.name == name; });
  if (!then || now == metrics_.end()) return {};
  if (then->value == 0) return now->value == 0 ? QStringLiteral("0%") : QStringLiteral("new");
  const double pct = 100.0 * (now->value - then->value) / std::abs(then->value);
  return (pct >= 0 ? QStringLiteral("+") : QString()) + QString::number(pct, 'f', 1) + QLatin1Char('%');
}

int ProfileMetricsModel::rowCount(const QModelIndex &parent) const {
  return parent.isValid() ? 0 : static_cast<int>(metrics_.size());
}

int ProfileMetricsModel::columnCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ProfileMetricsModel::data(const QModelIndex &index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const MetricRow &m = metrics_[index.row()];
  switch (role) {
    case NameRole: return m.name;
    case ValueRole: return m.value;
    case DeltaRole: {
      const auto d = delta(m.name);
      return d ? QVariant(*d) : QVariant();
    }
    case Qt::TextAlignmentRole:
      return index.column() == ValueColumn || index.column() == BaselineColumn || index.column() == DeltaColumn
                 ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                 : QVariant();
    case Qt::ToolTipRole:
    case Qt::DisplayRole:
      switch (index.column()) {
        case MetricColumn: return role == Qt::ToolTipRole ? m.label + QLatin1Char('\n') + m.name : m.label;
        case ValueColumn: return withUnit(m.value, m.unit);
        case BaselineColumn: {
          const MetricRow *b = baselineOf(m.name);
          return b ? withUnit(b->value, m.unit) : QString();
        }
        case DeltaColumn: return deltaText(m.name);
        case NameColumn: return m.name;
        default: return {};
      }
    default: return {};
  }
}

QVariant ProfileMetricsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case MetricColumn: return tr("Metric");
    case ValueColumn: return tr("Value");
    case BaselineColumn: return tr("Baseline");
    case DeltaColumn: return tr("Delta");
    case NameColumn: return tr("Name");
    default: return {};
  }
}

}  // namespace kwb::ui
