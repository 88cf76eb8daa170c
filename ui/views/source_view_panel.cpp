#include "ui/views/source_view_panel.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTextBlock>
#include <QVBoxLayout>

#include "core/task/manifest_parser.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

namespace {

QPlainTextEdit *codeView(QWidget *parent) {
  auto *v = new QPlainTextEdit(parent);
  v->setReadOnly(true);
  v->setLineWrapMode(QPlainTextEdit::NoWrap);
  v->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  v->setMinimumHeight(40);
  return v;
}

QTextEdit::ExtraSelection lineSelection(QPlainTextEdit *view, int block, const QColor &colour) {
  QTextEdit::ExtraSelection s;
  s.cursor = QTextCursor(view->document()->findBlockByNumber(block));
  s.format.setBackground(colour);
  s.format.setProperty(QTextFormat::FullWidthSelection, true);
  return s;
}

}  // namespace

SourceViewPanel::SourceViewPanel(QWidget *parent)
    : QWidget(parent), jobs_(new BackgroundJobs(QStringLiteral("listing"), this)) {
  kind_ = new QComboBox(this);
  kind_->addItem(tr("SASS"));
  kind_->addItem(tr("PTX"));
  kind_->setToolTip(tr("SASS: what the GPU runs (nvdisasm). PTX: the virtual ISA NVRTC or nvcc emits."));
  refresh_ = new QPushButton(tr("Refresh"), this);
  compare_ = new QPushButton(tr("Compare with…"), this);
  compare_->setToolTip(tr("Diff this candidate's listing against another .cu file's"));
  status_ = new QLabel(tr("Open a task and press Refresh to see the kernel in the editor beside its SASS or PTX."), this);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  source_ = codeView(this);
  listing_ = codeView(this);

  connect(kind_, &QComboBox::currentIndexChanged, this, [this] { diffMode_ ? start(true) : refresh(); });
  connect(refresh_, &QPushButton::clicked, this, &SourceViewPanel::refreshRequested);
  connect(compare_, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getOpenFileName(this, tr("Compare with"), QFileInfo(sourceName_).absolutePath(),
                                                      tr("CUDA sources (*.cu *.cuh);;All files (*)"));
    if (file.isEmpty()) return;
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly)) {
      status_->setText(tr("Cannot read %1").arg(file));
      return;
    }
    compareWith(QString::fromUtf8(f.readAll()), file);
  });
  connect(source_, &QPlainTextEdit::cursorPositionChanged, this, [this] {
    if (!diffMode_) selectSourceLine(source_->textCursor().blockNumber() + 1);
  });
  connect(listing_, &QPlainTextEdit::cursorPositionChanged, this, [this] {
    if (!diffMode_) selectListingLine(listing_->textCursor().blockNumber());
  });

  auto *bar = new QHBoxLayout;
  bar->addWidget(kind_);
  bar->addWidget(refresh_);
  bar->addWidget(compare_);
  bar->addWidget(status_, 1);
  auto *split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(source_);
  split->addWidget(listing_);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  auto *layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(split, 1);
}

SourceViewPanel::~SourceViewPanel() = default;

void SourceViewPanel::showCandidate(const QString &taskFolder, const QString &source, const QString &sourceName) {
  taskFolder_ = taskFolder;
  sourceText_ = source;
  sourceName_ = sourceName;
  diffMode_ = false;
  source_->setPlainText(source);
  refresh();
}

void SourceViewPanel::compareWith(const QString &otherSource, const QString &otherName) {
  otherText_ = otherSource;
  otherName_ = otherName;
  start(true);
}

void SourceViewPanel::setKind(kwb::ListingKind kind) { kind_->setCurrentIndex(kind == kwb::ListingKind::Sass ? 0 : 1); }

void SourceViewPanel::showProblem(const QString &text) {
  status_->setText(text);
}

void SourceViewPanel::refresh() {
  if (taskFolder_.isEmpty()) return;
  start(false);
}

void SourceViewPanel::start(bool diff) {
  // A listing asked for while another is made supersedes it: the older answer is dropped.
  busy_ = true;
  diffMode_ = diff;
  const auto kind = kind_->currentIndex() == 0 ? kwb::ListingKind::Sass : kwb::ListingKind::Ptx;
  status_->setText(diff ? tr("Comparing with %1…").arg(QFileInfo(otherName_).fileName())
                        : tr("Compiling %1 for its %2…").arg(QFileInfo(sourceName_).fileName(), kind_->currentText()));
  const QString folder = taskFolder_, text = sourceText_, name = sourceName_, otherText = otherText_, otherName = otherName_;
  const std::string arch = arch_.toStdString();
  jobs_->run(this, QStringLiteral("listing"), [=](const JobTicket &) {
    Answer a;
    a.diff = diff;
    a.otherName = otherName;
    try {
      const auto task = kwb::loadTask(toFsPath(folder));
      const kwb::Compiler compiler;
      a.listing = kwb::candidateListing(compiler, task, text.toStdString(), name.toStdString(), arch, kind);
      if (!a.listing.ok) {
        a.error = QString::fromStdString(a.listing.error);
      } else if (diff) {
        const auto other = kwb::candidateListing(compiler, task, otherText.toStdString(), otherName.toStdString(), arch, kind);
        if (!other.ok) a.error = QStringLiteral("%1: %2").arg(otherName, QString::fromStdString(other.error));
        else a.lines = kwb::diffListings(a.listing.text, other.text);
      }
    } catch (const std::exception &e) {
      a.error = QString::fromStdString(e.what());
    }
    return a;
  }, [this](Answer a) { onAnswer(a); });
}

void SourceViewPanel::onAnswer(const Answer &a) {
  busy_ = false;
  markedListing_ = 0;
  markedSource_ = 0;
  if (!a.error.isEmpty()) {
    shown_ = {};
    listing_->setPlainText(QString());
    status_->setText(tr("No listing: %1").arg(a.error));
    emit ready();
    return;
  }
  const QString kind = kind_->currentText();
  if (a.diff) {
    shown_ = {};
    listing_->setPlainText(QString::fromStdString(kwb::formatDiff(a.lines)));
    QList<QTextEdit::ExtraSelection> marks;
    int added = 0, removed = 0;
    for (int i = 0; i < static_cast<int>(a.lines.size()); ++i) {
      if (a.lines[i].kind == kwb::DiffLine::Kind::Added) {
        ++added;
        marks << lineSelection(listing_, i, QColor(0xd4, 0xf4, 0xd4));
      } else if (a.lines[i].kind == kwb::DiffLine::Kind::Removed) {
        ++removed;
        marks << lineSelection(listing_, i, QColor(0xf8, 0xd4, 0xd4));
      }
    }
    listing_->setExtraSelections(marks);
    status_->setText(tr("%1 diff against %2: %3 line(s) only here (-), %4 only there (+)")
                         .arg(kind, QFileInfo(a.otherName).fileName())
                         .arg(removed)
                         .arg(added));
  } else {
    shown_ = a.listing.listing;
    QStringList lines;
    for (const auto &l : shown_.lines) lines << QString::fromStdString(l.text);
    listing_->setPlainText(lines.join(QLatin1Char('\n')));
    status_->setText(shown_.hasLineInfo
                         ? tr("%1 of %2: %3 lines; click a source line to see its instructions")
                               .arg(kind, QFileInfo(sourceName_).fileName())
                               .arg(shown_.lines.size())
                         : tr("%1 of %2: %3 lines, without line information (a host-launcher library)")
                               .arg(kind, QFileInfo(sourceName_).fileName())
                               .arg(shown_.lines.size()));
  }
  emit ready();
}

void SourceViewPanel::markListing(const std::vector<int> &lines) {
  QList<QTextEdit::ExtraSelection> marks;
  for (int i : lines) marks << lineSelection(listing_, i, QColor(0xff, 0xf0, 0xa0));
  listing_->setExtraSelections(marks);
  markedListing_ = static_cast<int>(lines.size());
}

int SourceViewPanel::selectSourceLine(int line) {
  if (diffMode_ || shown_.lines.empty()) return 0;
  const auto lines = shown_.linesFor(line);
  markListing(lines);
  source_->setExtraSelections({lineSelection(source_, line - 1, QColor(0xff, 0xf0, 0xa0))});
  markedSource_ = line;
  if (!lines.empty()) {
    const QTextBlock block = listing_->document()->findBlockByNumber(lines.front());
    QTextCursor c(block);
    listing_->blockSignals(true);
    listing_->setTextCursor(c);
    listing_->blockSignals(false);
    listing_->centerCursor();
  }
  return static_cast<int>(lines.size());
}

int SourceViewPanel::selectListingLine(int index) {
  if (diffMode_ || index < 0 || index >= static_cast<int>(shown_.lines.size())) return 0;
  const int line = shown_.lines[index].sourceLine;
  if (line <= 0) return 0;
  markListing(shown_.linesFor(line));
  source_->setExtraSelections({lineSelection(source_, line - 1, QColor(0xff, 0xf0, 0xa0))});
  markedSource_ = line;
  QTextCursor c(source_->document()->findBlockByNumber(line - 1));
  source_->blockSignals(true);
  source_->setTextCursor(c);
  source_->blockSignals(false);
  source_->centerCursor();
  return line;
}

QString SourceViewPanel::statusText() const { return status_->text(); }
QString SourceViewPanel::listingText() const { return listing_->toPlainText(); }

}  // namespace kwb::ui
