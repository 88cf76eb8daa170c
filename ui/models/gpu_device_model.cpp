#include "ui/models/gpu_device_model.h"

#include <QBrush>
#include <QColor>

#include <algorithm>

namespace kwb::ui {

GpuDeviceModel::GpuDeviceModel(QObject *parent) : QAbstractTableModel(parent) {}

QString GpuDeviceModel::formatBytes(qint64 bytes) {
  const double gib = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
  if (gib >= 10) return tr("%1 GiB").arg(gib, 0, 'f', 0);
  if (gib >= 1) return tr("%1 GiB").arg(gib, 0, 'f', 1);
  return tr("%1 MiB").arg(static_cast<double>(bytes) / (1024.0 * 1024.0), 0, 'f', 0);
}

void GpuDeviceModel::setStats(const kwb::GpuStatsReport &report) {
  if (poolOnly_) return;  // an answer from before the workers moved to Slurm
  const std::vector<kwb::GpuStats> &rows = report.devices;
  const QString problem = QString::fromStdString(report.problem);
  const bool sameShape = rows.size() == rows_.size() &&
                         std::equal(rows.begin(), rows.end(), rows_.begin(), [](const auto &a, const auto &b) {
                           return a.ordinal == b.ordinal;
                         });
  problem_ = rows.empty() && problem.isEmpty() ? tr("no CUDA device") : problem;
  if (sameShape) {
    rows_ = rows;
    if (!rows_.empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    return;
  }
  beginResetModel();
  rows_ = rows;
  endResetModel();
}

void GpuDeviceModel::setFailure(const QString &reason) {
  kwb::GpuStatsReport report;
  report.problem = reason.toStdString();
  setStats(report);
}

void GpuDeviceModel::setPoolDevices(const QList<PoolDeviceRow> &devices) {
  if (poolOnly_ && devices.size() != pool_.size()) {
    beginResetModel();
    pool_ = devices;
    endResetModel();
    return;
  }
  pool_ = devices;
  if (rowCount() > 0) emit dataChanged(index(0, poolOnly_ ? Gpu : State), index(rowCount() - 1, ColumnCount - 1));
}

void GpuDeviceModel::setPoolRowsOnly(bool poolOnly) {
  if (poolOnly == poolOnly_) return;
  beginResetModel();
  poolOnly_ = poolOnly;
  rows_.clear();
  pool_.clear();  // the rows of the pool from before
  problem_ = poolOnly ? tr("no GPU worker yet: the evaluation pool asks Slurm for its workers at the first run")
                      : QString();
  endResetModel();
}

QString GpuDeviceModel::noDeviceText() const {
  return rowCount() == 0 ? tr("No CUDA device: %1").arg(problem_) : QString();
}

QString GpuDeviceModel::summary() const {
  if (poolOnly_) {
    if (pool_.isEmpty()) return {};
    return pool_.size() == 1 ? tr("1 GPU worker") : tr("%1 GPU workers").arg(pool_.size());
  }
  if (rows_.empty()) return {};
  int loadSum = 0, loads = 0, hottest = -1;
  for (const auto &r : rows_) {
    if (r.utilizationPercent >= 0) {
      loadSum += r.utilizationPercent;
      ++loads;
    }
    hottest = std::max(hottest, r.temperatureC);
  }
  QStringList parts{rows_.size() == 1 ? tr("1 GPU") : tr("%1 GPUs").arg(rows_.size())};
  if (loads) parts << tr("%1%").arg(loadSum / loads);
  if (hottest >= 0) parts << tr("%1 °C").arg(hottest);
  return parts.join(QStringLiteral(" · "));
}

const PoolDeviceRow *GpuDeviceModel::poolRow(int ordinal) const {
  for (const auto &p : pool_)
    if (p.device == ordinal) return &p;
  return nullptr;
}

QString GpuDeviceModel::stateText(int ordinal) const {
  const PoolDeviceRow *p = poolRow(ordinal);
  if (!p) return pool_.isEmpty() ? tr("—") : tr("not used");
  QString state = p->removed ? tr("removed") : p->busy ? tr("busy") : tr("ready");
  if (p->queued > 0) state += tr(" (%1 queued)").arg(p->queued);
  // One line in the table (a lost worker's message carries its last stderr lines); the tooltip has it whole.
  if (!p->message.isEmpty()) state += QStringLiteral(": ") + QString(p->message).replace(QLatin1Char('\n'), QStringLiteral(" · "));
  return state;
}

int GpuDeviceModel::rowCount(const QModelIndex &parent) const {
  if (parent.isValid()) return 0;
  return poolOnly_ ? static_cast<int>(pool_.size()) : static_cast<int>(rows_.size());
}

QVariant GpuDeviceModel::poolOnlyData(const PoolDeviceRow &row, int column, int role) const {
  if (role == Qt::DisplayRole) {
    switch (column) {
      case Gpu: return tr("%1").arg(row.device);
      case State: return stateText(row.device);
      case Job: return row.job;
      case Where: return row.where.isEmpty() ? tr("(not started yet)") : row.where;
      default: return tr("—");
    }
  }
  if (role == Qt::ToolTipRole) {
    QStringList lines{tr("Worker %1 of the evaluation pool: a Slurm job step with one GPU").arg(row.device)};
    if (!row.where.isEmpty()) lines << row.where;
    lines << tr("Evaluations done here: %1").arg(row.done);
    if (!row.message.isEmpty()) lines << row.message;
    if (column >= Load && column <= SmClock)
      lines << tr("Load, memory, temperature and clock are not polled through Slurm: each poll would be a job step of its own.");
    return lines.join(QLatin1Char('\n'));
  }
  if (role == Qt::ForegroundRole && column == State && row.removed) return QBrush(QColor(0xc0, 0x20, 0x20));
  return {};
}

int GpuDeviceModel::columnCount(const QModelIndex &parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant GpuDeviceModel::data(const QModelIndex &index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  if (poolOnly_) return poolOnlyData(pool_[index.row()], index.column(), role);
  const kwb::GpuStats &r = rows_[static_cast<std::size_t>(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Gpu:
        return tr("%1: %2").arg(r.ordinal).arg(QString::fromStdString(r.name));
      case Load:
        return r.utilizationPercent >= 0 ? tr("%1%").arg(r.utilizationPercent) : tr("?");
      case Memory:
        return r.memoryTotalBytes > 0
                   ? tr("%1 / %2").arg(formatBytes(static_cast<qint64>(r.memoryUsedBytes)), formatBytes(static_cast<qint64>(r.memoryTotalBytes)))
                   : tr("?");
      case Temperature:
        return r.temperatureC >= 0 ? tr("%1 °C").arg(r.temperatureC) : tr("?");
      case SmClock: {
        if (r.smClockMHz < 0) return tr("?");
        QString text = tr("%1 MHz").arg(r.smClockMHz);
        if (r.throttled) text += tr(" (%1)").arg(QString::fromStdString(r.clockEventText));
        return text;
      }
      case State:
        return stateText(r.ordinal);
      case Job: {
        const PoolDeviceRow *p = poolRow(r.ordinal);
        return p ? p->job : QString();
      }
      case Where: {
        const PoolDeviceRow *p = poolRow(r.ordinal);
        return p ? p->where : QString();
      }
    }
  } else if (role == Qt::ToolTipRole) {
    QStringList lines{tr("%1 (%2)").arg(QString::fromStdString(r.name), QString::fromStdString(r.pciBusId))};
    if (!r.clockEventText.empty())
      lines << tr("Clock event reasons: %1").arg(QString::fromStdString(r.clockEventText));
    if (!r.problem.empty()) lines << QString::fromStdString(r.problem);
    if (const PoolDeviceRow *p = poolRow(r.ordinal)) {
      lines << tr("Evaluations done here: %1").arg(p->done);
      if (!p->message.isEmpty()) lines << p->message;
    }
    return lines.join(QLatin1Char('\n'));
  } else if (role == Qt::ForegroundRole) {
    if (index.column() == SmClock && r.throttled) return QBrush(QColor(0xb0, 0x60, 0x00));
    if (index.column() == State) {
      const PoolDeviceRow *p = poolRow(r.ordinal);
      if (p && p->removed) return QBrush(QColor(0xc0, 0x20, 0x20));
    }
  } else if (role == Qt::TextAlignmentRole && index.column() >= Load && index.column() <= SmClock) {
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  }
  return {};
}

QVariant GpuDeviceModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Gpu: return tr("GPU");
    case Load: return tr("Load");
    case Memory: return tr("Memory");
    case Temperature: return tr("Temp");
    case SmClock: return tr("SM clock");
    case State: return tr("State");
    case Job: return tr("Current job");
    case Where: return tr("Where");
  }
  return {};
}

}  // namespace kwb::ui
