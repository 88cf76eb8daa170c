#include "ui/settings/settings_dialog.h"

#include <functional>

#include <QComboBox>
#include <QDir>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

#include "ui/settings/app_settings.h"
#include "ui/settings/llm_providers_page.h"

namespace kwb::ui {

namespace {

QWidget *withBrowseButton(QLineEdit *field, QWidget *parent, const std::function<void()> &browse) {
  auto *row = new QWidget(parent);
  auto *layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(field, 1);
  auto *button = new QPushButton(SettingsDialog::tr("Browse…"), row);
  QObject::connect(button, &QPushButton::clicked, row, browse);
  layout->addWidget(button);
  return row;
}

QLabel *hint(const QString &text, QWidget *parent) {
  auto *label = new QLabel(text, parent);
  label->setWordWrap(true);
  label->setStyleSheet(QStringLiteral("color: #6b7280;"));
  return label;
}

}  // namespace

SettingsDialog::SettingsDialog(QWidget *parent) : QDialog(parent) {
  setObjectName(QStringLiteral("settingsDialog"));
  setWindowTitle(tr("Settings"));

  pages_ = new QListWidget(this);
  pages_->setObjectName(QStringLiteral("settingsPages"));
  pages_->setFixedWidth(140);
  stack_ = new QStackedWidget(this);
  connect(pages_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);

  addPage(tr("General"), generalPage());
  addPage(tr("Editor"), editorPage());
  addPage(tr("GPU"), gpuPage());
  llm_ = new LlmProvidersPage(this);
  addPage(tr("LLM providers"), llm_);
  pages_->setCurrentRow(0);

  buttons_ =
      new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel | QDialogButtonBox::Apply, this);
  connect(buttons_, &QDialogButtonBox::accepted, this, [this] {
    if (apply()) accept();
  });
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(buttons_->button(QDialogButtonBox::Apply), &QPushButton::clicked, this, &SettingsDialog::apply);

  auto *body = new QHBoxLayout;
  body->addWidget(pages_);
  body->addWidget(stack_, 1);
  auto *layout = new QVBoxLayout(this);
  layout->addLayout(body, 1);
  layout->addWidget(buttons_);
  resize(860, 640);
  load();
}

void SettingsDialog::addPage(const QString &title, QWidget *page) {
  pages_->addItem(title);
  stack_->addWidget(page);
}

QWidget *SettingsDialog::generalPage() {
  auto *page = new QWidget(this);
  workspace_ = new QLineEdit(page);
  workspace_->setObjectName(QStringLiteral("workspacePathField"));
  workspace_->setPlaceholderText(settings::defaultWorkspacePath());
  kernelsDir_ = new QLineEdit(page);
  kernelsDir_->setObjectName(QStringLiteral("kernelsDirField"));
  kernelsDir_->setPlaceholderText(tr("The bundled kernels folder"));

  auto *form = new QFormLayout(page);
  form->addRow(tr("Workspace file:"), withBrowseButton(workspace_, page, [this] {
                 const QString current =
                     workspace_->text().isEmpty() ? workspace_->placeholderText() : workspace_->text();
                 const QString file = QFileDialog::getSaveFileName(
                     this, tr("Workspace file"), current, tr("Workspaces (*.kwb);;All files (*)"), nullptr,
                     QFileDialog::DontConfirmOverwrite);
                 if (!file.isEmpty()) workspace_->setText(file);
               }));
  workspaceInUse_ = hint(QString(), page);
  workspaceInUse_->setObjectName(QStringLiteral("workspaceInUseLabel"));
  workspaceInUse_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form->addRow(QString(), workspaceInUse_);
  form->addRow(QString(), hint(tr("Created when missing. Leave empty for the default. A relative path "
                                  "is taken from the folder Kernel Workbench was started in."),
                               page));
  form->addRow(tr("Kernels folder:"), withBrowseButton(kernelsDir_, page, [this] {
                 const QString dir =
                     QFileDialog::getExistingDirectory(this, tr("Kernels folder"), kernelsDir_->text());
                 if (!dir.isEmpty()) kernelsDir_->setText(dir);
               }));
  form->addRow(QString(), hint(tr("Replaces the bundled task suite under \"Bundled\". "
                                  "Leave empty to use the one installed with Kernel Workbench."),
                               page));
  return page;
}

QWidget *SettingsDialog::editorPage() {
  auto *page = new QWidget(this);
  fontSize_ = new QSpinBox(page);
  fontSize_->setObjectName(QStringLiteral("fontSizeField"));
  fontSize_->setRange(6, 48);
  fontSize_->setSuffix(tr(" pt"));
  tabWidth_ = new QSpinBox(page);
  tabWidth_->setObjectName(QStringLiteral("tabWidthField"));
  tabWidth_->setRange(1, 16);
  tabWidth_->setSuffix(tr(" spaces"));
  auto *form = new QFormLayout(page);
  form->addRow(tr("Font size:"), fontSize_);
  form->addRow(tr("Tab width:"), tabWidth_);
  form->addRow(QString(), hint(tr("Indentation always uses spaces."), page));
  return page;
}

QWidget *SettingsDialog::gpuPage() {
  auto *page = new QWidget(this);
  arch_ = new QComboBox(page);
  arch_->setObjectName(QStringLiteral("archField"));
  arch_->addItems(settings::compileOnlyArchChoices());
  auto *form = new QFormLayout(page);
  form->addRow(tr("Compile-only target:"), arch_);
  form->addRow(QString(), hint(tr("The architecture kernels are compiled for when this machine "
                                  "has no CUDA device."),
                               page));
  gpus_ = new QLineEdit(page);
  gpus_->setObjectName(QStringLiteral("gpusField"));
  gpus_->setPlaceholderText(tr("all visible GPUs"));
  gpus_->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9,\\s]*")), gpus_));
  form->addRow(tr("GPUs to use:"), gpus_);
  form->addRow(QString(), hint(tr("CUDA device numbers, comma-separated (\"0, 2\"), as this machine's "
                                  "CUDA_VISIBLE_DEVICES leaves them; one evaluation worker runs on each. "
                                  "Empty: every visible GPU. Takes effect for the next run."),
                               page));
  workers_ = new QLineEdit(page);
  workers_->setObjectName(QStringLiteral("workersField"));
  workers_->setPlaceholderText(tr("local (this machine)"));
  form->addRow(tr("Workers:"), workers_);
  workersProblem_ = new QLabel(page);
  workersProblem_->setObjectName(QStringLiteral("workersProblem"));
  workersProblem_->setWordWrap(true);
  workersProblem_->setStyleSheet(QStringLiteral("color: #b00020"));
  workersProblem_->hide();
  form->addRow(QString(), workersProblem_);
  form->addRow(QString(), hint(tr("Where the GPU workers run: empty for this machine; ssh://[USER@]HOST[:PORT][/PATH/TO/kwb-worker] "
                                  "for another host through OpenSSH (your own configuration and keys, no password prompts; "
                                  "Kernel Workbench of the same version installed there); several hosts in one pool, "
                                  "comma-separated (ssh://gpu-a,ssh://gpu-b: every GPU of each; a lost host's work moves to the others); "
                                  "slurm:partition=P,gpus=N,time=HH:MM:SS for Slurm job steps. Code is compiled here; "
                                  "LLM calls and API keys stay on this machine."),
                               page));
  return page;
}

bool SettingsDialog::showPage(const QString &title) {
  for (int row = 0; row < pages_->count(); ++row) {
    if (pages_->item(row)->text() != title) continue;
    pages_->setCurrentRow(row);
    return true;
  }
  return false;
}

void SettingsDialog::load() {
  loadFields();
  llm_->load();
}

void SettingsDialog::loadFields() {
  workspace_->setText(settings::workspacePath());
  kernelsDir_->setText(settings::kernelsDirOverride());
  const auto editor = settings::editor();
  fontSize_->setValue(editor.fontSize);
  tabWidth_->setValue(editor.tabWidth);
  arch_->setCurrentText(settings::compileOnlyArch());
  gpus_->setText(settings::formatGpuDevices(settings::gpuDevices()));
  workers_->setText(settings::workersSpec());
  workersProblem_->hide();
}

bool SettingsDialog::apply() {
  // The providers first: when they cannot be saved (a field in red, a file that cannot be
  // written), nothing else is applied either, so Cancel still leaves every setting as it was.
  if (const QString problem = settings::workersSpecProblem(workers_->text()); !problem.isEmpty()) {
    workersProblem_->setText(problem);
    workersProblem_->show();
    showPage(tr("GPU"));
    return false;
  }
  if (!llm_->apply()) {
    showPage(tr("LLM providers"));
    return false;
  }
  settings::setWorkspacePath(workspace_->text());
  settings::setKernelsDirOverride(kernelsDir_->text());
  settings::setEditor({fontSize_->value(), tabWidth_->value()});
  settings::setCompileOnlyArch(arch_->currentText());
  QList<int> gpus;
  if (settings::parseGpuDevices(gpus_->text(), &gpus)) settings::setGpuDevices(gpus);
  settings::setWorkersSpec(workers_->text());
  loadFields();
  emit applied();
  return true;
}

void SettingsDialog::setWorkspaceInUse(const QString &path) {
  workspaceInUse_->setText(tr("In use now: %1").arg(QDir::toNativeSeparators(path)));
  workspaceInUse_->setToolTip(QDir::toNativeSeparators(path));
}

}  // namespace kwb::ui
