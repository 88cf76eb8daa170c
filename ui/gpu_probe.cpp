#include "ui/gpu_probe.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <utility>

#include "ui/worker_command.h"

namespace kwb::ui {

namespace {

std::string str(const QJsonObject &object, const char *key) {
  return object.value(QLatin1String(key)).toString().toStdString();
}

int integer(const QJsonObject &object, const char *key) {
  return object.value(QLatin1String(key)).toInt();
}

std::uint64_t bytes(const QJsonObject &object, const char *key) {
  return static_cast<std::uint64_t>(object.value(QLatin1String(key)).toInteger());
}

}  // namespace

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

void GpuProbe::onOutput(const QByteArray &out) {
  QString error;
  QString summary;
  const auto inventory = parseInventory(out, &error, &summary);
  if (!inventory) {
    emit failed(tr("GPU probe failed"), tr("%1 --devices --json answered something unreadable: %2")
                                            .arg(QDir::toNativeSeparators(program_), error));
    return;
  }
  emit inventoryReady(*inventory, summary);
}

std::optional<kwb::GpuInventory> GpuProbe::parseInventory(const QByteArray &json, QString *error,
                                                          QString *summary) {
  QJsonParseError parseError;
  const QJsonDocument document = QJsonDocument::fromJson(json, &parseError);
  if (document.isNull()) {
    if (error) *error = tr("not JSON (%1 at byte %2)").arg(parseError.errorString()).arg(parseError.offset);
    return std::nullopt;
  }
  const QJsonObject root = document.object();
  if (!document.isObject() || !root.value(QLatin1String("devices")).isArray() ||
      !root.value(QLatin1String("libraries")).isArray()) {
    if (error) *error = tr("no \"devices\" and \"libraries\" lists");
    return std::nullopt;
  }
  kwb::GpuInventory inventory;
  for (const QJsonValue &value : root.value(QLatin1String("devices")).toArray()) {
    const QJsonObject d = value.toObject();
    kwb::DeviceInfo device;
    device.ordinal = integer(d, "ordinal");
    device.name = str(d, "name");
    device.pciBusId = str(d, "pci_bus_id");
    const QString cc = d.value(QLatin1String("compute_capability")).toString();
    device.ccMajor = cc.section(QLatin1Char('.'), 0, 0).toInt();
    device.ccMinor = cc.section(QLatin1Char('.'), 1, 1).toInt();
    device.smCount = integer(d, "sm_count");
    device.totalMemoryBytes = bytes(d, "memory_bytes");
    device.l2CacheBytes = bytes(d, "l2_cache_bytes");
    device.memoryBusWidthBits = integer(d, "memory_bus_width_bits");
    device.memoryClockKHz = integer(d, "memory_clock_khz");
    device.smClockKHz = integer(d, "sm_clock_khz");
    inventory.devices.push_back(std::move(device));
  }
  for (const QJsonValue &value : root.value(QLatin1String("libraries")).toArray()) {
    const QJsonObject l = value.toObject();
    kwb::LibraryStatus library;
    library.name = str(l, "name");
    library.loaded = l.value(QLatin1String("loaded")).toBool();
    library.path = str(l, "path");
    library.version = str(l, "version");
    library.problem = str(l, "problem");
    inventory.libraries.push_back(std::move(library));
  }
  inventory.driverVersion = integer(root, "driver_version");
  inventory.problem = str(root, "problem");
  if (summary) {
    *summary = root.value(QLatin1String("summary")).toString();
    if (summary->isEmpty()) *summary = QString::fromStdString(inventory.summary());
  }
  return inventory;
}

}  // namespace kwb::ui
