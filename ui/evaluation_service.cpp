#include "ui/evaluation_service.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>

#include <QDateTime>
#include <QFileInfo>

#include "core/task/manifest_parser.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

namespace {

QString utcNow() {
  return QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs);
}

// A run that never reached the evaluator (or left it by an exception), in the result's own form.
void failRun(EvaluationRun &run, const char *outcome, const QString &message) {
  run.outcome = QLatin1String(outcome);
  run.message = message;
  run.result = {{"outcome", outcome},
                {"message", message.toStdString()},
                {"arch", run.arch.toStdString()},
                {"device", run.device.toStdString()},
                {"configs", nlohmann::json::array()}};
}

}  // namespace

// What the GUI thread and the evaluation thread share.
struct EvaluationService::Shared {
  std::mutex mutex;
  kwb::Evaluator *active = nullptr;      // set while evaluate() runs, under mutex
  std::atomic<quint64> cancelledRun{0};  // the run cancel() was called for

  std::mutex stepMutex;
  EvaluationStep latestStep;
  bool stepPosted = false;  // a delivery of latestStep is on its way to the GUI thread
};

// Owns the evaluator; only ever used on the evaluation thread.
class EvaluationService::Backend : public QObject {
 public:
  explicit Backend(kwb::EvaluatorSettings settings) : settings_(std::move(settings)) {}

  EvaluationRun evaluate(Shared &shared, quint64 id, const RunRequest &request,
                         const std::function<void(const EvaluationStep &)> &report) {
    EvaluationRun run;
    run.taskFolder = request.taskFolder;
    run.sourceName = request.sourceName;
    run.taskName = QFileInfo(request.taskFolder).fileName();
    run.startedAt = utcNow();
    evaluateInto(run, shared, id, request, report);
    run.finishedAt = utcNow();
    return run;
  }

  void shutDown() { evaluator_.reset(); }

 private:
  void evaluateInto(EvaluationRun &run, Shared &shared, quint64 id, const RunRequest &request,
                    const std::function<void(const EvaluationStep &)> &report) {
    kwb::Task task;
    try {
      task = kwb::loadTask(toFsPath(request.taskFolder));
      run.taskName = QString::fromStdString(task.name);
    } catch (const std::exception &e) {
      failRun(run, "error", tr("the task did not load: %1").arg(QString::fromStdString(e.what())));
      return;
    }
    if (shared.cancelledRun == id) {
      failRun(run, "cancelled", tr("cancelled by the user"));
      return;
    }
    if (!evaluator_) evaluator_ = std::make_unique<kwb::Evaluator>(settings_);
    kwb::Evaluator *evaluator = evaluator_.get();

    kwb::EvaluationOptions options;
    options.arch = request.arch.toStdString();
    options.sourceName =
        request.sourceName.isEmpty() ? std::string("candidate.cu") : request.sourceName.toStdString();
    options.time = request.time;
    options.timeLimit = std::chrono::milliseconds(request.timeLimitMs);
    bool cancelForwarded = false;
    options.onStep = [&](const kwb::EvalProgress &step) {
      // evaluate() forgets a cancel that came before it began; pass it on from inside.
      if (!cancelForwarded && shared.cancelledRun == id) {
        cancelForwarded = true;
        evaluator->cancel();
      }
      report({QString::fromStdString(step.stage), QString::fromStdString(step.config), step.fraction,
              QString::fromStdString(step.text)});
    };

    {
      std::lock_guard lock(shared.mutex);
      shared.active = evaluator;
    }
    try {
      const kwb::EvaluationResult result = evaluator->evaluate(task, request.source.toStdString(), options);
      run.outcome = QLatin1String(kwb::toString(result.outcome));
      run.message = QString::fromStdString(result.message);
      run.arch = QString::fromStdString(result.arch);
      run.device = QString::fromStdString(result.device);
      run.result = result.toJson();
    } catch (const std::exception &e) {
      failRun(run, "error", QString::fromStdString(e.what()));
    }
    std::lock_guard lock(shared.mutex);
    shared.active = nullptr;
  }

  kwb::EvaluatorSettings settings_;
  std::unique_ptr<kwb::Evaluator> evaluator_;  // made on first use, on this thread
};

EvaluationService::EvaluationService(kwb::EvaluatorSettings settings, QObject *parent)
    : QObject(parent), shared_(std::make_shared<Shared>()) {
  qRegisterMetaType<kwb::ui::EvaluationRun>();
  qRegisterMetaType<kwb::ui::EvaluationStep>();
  thread_.setObjectName(QStringLiteral("evaluation"));
  backend_ = new Backend(std::move(settings));
  backend_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, backend_, &QObject::deleteLater);
  thread_.start();
}

EvaluationService::~EvaluationService() {
  cancel();
  Backend *backend = backend_;
  QMetaObject::invokeMethod(
      backend_,
      [backend] {
        backend->shutDown();  // the evaluator, and its worker, end on their own thread
        QThread::currentThread()->quit();
      },
      Qt::QueuedConnection);
  thread_.wait();
}

bool EvaluationService::run(const RunRequest &request) {
  if (running_) return false;
  running_ = true;
  cancelRequested_ = false;
  const quint64 id = ++currentRun_;
  std::shared_ptr<Shared> shared = shared_;

  auto report = [this, shared, id](const EvaluationStep &step) {
    bool post = false;
    {
      std::lock_guard lock(shared->stepMutex);
      shared->latestStep = step;
      post = !std::exchange(shared->stepPosted, true);
    }
    if (!post) return;
    QMetaObject::invokeMethod(
        this,
        [this, shared, id] {
          EvaluationStep latest;
          {
            std::lock_guard lock(shared->stepMutex);
            latest = shared->latestStep;
            shared->stepPosted = false;
          }
          if (running_ && id == currentRun_) emit progress(latest);
        },
        Qt::QueuedConnection);
  };

  Backend *backend = backend_;
  QMetaObject::invokeMethod(
      backend_,
      [this, backend, shared, id, request, report] {
        const EvaluationRun run = backend->evaluate(*shared, id, request, report);
        QMetaObject::invokeMethod(
            this,
            [this, run, source = request.source] {
              running_ = false;
              cancelRequested_ = false;
              emit finished(run, source);
            },
            Qt::QueuedConnection);
      },
      Qt::QueuedConnection);
  emit started(request.taskFolder);
  return true;
}

void EvaluationService::cancel() {
  if (!running_) return;
  cancelRequested_ = true;
  shared_->cancelledRun = currentRun_;
  // Evaluator::cancel() only signals the evaluation thread and stops the worker process: it
  // returns at once, so it is safe here on the GUI thread.
  std::lock_guard lock(shared_->mutex);
  if (shared_->active) shared_->active->cancel();
}

}  // namespace kwb::ui
