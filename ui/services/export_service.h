#pragma once
// Exporting the kernel the window shows (core/export) off the GUI thread: a run of the workspace
// (its code, result and tunables) or the editor's text (with the workspace's run of the same code
// when there is one), as a CUDA source package, a PyTorch extension or a report. The workspace
// and the experience memory are read on the service's own thread; the GUI touches no SQLite.
#include <map>
#include <optional>

#include <QObject>
#include <QString>
#include <QStringList>

#include "core/export/kernel_export.h"
#include "core/profile/profiler.h"

namespace kwb::ui {

class BackgroundJobs;

struct ExportRequest {
  kwb::exporting::ExportFormat format = kwb::exporting::ExportFormat::Cuda;
  QString dir;
  bool overwrite = false;
  QString taskFolder;
  QString workspacePath;  // empty: none
  QString libraryPath;    // the experience memory (empty: the library database)
  qint64 runId = 0;       // a run of the workspace; 0: the code below
  QString code, sourceName;
  std::map<std::string, std::int64_t> tunables;  // to bake in over the run's or the task's
  // The report's profiles (the Profiler panel's, of this kernel and of the starter), and the
  // driver as the window probed it.
  std::optional<kwb::profile::ProfileResult> profile, baselineProfile;
  QString driver;
};

struct ExportOutcome {
  bool ok = false;
  QString error;       // what went wrong, and what to do
  QString dir, what;   // where, and what was exported ("run 12")
  QStringList files, notes;
};

class ExportService : public QObject {
  Q_OBJECT

 public:
  explicit ExportService(QObject *parent = nullptr);
  ~ExportService() override;

  // Answers with finished().
  void exportKernel(const ExportRequest &request);
  bool isBusy() const;

  // The export itself, on the calling thread (the service runs it on its own).
  static ExportOutcome run(const ExportRequest &request);

 signals:
  void finished(const kwb::ui::ExportOutcome &outcome);

 private:
  BackgroundJobs *jobs_ = nullptr;
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::ExportOutcome)
