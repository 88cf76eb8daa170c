#pragma once
// Profiling and the GPU's ceilings off the GUI thread: kwb::profile::profileCandidate and
// kwb::deviceCeilings run on an evaluator of the evaluation service's pool (useEvaluation: the
// GPU's one worker, in turn with runs), else on one of this service's own on its BackgroundJobs
// thread; the answers come back as signals. One profile at a time.
#include <functional>
#include <memory>

#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>

#include "core/eval/evaluator.h"
#include "core/eval/roofline.h"
#include "core/profile/profiler.h"
#include "ui/models/profile_rows.h"
#include "ui/services/background_jobs.h"
#include "ui/services/evaluation_service.h"

namespace kwb::ui {

struct ProfileRequest {
  QString taskFolder;
  QString source;
  QString sourceName;
  QString config;                        // empty: the task's first
  QString set = QStringLiteral("default");
};

// The core's result as the profiler panel shows it; the request's context (source, task, set)
// is the caller's to fill in.
ProfileRow toProfileRow(const kwb::profile::ProfileResult &result);
// The other way, for what reads core results (an exported report).
kwb::profile::ProfileResult toProfileResult(const ProfileRow &row);

class ProfileService : public QObject {
  Q_OBJECT

 public:
  explicit ProfileService(kwb::EvaluatorSettings settings = {}, QObject *parent = nullptr);
  ~ProfileService() override;

  bool profile(const ProfileRequest &request);  // false while one runs
  bool isRunning() const { return running_; }
  // The ceilings of GPU `device` (measured once, then from the cache).
  void loadCeilings(int device);
  // Profiles and ceilings go to that service's pool (one worker per GPU, in turn with runs)
  // rather than to an evaluator of this service's own.
  void useEvaluation(EvaluationService *evaluation);

 signals:
  void started(const kwb::ui::ProfileRequest &request);
  void finished(const kwb::ui::ProfileRow &row);
  void ceilingsReady(const kwb::DeviceCeilings &ceilings);
  void ceilingsFailed(const QString &problem);

 private:
  // work on the pool's evaluator (or this service's own), then done(problem) here.
  void onEvaluator(std::function<void(kwb::Evaluator &)> work, std::function<void(const QString &)> done,
                   const QString &kind, int device = -1);

  kwb::EvaluatorSettings settings_;
  BackgroundJobs *jobs_ = nullptr;
  QPointer<EvaluationService> evaluation_;
  std::shared_ptr<kwb::Evaluator> evaluator_;  // without an evaluation service; used on jobs_ only
  bool running_ = false;
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::ProfileRequest)
Q_DECLARE_METATYPE(kwb::ui::ProfileRow)
Q_DECLARE_METATYPE(kwb::DeviceCeilings)
