#pragma once
// The find bar under the editor tabs (Ctrl+F): a text field, previous/next buttons and a match-case
// switch. Typing searches as you type from where the current match starts; Enter or F3 finds the
// next match, Shift+Enter or Shift+F3 the previous one; both wrap around. Escape closes the bar.
#include <QWidget>

class QCheckBox;
class QLabel;
class QLineEdit;

namespace kwb::ui {

class EditorTabs;

class FindBar : public QWidget {
  Q_OBJECT

 public:
  explicit FindBar(EditorTabs *tabs, QWidget *parent = nullptr);

  QLineEdit *field() const { return field_; }
  QCheckBox *matchCaseBox() const { return matchCase_; }

  // Shows the bar, takes the current editor's one-line selection as the text, focuses the field.
  void open();
  // Hides the bar and gives the focus back to the editor.
  void dismiss();
  // Finds the next (forward) or previous match of the field's text in the current editor and
  // selects it; false when there is none (the field says so).
  bool find(bool forward);

 protected:
  bool eventFilter(QObject *watched, QEvent *event) override;

 private:
  bool search(bool forward, bool fromSelectionStart);
  void showResult(bool found);

  EditorTabs *tabs_ = nullptr;
  QLineEdit *field_ = nullptr;
  QCheckBox *matchCase_ = nullptr;
  QLabel *status_ = nullptr;
};

}  // namespace kwb::ui
