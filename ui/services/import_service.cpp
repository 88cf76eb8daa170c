#include "ui/services/import_service.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>

#include <nlohmann/json.hpp>

#include "core/eval/torch_reference.h"
#include "core/import/kernelbench_import.h"
#include "ui/services/background_jobs.h"

namespace kwb::ui {

ImportService::ImportService(QObject *parent) : QObject(parent), jobs_(new BackgroundJobs(QStringLiteral("kwb-import"), this)) {
  qRegisterMetaType<kwb::ui::ImportProblemsOutcome>();
  qRegisterMetaType<kwb::ui::PythonCheck>();
  qRegisterMetaType<kwb::ui::ImportedProblem>();
}

QString ImportService::defaultPython() {
  const std::string venv = kwb::importPython();
  if (!venv.empty()) return QString::fromStdString(venv);
  kwb::TorchSettings settings;
  std::string problem;
  const auto found = kwb::findPython(settings, problem);
  return found ? QString::fromStdString(found->string()) : QStringLiteral("python3");
}

namespace {

// The probe's JSON in a line a user reads; the fix when PyTorch is missing.
PythonCheck describeProbe(const QString &python, const std::string &probe, const std::string &problem) {
  PythonCheck check;
  check.python = python;
  if (probe.empty()) {
    check.summary = QString::fromStdString(problem.empty() ? std::string("the interpreter did not answer") : problem);
    return check;
  }
  const auto j = nlohmann::json::parse(probe, nullptr, false);
  if (!j.is_object()) {
    check.summary = QObject::tr("the interpreter's check answered something unreadable");
    return check;
  }
  if (!j.value("ok", false)) {
    check.summary = QString::fromStdString(j.value("message", std::string("PyTorch could not be used")));
    return check;
  }
  check.ok = true;
  const bool cuda = j.value("cuda", false);
  const std::string device = j.contains("device") && j["device"].is_string() ? j["device"].get<std::string>() : "";
  check.summary = QObject::tr("Python %1, PyTorch %2, CUDA: %3")
                      .arg(QString::fromStdString(j.value("python", std::string("?"))),
                           QString::fromStdString(j.value("torch", std::string("?"))),
                           cuda ? QString::fromStdString(device.empty() ? std::string("yes") : device)
                                : QObject::tr("no (an import needs none; the module's timings will)"));
  return check;
}

}  // namespace

void ImportService::checkPython(const QString &python) {
  jobs_->run(
      this, QStringLiteral("probe"),
      [python](const JobTicket &) {
        kwb::TorchSettings settings;
        settings.python = python.isEmpty() ? kwb::importPython() : python.toStdString();
        settings.timeLimit = std::chrono::milliseconds(60000);
        std::string problem;
        try {
          const std::string probe = kwb::probeTorch(settings, problem);
          return describeProbe(python, probe, problem);
        } catch (const std::exception &e) {  // an answer in every case: the dialog waits for one
          return describeProbe(python, std::string(), std::string("the check failed: ") + e.what());
        }
      },
      [this](PythonCheck check) { emit pythonChecked(check); });
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
          ImportedProblem row;
          row.problem = problem;
          row.ok = o.ok;
          const auto answer = [self](const ImportedProblem &r) {
            QMetaObject::invokeMethod(
                self, [self, r] { if (self) emit self->problemImported(r); }, Qt::QueuedConnection);
          };
          if (!o.ok) {
            row.message = QString::fromStdString(o.message);
            out.errors << row.message;
            out.problems << row;
            answer(row);
            continue;
          }
          row.folder = QString::fromStdString(o.folder.string());
          row.configs = static_cast<int>(o.configs.size());
          row.inputs = static_cast<int>(o.inputs);
          row.outputs = static_cast<int>(o.outputs);
          out.folders << row.folder;
          for (const auto &w : o.warnings) {
            row.warnings << QString::fromStdString(w);
            out.warnings << QString::fromStdString(o.name + ": " + w);
          }
          out.problems << row;
          answer(row);
        }
        return out;
      },
      [this](ImportProblemsOutcome outcome) { emit finished(outcome); });
}

}  // namespace kwb::ui
