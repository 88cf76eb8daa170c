#pragma once
// One short kwb-worker command in a child process (`--devices --json`, `--stats --json`), off the
// GUI thread, with a timeout: its stdout comes back in succeeded(), anything else (not found, not
// started, crashed, non-zero exit, no answer in time) in failed(). A child stuck in the driver is
// killed and let go, never waited for, so neither the window nor the exit can hang on it.
#include <QByteArray>
#include <QObject>
#include <QString>
#include <QStringList>

#include "core/worker/worker_launcher.h"

class QProcess;
class QTimer;

namespace kwb::ui {

class WorkerCommand : public QObject {
  Q_OBJECT

 public:
  // what: how messages name the command ("GPU probe", "GPU stats").
  explicit WorkerCommand(QString what, QObject *parent = nullptr);
  ~WorkerCommand() override;

  // Runs program with arguments (empty program: kwb-worker was not found) and answers once,
  // later, with succeeded() or failed(). A command still running is abandoned first.
  // With a remote launcher (setLauncher), the far side's kwb-worker runs with the arguments,
  // through ssh or srun; program is then not used.
  void start(const QString &program, const QStringList &arguments, int timeoutMs);
  void setLauncher(const kwb::worker::WorkerLauncher &launcher) { launcher_ = launcher; }
  const kwb::worker::WorkerLauncher &launcher() const { return launcher_; }
  bool isRunning() const { return process_ != nullptr; }
  // Kills a command still running, without an answer.
  void cancel() { abandon(); }

 signals:
  void succeeded(const QByteArray &standardOutput);
  // summary: one line ("GPU probe timed out"); detail: what happened and why.
  void failed(const QString &summary, const QString &detail);

 private:
  void onFinished(int exitCode, bool crashed);
  void onTimeout();
  void fail(const QString &summary, const QString &detail);
  void abandon();
  QString commandLine() const;

  QString what_;
  kwb::worker::WorkerLauncher launcher_;
  QProcess *process_ = nullptr;
  QTimer *timer_ = nullptr;
  QString program_;
  QStringList arguments_;
  int timeoutMs_ = 0;
  quint64 attempt_ = 0;  // start() count, so a queued answer for an older start is dropped
};

}  // namespace kwb::ui
