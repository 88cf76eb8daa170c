#pragma once
// The window's dialogs that stand apart from its views: File ▸ Export Kernel… (the selected run,
// else the editor's kernel, with the profile shown), File ▸ Import PyTorch Modules… (one at a time;
// what was made joins the opened folders), Help ▸ User Guide (one window) and About.
#include <QObject>
#include <QPointer>
#include <QString>

class QWidget;

namespace kwb::ui {

class ExportDialog;
class ExportService;
class HelpView;
class ImportDialog;
class ImportService;
class LogPanel;
class ProfilerPanel;
class WorkbenchContext;
class WorkbenchShell;
struct ImportedProblem;

struct DialogParts {
  ExportService *exporter = nullptr;
  ImportService *importer = nullptr;
  WorkbenchContext *context = nullptr;
  ProfilerPanel *profiler = nullptr;
  LogPanel *log = nullptr;
};

class WindowDialogs : public QObject {
  Q_OBJECT

 public:
  // `window`: the dialogs' parent.
  WindowDialogs(const DialogParts &parts, WorkbenchShell *shell, QWidget *window);

  // nullptr (and why, in the log) without a task or anything to export; `driver`: the CUDA driver
  // as probed, for the report.
  ExportDialog *exportKernel(const QString &driver);
  ImportDialog *importModules();
  HelpView *userGuide(const QString &chapter);
  void about();

 signals:
  // Import: tasks were made in `folder`; Open Task asked for one.
  void tasksImported(const QString &folder, const QStringList &tasks);
  void openTaskRequested(const QString &taskFolder);

 private:
  void onProblem(const ImportedProblem &row);

  DialogParts p_;
  WorkbenchShell *shell_;
  QWidget *window_;
  QPointer<ImportDialog> import_;
  QPointer<HelpView> help_;
};

}  // namespace kwb::ui
