#pragma once
// Importing KernelBench problem files (core/import/kernelbench_import.h) off the GUI thread: each
// problem read by the bundled reader in the user's Python (PyTorch reads the output's shape),
// written as a task folder; the answers say what was made, what was refused and why.
#include <QObject>
#include <QString>
#include <QStringList>

#include "ui/models/import_results_model.h"

namespace kwb::ui {

class BackgroundJobs;

struct ImportProblemsRequest {
  QStringList problems;  // the .py files
  QString toDir;         // where the task folders are made
  bool overwrite = false;
  QString python;        // the interpreter; empty: $KWB_PYTHON, else python3 on PATH
};

// What an interpreter offers an import: PyTorch's own check (kwb_torch_reference.py --probe).
struct PythonCheck {
  QString python;        // as asked (empty: the default, importPython())
  bool ok = false;       // PyTorch imports
  QString summary;       // "Python 3.11.2, PyTorch 2.5.1, CUDA: no" or why not, with the fix
};

struct ImportProblemsOutcome {
  QList<ImportedProblem> problems;  // one per problem attempted, in order
  QStringList folders;   // the task folders made
  QStringList errors;    // one per problem that could not be imported: "FILE:LINE: part: why"
  QStringList warnings;  // "NAME: what to look at"
  bool cancelled = false;
};

class ImportService : public QObject {
  Q_OBJECT

 public:
  explicit ImportService(QObject *parent = nullptr);
  ~ImportService() override;

  // Answers with progress() per problem, then finished().
  void importProblems(const ImportProblemsRequest &request);
  void cancel();
  bool isBusy() const;
  // Checks the interpreter (empty: the default) for PyTorch off the GUI thread: pythonChecked().
  void checkPython(const QString &python);
  // The interpreter an import runs when none is named (kwb::importPython(), else python3).
  static QString defaultPython();

 signals:
  void pythonChecked(const kwb::ui::PythonCheck &check);
  // Each problem's answer as it is known (before finished(); also for those done before a cancel).
  void problemImported(const kwb::ui::ImportedProblem &row);
  void progress(const QString &line, int done, int total);
  void finished(const kwb::ui::ImportProblemsOutcome &outcome);

 private:
  BackgroundJobs *jobs_;
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::ImportProblemsOutcome)
Q_DECLARE_METATYPE(kwb::ui::PythonCheck)
Q_DECLARE_METATYPE(kwb::ui::ImportedProblem)
