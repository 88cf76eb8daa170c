#pragma once
// The window's GPUs: the probe (what the status bar's GPU label says, the driver for exported
// reports, the roofline's ceilings measured once), the GPUs dock's live figures and the pool's
// state, the status bar's short figures, and where the workers run (Settings ▸ GPU ▸ Workers,
// handed to every service that starts one).
#include <QObject>
#include <QString>

class QLabel;

namespace kwb {
struct GpuInventory;
}

namespace kwb::ui {

class AgentService;
class DevicesPanel;
class EvaluationService;
class GpuProbe;
class GpuStatusLabel;
class LogPanel;
class ProfileService;
class ProfilerPanel;
class SkillLibraryService;
class TuningService;

struct GpuParts {
  EvaluationService *evaluation = nullptr;
  TuningService *tuning = nullptr;
  AgentService *agent = nullptr;
  SkillLibraryService *skills = nullptr;
  ProfileService *profile = nullptr;
  ProfilerPanel *profiler = nullptr;
  DevicesPanel *devices = nullptr;
  LogPanel *log = nullptr;
  GpuStatusLabel *label = nullptr;  // the status bar's GPU label
  QLabel *summary = nullptr;        // the status bar's short figures ("2 GPUs · 37% · 61 °C")
};

class GpuController : public QObject {
  Q_OBJECT

 public:
  GpuController(const GpuParts &parts, QObject *parent);

  // Probes again (the status bar says so meanwhile); probeFinished() follows.
  void probe();
  // Settings ▸ GPU ▸ Workers to every service; true when it changed where the workers run.
  bool applyWorkers();
  // The GPUs dock's figures, started with the worker found.
  void startFigures();
  void cancel();
  bool probed() const { return probed_; }
  bool hasGpu() const { return present_; }
  QString noGpuWhy() const { return noGpuWhy_; }  // the probe's words when it found none
  QString driverText() const { return driverText_; }
  QString statusText() const;

 signals:
  void probeFinished();

 private:
  void onInventory(const kwb::GpuInventory &inventory, const QString &localSummary);
  void onFailed(const QString &summary, const QString &detail);
  void updatePool();

  GpuParts p_;
  GpuProbe *probe_;
  bool probed_ = false, present_ = false, ceilingsAsked_ = false;
  QString noGpuWhy_, driverText_;
  QString workersSpec_ = QStringLiteral("?");  // where the workers run, as last applied
};

}  // namespace kwb::ui
