#include "ui/window/gpu_controller.h"

#include <QLabel>

#include "core/gpu/device_info.h"
#include "core/paths/install_paths.h"
#include "core/worker/worker_launcher.h"
#include "ui/filesystem_path.h"
#include "ui/services/agent_service.h"
#include "ui/services/evaluation_service.h"
#include "ui/services/gpu_probe.h"
#include "ui/services/profile_service.h"
#include "ui/services/skill_library_service.h"
#include "ui/services/tuning_service.h"
#include "ui/settings/app_settings.h"
#include "ui/views/devices_panel.h"
#include "ui/views/gpu_status_label.h"
#include "ui/views/log_panel.h"
#include "ui/views/profiler_panel.h"

namespace kwb::ui {

GpuController::GpuController(const GpuParts &parts, QObject *parent)
    : QObject(parent), p_(parts), probe_(new GpuProbe(this)) {
  connect(probe_, &GpuProbe::inventoryReady, this, &GpuController::onInventory);
  connect(probe_, &GpuProbe::failed, this, &GpuController::onFailed);
  connect(p_.evaluation, &EvaluationService::devicesChanged, this, &GpuController::updatePool);
  connect(p_.devices, &DevicesPanel::refreshed, this, &GpuController::updatePool);
  connect(p_.devices, &DevicesPanel::summaryChanged, this, [this](const QString &summary) {
    p_.summary->setText(summary);
    p_.summary->setVisible(!summary.isEmpty());
  });
}

QString GpuController::statusText() const { return p_.label->text(); }

void GpuController::probe() {
  probed_ = false;
  p_.label->setProbing();
  const auto worker = kwb::workerExecutable();
  probe_->start(worker ? toQString(*worker) : QString());
}

void GpuController::startFigures() {
  const auto worker = kwb::workerExecutable();
  p_.devices->start(worker ? toQString(*worker) : QString());
}

void GpuController::cancel() {
  probe_->cancel();
  p_.devices->stop();
}

void GpuController::updatePool() {
  p_.devices->setPoolDevices(p_.evaluation->deviceStates(), p_.evaluation->poolProblem());
  p_.devices->setHostLines(p_.evaluation->hostLines());
}

bool GpuController::applyWorkers() {
  const QString spec = settings::workersSpec();
  if (spec == workersSpec_) return false;
  workersSpec_ = spec;
  std::string problem;
  // Several hosts: the pools of runs, tuning, sessions and lineage builds have every one; the GPU
  // probe and the dock's figures look at the first.
  const auto launchers = kwb::worker::parseWorkerLaunchers(spec.toStdString(), problem);
  const auto launcher = launchers ? launchers->front() : kwb::worker::WorkerLauncher{};
  p_.evaluation->setWorkers(spec);
  const std::vector<kwb::worker::WorkerLauncher> workers = launchers ? *launchers : std::vector<kwb::worker::WorkerLauncher>{};
  p_.tuning->setWorkers(workers);
  p_.agent->setWorkers(workers);
  p_.skills->setWorkers(workers);
  probe_->setLauncher(launcher);
  p_.devices->setLauncher(launcher);
  if (launcher.remote() || (launchers && launchers->size() > 1))
    p_.log->info(tr("GPU workers run on %1").arg(p_.evaluation->workersDescription()));
  return true;
}

void GpuController::onInventory(const kwb::GpuInventory &inventory, const QString &localSummary) {
  const QString where = p_.evaluation->workersDescription();
  const QString summary = where == QLatin1String("local") ? localSummary : tr("%1: %2").arg(where, localSummary);
  p_.label->setInventory(inventory, summary);
  probed_ = true;
  present_ = inventory.hasDevices();
  const QString why = QString::fromStdString(inventory.problem);
  noGpuWhy_ = why.isEmpty() ? localSummary : why;
  driverText_ = inventory.driverVersion
                    ? tr("%1.%2 (the CUDA driver API's version, as the workbench probed it)")
                          .arg(inventory.driverVersion / 1000)
                          .arg(inventory.driverVersion % 1000 / 10)
                    : tr("not known: %1").arg(why.isEmpty() ? summary : why);
  p_.log->info(inventory.hasDevices() || why.isEmpty() ? tr("GPU: %1").arg(summary) : tr("GPU: %1 (%2)").arg(summary, why));
  // The roofline's ceilings: measured once per GPU by a worker (then cached), off this thread.
  if (present_ && !ceilingsAsked_) {
    ceilingsAsked_ = true;
    p_.profile->loadCeilings(inventory.devices.front().ordinal);
  } else if (!present_) {
    p_.profiler->setCeilingsProblem(tr("no GPU: %1").arg(why.isEmpty() ? summary : why));
  }
  emit probeFinished();
}

void GpuController::onFailed(const QString &summary, const QString &detail) {
  p_.label->setProbeFailed(summary, detail);
  probed_ = true;
  noGpuWhy_ = tr("%1: %2").arg(summary, detail);
  p_.log->warning(noGpuWhy_);
  emit probeFinished();
}

}  // namespace kwb::ui
