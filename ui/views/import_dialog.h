#pragma once
// File ▸ Import PyTorch Modules or KernelBench Problems…: the modules to import, the Python that
// reads them (checked for PyTorch first, before anything else is asked: an import needs it to read
// shapes and weights), the folder the tasks go to, then a result table, a row per module as it is
// answered (imported with its task, or refused with FILE:LINE and why). The import runs on the
// ImportService's thread; Cancel stops it between modules.
#include <QDialog>
#include <QStringList>

#include "ui/services/import_service.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QTableView;

namespace kwb::ui {

class ImportDialog : public QDialog {
  Q_OBJECT

 public:
  explicit ImportDialog(ImportService *service, QWidget *parent = nullptr);
  ~ImportDialog() override;

  void addModules(const QStringList &files);
  QStringList modules() const;
  void setPython(const QString &python);  // and checks it
  QString python() const;
  void setFolder(const QString &folder);
  QString folder() const;
  void setOverwrite(bool on);
  // Whether the Python last checked is the one shown and has PyTorch.
  bool pythonReady() const;
  // As the Import button: refused (false, the reason shown) when something is missing.
  bool start();
  bool isRunning() const { return running_; }
  const ImportResultsModel *results() const { return results_; }

 signals:
  // The import ended (or was cancelled) with these task folders made under `folder`.
  void imported(const QString &folder, const QStringList &taskFolders);
  // Open Task: the task the result table's selection (else the first imported) names.
  void openTaskRequested(const QString &taskFolder);
  void pythonCheckAnswered(bool ok);

 private:
  void addFilesDialog();
  void addFolderDialog();
  void browsePython();
  void browseFolder();
  void checkPython();
  void onChecked(const PythonCheck &check);
  void onRow(const ImportedProblem &row);
  void onFinished(const ImportProblemsOutcome &outcome);
  void cancel();
  void openSelected();
  void updateButtons();
  void say(const QString &text, bool error = false);

  ImportService *service_;
  QListWidget *modules_ = nullptr;
  QComboBox *python_ = nullptr;
  QLabel *pythonStatus_ = nullptr;
  QLineEdit *folder_ = nullptr;
  QCheckBox *overwrite_ = nullptr;
  QProgressBar *progress_ = nullptr;
  QLabel *status_ = nullptr;
  QTableView *table_ = nullptr;
  ImportResultsModel *results_ = nullptr;
  QPushButton *import_ = nullptr, *cancel_ = nullptr, *openTask_ = nullptr, *remove_ = nullptr;
  QString checkedPython_;  // the interpreter the last answer is about
  bool checkedOk_ = false;
  bool checking_ = false;
  bool running_ = false;
  bool started_ = false;  // an import was started from this dialog: the service's answers are ours
  QStringList made_;
};

}  // namespace kwb::ui
