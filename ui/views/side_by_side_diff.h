#pragma once
// Two kernels side by side, row for row (core/text/line_diff.h, sideBySide): unchanged lines
// plain, removed lines red on the left, added lines green on the right, changed lines yellow on
// both with the part that differs in a stronger tint; blank rows keep the columns aligned, and
// the two columns scroll together. Read-only.
#include <QWidget>

class QLabel;
class QPlainTextEdit;

namespace kwb::ui {

class SideBySideDiff : public QWidget {
  Q_OBJECT

 public:
  explicit SideBySideDiff(QWidget *parent = nullptr);

  void setTexts(const QString &oldText, const QString &oldName, const QString &newText, const QString &newName);
  void clear();

  int rows() const { return rows_; }
  int changedRows() const { return changed_; }   // rows with a line on both sides that differ
  int removedRows() const { return removed_; }
  int addedRows() const { return added_; }
  // The marked (intra-line) parts of the right column, in order, for tests and the reader.
  QStringList markedOnTheRight() const { return markedRight_; }
  QPlainTextEdit *left() const { return left_; }
  QPlainTextEdit *right() const { return right_; }

 private:
  QLabel *leftTitle_ = nullptr, *rightTitle_ = nullptr;
  QPlainTextEdit *left_ = nullptr, *right_ = nullptr;
  int rows_ = 0, changed_ = 0, removed_ = 0, added_ = 0;
  QStringList markedRight_;
};

}  // namespace kwb::ui
