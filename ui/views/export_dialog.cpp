#include "ui/views/export_dialog.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QStandardPaths>
#include <QUrl>
#include <QVBoxLayout>

namespace kwb::ui {

using kwb::exporting::ExportFormat;

ExportDialog::ExportDialog(ExportService *service, const ExportRequest &request, const QString &what, QWidget *parent)
    : QDialog(parent), service_(service), request_(request) {
  setObjectName(QStringLiteral("exportDialog"));
  setWindowTitle(tr("Export Kernel"));
  auto *layout = new QVBoxLayout(this);
  auto *heading = new QLabel(tr("Exporting %1 of <b>%2</b>.").arg(what.toHtmlEscaped(), QFileInfo(request.taskFolder).fileName().toHtmlEscaped()), this);
  heading->setWordWrap(true);
  layout->addWidget(heading);

  formats_ = new QButtonGroup(this);
  const struct {
    ExportFormat format;
    QString name, text;
  } choices[] = {
      {ExportFormat::Cuda, QStringLiteral("exportFormatCuda"),
       tr("CUDA source package: the kernel with its tunables baked in, a typed C++ launcher, a CMake library and a test "
          "against the task's reference")},
      {ExportFormat::Torch, QStringLiteral("exportFormatTorch"),
       tr("PyTorch extension: the kernel as a function on tensors (setup.py), with a test timed beside the PyTorch "
          "operation it replaces")},
      {ExportFormat::Report, QStringLiteral("exportFormatReport"),
       tr("Report: Markdown and one self-contained HTML file: measurements, history, roofline, profile, what led to it")},
  };
  for (const auto &c : choices) {
    auto *button = new QRadioButton(c.text, this);
    button->setObjectName(c.name);
    formats_->addButton(button, static_cast<int>(c.format));
    layout->addWidget(button);
  }
  formats_->button(static_cast<int>(ExportFormat::Cuda))->setChecked(true);
  connect(formats_, &QButtonGroup::idToggled, this, [this](int, bool on) {
    if (on && !folderEdited_) suggestFolder();
  });

  auto *form = new QFormLayout;
  auto *row = new QHBoxLayout;
  folder_ = new QLineEdit(this);
  folder_->setObjectName(QStringLiteral("exportFolder"));
  connect(folder_, &QLineEdit::textEdited, this, [this] { folderEdited_ = true; });
  auto *browse = new QPushButton(tr("Browse…"), this);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export into"), folder_->text());
    if (!dir.isEmpty()) {
      folder_->setText(dir);
      folderEdited_ = true;
    }
  });
  row->addWidget(folder_, 1);
  row->addWidget(browse);
  form->addRow(tr("Folder:"), row);
  overwrite_ = new QCheckBox(tr("Write into the folder even if it has files in it"), this);
  overwrite_->setObjectName(QStringLiteral("exportOverwrite"));
  form->addRow(QString(), overwrite_);
  layout->addLayout(form);

  busy_ = new QProgressBar(this);
  busy_->setRange(0, 0);
  busy_->setVisible(false);
  layout->addWidget(busy_);
  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("exportStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  files_ = new QListWidget(this);
  files_->setObjectName(QStringLiteral("exportFiles"));
  files_->setVisible(false);
  layout->addWidget(files_, 1);

  auto *buttons = new QDialogButtonBox(this);
  export_ = buttons->addButton(tr("&Export"), QDialogButtonBox::AcceptRole);
  export_->setObjectName(QStringLiteral("exportStart"));
  openFolder_ = buttons->addButton(tr("&Open Folder"), QDialogButtonBox::ActionRole);
  openFolder_->setEnabled(false);
  buttons->addButton(QDialogButtonBox::Close);
  connect(export_, &QPushButton::clicked, this, [this] { start(); });
  connect(openFolder_, &QPushButton::clicked, this, [this] {
    const QString dir = outcome_ ? outcome_->dir : folder_->text();
    // Where no file manager is set up (a server, a bare desktop), say where it is instead.
    if (!QDesktopServices::openUrl(QUrl::fromLocalFile(dir))) {
      status_->setText(tr("No file manager here to open it with: the files are in %1").arg(QDir::toNativeSeparators(dir)));
      status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    }
  });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  connect(service_, &ExportService::finished, this, &ExportDialog::finish);
  suggestFolder();
  resize(640, 420);
}

ExportFormat ExportDialog::format() const { return static_cast<ExportFormat>(formats_->checkedId()); }

void ExportDialog::setFormat(ExportFormat format) { formats_->button(static_cast<int>(format))->setChecked(true); }

void ExportDialog::setFolder(const QString &dir) {
  folder_->setText(dir);
  folderEdited_ = true;
}

QString ExportDialog::folder() const { return folder_->text(); }

void ExportDialog::setOverwrite(bool on) { overwrite_->setChecked(on); }

void ExportDialog::suggestFolder() {
  QString base = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  if (base.isEmpty()) base = QDir::homePath();
  const QString task = QFileInfo(request_.taskFolder).fileName();
  folder_->setText(QDir(base).filePath(QStringLiteral("kernel-workbench-exports/%1-%2").arg(task, QLatin1String(kwb::exporting::toString(format())))));
}

bool ExportDialog::start() {
  if (running_) return false;
  if (folder_->text().trimmed().isEmpty()) {
    status_->setText(tr("Name a folder to export into."));
    return false;
  }
  ExportRequest r = request_;
  r.format = format();
  r.dir = QDir::cleanPath(folder_->text().trimmed());
  r.overwrite = overwrite_->isChecked();
  running_ = true;
  outcome_.reset();
  export_->setEnabled(false);
  openFolder_->setEnabled(false);
  busy_->setVisible(true);
  files_->clear();
  files_->setVisible(false);
  status_->setText(tr("Exporting into %1…").arg(r.dir));
  service_->exportKernel(r);
  return true;
}

void ExportDialog::finish(const ExportOutcome &outcome) {
  if (!running_) return;
  running_ = false;
  outcome_ = outcome;
  export_->setEnabled(true);
  busy_->setVisible(false);
  if (!outcome.ok) {
    status_->setText(tr("Not exported: %1").arg(outcome.error));
  } else {
    QString text = tr("Exported %1 into %2 (%n file(s)).", nullptr, static_cast<int>(outcome.files.size())).arg(outcome.what, outcome.dir);
    for (const auto &n : outcome.notes) text += QLatin1Char('\n') + tr("Note: %1").arg(n);
    status_->setText(text);
    files_->addItems(outcome.files);
    files_->setVisible(true);
    openFolder_->setEnabled(true);
  }
  emit exported(outcome);
}

}  // namespace kwb::ui
