#include "ui/services/import_service.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>

#include "core/import/kernelbench_import.h"
#include "ui/services/background_jobs.h"

namespace kwb::ui {

ImportService::ImportService(QObject *parent) : QObject(parent), jobs_(new BackgroundJobs(QStringLiteral("kwb-import"), this)) {
  qRegisterMetaType<kwb::ui::ImportProblemsOutcome>();
}

ImportService::~ImportService() = default;

bool ImportService::isBusy() const { return jobs_->isBusy(); }

void ImportService::cancel() { jobs_->cancel(QStringLiteral("import")); }

void ImportService::importProblems(const ImportProblemsRequest &request) {
  QPointer<ImportService> self(this);
  jobs_->run(
      this, QStringLiteral("import"),
      [request, self](const JobTicket &ticket) {
        ImportProblemsOutcome out;
        kwb::TorchSettings python;
        python.python = request.python.isEmpty() ? kwb::importPython() : request.python.toStdString();
        const int total = static_cast<int>(request.problems.size());
        for (int i = 0; i < total; ++i) {
          if (ticket.cancelled()) {
            out.cancelled = true;
            break;
          }
          const QString problem = request.problems[i];
          // Progress from this thread: queued to the service's (the GUI's) thread.
          const auto report = [self, i, total, problem](const QString &what) {
            QMetaObject::invokeMethod(
                self, [self, i, total, problem, what] {
                  if (self) emit self->progress(QFileInfo(problem).fileName() + QStringLiteral(": ") + what, i, total);
                },
                Qt::QueuedConnection);
          };
          report(QObject::tr("reading"));
          const auto o = kwb::importKernelBench(problem.toStdString(), request.toDir.toStdString(), request.overwrite,
                                                python, [&](const std::string &step) { report(QString::fromStdString(step)); });
          if (!o.ok) {
            out.errors << QString::fromStdString(o.message);
            continue;
          }
          out.folders << QString::fromStdString(o.folder.string());
          for (const auto &w : o.warnings) out.warnings << QString::fromStdString(o.name + ": " + w);
        }
        return out;
      },
      [this](ImportProblemsOutcome outcome) { emit finished(outcome); });
}

}  // namespace kwb::ui
