#include "ui/services/profile_service.h"

#include <QMetaObject>

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

ProfileService::ProfileService(kwb::EvaluatorSettings settings, QObject *parent)
    : QObject(parent), settings_(std::move(settings)), jobs_(new BackgroundJobs(QStringLiteral("profile"), this)) {
  qRegisterMetaType<kwb::ui::ProfileRow>();
  qRegisterMetaType<kwb::DeviceCeilings>();
}

ProfileService::~ProfileService() = default;

bool ProfileService::profile(const ProfileRequest &request) {
  if (running_) return false;
  running_ = true;
  emit started(request);
  const auto settings = settings_;
  jobs_->run(
      this, QStringLiteral("profile"),
      [request, settings](const JobTicket &) {
        ProfileRow row;
        try {
          auto task = kwb::loadTask(toFsPath(request.taskFolder));
          kwb::profile::ProfileOptions o;
          // A lineage file runs as its step does (its launch and tunables), as `kwb profile` runs it.
          if (auto step = resolvedStep(task, request.sourceName)) {
            task = std::move(step->task);
            o.tunables = step->step.tunables;
          }
          o.config = request.config.toStdString();
          o.set = request.set.toStdString();
          o.sourceName = request.sourceName.toStdString();
          row = toProfileRow(kwb::profile::profileCandidate(task, request.source.toStdString(), o, settings));
        } catch (const std::exception &e) {
          row.outcome = kwb::Outcome::Error;
          row.message = QString::fromStdString(e.what());
        }
        row.sourceName = request.sourceName;
        row.set = request.set;
        row.taskFolder = request.taskFolder;
        return row;
      },
      [this](ProfileRow row) {
        running_ = false;
        emit finished(row);
      });
  return true;
}

void ProfileService::loadCeilings(int device) {
  struct Answer {
    std::optional<kwb::DeviceCeilings> ceilings;
    std::string problem;
  };
  const auto settings = settings_;
  jobs_->run(
      this, QStringLiteral("ceilings"),
      [settings, device](const JobTicket &) {
        Answer a;
        try {
          a.ceilings = kwb::deviceCeilings(settings, device, a.problem);
        } catch (const std::exception &e) {
          a.problem = e.what();
        }
        return a;
      },
      [this](Answer a) {
        if (a.ceilings) emit ceilingsReady(*a.ceilings);
        else emit ceilingsFailed(QString::fromStdString(a.problem));
      });
}

}  // namespace kwb::ui
