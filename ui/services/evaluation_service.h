#pragma once
// Evaluating candidates off the GUI thread: a QObject on the GUI thread whose runs execute on a
// thread of its own, which owns a kwb::EvaluatorPool (one Evaluator, so one GPU worker, per GPU
// in use: the "GPUs to use" setting, else every visible one) made at the first run and again
// when the device choice changes. With no GPU in the pool, runs go to one compile-only
// Evaluator, as before. Progress and results come back as signals; cancel() works at any moment.
// The manifest, NVRTC and the pool's making happen on that thread only.
#include <functional>
#include <memory>

#include <QObject>
#include <QString>

#include <QList>
#include <QStringList>

#include "core/eval/evaluator.h"
#include "ui/models/evaluation_run.h"
#include "ui/models/gpu_device_model.h"
#include "ui/services/background_jobs.h"

namespace kwb::ui {

struct RunRequest {
  QString taskFolder;       // the manifest is read on the evaluation thread
  QString source;           // the candidate's text
  QString sourceName;       // its file, as diagnostics name it
  QString arch;             // empty: the device's, else the evaluator's default
  bool time = false;        // time it against the reference once correct
  bool sanitize = false;    // then run it under compute-sanitizer's tools (EvaluationOptions::sanitize)
  int timeLimitMs = 60000;  // per configuration; a kernel that never returns is stopped then
};

class EvaluationService : public QObject {
  Q_OBJECT

 public:
  explicit EvaluationService(kwb::EvaluatorSettings settings = {}, QObject *parent = nullptr);
  // Cancels a run in progress and waits for it to end.
  ~EvaluationService() override;

  // Starts a run; false (and nothing happens) while another one runs.
  bool run(const RunRequest &request);
  // Stops the run in progress as soon as the evaluator can (a compile finishes first); it then
  // finishes with the outcome "cancelled", unless it had already finished. No effect when idle.
  void cancel();
  bool isRunning() const { return running_; }
  bool isCancelling() const { return running_ && cancelRequested_; }

  // Other work on the pool's GPU (a profile, the ceilings), in turn with runs: work(evaluator)
  // runs on the evaluator of a GPU in the pool (`device`, or the least loaded when negative), so
  // each GPU keeps one worker; on an evaluator of its own for a GPU the pool does not hold; on
  // the compile-only evaluator when the pool has no GPU. Then done(problem) on this object's
  // thread: empty, or why the work did not run. A newer request of the same `kind` supersedes a
  // queued one (whose done is not called); destroying the service drops what is queued.
  void runOnEvaluator(std::function<void(kwb::Evaluator &)> work, std::function<void(const QString &)> done,
                      int device = -1, const QString &kind = QString());

  // The CUDA ordinals the pool uses from the next run on; empty: every visible GPU.
  void setDevices(const QList<int> &devices);
  // Where the next pool's workers run (settings::workersSpec()); false, nothing changed, when the
  // spec does not parse.
  bool setWorkers(const QString &spec);
  // "local", "ssh://gpu-box": for the GPUs dock.
  QString workersDescription() const;
  // The pool's devices now, with the job running on each ("task · source"); empty before the
  // first run or without a GPU. Cheap: safe on the GUI thread.
  QList<PoolDeviceRow> deviceStates() const;
  // Why the pool for the current workers has no device (salloc refused, no CUDA device there);
  // empty while there is no such pool or it has devices.
  QString poolProblem() const;
  // Several hosts: a line per host (kwb::describePoolHost: its GPUs, what they did, what moved
  // away, its shared ssh connection); empty for one host.
  QStringList hostLines() const;

 signals:
  void started(const QString &taskFolder);
  // Coalesced: a burst of steps arrives as its latest.
  void progress(const kwb::ui::EvaluationStep &step);
  // Every run ends here, whatever happened to it (a bad manifest, an exception, a cancel): the
  // run's outcome and message say what. source is the text that was evaluated.
  void finished(const kwb::ui::EvaluationRun &run, const QString &source);
  // The pool said something about a device (one taken out, and why).
  void deviceMessage(const QString &message);
  // deviceStates() may have changed (a run started or ended, a device was taken out).
  void devicesChanged();

 private:
  struct Shared;
  class Backend;

  BackgroundJobs *jobs_ = nullptr;
  std::shared_ptr<Backend> backend_;  // used on the jobs' thread only
  std::shared_ptr<Shared> shared_;
  quint64 currentRun_ = 0;
  bool running_ = false;
  bool cancelRequested_ = false;
};

}  // namespace kwb::ui
