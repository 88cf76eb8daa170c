#include "ui/window/window_dialogs.h"

#include <QFileInfo>
#include <QMessageBox>
#include <QWidget>

#include <Qsci/qsciglobal.h>

#include "kwb/version.h"
#include "ui/services/export_service.h"
#include "ui/services/import_service.h"
#include "ui/views/cuda_editor.h"
#include "ui/views/export_dialog.h"
#include "ui/views/help_view.h"
#include "ui/views/import_dialog.h"
#include "ui/views/log_panel.h"
#include "ui/views/profiler_panel.h"
#include "ui/window/workbench_shell.h"
#include "ui/workbench_context.h"

namespace kwb::ui {

WindowDialogs::WindowDialogs(const DialogParts &parts, WorkbenchShell *shell, QWidget *window)
    : QObject(window), p_(parts), shell_(shell), window_(window) {
  connect(p_.importer, &ImportService::problemImported, this, &WindowDialogs::onProblem);
}

ExportDialog *WindowDialogs::exportKernel(const QString &driver) {
  if (shell_->taskFolder().isEmpty()) {
    p_.log->warning(tr("Open a task first: an export is of one of its kernels"));
    return nullptr;
  }
  ExportRequest request;
  request.taskFolder = shell_->taskFolder();
  request.workspacePath = shell_->workspaceFile();
  QString what;
  const auto &selection = p_.context->selection();
  if (selection && selection->run.historyId > 0 && selection->run.taskName == shell_->taskName()) {
    request.runId = selection->run.historyId;
    what = tr("run %1 (%2)").arg(selection->run.historyId).arg(QFileInfo(selection->run.sourceName).fileName());
  } else if (CudaEditor *editor = shell_->shownEditor()) {
    request.code = editor->text();
    request.sourceName = editor->fileName();
    what = tr("the editor's %1").arg(QFileInfo(editor->fileName()).fileName());
  } else {
    p_.log->warning(tr("Nothing to export: select a run in the History, or open a kernel in the editor"));
    return nullptr;
  }
  if (const auto &shown = p_.profiler->shownProfile(); shown && shown->taskFolder == shell_->taskFolder()) {
    request.profile = toProfileResult(*shown);
    if (const auto &base = p_.profiler->baselineProfile()) request.baselineProfile = toProfileResult(*base);
  }
  request.driver = driver;
  auto *dialog = new ExportDialog(p_.exporter, request, what, window_);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(dialog, &ExportDialog::exported, this, [this](const ExportOutcome &outcome) {
    if (outcome.ok) p_.log->info(tr("Exported %1 into %2").arg(outcome.what, outcome.dir));
    else p_.log->error(tr("Export failed: %1").arg(outcome.error));
    shell_->workEnded();
  });
  dialog->show();
  return dialog;
}

ImportDialog *WindowDialogs::importModules() {
  if (!import_) {
    import_ = new ImportDialog(p_.importer, window_);
    import_->setAttribute(Qt::WA_DeleteOnClose);
    connect(import_, &ImportDialog::imported, this, &WindowDialogs::tasksImported);
    connect(import_, &ImportDialog::openTaskRequested, this, &WindowDialogs::openTaskRequested);
  }
  import_->show();
  import_->raise();
  import_->activateWindow();
  return import_;
}

void WindowDialogs::onProblem(const ImportedProblem &row) {
  if (!row.ok) p_.log->error(tr("Not imported: %1").arg(row.message));
  for (const QString &w : row.warnings) p_.log->warning(QFileInfo(row.folder).fileName() + QStringLiteral(": ") + w);
}

HelpView *WindowDialogs::userGuide(const QString &chapter) {
  if (!help_) {
    help_ = new HelpView(window_);
    help_->setAttribute(Qt::WA_DeleteOnClose);
  }
  if (!chapter.isEmpty()) help_->showChapter(chapter);
  help_->show();
  help_->raise();
  help_->activateWindow();
  return help_;
}

void WindowDialogs::about() {
  QMessageBox::about(window_, tr("About Kernel Workbench"),
                     tr("<h3>Kernel Workbench %1</h3>"
                        "<p>Takes a CUDA kernel from correct to fast, and keeps what it learned.</p>"
                        "<p>Qt %2 · QScintilla %3</p>")
                         .arg(QLatin1String(kwb::kVersion), QLatin1String(qVersion()),
                              QLatin1String(QSCINTILLA_VERSION_STR)));
}

}  // namespace kwb::ui
