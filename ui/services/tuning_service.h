#pragma once
// Tuning off the GUI thread: tuning runs (kwb::tune::Tuner, core/tune) execute on the service's
// BackgroundJobs thread. Results stream back in batches: each point the tuner
// finishes is queued, and the GUI thread takes everything queued in one go, so a burst of results
// costs one model update and one chart update, not one per point. cancel() works at any moment;
// what was measured stays in the tuning cache.
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include "core/tune/tuner.h"
#include "ui/models/tune_rows.h"
#include "ui/services/background_jobs.h"

namespace kwb::ui {

struct TuneRequest {
  QString taskFolder;     // the manifest is read on the tuning thread
  QString source;         // the candidate's text
  QString sourceName;
  quint64 budget = 0;     // 0: the tuner's default
  QString strategy = QStringLiteral("auto");
  QStringList configs;    // empty: all of the task's
  int timeCapMs = 1000;
  QList<int> gpus;        // empty: every visible GPU
  bool useDevice = true;
};

class TuningService : public QObject {
  Q_OBJECT

 public:
  explicit TuningService(kwb::EvaluatorSettings settings = {}, QObject *parent = nullptr);
  // Cancels a run in progress and waits for it to end.
  ~TuningService() override;

  // Starts tuning; false (and nothing happens) while another run is on.
  bool run(const TuneRequest &request);
  // The search alone over a given space and measure (no task, no GPU): what the tuning view
  // shows is the same. For tests and demonstrations.
  bool runSearch(const kwb::tune::SearchSpace &space, kwb::tune::Tuner::Measure measure, kwb::tune::TuneSettings settings,
                 const QString &name);
  void cancel();
  bool isRunning() const { return running_; }
  // Where the tuner's GPU workers run (Settings ▸ GPU ▸ Workers); taken up by the next run.
  // Where its workers run: one launcher, or several hosts in one pool (kwb::useWorkers).
  void setWorkers(const std::vector<kwb::worker::WorkerLauncher> &launchers) { kwb::useWorkers(settings_, launchers); }

 signals:
  void started(const kwb::ui::TuneSummary &header);
  void pointsArrived(const QList<kwb::ui::TunePointRow> &points, const kwb::ui::TuneSummary &sofar);
  void finished(const kwb::ui::TuneSummary &summary);

 private:
  struct Shared {
    std::mutex mutex;
    QList<TunePointRow> queued;
    TuneSummary latest;
    bool posted = false;
    kwb::tune::Tuner *tuner = nullptr;  // under mutex while a run is on
    std::atomic<bool> cancelRequested{false};
    QString memory;  // set by the work: the points recorded as Cases
  };
  void start(std::function<kwb::tune::TuneReport(Shared &, const kwb::tune::Tuner::OnPoint &)> work, TuneSummary header);
  void deliver();

  kwb::EvaluatorSettings settings_;
  BackgroundJobs *jobs_ = nullptr;
  std::shared_ptr<Shared> shared_;
  bool running_ = false;
};

}  // namespace kwb::ui

