#include "ui/services/worker_command.h"

#include <QDir>
#include <QProcess>
#include <QTimer>

#include <utility>

namespace kwb::ui {

namespace {

// The last lines a program wrote to stderr, for a message.
QString tail(const QByteArray &text) {
  const QString all = QString::fromUtf8(text).trimmed();
  return all.size() > 600 ? QStringLiteral("…") + all.right(600) : all;
}

}  // namespace

WorkerCommand::WorkerCommand(QString what, QObject *parent) : QObject(parent), what_(std::move(what)) {
  timer_ = new QTimer(this);
  timer_->setSingleShot(true);
  connect(timer_, &QTimer::timeout, this, &WorkerCommand::onTimeout);
}

WorkerCommand::~WorkerCommand() {
  abandon();
}

QString WorkerCommand::commandLine() const {
  return (QStringList{QDir::toNativeSeparators(program_)} + arguments_).join(QLatin1Char(' '));
}

void WorkerCommand::start(const QString &localProgram, const QStringList &localArguments, int timeoutMs) {
  abandon();
  const quint64 attempt = ++attempt_;
  QString program = localProgram;
  QStringList arguments = localArguments;
  if (launcher_.remote()) {
    std::vector<std::string> workerArgs;
    for (const auto &a : localArguments) workerArgs.push_back(a.toStdString());
    const auto argv = kwb::worker::remoteWorkerCommand(launcher_, workerArgs);
    program = QString::fromStdString(argv.front());
    arguments.clear();
    for (std::size_t i = 1; i < argv.size(); ++i) arguments << QString::fromStdString(argv[i]);
  }
  program_ = program;
  arguments_ = arguments;
  timeoutMs_ = timeoutMs;
  if (program.isEmpty()) {
    // Answered later, like every other outcome, so callers connect after start() if they like.
    QMetaObject::invokeMethod(
        this,
        [this, attempt] {
          if (attempt != attempt_) return;
          emit failed(tr("%1 unavailable: kwb-worker not found").arg(what_),
                      tr("The GPU is probed by the kwb-worker program, which was found neither beside "
                         "this program, in the build tree nor on PATH. Set KWB_WORKER to its path, or "
                         "reinstall Kernel Workbench."));
        },
        Qt::QueuedConnection);
    return;
  }
  process_ = new QProcess(this);
  process_->setProgram(program);
  process_->setArguments(arguments);
  process_->setStandardInputFile(QProcess::nullDevice());
  connect(process_, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
    onFinished(exitCode, status == QProcess::CrashExit);
  });
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;  // the others end in finished()
    fail(tr("%1 failed").arg(what_),
         tr("%1 could not be started: %2").arg(QDir::toNativeSeparators(program_), process_->errorString()));
  });
  timer_->start(timeoutMs);
  process_->start();
}

void WorkerCommand::onFinished(int exitCode, bool crashed) {
  timer_->stop();
  const QByteArray out = process_->readAllStandardOutput();
  const QByteArray err = process_->readAllStandardError();
  abandon();
  if (crashed) {
    fail(tr("%1 failed").arg(what_), tr("%1 crashed. %2").arg(commandLine(), tail(err)).trimmed());
    return;
  }
  if (exitCode != 0) {
    fail(tr("%1 failed").arg(what_),
         tr("%1 exited with code %2. %3").arg(commandLine()).arg(exitCode).arg(tail(err)).trimmed());
    return;
  }
  emit succeeded(out);
}

void WorkerCommand::onTimeout() {
  if (!process_) return;
  abandon();
  fail(tr("%1 timed out").arg(what_),
       tr("%1 gave no answer within %2 s and was stopped. A GPU driver that hangs "
          "while starting up does this; nvidia-smi may say more.")
           .arg(commandLine())
           .arg(timeoutMs_ / 1000.0));
}

void WorkerCommand::fail(const QString &summary, const QString &detail) {
  timer_->stop();
  abandon();
  emit failed(summary, detail);
}

void WorkerCommand::abandon() {
  timer_->stop();
  QProcess *process = std::exchange(process_, nullptr);
  if (!process) return;
  disconnect(process, nullptr, this, nullptr);
  if (process->state() == QProcess::NotRunning) {
    process->deleteLater();
    return;
  }
  connect(process, &QProcess::finished, process, &QObject::deleteLater);
  process->kill();
  // No parent from here on: ~QProcess waits until the process has ended, and one stuck inside
  // the driver ends only when the kernel lets it. It deletes itself when it ends; one that has
  // not ended by the time this program exits is left to the operating system.
  process->setParent(nullptr);
}

}  // namespace kwb::ui
