#pragma once
// Settings: a page list (General, Editor, GPU, LLM providers) with OK / Cancel / Apply. Values
// live in QSettings (see app_settings.h) and, for LLM providers, in the providers file
// (core/llm/provider_config.h); applied() tells the window to pick them up.
#include <QDialog>

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;
class QStackedWidget;

namespace kwb::ui {

class LlmProvidersPage;

class SettingsDialog : public QDialog {
  Q_OBJECT

 public:
  explicit SettingsDialog(QWidget *parent = nullptr);

  // Reads the stored values into the fields.
  void load();
  // Writes the fields to the stored settings (paths made absolute), emits applied(), and shows
  // the stored values. False when the LLM providers could not be saved (a field is wrong, or the
  // file cannot be written): that page is shown with the problem, and keeps what was typed.
  bool apply();
  // Shows the page with this title ("LLM providers"); false when there is none.
  bool showPage(const QString &title);
  // The workspace file the window uses now, shown under the field: it differs from the field when
  // the window was started with --workspace or the file is the default.
  void setWorkspaceInUse(const QString &path);

  QLineEdit *workspaceField() const { return workspace_; }
  QLabel *workspaceInUseLabel() const { return workspaceInUse_; }
  QLineEdit *kernelsDirField() const { return kernelsDir_; }
  QSpinBox *fontSizeField() const { return fontSize_; }
  QSpinBox *tabWidthField() const { return tabWidth_; }
  QComboBox *archField() const { return arch_; }
  // "GPUs to use": CUDA ordinals, "0, 2"; empty means every visible GPU.
  QLineEdit *gpusField() const { return gpus_; }
  QLineEdit *workersField() const { return workers_; }
  LlmProvidersPage *llmProvidersPage() const { return llm_; }

 signals:
  void applied();

 private:
  QWidget *generalPage();
  QWidget *editorPage();
  QWidget *gpuPage();
  void addPage(const QString &title, QWidget *page);
  void loadFields();

  QListWidget *pages_ = nullptr;
  QStackedWidget *stack_ = nullptr;
  QDialogButtonBox *buttons_ = nullptr;
  QLineEdit *workspace_ = nullptr;
  QLabel *workspaceInUse_ = nullptr;
  QLineEdit *kernelsDir_ = nullptr;
  QSpinBox *fontSize_ = nullptr;
  QSpinBox *tabWidth_ = nullptr;
  QComboBox *arch_ = nullptr;
  QLineEdit *gpus_ = nullptr;
  QLineEdit *workers_ = nullptr;
  QLabel *workersProblem_ = nullptr;
  LlmProvidersPage *llm_ = nullptr;
};

}  // namespace kwb::ui
