#include "ui/services/tuning_service.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>

#include "core/memory/case_sources.h"
#include "core/task/manifest_parser.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

TuningService::TuningService(kwb::EvaluatorSettings settings, QObject *parent)
    : QObject(parent),
      settings_(std::move(settings)),
      jobs_(new BackgroundJobs(QStringLiteral("tuning"), this)),
      shared_(std::make_shared<Shared>()) {}

TuningService::~TuningService() {
  cancel();
  delete jobs_;  // waits for the run to end
}

void TuningService::cancel() {
  if (!running_) return;
  shared_->cancelRequested = true;
  std::lock_guard lock(shared_->mutex);
  if (shared_->tuner) shared_->tuner->cancel();
}

void TuningService::deliver() {
  QList<TunePointRow> rows;
  TuneSummary sofar;
  {
    std::lock_guard lock(shared_->mutex);
    rows.swap(shared_->queued);
    sofar = shared_->latest;
    shared_->posted = false;
  }
  if (!rows.isEmpty()) emit pointsArrived(rows, sofar);
}

void TuningService::start(std::function<kwb::tune::TuneReport(Shared &, const kwb::tune::Tuner::OnPoint &)> work,
                          TuneSummary header) {
  running_ = true;
  shared_->cancelRequested = false;
  shared_->memory.clear();
  header.stop = QStringLiteral("running");
  emit started(header);
  auto shared = shared_;
  QPointer<TuningService> self(this);
  jobs_->run(
      this, QStringLiteral("tune"),
      [self, shared, work = std::move(work), header](const JobTicket &) {
        TuneSummary summary = header;
        // Each point is queued; one delivery to the GUI thread is posted for however many queue up.
        const kwb::tune::Tuner::OnPoint onPoint = [&](const kwb::tune::TunedPoint &p, const kwb::tune::TuneReport &r) {
          bool post = false;
          {
            std::lock_guard lock(shared->mutex);
            shared->queued.append(toRow(p));
            fillSummary(shared->latest = summary, r);
            post = !shared->posted;
            shared->posted = true;
          }
          if (post && self) QMetaObject::invokeMethod(self.data(), [self] { if (self) self->deliver(); }, Qt::QueuedConnection);
        };
        try {
          const auto report = work(*shared, onPoint);
          fillSummary(summary, report);
          summary.stop = QString::fromStdString(report.stop);
          summary.message = QString::fromStdString(report.message);
          summary.memory = shared->memory;
          if (report.best) {
            QString cmd = QStringLiteral("kwb eval %1 %2").arg(header.task, header.sourceName);
            for (const auto &[k, v] : report.points[*report.best].point)
              cmd += QStringLiteral(" --set %1=%2").arg(QString::fromStdString(k)).arg(v);
            summary.reproduce = cmd + QStringLiteral(" --time");
          }
        } catch (const std::exception &e) {
          summary.stop = QStringLiteral("error");
          summary.message = QString::fromStdString(e.what());
        }
        return summary;
      },
      [this](TuneSummary summary) {
        deliver();  // whatever is still queued comes before the end
        running_ = false;
        emit finished(summary);
      });
}

bool TuningService::run(const TuneRequest &request) {
  if (running_) return false;
  TuneSummary header;
  header.task = request.taskFolder;
  header.sourceName = request.sourceName;
  auto settings = settings_;
  start([request, settings](Shared &shared, const kwb::tune::Tuner::OnPoint &onPoint) {
    const auto task = kwb::loadTask(toFsPath(request.taskFolder));
    kwb::tune::TuneSettings s;
    const auto strategy = kwb::tune::parseStrategy(request.strategy.toStdString());
    s.strategy = strategy ? *strategy : kwb::tune::Strategy::Auto;
    s.budget = request.budget;
    for (const auto &c : request.configs) s.configs.push_back(c.toStdString());
    s.timingCap = std::chrono::milliseconds(request.timeCapMs);
    for (int g : request.gpus) s.gpus.push_back(g);
    s.useDevice = request.useDevice;
    s.evaluator = settings;
    kwb::tune::Tuner tuner(s);
    {
      std::lock_guard lock(shared.mutex);
      shared.tuner = &tuner;
    }
    if (shared.cancelRequested) tuner.cancel();
    kwb::tune::TuneReport report;
    try {
      report = tuner.tune(task, request.source.toStdString(), request.sourceName.toStdString(), onPoint);
    } catch (...) {
      std::lock_guard lock(shared.mutex);
      shared.tuner = nullptr;
      throw;
    }
    {
      std::lock_guard lock(shared.mutex);
      shared.tuner = nullptr;
    }
    // Every measured point is experience (issue 19): a Case each, under the tuned kernel's Case.
    try {
      auto store = kwb::memory::ExperienceStore::open();
      const auto added = kwb::memory::recordTuningCases(*store, report, task, request.source.toStdString());
      shared.memory = added ? QObject::tr("%n tuning point(s) recorded in the experience memory", nullptr, int(added))
                            : QString();
    } catch (const std::exception &e) {
      shared.memory = QObject::tr("The experience memory did not record the points: %1").arg(QString::fromStdString(e.what()));
    }
    return report;
  }, header);
  return true;
}

bool TuningService::runSearch(const kwb::tune::SearchSpace &space, kwb::tune::Tuner::Measure measure,
                              kwb::tune::TuneSettings settings, const QString &name) {
  if (running_) return false;
  TuneSummary header;
  header.task = name;
  header.sourceName = name;
  for (const auto &d : space.dims()) header.tunables << QString::fromStdString(d.name);
  header.spaceSize = space.size();
  start([space, measure = std::move(measure), settings](Shared &shared, const kwb::tune::Tuner::OnPoint &onPoint) {
    kwb::tune::Tuner tuner(settings);
    {
      std::lock_guard lock(shared.mutex);
      shared.tuner = &tuner;
    }
    if (shared.cancelRequested) tuner.cancel();
    auto report = tuner.search(space, measure, 1, std::string(), onPoint);
    {
      std::lock_guard lock(shared.mutex);
      shared.tuner = nullptr;
    }
    return report;
  }, header);
  return true;
}

}  // namespace kwb::ui
