#pragma once
// File ▸ Export Kernel…: the kernel the window shows (a run of the history, a Case's run, or the
// editor's text) written out as a CUDA source package, a PyTorch extension or a report, into a
// folder the user picks. The export runs on the ExportService's thread; the dialog lists what was
// written, with what to know, and opens the folder.
#include <optional>

#include <QDialog>

#include "ui/services/export_service.h"

class QButtonGroup;
class QCheckBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;

namespace kwb::ui {

class ExportDialog : public QDialog {
  Q_OBJECT

 public:
  // `request`: what to export (its format, folder and overwrite are the dialog's); `what` names it.
  ExportDialog(ExportService *service, const ExportRequest &request, const QString &what, QWidget *parent = nullptr);

  void setFormat(kwb::exporting::ExportFormat format);
  void setFolder(const QString &dir);
  QString folder() const;
  void setOverwrite(bool on);
  // As the Export button: starts the export (refused, with the reason shown, when the folder is
  // empty or one is running).
  bool start();
  bool isRunning() const { return running_; }
  const std::optional<ExportOutcome> &outcome() const { return outcome_; }

 signals:
  void exported(const kwb::ui::ExportOutcome &outcome);

 private:
  void finish(const ExportOutcome &outcome);
  kwb::exporting::ExportFormat format() const;
  void suggestFolder();

  ExportService *service_;
  ExportRequest request_;
  QButtonGroup *formats_ = nullptr;
  QLineEdit *folder_ = nullptr;
  QCheckBox *overwrite_ = nullptr;
  QPushButton *export_ = nullptr, *openFolder_ = nullptr;
  QProgressBar *busy_ = nullptr;
  QLabel *status_ = nullptr;
  QListWidget *files_ = nullptr;
  bool running_ = false;
  bool folderEdited_ = false;
  std::optional<ExportOutcome> outcome_;
};

}  // namespace kwb::ui
