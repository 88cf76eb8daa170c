#pragma once
// The GPUs dock's rows: one per visible GPU, from kwb::GpuStatsReport (load, memory,
// temperature, SM clock, clock event reasons), joined by CUDA ordinal with the evaluation pool's
// state of that device (ready / busy / removed, its message, the job running on it).
#include <QAbstractTableModel>
#include <QList>
#include <QString>

#include <vector>

#include "core/gpu/device_stats.h"

namespace kwb::ui {

// One device as the evaluation pool reports it (kwb::PoolDeviceState in Qt terms).
struct PoolDeviceRow {
  int device = 0;
  bool removed = false;
  bool busy = false;
  int queued = 0;
  int done = 0;
  QString message;
  QString job;  // "task · source" of the evaluation running on it; empty when idle
  QString where;  // a remote worker: host, Slurm step, CUDA_VISIBLE_DEVICES; empty: this machine
};

class GpuDeviceModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Gpu, Load, Memory, Temperature, SmClock, State, Job, Where, ColumnCount };

  explicit GpuDeviceModel(QObject *parent = nullptr);

  // What `kwb-worker --stats --json` said (read by kwb::parseGpuStats).
  void setStats(const kwb::GpuStatsReport &report);
  // The stats could not be read at all (the worker failed): no rows, this reason.
  void setFailure(const QString &reason);
  void setPoolDevices(const QList<PoolDeviceRow> &devices);
  // Workers through Slurm: a row per worker of the evaluation pool (each its own job step with
  // one GPU), from the pool alone: the figures are not polled (each poll would be a job step).
  void setPoolRowsOnly(bool poolOnly);
  bool poolRowsOnly() const { return poolOnly_; }
  // Pool rows only: why the pool has no worker (noDeviceText says it).
  void setPoolProblem(const QString &problem) { problem_ = problem; }

  const std::vector<kwb::GpuStats> &stats() const { return rows_; }
  // Why there are no rows ("no CUDA driver: ..."); empty when there are.
  const QString &problem() const { return problem_; }
  // "No CUDA device: <reason>" when there are no rows, else empty.
  QString noDeviceText() const;
  // For the status bar: "2 GPUs · 37% · 61 °C" (mean load, hottest); empty without rows.
  QString summary() const;

  int rowCount(const QModelIndex &parent = {}) const override;
  int columnCount(const QModelIndex &parent = {}) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  static QString formatBytes(qint64 bytes);

 private:
  const PoolDeviceRow *poolRow(int ordinal) const;
  QString stateText(int ordinal) const;

  QVariant poolOnlyData(const PoolDeviceRow &row, int column, int role) const;

  std::vector<kwb::GpuStats> rows_;
  QString problem_;
  QList<PoolDeviceRow> pool_;
  bool poolOnly_ = false;
};

}  // namespace kwb::ui
