#include "ui/services/evaluation_service.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>

#include <QDateTime>
#include <QFileInfo>

#include "core/eval/evaluator_pool.h"
#include "core/task/manifest_parser.h"
#include "ui/filesystem_path.h"
#include "ui/services/lineage_step.h"

namespace kwb::ui {

namespace {

QString utcNow() {
  return QDateTime::currentDateTimeUtc().toString(Qt::ISODateWithMs);
}

// A run that never reached the evaluator (or left it by an exception), in the result's own form.
void failRun(EvaluationRun &run, kwb::Outcome outcome, const QString &message) {
  run.outcome = outcome;
  run.message = message;
  kwb::EvaluationResult result;
  result.outcome = outcome;
  result.message = message.toStdString();
  result.arch = run.arch.toStdString();
  result.device = run.device.toStdString();
  run.result = std::move(result);
}

}  // namespace

// What the GUI thread and the evaluation thread share.
struct EvaluationService::Shared {
  std::mutex mutex;
  kwb::Evaluator *active = nullptr;      // set while evaluate() runs, under mutex
  kwb::EvaluatorPool *pool = nullptr;    // the backend's pool, under mutex (made and reset there)
  std::string poolSpec;                  // where its workers run (workersSpec)
  std::string poolProblem;               // why it has no device, under mutex
  bool poolRunning = false;              // a run is on the pool, under mutex
  QString job;                           // "task · source" of that run, under mutex
  std::vector<int> devices;              // the choice for the next pool, under mutex
  kwb::worker::WorkerLauncher launcher;  // where the next pool's workers run, under mutex
  std::vector<kwb::worker::WorkerLauncher> hosts;  // several hosts in one pool (launcher the first); empty: launcher alone
  // The spec of where the next pool's workers run, under mutex.
  std::string workersSpec() const { return hosts.empty() ? launcher.spec() : kwb::worker::launchersSpec(hosts); }
  std::atomic<quint64> cancelledRun{0};  // the run cancel() was called for
  std::atomic<bool> shuttingDown{false};  // the service is being destroyed: other work is dropped

  std::mutex stepMutex;
  EvaluationStep latestStep;
  bool stepPosted = false;  // a delivery of latestStep is on its way to the GUI thread
};

// Owns the pool (and the compile-only evaluator); only ever used on the evaluation jobs' thread.
class EvaluationService::Backend {
 public:
  explicit Backend(kwb::EvaluatorSettings settings, std::function<void(const std::string &)> onPoolMessage)
      : settings_(std::move(settings)), onPoolMessage_(std::move(onPoolMessage)) {}

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

  // Work on a pool GPU's evaluator; the compile-only evaluator when the pool has none (or the
  // GPU asked for is not in it). Throws when the pool cannot be made.
  // A GPU the pool does not hold (not chosen, or taken out) gets an evaluator for this work only.
  // Returns false when the service is shutting down (nothing ran).
  // A wait for a Slurm allocation ends when the work is superseded or the window closes.
  bool onEvaluator(Shared &shared, const std::function<void(kwb::Evaluator &)> &work, int device,
                   const JobTicket &ticket) {
    if (shared.shuttingDown) return false;
    kwb::EvaluatorPool *pool = this->pool(shared, [&shared, ticket] { return shared.shuttingDown.load() || ticket.cancelled(); });
    if (hasDevice(*pool)) {
      if (pool->submitWork(work, device).get()) return true;
      if (device >= 0) {
        // Through Slurm inside the pool's allocation, device 0 of a step of its own.
        kwb::EvaluatorSettings s = pool->evaluatorSettings();
        s.device = s.launcher.kind == kwb::worker::WorkerLauncher::Kind::Slurm ? 0 : device;
        kwb::Evaluator once(s);
        work(once);
        return true;
      }
    }
    work(compileOnly());
    return true;
  }

  // A pool whose workers run somewhere no longer chosen goes now, not at the next run: its
  // workers (ssh connections, Slurm steps) and its Slurm allocation are given back.
  bool releaseStalePool(Shared &shared) {
    {
      std::lock_guard lock(shared.mutex);
      if (!pool_ || shared.workersSpec() == poolSpec_) return false;
      shared.pool = nullptr;
    }
    pool_.reset();
    evaluator_.reset();
    return true;
  }

  void shutDown(Shared &shared) {
    {
      std::lock_guard lock(shared.mutex);
      shared.pool = nullptr;
    }
    pool_.reset();
    evaluator_.reset();
  }

 private:
  // The pool for the devices chosen now, made again when the choice changed. `cancelled` ends its
  // wait for a Slurm allocation (the work that makes it: a run's cancel, the window closing).
  kwb::EvaluatorPool *pool(Shared &shared, std::function<bool()> cancelled) {
    std::vector<int> wanted;
    kwb::worker::WorkerLauncher launcher;
    std::vector<kwb::worker::WorkerLauncher> hosts;
    std::string spec;
    {
      std::lock_guard lock(shared.mutex);
      wanted = shared.devices;
      launcher = shared.launcher;
      hosts = shared.hosts;
      spec = shared.workersSpec();
    }
    // A pool through Slurm with no worker (its allocation ended: time limit, preemption; or it
    // was refused, not granted in time, cancelled while waiting) is made again, asking anew.
    const bool spent =
        pool_ && poolLauncher_.kind == kwb::worker::WorkerLauncher::Kind::Slurm && !hasDevice(*pool_);
    if (pool_ && !spent && wanted == poolDevices_ && spec == poolSpec_) return pool_.get();
    {
      std::lock_guard lock(shared.mutex);
      shared.pool = nullptr;
    }
    pool_.reset();
    kwb::EvaluatorPoolSettings s;
    s.evaluator = settings_;
    s.evaluator.launcher = launcher;
    s.evaluator.hosts = hosts;
    s.devices = wanted;
    s.cancelled = std::move(cancelled);
    pool_ = std::make_unique<kwb::EvaluatorPool>(std::move(s), onPoolMessage_);
    poolDevices_ = wanted;
    poolLauncher_ = launcher;
    poolSpec_ = spec;
    evaluator_.reset();  // the compile-only evaluator asks the same workers
    std::lock_guard lock(shared.mutex);
    shared.pool = pool_.get();
    shared.poolSpec = spec;
    shared.poolProblem = pool_->problem();
    return pool_.get();
  }

  // The evaluator for a pool without a GPU: it compiles, and says there is no device.
  kwb::Evaluator &compileOnly() {
    if (!evaluator_) {
      kwb::EvaluatorSettings s = pool_ ? pool_->evaluatorSettings() : settings_;
      if (!pool_) s.launcher = poolLauncher_;
      if (s.launcher.kind == kwb::worker::WorkerLauncher::Kind::Slurm) {
        // No worker in the pool through Slurm (refused, not granted in time, given up, no GPU
        // there): asking Slurm again here would queue a job of its own. It compiles, and says why.
        s.useDevice = false;
        s.noDeviceReason = pool_ && !pool_->problem().empty() ? pool_->problem() : "no Slurm worker";
      }
      evaluator_ = std::make_unique<kwb::Evaluator>(s);
    }
    return *evaluator_;
  }

  static bool hasDevice(const kwb::EvaluatorPool &pool) {
    for (const auto &d : pool.devices())
      if (!d.removed) return true;
    return false;
  }

  void evaluateInto(EvaluationRun &run, Shared &shared, quint64 id, const RunRequest &request,
                    const std::function<void(const EvaluationStep &)> &report) {
    kwb::Task task;
    std::map<std::string, std::int64_t> stepTunables;
    try {
      task = kwb::loadTask(toFsPath(request.taskFolder));
      run.taskName = QString::fromStdString(task.name);
      // A lineage file runs as its step does (its launch and tunables), as `kwb eval` runs it.
      runAsCandidateFile(task, request.sourceName, stepTunables);
    } catch (const std::exception &e) {
      failRun(run, kwb::Outcome::Error, tr("the task did not load: %1").arg(QString::fromStdString(e.what())));
      return;
    }
    if (shared.cancelledRun == id) {
      failRun(run, kwb::Outcome::Cancelled, tr("cancelled by the user"));
      return;
    }
    kwb::EvaluatorPool *pool = nullptr;
    try {
      // Its wait for a Slurm allocation ends with this run's cancel (or the window closing).
      pool = this->pool(shared, [&shared, id] { return shared.shuttingDown.load() || shared.cancelledRun == id; });
    } catch (const std::exception &e) {
      failRun(run, kwb::Outcome::Error, tr("the evaluation pool did not start: %1").arg(QString::fromStdString(e.what())));
      return;
    }
    if (shared.cancelledRun == id) {  // while it waited for a Slurm allocation
      failRun(run, kwb::Outcome::Cancelled, tr("cancelled by the user"));
      return;
    }
    // Without a GPU in the pool, one evaluator compiles (and says there is no device), as before.
    const bool usePool = hasDevice(*pool);
    kwb::Evaluator *evaluator = usePool ? nullptr : &compileOnly();
    auto cancelNow = [&] {
      if (usePool) pool->cancelAll();
      else evaluator->cancel();
    };

    kwb::EvaluationOptions options;
    options.arch = request.arch.toStdString();
    options.sourceName =
        request.sourceName.isEmpty() ? std::string("candidate.cu") : request.sourceName.toStdString();
    options.time = request.time;
    if (request.sanitize) options.sanitize = kwb::SanitizeOptions{};
    options.tunables = stepTunables;
    options.timeLimit = std::chrono::milliseconds(request.timeLimitMs);
    std::atomic<bool> cancelForwarded{false};
    options.onStep = [&, report](const kwb::EvalProgress &step) {
      // evaluate() forgets a cancel that came before it began; pass it on from inside.
      if (shared.cancelledRun == id && !cancelForwarded.exchange(true)) cancelNow();
      EvaluationStep e{QString::fromStdString(step.stage), QString::fromStdString(step.config), step.fraction,
                       QString::fromStdString(step.text), {}};
      for (double ms : step.samplesMs) e.samplesMs << ms;
      report(e);
    };

    {
      std::lock_guard lock(shared.mutex);
      shared.active = evaluator;
      shared.poolRunning = usePool;
      shared.job = run.taskName + QStringLiteral(" · ") +
                   (request.sourceName.isEmpty() ? QStringLiteral("candidate.cu") : request.sourceName);
    }
    try {
      const kwb::EvaluationResult result =
          usePool ? pool->submit(task, request.source.toStdString(), options).get()
                  : evaluator->evaluate(task, request.source.toStdString(), options);
      run.outcome = result.outcome;
      run.message = QString::fromStdString(result.message);
      run.arch = QString::fromStdString(result.arch);
      run.device = QString::fromStdString(result.device);
      run.result = result;
    } catch (const std::exception &e) {
      failRun(run, kwb::Outcome::Error, QString::fromStdString(e.what()));
    }
    std::lock_guard lock(shared.mutex);
    shared.active = nullptr;
    shared.poolRunning = false;
    shared.job.clear();
  }

  kwb::EvaluatorSettings settings_;
  std::function<void(const std::string &)> onPoolMessage_;
  std::unique_ptr<kwb::EvaluatorPool> pool_;   // made on first use, on this thread
  std::vector<int> poolDevices_;               // the choice pool_ was made for
  kwb::worker::WorkerLauncher poolLauncher_;   // where pool_'s workers run (the first host of several)
  std::string poolSpec_;                       // and the spec of all of them
  std::unique_ptr<kwb::Evaluator> evaluator_;  // compile-only, when the pool has no GPU
};

EvaluationService::EvaluationService(kwb::EvaluatorSettings settings, QObject *parent)
    : QObject(parent), jobs_(new BackgroundJobs(QStringLiteral("evaluation"), this)), shared_(std::make_shared<Shared>()) {
  qRegisterMetaType<kwb::ui::EvaluationRun>();
  qRegisterMetaType<kwb::ui::EvaluationStep>();
  // Called on a pool device's thread: hop to this one.
  auto onPoolMessage = [this](const std::string &message) {
    QMetaObject::invokeMethod(
        this,
        [this, text = QString::fromStdString(message)] {
          emit deviceMessage(text);
          emit devicesChanged();
        },
        Qt::QueuedConnection);
  };
  backend_ = std::make_shared<Backend>(std::move(settings), onPoolMessage);
}

EvaluationService::~EvaluationService() {
  shared_->shuttingDown = true;  // queued profiles and ceilings are dropped, not started
  cancel();
  // The evaluator, and its worker, end on their own thread, after the run in progress.
  jobs_->post([backend = backend_, shared = shared_] { backend->shutDown(*shared); });
  delete jobs_;
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
      // Coalesced: the latest step wins, but no sample time is lost between deliveries.
      QList<double> samples = std::move(shared->latestStep.samplesMs);
      shared->latestStep = step;
      samples += step.samplesMs;
      shared->latestStep.samplesMs = std::move(samples);
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
            shared->latestStep.samplesMs.clear();
            shared->stepPosted = false;
          }
          if (running_ && id == currentRun_) emit progress(latest);
        },
        Qt::QueuedConnection);
  };

  // Of no kind: one run at a time, and a run is never dropped (cancel() stops it, with a result).
  jobs_->run(
      this, QString(),
      [backend = backend_, shared, id, request, report](const JobTicket &) {
        return backend->evaluate(*shared, id, request, report);
      },
      [this, source = request.source](EvaluationRun run) {
        running_ = false;
        cancelRequested_ = false;
        emit finished(run, source);
        emit devicesChanged();
      });
  emit started(request.taskFolder);
  emit devicesChanged();
  return true;
}

void EvaluationService::runOnEvaluator(std::function<void(kwb::Evaluator &)> work,
                                       std::function<void(const QString &)> done, int device,
                                       const QString &kind) {
  jobs_->run(
      this, kind,
      [backend = backend_, shared = shared_, work = std::move(work), device](const JobTicket &ticket) {
        if (ticket.cancelled()) return tr("superseded by a newer request");
        try {
          if (!backend->onEvaluator(*shared, work, device, ticket)) return tr("the evaluation service is shutting down");
          return QString();
        } catch (const std::exception &e) {
          return tr("the work on the evaluation pool failed: %1").arg(QString::fromStdString(e.what()));
        }
      },
      [done = std::move(done)](const QString &problem) { done(problem); });
}

void EvaluationService::cancel() {
  if (!running_) return;
  cancelRequested_ = true;
  shared_->cancelledRun = currentRun_;
  // Evaluator::cancel() only signals the evaluation thread and stops the worker process: it
  // returns at once, so it is safe here on the GUI thread.
  std::lock_guard lock(shared_->mutex);
  if (shared_->active) shared_->active->cancel();
  if (shared_->poolRunning && shared_->pool) shared_->pool->cancelAll();
}

void EvaluationService::setDevices(const QList<int> &devices) {
  std::lock_guard lock(shared_->mutex);
  shared_->devices.assign(devices.begin(), devices.end());
}

bool EvaluationService::setWorkers(const QString &spec) {
  std::string problem;
  const auto launchers = kwb::worker::parseWorkerLaunchers(spec.trimmed().toStdString(), problem);
  if (!launchers) return false;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->launcher = launchers->front();
    shared_->hosts = launchers->size() > 1 ? *launchers : std::vector<kwb::worker::WorkerLauncher>{};
  }
  jobs_->post([this, backend = backend_, shared = shared_] {
    if (backend->releaseStalePool(*shared)) QMetaObject::invokeMethod(this, [this] { emit devicesChanged(); }, Qt::QueuedConnection);
  });
  return true;
}

QString EvaluationService::workersDescription() const {
  std::lock_guard lock(shared_->mutex);
  if (shared_->hosts.empty()) return QString::fromStdString(shared_->launcher.describe());
  QStringList each;
  for (const auto &h : shared_->hosts) each << QString::fromStdString(h.describe());
  return each.join(QStringLiteral(", "));
}

QString EvaluationService::poolProblem() const {
  std::lock_guard lock(shared_->mutex);
  if (!shared_->pool || shared_->poolSpec != shared_->workersSpec()) return {};
  return QString::fromStdString(shared_->poolProblem);
}

QStringList EvaluationService::hostLines() const {
  QStringList lines;
  std::lock_guard lock(shared_->mutex);
  if (!shared_->pool || shared_->poolSpec != shared_->workersSpec()) return lines;
  // A pool host's name is its launcher's description, the connection record's key.
  for (const auto &host : kwb::poolHosts(shared_->pool->devices()))
    lines << QString::fromStdString(kwb::describePoolHost(host, kwb::worker::sshConnectionStats(host.host)));
  return lines;
}

QList<PoolDeviceRow> EvaluationService::deviceStates() const {
  QList<PoolDeviceRow> rows;
  std::lock_guard lock(shared_->mutex);
  // A pool from before the workers moved elsewhere is not theirs (it goes on its own thread).
  if (!shared_->pool || shared_->poolSpec != shared_->workersSpec()) return rows;
  const auto states = shared_->pool->devices();
  // One run at a time: the busy device is the one running it.
  for (const auto &d : states) {
    PoolDeviceRow row;
    row.device = d.device;
    row.removed = d.removed;
    row.busy = d.busy;
    row.queued = static_cast<int>(d.queued);
    row.done = static_cast<int>(d.done);
    row.message = QString::fromStdString(d.message);
    // Several hosts: the host it is on first ("ssh://gpu-b, its GPU 0 · gpu-b.lab · ...").
    const std::string host = d.host.empty() ? std::string() : d.host + ", its GPU " + std::to_string(d.hostDevice);
    row.where = QString::fromStdString(host.empty() || d.where.empty() ? host + d.where : host + " · " + d.where);
    if (d.busy && shared_->poolRunning) row.job = shared_->job;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace kwb::ui
