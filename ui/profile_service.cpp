#include "ui/profile_service.h"

#include <QMetaObject>

#include "core/profile/profiler.h"
#include "core/task/manifest_parser.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

ProfileService::ProfileService(kwb::EvaluatorSettings settings, QObject *parent)
    : QObject(parent), settings_(std::move(settings)) {
  qRegisterMetaType<kwb::ui::ProfileRow>();
  qRegisterMetaType<kwb::DeviceCeilings>();
  thread_.setObjectName(QStringLiteral("profile"));
  worker_ = new QObject;
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  thread_.start();
}

ProfileService::~ProfileService() {
  thread_.quit();
  thread_.wait();
}

bool ProfileService::profile(const ProfileRequest &request) {
  if (running_) return false;
  running_ = true;
  emit started(request);
  const auto settings = settings_;
  QMetaObject::invokeMethod(worker_, [this, request, settings] {
    ProfileRow row;
    row.sourceName = request.sourceName;
    row.set = request.set;
    row.taskFolder = request.taskFolder;
    try {
      const auto task = kwb::loadTask(toFsPath(request.taskFolder));
      kwb::profile::ProfileOptions o;
      o.config = request.config.toStdString();
      o.set = request.set.toStdString();
      o.sourceName = request.sourceName.toStdString();
      const auto r = kwb::profile::profileCandidate(task, request.source.toStdString(), o, settings);
      row.outcome = QString::fromStdString(r.outcome);
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
    } catch (const std::exception &e) {
      row.outcome = QStringLiteral("error");
      row.message = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(this, [this, row] {
      running_ = false;
      emit finished(row);
    }, Qt::QueuedConnection);
  });
  return true;
}

void ProfileService::loadCeilings(int device) {
  const auto settings = settings_;
  QMetaObject::invokeMethod(worker_, [this, device, settings] {
    std::string problem;
    std::optional<kwb::DeviceCeilings> c;
    try {
      c = kwb::deviceCeilings(settings, device, problem);
    } catch (const std::exception &e) {
      problem = e.what();
    }
    QMetaObject::invokeMethod(this, [this, c, problem] {
      if (c) emit ceilingsReady(*c);
      else emit ceilingsFailed(QString::fromStdString(problem));
    }, Qt::QueuedConnection);
  });
}

}  // namespace kwb::ui
