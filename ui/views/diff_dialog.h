#pragma once
// A unified diff of two kernels, read-only, coloured by QScintilla's diff lexer: the session
// view's "Diff Against Parent" (a candidate against the line's previous turn or the group's
// incumbent). The diff itself is core's (core/text/line_diff.h).
#include <QDialog>

class QLabel;
class QsciScintilla;

namespace kwb::ui {

class DiffDialog : public QDialog {
  Q_OBJECT

 public:
  DiffDialog(const QString &oldText, const QString &oldName, const QString &newText, const QString &newName,
             QWidget *parent = nullptr);

  QString diffText() const;
  QString summary() const;  // "12 lines removed, 30 added" or "No differences"

 private:
  QLabel *summary_ = nullptr;
  QsciScintilla *view_ = nullptr;
};

}  // namespace kwb::ui
