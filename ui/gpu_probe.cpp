#include "ui/gpu_probe.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTimer>

#include <utility>

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

// The last lines a program wrote to stderr, for a message.
QString tail(const QByteArray &text) {
  const QString all = QString::fromUtf8(text).trimmed();
  return all.size() > 600 ? QStringLiteral("…") + all.right(600) : all;
}

}  // namespace

GpuProbe::GpuProbe(QObject *parent) : QObject(parent) {
  timer_ = new QTimer(this);
  timer_->setSingleShot(true);
  connect(timer_, &QTimer::timeout, this, &GpuProbe::onTimeout);
}

GpuProbe::~GpuProbe() {
  abandon();
}

void GpuProbe::start(const QString &program, int timeoutMs) {
  abandon();
  const quint64 attempt = ++attempt_;
  program_ = program;
  timeoutMs_ = timeoutMs;
  if (program.isEmpty()) {
    // Answered later, like every other outcome, so callers connect after start() if they like.
    QMetaObject::invokeMethod(
        this,
        [this, attempt] {
          if (attempt != attempt_) return;
          emit failed(tr("GPU probe unavailable: kwb-worker not found"),
                      tr("The GPU is probed by the kwb-worker program, which was found neither beside "
                         "this program, in the build tree nor on PATH. Set KWB_WORKER to its path, or "
                         "reinstall Kernel Workbench."));
        },
        Qt::QueuedConnection);
    return;
  }
  process_ = new QProcess(this);
  process_->setProgram(program);
  process_->setArguments({QStringLiteral("--devices"), QStringLiteral("--json")});
  process_->setStandardInputFile(QProcess::nullDevice());
  connect(process_, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
    onFinished(exitCode, status == QProcess::CrashExit);
  });
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;  // the others end in finished()
    fail(tr("GPU probe failed"), tr("%1 could not be started: %2")
                                     .arg(QDir::toNativeSeparators(program_), process_->errorString()));
  });
  timer_->start(timeoutMs);
  process_->start();
}

void GpuProbe::onFinished(int exitCode, bool crashed) {
  timer_->stop();
  const QByteArray out = process_->readAllStandardOutput();
  const QByteArray err = process_->readAllStandardError();
  abandon();
  const QString program = QDir::toNativeSeparators(program_);
  if (crashed) {
    fail(tr("GPU probe failed"), tr("%1 --devices --json crashed. %2").arg(program, tail(err)).trimmed());
    return;
  }
  if (exitCode != 0) {
    fail(tr("GPU probe failed"),
         tr("%1 --devices --json exited with code %2. %3").arg(program).arg(exitCode).arg(tail(err)).trimmed());
    return;
  }
  QString error;
  QString summary;
  const auto inventory = parseInventory(out, &error, &summary);
  if (!inventory) {
    fail(tr("GPU probe failed"), tr("%1 --devices --json answered something unreadable: %2").arg(program, error));
    return;
  }
  emit inventoryReady(*inventory, summary);
}

void GpuProbe::onTimeout() {
  if (!process_) return;
  abandon();
  fail(tr("GPU probe timed out"),
       tr("%1 --devices --json gave no answer within %2 s and was stopped. A GPU driver that hangs "
          "while starting up does this; nvidia-smi may say more.")
           .arg(QDir::toNativeSeparators(program_))
           .arg(timeoutMs_ / 1000.0));
}

void GpuProbe::fail(const QString &summary, const QString &detail) {
  timer_->stop();
  abandon();
  emit failed(summary, detail);
}

void GpuProbe::abandon() {
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
