#pragma once
// The GPU jobs on the kernel in the editor, for the window: Run (progress in the status bar,
// diagnostics back on the editor's lines, the run selected and stored), Cancel, Tune, Profile and
// Show PTX/SASS, each asked of the GPU gate first and logged; and what their services say when
// they end.
#include <QObject>
#include <QPointer>
#include <QString>

class QAction;
class QProgressBar;

namespace kwb::ui {

class CudaEditor;
class DockLayout;
class EvaluationService;
class ExperiencePanel;
class LogPanel;
class ProfileService;
class ProfilerPanel;
class ResultsPanel;
class SourceViewPanel;
class TuningPanel;
class TuningService;
class WorkArea;
class WorkbenchContext;
class WorkbenchShell;
class WorkspaceService;
struct EvaluationRun;
struct EvaluationStep;

struct RunParts {
  EvaluationService *evaluation = nullptr;
  TuningService *tuning = nullptr;
  TuningPanel *tuningPanel = nullptr;
  ProfileService *profile = nullptr;
  ProfilerPanel *profiler = nullptr;
  SourceViewPanel *sourceView = nullptr;
  ResultsPanel *results = nullptr;
  ExperiencePanel *experience = nullptr;
  WorkspaceService *workspace = nullptr;
  WorkbenchContext *context = nullptr;
  WorkArea *workArea = nullptr;
  DockLayout *docks = nullptr;
  LogPanel *log = nullptr;
  QProgressBar *progress = nullptr;     // the status bar's
  QAction *time = nullptr, *sanitize = nullptr;  // Run ▸ Time / Sanitize After Checking
};

class RunController : public QObject {
  Q_OBJECT

 public:
  RunController(const RunParts &parts, WorkbenchShell *shell, QObject *parent);

  bool run();
  void cancel();
  bool tune();
  bool profile();
  bool showListing();
  // A run or its cancelling is in progress.
  bool isRunning() const;

 signals:
  // A run ended (whatever its outcome), is selected and shown in Results.
  void runFinished(const kwb::ui::EvaluationRun &run);
  // A run started: nothing stored is shown in Results now.
  void runStarted();

 private:
  void onProgress(const EvaluationStep &step);
  void onFinished(const EvaluationRun &run, const QString &source);
  void showDiagnostics(const EvaluationRun &run, const QString &source);

  RunParts p_;
  WorkbenchShell *shell_;
  QPointer<CudaEditor> runEditor_;  // the editor whose text is being run
};

}  // namespace kwb::ui
