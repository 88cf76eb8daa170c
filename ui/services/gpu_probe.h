#pragma once
// Finds out which CUDA libraries and GPUs this machine has by asking the worker:
// `kwb-worker --devices --json` in a child process. cuInit and the driver's threads stay out of the
// GUI process (see DESIGN.md, Processes), and a wedged driver costs a killed child after a timeout,
// never a hung window or a hung exit.
#include <optional>

#include <QObject>
#include <QString>

#include "core/gpu/device_info.h"
#include "core/worker/worker_launcher.h"

namespace kwb::ui {

class WorkerCommand;

class GpuProbe : public QObject {
  Q_OBJECT

 public:
  static constexpr int kDefaultTimeoutMs = 30000;

  explicit GpuProbe(QObject *parent = nullptr);
  ~GpuProbe() override;

  // Starts the worker at program (empty: none was found) and answers once, later, with
  // inventoryReady() or failed(). A probe still running is abandoned first.
  void start(const QString &program, int timeoutMs = kDefaultTimeoutMs);
  // Where the probe runs: this machine (kwb-worker at program) or a remote host's kwb-worker.
  void setLauncher(const kwb::worker::WorkerLauncher &launcher);
  bool isRunning() const;
  // Kills a worker still running, without an answer.
  void cancel();

 signals:
  // summary: the worker's one-line summary ("NVIDIA H200 (sm_90, 132 SMs, 140 GiB)").
  void inventoryReady(const kwb::GpuInventory &inventory, const QString &summary);
  // summary: one line for the status bar ("GPU probe timed out"); detail: what happened and why.
  void failed(const QString &summary, const QString &detail);

 private:
  void onOutput(const QByteArray &out);

  WorkerCommand *command_ = nullptr;
  QString program_;
};

}  // namespace kwb::ui
