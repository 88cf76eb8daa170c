#include "ui/views/import_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDirIterator>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QStandardPaths>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/settings/app_settings.h"

namespace kwb::ui {

ImportDialog::ImportDialog(ImportService *service, QWidget *parent)
    : QDialog(parent), service_(service), results_(new ImportResultsModel(this)) {
  setObjectName(QStringLiteral("importDialog"));
  setWindowTitle(tr("Import PyTorch Modules or KernelBench Problems"));
  auto *layout = new QVBoxLayout(this);
  auto *intro = new QLabel(tr("Each module in KernelBench's shape (class Model, get_inputs, get_init_inputs) becomes a "
                              "task folder: PyTorch builds the module to read its shapes and weights, and the module "
                              "itself is the task's reference."),
                           this);
  intro->setWordWrap(true);
  layout->addWidget(intro);

  auto *form = new QFormLayout;
  // Every field the form's width (a wrapped message, too: at its own width it was a narrow column).
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  // A row's field is a layout: the label is made here, its buddy the field's main widget, so its
  // mnemonic works (addRow(QString, QLayout *) has no buddy, and showed the "&").
  auto label = [this](const QString &text, QWidget *buddy) {
    auto *l = new QLabel(text, this);
    l->setBuddy(buddy);
    return l;
  };

  python_ = new QComboBox(this);
  python_->setObjectName(QStringLiteral("importPython"));
  python_->setEditable(true);
  python_->setInsertPolicy(QComboBox::NoInsert);
  python_->setMinimumContentsLength(28);
  QStringList choices = settings::importPythons();
  for (const QString &p : {ImportService::defaultPython(), QStandardPaths::findExecutable(QStringLiteral("python3"))})
    if (!p.isEmpty() && !choices.contains(p)) choices << p;
  python_->addItems(choices);
  auto *browsePython = new QPushButton(tr("Browse…"), this);
  auto *check = new QPushButton(tr("Check"), this);
  check->setObjectName(QStringLiteral("importCheckPython"));
  auto *pythonRow = new QHBoxLayout;
  pythonRow->addWidget(python_, 1);
  pythonRow->addWidget(browsePython);
  pythonRow->addWidget(check);
  pythonStatus_ = new QLabel(this);
  pythonStatus_->setObjectName(QStringLiteral("importPythonStatus"));
  pythonStatus_->setWordWrap(true);
  pythonStatus_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Under the interpreter, in the same field (a row of its own, the form gave the wrapped text
  // the height of a narrow column: a gap, or its last line cut).
  auto *pythonField = new QVBoxLayout;
  pythonField->setSpacing(2);
  pythonField->addLayout(pythonRow);
  pythonField->addWidget(pythonStatus_);
  form->addRow(label(tr("&Python:"), python_), pythonField);

  modules_ = new QListWidget(this);
  modules_->setObjectName(QStringLiteral("importModules"));
  modules_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  modules_->setMinimumHeight(90);
  auto *addFiles = new QPushButton(tr("Add Files…"), this);
  auto *addFolder = new QPushButton(tr("Add Folder…"), this);
  remove_ = new QPushButton(tr("Remove"), this);
  auto *moduleButtons = new QVBoxLayout;
  moduleButtons->addWidget(addFiles);
  moduleButtons->addWidget(addFolder);
  moduleButtons->addWidget(remove_);
  moduleButtons->addStretch();
  auto *moduleRow = new QHBoxLayout;
  moduleRow->addWidget(modules_, 1);
  moduleRow->addLayout(moduleButtons);
  form->addRow(label(tr("&Modules:"), modules_), moduleRow);

  folder_ = new QLineEdit(this);
  folder_->setObjectName(QStringLiteral("importFolder"));
  folder_->setPlaceholderText(tr("where the task folders are made"));
  folder_->setText(settings::importFolder());
  auto *browseFolder = new QPushButton(tr("Browse…"), this);
  auto *folderRow = new QHBoxLayout;
  folderRow->addWidget(folder_, 1);
  folderRow->addWidget(browseFolder);
  form->addRow(label(tr("&Into folder:"), folder_), folderRow);
  overwrite_ = new QCheckBox(tr("Replace task folders of the same name"), this);
  form->addRow(QString(), overwrite_);
  layout->addLayout(form);

  auto *progressRow = new QHBoxLayout;
  progress_ = new QProgressBar(this);
  progress_->setVisible(false);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("importStatus"));
  status_->setWordWrap(true);
  progressRow->addWidget(progress_);
  progressRow->addWidget(status_, 1);
  layout->addLayout(progressRow);

  table_ = new QTableView(this);
  table_->setObjectName(QStringLiteral("importResults"));
  table_->setModel(results_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setWordWrap(true);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setSectionResizeMode(ImportResultsModel::DetailColumn, QHeaderView::Stretch);
  table_->setMinimumHeight(140);
  layout->addWidget(table_, 1);

  auto *buttons = new QDialogButtonBox(this);
  import_ = buttons->addButton(tr("&Import"), QDialogButtonBox::AcceptRole);
  import_->setObjectName(QStringLiteral("importStart"));
  cancel_ = buttons->addButton(tr("Cancel Import"), QDialogButtonBox::ActionRole);
  openTask_ = buttons->addButton(tr("&Open Task"), QDialogButtonBox::ActionRole);
  openTask_->setObjectName(QStringLiteral("importOpenTask"));
  QPushButton *close = buttons->addButton(QDialogButtonBox::Close);
  layout->addWidget(buttons);

  connect(addFiles, &QPushButton::clicked, this, &ImportDialog::addFilesDialog);
  connect(addFolder, &QPushButton::clicked, this, &ImportDialog::addFolderDialog);
  connect(remove_, &QPushButton::clicked, this, [this] {
    qDeleteAll(modules_->selectedItems());
    updateButtons();
  });
  connect(modules_, &QListWidget::itemSelectionChanged, this, &ImportDialog::updateButtons);
  connect(browsePython, &QPushButton::clicked, this, &ImportDialog::browsePython);
  connect(check, &QPushButton::clicked, this, &ImportDialog::checkPython);
  connect(python_, &QComboBox::currentTextChanged, this, &ImportDialog::updateButtons);
  connect(python_, &QComboBox::activated, this, &ImportDialog::checkPython);
  connect(python_->lineEdit(), &QLineEdit::editingFinished, this, [this] {
    if (python() != checkedPython_) checkPython();
  });
  connect(browseFolder, &QPushButton::clicked, this, &ImportDialog::browseFolder);
  connect(folder_, &QLineEdit::textChanged, this, &ImportDialog::updateButtons);
  connect(import_, &QPushButton::clicked, this, &ImportDialog::start);
  connect(cancel_, &QPushButton::clicked, this, &ImportDialog::cancel);
  connect(openTask_, &QPushButton::clicked, this, &ImportDialog::openSelected);
  connect(table_, &QTableView::doubleClicked, this, &ImportDialog::openSelected);
  connect(close, &QPushButton::clicked, this, &QDialog::reject);
  connect(service_, &ImportService::pythonChecked, this, &ImportDialog::onChecked);
  connect(service_, &ImportService::problemImported, this, &ImportDialog::onRow);
  connect(service_, &ImportService::finished, this, &ImportDialog::onFinished);
  connect(service_, &ImportService::progress, this, [this](const QString &line, int done, int total) {
    if (!running_) return;
    progress_->setValue(done);
    say(tr("%1 of %2: %3").arg(done + 1).arg(total).arg(line));
  });

  resize(820, 600);
  updateButtons();
  checkPython();  // PyTorch first: nothing else is worth choosing without it
}

ImportDialog::~ImportDialog() = default;

void ImportDialog::addModules(const QStringList &files) {
  for (const QString &f : files) {
    const QString path = QFileInfo(f).absoluteFilePath();
    if (modules_->findItems(path, Qt::MatchExactly).isEmpty()) modules_->addItem(path);
  }
  if (folder_->text().isEmpty() && !files.isEmpty()) folder_->setText(QFileInfo(files.front()).absolutePath());
  updateButtons();
}

QStringList ImportDialog::modules() const {
  QStringList out;
  for (int i = 0; i < modules_->count(); ++i) out << modules_->item(i)->text();
  return out;
}

void ImportDialog::setPython(const QString &python) {
  python_->setCurrentText(python);
  checkPython();
}

QString ImportDialog::python() const { return python_->currentText().trimmed(); }

void ImportDialog::setFolder(const QString &folder) { folder_->setText(folder); }

QString ImportDialog::folder() const { return folder_->text().trimmed(); }

void ImportDialog::setOverwrite(bool on) { overwrite_->setChecked(on); }

bool ImportDialog::pythonReady() const { return checkedOk_ && !checking_ && checkedPython_ == python(); }

void ImportDialog::addFilesDialog() {
  const QStringList files = QFileDialog::getOpenFileNames(this, tr("PyTorch Modules to Import"), folder(),
                                                          tr("PyTorch modules (*.py)"));
  addModules(files);
}

void ImportDialog::addFolderDialog() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("A Folder of PyTorch Modules"), folder());
  if (dir.isEmpty()) return;
  QStringList files;
  QDirIterator it(dir, {QStringLiteral("*.py")}, QDir::Files);
  while (it.hasNext()) files << it.next();
  files.sort();
  if (files.isEmpty()) say(tr("%1 holds no .py files").arg(QDir::toNativeSeparators(dir)), true);
  addModules(files);
}

void ImportDialog::browsePython() {
  const QString file = QFileDialog::getOpenFileName(this, tr("Python Interpreter with PyTorch"),
                                                    QFileInfo(python()).absolutePath());
  if (!file.isEmpty()) setPython(file);
}

void ImportDialog::browseFolder() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for the Imported Tasks"), folder());
  if (!dir.isEmpty()) folder_->setText(dir);
}

void ImportDialog::checkPython() {
  checkedOk_ = false;
  checking_ = true;
  checkedPython_ = python();
  pythonStatus_->setStyleSheet(QString());
  pythonStatus_->setText(tr("Checking %1 for PyTorch…").arg(checkedPython_.isEmpty() ? tr("the default Python") : checkedPython_));
  updateButtons();
  service_->checkPython(checkedPython_);
}

void ImportDialog::onChecked(const PythonCheck &check) {
  if (check.python != python()) return;  // an answer about an interpreter no longer shown
  checking_ = false;
  checkedOk_ = check.ok;
  pythonStatus_->setStyleSheet(check.ok ? QStringLiteral("color: #2e7d32;") : QStringLiteral("color: #c62828;"));
  pythonStatus_->setText(check.ok ? check.summary
                                  : tr("%1. Choose a Python with PyTorch (Browse…), or install it: "
                                       "packaging/install-torch.sh makes one, or pip install torch.")
                                        .arg(check.summary));
  if (check.ok) settings::addImportPython(check.python);
  updateButtons();
  emit pythonCheckAnswered(check.ok);
}

bool ImportDialog::start() {
  QString why;
  if (running_) why = tr("An import is already running.");
  else if (!pythonReady()) why = checking_ ? tr("Wait for the Python check to answer.") : tr("The Python chosen has no PyTorch: choose another.");
  else if (modules_->count() == 0) why = tr("Add the modules to import (Add Files… or Add Folder…).");
  else if (folder().isEmpty()) why = tr("Choose the folder the tasks go into.");
  else if (service_->isBusy()) why = tr("Another import is running; wait for it to end.");
  if (!why.isEmpty()) {
    say(why, true);
    return false;
  }
  QDir().mkpath(folder());
  if (!QFileInfo(folder()).isDir()) {
    say(tr("%1 cannot be made: choose another folder.").arg(QDir::toNativeSeparators(folder())), true);
    return false;
  }
  settings::setImportFolder(folder());
  results_->clear();
  made_.clear();
  running_ = true;
  started_ = true;
  progress_->setRange(0, static_cast<int>(modules_->count()));
  progress_->setValue(0);
  progress_->setVisible(true);
  say(tr("Importing %1 modules…").arg(modules_->count()));
  ImportProblemsRequest request;
  request.problems = modules();
  request.toDir = QFileInfo(folder()).absoluteFilePath();
  request.overwrite = overwrite_->isChecked();
  request.python = python();
  service_->importProblems(request);
  updateButtons();
  return true;
}

void ImportDialog::onRow(const ImportedProblem &row) {
  if (!started_) return;
  results_->append(row);
  if (row.ok) made_ << row.folder;
  if (!running_) {  // the module that was being read when Cancel was pressed
    updateButtons();
    if (row.ok) emit imported(QFileInfo(folder()).absoluteFilePath(), {row.folder});
    return;
  }
  progress_->setValue(static_cast<int>(results_->rows().size()));
  table_->resizeRowsToContents();
}

void ImportDialog::onFinished(const ImportProblemsOutcome &outcome) {
  if (!running_) return;
  running_ = false;
  progress_->setVisible(false);
  const int refused = static_cast<int>(outcome.errors.size());
  say(refused == 0 ? tr("Imported %1 of %2 modules into %3.")
                         .arg(outcome.folders.size())
                         .arg(outcome.problems.size())
                         .arg(QDir::toNativeSeparators(folder()))
                   : tr("Imported %1 of %2 modules into %3; %4 refused: the table says where and why.")
                         .arg(outcome.folders.size())
                         .arg(outcome.problems.size())
                         .arg(QDir::toNativeSeparators(folder()))
                         .arg(refused),
      refused > 0 && outcome.folders.isEmpty());
  updateButtons();
  emit imported(QFileInfo(folder()).absoluteFilePath(), outcome.folders);
}

void ImportDialog::cancel() {
  if (!running_) return;
  service_->cancel();
  running_ = false;
  progress_->setVisible(false);
  say(tr("Cancelled: %1 modules were imported before it stopped; the table lists them.").arg(made_.size()));
  updateButtons();
  if (!made_.isEmpty()) emit imported(QFileInfo(folder()).absoluteFilePath(), made_);
}

void ImportDialog::openSelected() {
  QString folder;
  const QModelIndexList picked = table_->selectionModel()->selectedRows();
  if (!picked.isEmpty()) folder = results_->data(picked.front(), ImportResultsModel::FolderRole).toString();
  if (folder.isEmpty() && !made_.isEmpty()) folder = made_.front();
  if (folder.isEmpty()) return;
  emit openTaskRequested(folder);
  accept();
}

void ImportDialog::updateButtons() {
  import_->setEnabled(!running_ && pythonReady() && modules_->count() > 0 && !folder().isEmpty());
  import_->setToolTip(pythonReady() ? QString() : tr("Needs a Python with PyTorch (checked above)"));
  cancel_->setEnabled(running_);
  openTask_->setEnabled(!running_ && !made_.isEmpty());
  remove_->setEnabled(!running_ && !modules_->selectedItems().isEmpty());
}

void ImportDialog::say(const QString &text, bool error) {
  status_->setStyleSheet(error ? QStringLiteral("color: #c62828;") : QString());
  status_->setText(text);
}

}  // namespace kwb::ui
