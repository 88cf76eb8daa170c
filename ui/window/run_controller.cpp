#include "ui/window/run_controller.h"

#include <QAction>
#include <QDockWidget>
#include <QFileInfo>
#include <QProgressBar>

#include "ui/models/outcome_style.h"
#include "ui/services/evaluation_service.h"
#include "ui/services/gpu_gate.h"
#include "ui/services/profile_service.h"
#include "ui/services/tuning_service.h"
#include "ui/services/workspace_service.h"
#include "ui/settings/app_settings.h"
#include "ui/views/cuda_editor.h"
#include "ui/views/experience_panel.h"
#include "ui/views/log_panel.h"
#include "ui/views/profiler_panel.h"
#include "ui/views/results_panel.h"
#include "ui/views/source_view_panel.h"
#include "ui/views/tuning_panel.h"
#include "ui/views/work_area.h"
#include "ui/window/dock_layout.h"
#include "ui/window/workbench_shell.h"
#include "ui/workbench_context.h"

namespace kwb::ui {

namespace {

EditorDiagnostic::Severity severityOf(kwb::Diagnostic::Severity severity) {
  switch (severity) {
    case kwb::Diagnostic::Severity::Warning: return EditorDiagnostic::Severity::Warning;
    case kwb::Diagnostic::Severity::Note: return EditorDiagnostic::Severity::Note;
    case kwb::Diagnostic::Severity::Error: break;
  }
  return EditorDiagnostic::Severity::Error;
}

}  // namespace

RunController::RunController(const RunParts &parts, WorkbenchShell *shell, QObject *parent)
    : QObject(parent), p_(parts), shell_(shell) {
  connect(p_.evaluation, &EvaluationService::progress, this, &RunController::onProgress);
  connect(p_.profiler, &ProfilerPanel::profileRequested, this, [this] { profile(); });
  // Refresh in the Source/PTX/SASS view: the editor's kernel as it is now.
  connect(p_.sourceView, &SourceViewPanel::refreshRequested, this, [this] {
    if (!showListing()) p_.sourceView->showProblem(tr("Open a task first: Refresh shows the kernel in the editor beside its SASS or PTX."));
  });
  connect(p_.profile, &ProfileService::finished, this, [this](const ProfileRow &row) {
    if (row.outcome == kwb::Outcome::Profiled)
      p_.log->info(tr("Profiled %1 (%2) on %3: %n replay pass(es)", nullptr, row.passes)
                     .arg(QFileInfo(row.sourceName).fileName(), row.config, row.device));
    else
      p_.log->warning(tr("Not profiled: %1: %2").arg(outcomeText(row.outcome), row.message));
    shell_->actionsChanged();
    shell_->workEnded();
  });
  connect(p_.evaluation, &EvaluationService::deviceMessage, this, [this](const QString &message) {
    p_.log->warning(message);
    shell_->say(message);
  });
  connect(p_.evaluation, &EvaluationService::finished, this, &RunController::onFinished);
  connect(p_.tuning, &TuningService::finished, this, [this](const TuneSummary &s) {
    QString line = p_.tuningPanel->statusText();
    if (s.stop == QLatin1String("error")) p_.log->error(line);
    else p_.log->info(line);
    if (!s.reproduce.isEmpty()) p_.log->info(tr("Reproduce the best: %1").arg(s.reproduce));
    if (!s.memory.isEmpty()) p_.log->info(s.memory);
    if (p_.workArea->current() == WorkArea::Page::Experience && !s.memory.isEmpty()) p_.experience->refresh();
    shell_->say(line);
    shell_->actionsChanged();
    shell_->workEnded();
  });
}

bool RunController::isRunning() const { return p_.evaluation->isRunning(); }

bool RunController::run() {
  if (!shell_->gate(GpuAction::Run).allowed) return false;
  CudaEditor *editor = shell_->kernelEditor();
  if (!editor) return false;

  RunRequest request;
  request.taskFolder = shell_->taskFolder();
  request.source = editor->text();
  request.sourceName = editor->filePath();
  request.time = p_.time->isChecked();
  request.sanitize = p_.sanitize->isChecked();
  // Without a GPU the evaluator compiles for the architecture chosen in Settings.
  if (!shell_->useDevice()) request.arch = settings::compileOnlyArch();
  if (!p_.evaluation->run(request)) return false;

  editor->clearDiagnostics();
  runEditor_ = editor;
  p_.results->showRunning(shell_->taskName(), editor->filePath());
  p_.docks->results->show();
  emit runStarted();
  p_.progress->setValue(0);
  p_.progress->setFormat(tr("Starting %p%"));
  p_.progress->show();
  p_.log->info(tr("Run %1 on task %2%3")
                 .arg(editor->fileName(), shell_->taskName(),
                      QString(request.time ? tr(", timing it once correct") : QString()) +
                          (request.sanitize ? tr(", then under compute-sanitizer") : QString())));
  shell_->actionsChanged();
  return true;
}

void RunController::cancel() {
  if (!p_.evaluation->isRunning() || p_.evaluation->isCancelling()) return;
  p_.evaluation->cancel();
  p_.progress->setFormat(tr("Cancelling…"));
  p_.log->info(tr("Cancelling the run…"));
  shell_->actionsChanged();
}

void RunController::onProgress(const EvaluationStep &step) {
  if (p_.evaluation->isCancelling()) return;
  p_.progress->setValue(static_cast<int>(step.fraction * 1000.0));
  const QString where = step.config.isEmpty() ? step.stage : step.stage + QStringLiteral(" ") + step.config;
  p_.progress->setFormat(where + QStringLiteral(" %p%"));
  p_.progress->setToolTip(step.text);
}

void RunController::onFinished(const EvaluationRun &run, const QString &source) {
  p_.progress->hide();
  p_.context->select({CandidateSelection::Origin::Run, run});
  showDiagnostics(run, source);

  const QString line = tr("Run %1: %2: %3")
                           .arg(QFileInfo(run.sourceName).fileName(), QLatin1String(kwb::toString(run.outcome)), run.message);
  if (run.outcome == kwb::Outcome::Correct || run.outcome == kwb::Outcome::NotRun ||
      run.outcome == kwb::Outcome::Cancelled) {
    p_.log->info(line);
  } else {
    p_.log->error(line);
  }
  shell_->say(line);
  if (p_.workspace->isOpen()) p_.workspace->recordEvaluation(run, source);
  shell_->actionsChanged();
  emit runFinished(run);
  shell_->workEnded();
}

void RunController::showDiagnostics(const EvaluationRun &run, const QString &source) {
  CudaEditor *editor = runEditor_.data();
  runEditor_.clear();
  // Edited while it ran: the lines may no longer match.
  if (!editor || editor->text() != source) return;
  const QString file = QFileInfo(run.sourceName).fileName();
  QList<EditorDiagnostic> diagnostics;
  if (run.result) {
    for (const kwb::Diagnostic &d : run.result->candidate.diagnostics) {
      // Diagnostics in other files (an included header) are listed in Results only.
      if (d.line <= 0 || (!d.file.empty() && QFileInfo(QString::fromStdString(d.file)).fileName() != file)) continue;
      EditorDiagnostic diagnostic;
      diagnostic.line = d.line;
      diagnostic.column = d.column;
      diagnostic.severity = severityOf(d.severity);
      diagnostic.message = QString::fromStdString(d.message);
      diagnostics.append(diagnostic);
    }
    // The sanitizer's findings in this file, on the lines they name.
    if (run.result->sanitize) {
      for (const kwb::SanitizerReport &report : run.result->sanitize->reports)
        for (const kwb::SanitizerFinding &f : report.findings) {
          if (f.origin != kwb::SanitizerOrigin::Candidate) continue;
          for (const kwb::SanitizerLocation &l : f.locations) {
            if (l.line <= 0 || QFileInfo(QString::fromStdString(l.file)).fileName() != file) continue;
            EditorDiagnostic diagnostic;
            diagnostic.line = l.line;
            diagnostic.severity = f.warning ? EditorDiagnostic::Severity::Warning : EditorDiagnostic::Severity::Error;
            diagnostic.message = QStringLiteral("%1: %2").arg(QLatin1String(kwb::sanitizerToolName(f.tool)),
                                                              QString::fromStdString(f.what));
            if (f.hazards) diagnostic.message += tr(" (%1 hazards)").arg(f.hazards);
            diagnostics.append(diagnostic);
          }
        }
    }
  }
  editor->showDiagnostics(diagnostics);
}

bool RunController::tune() {
  if (const GpuVerdict v = shell_->gate(GpuAction::Tune); !v.allowed) {
    if (!shell_->taskFolder().isEmpty()) p_.log->warning(tr("Not tuned: %1").arg(v.why));
    return false;
  }
  CudaEditor *editor = shell_->kernelEditor();
  if (!editor) return false;
  TuneRequest request;
  request.taskFolder = shell_->taskFolder();
  request.source = editor->text();
  request.sourceName = editor->filePath();
  request.gpus = settings::gpuDevices();
  if (!p_.tuning->run(request)) return false;
  p_.docks->reveal(p_.docks->tuning);
  p_.log->info(tr("Tuning %1 on task %2 (the built-in autotuner)").arg(editor->fileName(), shell_->taskName()));
  shell_->actionsChanged();
  return true;
}

bool RunController::profile() {
  if (const GpuVerdict v = shell_->gate(GpuAction::Profile); !v.allowed) {
    if (!shell_->taskFolder().isEmpty()) p_.log->warning(tr("Not profiled: %1").arg(v.why));
    return false;
  }
  CudaEditor *editor = shell_->kernelEditor();
  if (!editor) return false;
  ProfileRequest request;
  request.taskFolder = shell_->taskFolder();
  request.source = editor->text();
  request.sourceName = editor->filePath();
  request.set = p_.profiler->profileSet();
  request.config = p_.profiler->profileConfig();
  if (!p_.profile->profile(request)) return false;
  p_.workArea->reveal(WorkArea::Page::Profiler);
  p_.log->info(tr("Profiling %1 on task %2 (%3 metric set%4)")
                 .arg(editor->fileName(), shell_->taskName(), request.set,
                      request.config.isEmpty() ? QString() : tr(", configuration %1").arg(request.config)));
  shell_->actionsChanged();
  return true;
}

bool RunController::showListing() {
  if (shell_->taskFolder().isEmpty()) return false;
  CudaEditor *editor = shell_->kernelEditor();
  if (!editor) return false;
  if (!shell_->useDevice()) p_.sourceView->setArch(settings::compileOnlyArch());
  p_.sourceView->showCandidate(shell_->taskFolder(), editor->text(), editor->filePath());
  p_.docks->reveal(p_.docks->sourceView);
  return true;
}

}  // namespace kwb::ui
