#pragma once
// Help ▸ User Guide: the Markdown guide the workbench ships (resources/guide: index.md lists the
// chapters in order), rendered, with the chapters down the side and a search over all of them:
// the list narrows to the chapters holding every word searched, each with its count, and the
// chapter shown has the words marked; Enter goes to the next one. Links between chapters follow;
// links out of the guide open in the desktop's browser.
#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

class QLabel;
class QLineEdit;
class QListWidget;
class QTextBrowser;

namespace kwb::ui {

struct GuideChapter {
  QString file;   // "06-the-window.md"
  QString title;  // "The window"
  QString text;   // the Markdown
};

// The guide's folder: $KWB_GUIDE_DIR, else `guide` beside the shipped prompts (the source tree's
// resources/guide from a build tree, <prefix>/share/kernel-workbench/guide installed); empty when
// none holds index.md.
QString guideDir();
// The chapters index.md lists, in order, each read; `problem` says what was missing.
QList<GuideChapter> readGuide(const QString &dir, QString &problem);
// How many times each word (case-insensitive) occurs in `text`; 0 when any word is missing.
int guideHits(const QString &text, const QStringList &words);

class HelpView : public QWidget {
  Q_OBJECT

 public:
  explicit HelpView(QWidget *parent = nullptr);

  // Shows a chapter (its file name, "06-the-window.md"); false when the guide has none of that name.
  bool showChapter(const QString &file);
  QString currentChapter() const { return current_; }
  void search(const QString &text);
  // The chapters the list shows now, by file name.
  QStringList listedChapters() const;
  // The matches marked in the chapter shown.
  int marked() const { return marked_; }
  const QList<GuideChapter> &chapters() const { return chapters_; }

 private:
  void listChapters();
  void markMatches();
  void nextMatch();
  void followLink(const QUrl &url);

  QList<GuideChapter> chapters_;
  QString dir_;
  QLineEdit *search_ = nullptr;
  QListWidget *list_ = nullptr;
  QTextBrowser *browser_ = nullptr;
  QLabel *status_ = nullptr;
  QString current_;
  QStringList words_;
  int marked_ = 0;
};

}  // namespace kwb::ui
