#pragma once
// The GPUs dock: one row per visible GPU (load, memory, temperature, SM clock, state in the
// evaluation pool, the job running on it), refreshed every 2 s by running
// `kwb-worker --stats --json` in a child process (WorkerCommand): nothing here blocks the GUI
// thread, and a refresh never starts while the previous one runs. Without a GPU it says why.
#include <QWidget>

#include "core/worker/worker_launcher.h"
#include "ui/models/gpu_device_model.h"

class QLabel;
class QTableView;
class QTimer;

namespace kwb::ui {

class WorkerCommand;

class DevicesPanel : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRefreshMs = 2000;
  static constexpr int kStatsTimeoutMs = 15000;

  explicit DevicesPanel(QWidget *parent = nullptr);

  // Starts refreshing with the worker at program (empty: not found; the panel says so).
  void start(const QString &program, int intervalMs = kRefreshMs);
  void stop();
  bool isRefreshing() const;
  // Where the GPUs listed are: this machine, or a remote host's (ssh, Slurm); the panel says
  // which above the table, and the figures come from that host's kwb-worker. Through Slurm the
  // rows are the evaluation pool's workers (setPoolDevices) and nothing is polled: each poll
  // would be a job step of its own.
  void setLauncher(const kwb::worker::WorkerLauncher &launcher);
  // The evaluation pool's devices: their state, job and where they run, joined to the rows.
  // Through Slurm, `problem` (why the pool has no worker) takes the place of the rows.
  void setPoolDevices(const QList<PoolDeviceRow> &devices, const QString &problem = {});
  QLabel *whereLabel() const { return where_; }
  // Several hosts: a line per host under the table (EvaluationService::hostLines); hidden when empty.
  void setHostLines(const QStringList &lines);
  QLabel *hostsLabel() const { return hosts_; }

  GpuDeviceModel *model() const { return model_; }
  QTableView *view() const { return view_; }
  // "No CUDA device: <reason>" while there is no GPU row; hidden otherwise.
  QLabel *messageLabel() const { return message_; }

 signals:
  // After every answer (figures or failure) has reached the model.
  void refreshed();
  // The status bar's short form (GpuDeviceModel::summary()); empty without a GPU.
  void summaryChanged(const QString &summary);

 private:
  void refreshNow();
  void onStats(const QByteArray &json);
  void onFailed(const QString &summary, const QString &detail);
  void afterAnswer();
  void noteSummary();

  GpuDeviceModel *model_ = nullptr;
  QTableView *view_ = nullptr;
  QLabel *message_ = nullptr;
  QLabel *where_ = nullptr;
  QLabel *hosts_ = nullptr;
  WorkerCommand *command_ = nullptr;
  QTimer *timer_ = nullptr;
  QString program_;
  QString lastSummary_;
  bool active_ = false;
};

}  // namespace kwb::ui
