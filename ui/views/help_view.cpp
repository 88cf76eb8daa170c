#include "ui/views/help_view.h"

#include <QDesktopServices>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QRegularExpression>
#include <QSplitter>
#include <QTextBrowser>
#include <QTextDocument>
#include <QUrl>
#include <QVBoxLayout>

#include "core/paths/install_paths.h"

namespace kwb::ui {

namespace {

QString readText(const QString &path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return QString::fromUtf8(f.readAll());
}

QStringList wordsOf(const QString &text) { return text.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts); }

}  // namespace

QString guideDir() {
  QStringList candidates;
  if (const QString env = qEnvironmentVariable("KWB_GUIDE_DIR"); !env.isEmpty()) candidates << env;
  if (const auto prompts = kwb::bundledPromptsDir())
    candidates << QString::fromStdString((prompts->parent_path() / "guide").string());
  for (const QString &c : candidates)
    if (QFileInfo(QDir(c).filePath(QStringLiteral("index.md"))).isFile()) return QDir(c).absolutePath();
  return {};
}

QList<GuideChapter> readGuide(const QString &dir, QString &problem) {
  QList<GuideChapter> out;
  if (dir.isEmpty()) {
    problem = QObject::tr("The User Guide was not found: it ships in resources/guide (installed: "
                          "share/kernel-workbench/guide); KWB_GUIDE_DIR names another folder.");
    return out;
  }
  const QString index = readText(QDir(dir).filePath(QStringLiteral("index.md")));
  GuideChapter front{QStringLiteral("index.md"), QObject::tr("Contents"), index};
  out << front;
  static const QRegularExpression item(QStringLiteral(R"(^\d+\.\s+\[([^\]]+)\]\(([^)\s]+\.md)\))"),
                                       QRegularExpression::MultilineOption);
  for (auto it = item.globalMatch(index); it.hasNext();) {
    const auto m = it.next();
    GuideChapter c;
    c.title = m.captured(1);
    c.title.remove(QLatin1Char('`'));
    c.file = m.captured(2);
    c.text = readText(QDir(dir).filePath(c.file));
    if (c.text.isEmpty()) {
      problem = QObject::tr("%1 is listed in index.md but cannot be read").arg(QDir(dir).filePath(c.file));
      continue;
    }
    out << c;
  }
  return out;
}

int guideHits(const QString &text, const QStringList &words) {
  int total = 0;
  for (const QString &w : words) {
    const int n = static_cast<int>(text.count(w, Qt::CaseInsensitive));
    if (n == 0) return 0;
    total += n;
  }
  return total;
}

HelpView::HelpView(QWidget *parent) : QWidget(parent, Qt::Window) {
  setObjectName(QStringLiteral("helpView"));
  setWindowTitle(tr("Kernel Workbench User Guide"));
  search_ = new QLineEdit(this);
  search_->setObjectName(QStringLiteral("helpSearch"));
  search_->setPlaceholderText(tr("Search the guide (Enter: next match)"));
  search_->setClearButtonEnabled(true);
  list_ = new QListWidget(this);
  list_->setObjectName(QStringLiteral("helpChapters"));
  // A long title wraps onto a second line at the list's width (no sideways scrolling), and is
  // whole in its tooltip.
  list_->setWordWrap(true);
  list_->setTextElideMode(Qt::ElideNone);
  list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  list_->setResizeMode(QListView::Adjust);
  list_->setUniformItemSizes(false);
  browser_ = new QTextBrowser(this);
  browser_->setObjectName(QStringLiteral("helpBrowser"));
  browser_->setOpenLinks(false);
  status_ = new QLabel(this);
  status_->setWordWrap(true);

  auto *side = new QWidget(this);
  auto *sideLayout = new QVBoxLayout(side);
  sideLayout->setContentsMargins(0, 0, 0, 0);
  sideLayout->addWidget(search_);
  sideLayout->addWidget(list_, 1);
  sideLayout->addWidget(status_);
  auto *split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(side);
  split->addWidget(browser_);
  split->setStretchFactor(1, 1);
  split->setSizes({320, 860});
  auto *layout = new QHBoxLayout(this);
  layout->addWidget(split);

  dir_ = guideDir();
  QString problem;
  chapters_ = readGuide(dir_, problem);
  if (!dir_.isEmpty()) browser_->setSearchPaths({dir_});
  status_->setText(problem);
  listChapters();

  connect(search_, &QLineEdit::textChanged, this, &HelpView::search);
  connect(search_, &QLineEdit::returnPressed, this, &HelpView::nextMatch);
  connect(list_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (row >= 0) showChapter(list_->item(row)->data(Qt::UserRole).toString());
  });
  connect(browser_, &QTextBrowser::anchorClicked, this, &HelpView::followLink);
  resize(1180, 820);
  if (!chapters_.isEmpty()) showChapter(chapters_.front().file);
  else browser_->setPlainText(problem);
}

QStringList HelpView::listedChapters() const {
  QStringList out;
  for (int i = 0; i < list_->count(); ++i) out << list_->item(i)->data(Qt::UserRole).toString();
  return out;
}

void HelpView::listChapters() {
  const QSignalBlocker quiet(list_);
  list_->clear();
  int shown = 0;
  for (const GuideChapter &c : chapters_) {
    const int hits = words_.isEmpty() ? 0 : guideHits(c.text, words_);
    if (!words_.isEmpty() && hits == 0) continue;
    auto *item = new QListWidgetItem(words_.isEmpty() ? c.title : tr("%1 (%2)").arg(c.title).arg(hits), list_);
    item->setData(Qt::UserRole, c.file);
    item->setToolTip(c.title);
    if (c.file == current_) list_->setCurrentItem(item);
    ++shown;
  }
  if (!words_.isEmpty())
    status_->setText(shown == 0 ? tr("No chapter holds \"%1\".").arg(words_.join(QLatin1Char(' ')))
                                : tr("%n chapter(s) hold every word.", nullptr, shown));
}

void HelpView::search(const QString &text) {
  if (search_->text() != text) {
    const QSignalBlocker quiet(search_);
    search_->setText(text);
  }
  words_ = wordsOf(text);
  if (words_.isEmpty()) status_->clear();
  listChapters();
  // The chapter shown holds no match: show the first that does.
  const QStringList listed = listedChapters();
  if (!words_.isEmpty() && !listed.isEmpty() && !listed.contains(current_)) showChapter(listed.front());
  else markMatches();
}

bool HelpView::showChapter(const QString &file) {
  for (const GuideChapter &c : chapters_) {
    if (c.file != file) continue;
    current_ = file;
    browser_->document()->setBaseUrl(QUrl::fromLocalFile(QDir(dir_).filePath(file)));
    browser_->setMarkdown(c.text);
    for (int i = 0; i < list_->count(); ++i)
      if (list_->item(i)->data(Qt::UserRole).toString() == file) {
        const QSignalBlocker quiet(list_);
        list_->setCurrentRow(i);
      }
    markMatches();
    return true;
  }
  return false;
}

void HelpView::markMatches() {
  QList<QTextEdit::ExtraSelection> marks;
  QTextCharFormat format;
  format.setBackground(QColor(0xff, 0xe0, 0x66));
  for (const QString &w : words_) {
    for (QTextCursor at = browser_->document()->find(w); !at.isNull(); at = browser_->document()->find(w, at)) {
      QTextEdit::ExtraSelection s;
      s.cursor = at;
      s.format = format;
      marks << s;
    }
  }
  marked_ = static_cast<int>(marks.size());
  browser_->setExtraSelections(marks);
  if (!marks.isEmpty()) {
    QTextCursor first = marks.front().cursor;
    first.clearSelection();
    browser_->setTextCursor(first);
    browser_->ensureCursorVisible();
  }
}

void HelpView::nextMatch() {
  if (words_.isEmpty()) return;
  if (!browser_->find(words_.front())) {  // past the last: from the top
    browser_->moveCursor(QTextCursor::Start);
    browser_->find(words_.front());
  }
}

void HelpView::followLink(const QUrl &url) {
  if (url.isRelative() || url.isLocalFile()) {
    const QString file = QFileInfo(url.path()).fileName();
    if (file.endsWith(QLatin1String(".md")) && showChapter(file)) return;
    if (url.isRelative() && url.path().isEmpty() && url.hasFragment()) {  // an anchor in this chapter
      browser_->scrollToAnchor(url.fragment());
      return;
    }
    const QString local = url.isLocalFile() ? url.toLocalFile() : QDir(dir_).absoluteFilePath(url.path());
    QDesktopServices::openUrl(QUrl::fromLocalFile(local));
    return;
  }
  QDesktopServices::openUrl(url);
}

}  // namespace kwb::ui
