#pragma once
// Profiling and the GPU's ceilings off the GUI thread: a QObject whose work (kwb::profile::
// profileCandidate, kwb::deviceCeilings — each starts a worker of its own) runs on a thread of its
// own; the answers come back as signals. One profile at a time.
#include <QList>
#include <QObject>
#include <QString>
#include <QThread>

#include "core/eval/evaluator.h"
#include "core/eval/roofline.h"

namespace kwb::ui {

struct ProfileRequest {
  QString taskFolder;
  QString source;
  QString sourceName;
  QString config;                        // empty: the task's first
  QString set = QStringLiteral("default");
};

struct MetricRow {
  QString name, label, unit;
  double value = 0;
};

struct ProfileRow {
  QString outcome;    // "profiled", "not-profiled", "not-run", "compile-error", ...
  QString reason;     // not-profiled: insufficient-privileges, profiler-busy, ...
  QString message;
  QString device, chip, config, sourceName, taskFolder;
  QString set;        // the metric set asked for: "default", "detailed"
  int passes = 0;
  double seconds = 0;
  QList<MetricRow> metrics;
};

class ProfileService : public QObject {
  Q_OBJECT

 public:
  explicit ProfileService(kwb::EvaluatorSettings settings = {}, QObject *parent = nullptr);
  ~ProfileService() override;

  bool profile(const ProfileRequest &request);  // false while one runs
  bool isRunning() const { return running_; }
  // The ceilings of GPU `device` (measured once, then from the cache).
  void loadCeilings(int device);

 signals:
  void started(const kwb::ui::ProfileRequest &request);
  void finished(const kwb::ui::ProfileRow &row);
  void ceilingsReady(const kwb::DeviceCeilings &ceilings);
  void ceilingsFailed(const QString &problem);

 private:
  kwb::EvaluatorSettings settings_;
  QThread thread_;
  QObject *worker_ = nullptr;  // lives on thread_
  bool running_ = false;
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::ProfileRequest)
Q_DECLARE_METATYPE(kwb::ui::ProfileRow)
Q_DECLARE_METATYPE(kwb::DeviceCeilings)
