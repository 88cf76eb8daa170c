#pragma once
// Importing KernelBench problem files (core/import/kernelbench_import.h) off the GUI thread: each
// problem read by the bundled reader in the user's Python (PyTorch reads the output's shape),
// written as a task folder; the answers say what was made, what was refused and why.
#include <QObject>
#include <QString>
#include <QStringList>

namespace kwb::ui {

class BackgroundJobs;

struct ImportProblemsRequest {
  QStringList problems;  // the .py files
  QString toDir;         // where the task folders are made
  bool overwrite = false;
  QString python;        // the interpreter; empty: $KWB_PYTHON, else python3 on PATH
};

struct ImportProblemsOutcome {
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

 signals:
  void progress(const QString &line, int done, int total);
  void finished(const kwb::ui::ImportProblemsOutcome &outcome);

 private:
  BackgroundJobs *jobs_;
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::ImportProblemsOutcome)
