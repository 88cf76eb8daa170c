#pragma once
// The window's workspace: opening it (the status bar's label says which, or why not), the Tasks
// panel's Workspace group, the History of the open task, and which stored run Results shows (the
// History marks it).
#include <QList>
#include <QObject>
#include <QString>

class QLabel;

namespace kwb::ui {

class HistoryPanel;
class LogPanel;
class ResultsPanel;
class SelectionRuns;
class TaskBrowser;
class WorkspaceService;
struct EvaluationRun;
struct WorkspaceTask;

struct WorkspaceParts {
  WorkspaceService *workspace = nullptr;
  TaskBrowser *browser = nullptr;
  HistoryPanel *history = nullptr;
  ResultsPanel *results = nullptr;
  SelectionRuns *selectionRuns = nullptr;
  LogPanel *log = nullptr;
  QLabel *label = nullptr;  // the status bar's
};

class WorkspaceController : public QObject {
  Q_OBJECT

 public:
  WorkspaceController(const WorkspaceParts &parts, QObject *parent);

  void open(const QString &path);
  QString path() const { return path_; }
  // The workspace answered (opened, or failed to).
  bool settled() const { return settled_; }
  // The History of `taskFolder` (empty: none) read again; a new task's shows no stored run yet.
  void showHistory(const QString &taskFolder);
  // A run started: Results shows no stored run now.
  void runStarted() { shownId_ = 0; }
  QString statusText() const;

 signals:
  void openFinished(bool ok);
  void failed(const QString &message);  // for the status bar
  void runRecorded(const kwb::ui::EvaluationRun &run);
  void historyRunShown(const kwb::ui::EvaluationRun &run);

 private:
  void onTasks(const QList<WorkspaceTask> &tasks);

  WorkspaceParts p_;
  QString path_, taskFolder_;
  bool settled_ = false;
  qint64 shownId_ = 0;  // the stored run Results shows; 0: none, or not stored yet
};

}  // namespace kwb::ui
