#include "ui/services/profile_service.h"

#include <algorithm>

#include <QPointer>

#include "core/profile/profiler.h"
#include "core/task/manifest_parser.h"
#include "ui/filesystem_path.h"
#include "ui/services/lineage_step.h"

namespace kwb::ui {

ProfileRow toProfileRow(const kwb::profile::ProfileResult &r) {
  ProfileRow row;
  row.outcome = r.outcome;
  row.reason = QString::fromStdString(r.reason);
  row.message = QString::fromStdString(r.message);
  row.device = QString::fromStdString(r.device);
  row.chip = QString::fromStdString(r.chip);
  row.config = QString::fromStdString(r.config);
  row.passes = static_cast<int>(r.passes);
  row.seconds = r.seconds;
  for (const auto &m : r.metrics)
    row.metrics << MetricRow{QString::fromStdString(m.name), QString::fromStdString(m.label),
                             QString::fromStdString(m.unit), m.value};
  return row;
}

kwb::profile::ProfileResult toProfileResult(const ProfileRow &row) {
  kwb::profile::ProfileResult r;
  r.outcome = row.outcome;
  r.reason = row.reason.toStdString();
  r.message = row.message.toStdString();
  r.device = row.device.toStdString();
  r.chip = row.chip.toStdString();
  r.config = row.config.toStdString();
  r.passes = static_cast<std::size_t>(std::max(0, row.passes));
  r.seconds = row.seconds;
  for (const auto &m : row.metrics)
    r.metrics.push_back({m.name.toStdString(), m.label.toStdString(), m.unit.toStdString(), m.value});
  return r;
}

ProfileService::ProfileService(kwb::EvaluatorSettings settings, QObject *parent)
    : QObject(parent), settings_(std::move(settings)), jobs_(new BackgroundJobs(QStringLiteral("profile"), this)) {
  qRegisterMetaType<kwb::ui::ProfileRow>();
  qRegisterMetaType<kwb::DeviceCeilings>();
}

ProfileService::~ProfileService() {
  delete jobs_;  // waits for work on the private evaluator
}

void ProfileService::useEvaluation(EvaluationService *evaluation) {
  evaluation_ = evaluation;
}

void ProfileService::onEvaluator(std::function<void(kwb::Evaluator &)> work, std::function<void(const QString &)> done,
                                 const QString &kind, int device) {
  if (evaluation_) {
    QPointer<ProfileService> self(this);
    evaluation_->runOnEvaluator(
        std::move(work), [self, done = std::move(done)](const QString &problem) { if (self) done(problem); }, device,
        kind);
    return;
  }
  // No evaluation service (a profiler used alone): an evaluator of this service's own, kept
  // between requests so its worker is too (another device's, for that request only).
  if (!evaluator_) evaluator_ = std::make_shared<kwb::Evaluator>(settings_);
  kwb::EvaluatorSettings other = settings_;
  other.device = device;
  const bool own = device < 0 || device == settings_.device;
  jobs_->run(
      this, kind,
      [evaluator = evaluator_, own, other, work = std::move(work)](const JobTicket &) {
        if (own) {
          work(*evaluator);
        } else {
          kwb::Evaluator once(other);
          work(once);
        }
        return QString();
      },
      [done = std::move(done)](const QString &problem) { done(problem); });
}

bool ProfileService::profile(const ProfileRequest &request) {
  if (running_) return false;
  running_ = true;
  emit started(request);
  auto row = std::make_shared<ProfileRow>();
  onEvaluator(
      [request, row](kwb::Evaluator &evaluator) {
        try {
          auto task = kwb::loadTask(toFsPath(request.taskFolder));
          kwb::profile::ProfileOptions o;
          // A lineage file runs as its step does (its launch and tunables), as `kwb profile` runs it.
          runAsCandidateFile(task, request.sourceName, o.tunables);
          o.config = request.config.toStdString();
          o.set = request.set.toStdString();
          o.sourceName = request.sourceName.toStdString();
          *row = toProfileRow(kwb::profile::profileCandidate(task, request.source.toStdString(), o, evaluator));
        } catch (const std::exception &e) {
          row->outcome = kwb::Outcome::Error;
          row->message = QString::fromStdString(e.what());
        }
      },
      [this, request, row](const QString &problem) {
        if (!problem.isEmpty()) {
          row->outcome = kwb::Outcome::Error;
          row->message = problem;
        }
        row->sourceName = request.sourceName;
        row->set = request.set;
        row->taskFolder = request.taskFolder;
        running_ = false;
        emit finished(*row);
      },
      QStringLiteral("profile"));
  return true;
}

void ProfileService::loadCeilings(int device) {
  struct Answer {
    std::optional<kwb::DeviceCeilings> ceilings;
    std::string problem;
  };
  auto answer = std::make_shared<Answer>();
  onEvaluator(
      [answer](kwb::Evaluator &evaluator) {
        try {
          answer->ceilings = kwb::deviceCeilings(evaluator, answer->problem);
        } catch (const std::exception &e) {
          answer->problem = e.what();
        }
      },
      [this, answer](const QString &problem) {
        if (answer->ceilings) emit ceilingsReady(*answer->ceilings);
        else emit ceilingsFailed(problem.isEmpty() ? QString::fromStdString(answer->problem) : problem);
      },
      QStringLiteral("ceilings"), device);
}

}  // namespace kwb::ui
