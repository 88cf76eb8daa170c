#include "ui/services/export_service.h"

#include <memory>

#include "core/export/export_sources.h"
#include "core/export/report.h"
#include "core/memory/experience_store.h"
#include "core/store/library_schema.h"
#include "core/store/workspace.h"
#include "core/task/manifest_parser.h"
#include "ui/services/background_jobs.h"

namespace kwb::ui {

using namespace kwb::exporting;

ExportService::ExportService(QObject *parent) : QObject(parent), jobs_(new BackgroundJobs(QStringLiteral("kwb-export"), this)) {
  qRegisterMetaType<kwb::ui::ExportOutcome>();
}

ExportService::~ExportService() = default;

bool ExportService::isBusy() const { return jobs_->isBusy(); }

void ExportService::exportKernel(const ExportRequest &request) {
  jobs_->run(this, QStringLiteral("export"), [request](const JobTicket &) { return run(request); },
             [this](ExportOutcome outcome) { emit finished(outcome); });
}

ExportOutcome ExportService::run(const ExportRequest &r) {
  ExportOutcome out;
  try {
    const Task task = loadTask(r.taskFolder.toStdString());
    std::unique_ptr<Workspace> workspace;
    if (!r.workspacePath.isEmpty()) {
      try {
        workspace = Workspace::openExisting(r.workspacePath.toStdString());
      } catch (const std::exception &) {
        if (r.runId) throw;  // the run is in it; the code alone does without
      }
    }
    ExportInput in = r.runId ? exportInputFromRun(task, *workspace, r.runId)
                             : exportInputFromFile(task, r.sourceName.toStdString(), r.code.toStdString(), workspace.get());
    for (const auto &[k, v] : r.tunables) in.tunables[k] = v;
    ExportedPackage package;
    switch (r.format) {
      case ExportFormat::Cuda: package = exportCudaPackage(in, r.dir.toStdString(), r.overwrite); break;
      case ExportFormat::Torch: package = exportTorchPackage(in, r.dir.toStdString(), r.overwrite); break;
      case ExportFormat::Report: {
        std::unique_ptr<memory::ExperienceStore> store;
        try {
          store = memory::ExperienceStore::open(r.libraryPath.isEmpty() ? libraryDatabasePath()
                                                                       : std::filesystem::path(r.libraryPath.toStdString()));
        } catch (const std::exception &e) {
          out.notes << QStringLiteral("the experience memory is left out: %1").arg(QString::fromStdString(e.what()));
        }
        ReportContext context = reportContextFor(in, workspace.get(), store.get());
        context.profile = r.profile;
        context.baselineProfile = r.baselineProfile;
        context.driver = r.driver.toStdString();
        package = exportReport(in, context, r.dir.toStdString(), r.overwrite);
        break;
      }
    }
    out.ok = true;
    out.dir = QString::fromStdString(package.dir.string());
    out.what = QString::fromStdString(in.provenance.what);
    for (const auto &f : package.files) out.files << QString::fromStdString(f);
    for (const auto &n : package.notes) out.notes << QString::fromStdString(n);
  } catch (const std::exception &e) {
    out.ok = false;
    out.error = QString::fromStdString(e.what());
  }
  return out;
}

}  // namespace kwb::ui
