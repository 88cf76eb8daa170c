#include "ui/services/gpu_probe.h"

#include <QDir>

#include <utility>

#include "core/gpu/worker_gpu_report.h"
#include "ui/services/worker_command.h"

namespace kwb::ui {

GpuProbe::GpuProbe(QObject *parent) : QObject(parent), command_(new WorkerCommand(tr("GPU probe"), this)) {
  connect(command_, &WorkerCommand::succeeded, this, &GpuProbe::onOutput);
  connect(command_, &WorkerCommand::failed, this, &GpuProbe::failed);
}

GpuProbe::~GpuProbe() = default;

bool GpuProbe::isRunning() const {
  return command_->isRunning();
}

void GpuProbe::cancel() {
  command_->cancel();
}

void GpuProbe::start(const QString &program, int timeoutMs) {
  program_ = program;
  command_->start(program, {QStringLiteral("--devices"), QStringLiteral("--json")}, timeoutMs);
}

void GpuProbe::setLauncher(const kwb::worker::WorkerLauncher &launcher) { command_->setLauncher(launcher); }

void GpuProbe::onOutput(const QByteArray &out) {
  auto answer = kwb::parseGpuInventory(std::string_view(out.constData(), static_cast<std::size_t>(out.size())));
  if (const auto *problem = std::get_if<std::string>(&answer)) {
    emit failed(tr("GPU probe failed"), tr("%1 --devices --json answered something unreadable: %2")
                                            .arg(QDir::toNativeSeparators(program_), QString::fromStdString(*problem)));
    return;
  }
  const auto &inventory = std::get<kwb::GpuInventory>(answer);
  emit inventoryReady(inventory, QString::fromStdString(inventory.summary()));
}

}  // namespace kwb::ui
