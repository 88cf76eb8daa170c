#include "ui/views/find_bar.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QToolButton>

#include "ui/views/cuda_editor.h"
#include "ui/views/editor_tabs.h"

namespace kwb::ui {

FindBar::FindBar(EditorTabs *tabs, QWidget *parent) : QWidget(parent), tabs_(tabs) {
  setObjectName(QStringLiteral("findBar"));

  field_ = new QLineEdit(this);
  field_->setObjectName(QStringLiteral("findField"));
  field_->setPlaceholderText(tr("Find in file"));
  field_->setClearButtonEnabled(true);
  field_->installEventFilter(this);
  connect(field_, &QLineEdit::textEdited, this, [this](const QString &text) {
    if (text.isEmpty()) {
      showResult(true);
      return;
    }
    search(true, true);  // as you type: the match grows where it stands
  });

  auto *previous = new QToolButton(this);
  previous->setObjectName(QStringLiteral("findPreviousButton"));
  previous->setArrowType(Qt::UpArrow);
  previous->setToolTip(tr("Previous match (Shift+F3)"));
  connect(previous, &QToolButton::clicked, this, [this] { find(false); });
  auto *next = new QToolButton(this);
  next->setObjectName(QStringLiteral("findNextButton"));
  next->setArrowType(Qt::DownArrow);
  next->setToolTip(tr("Next match (F3)"));
  connect(next, &QToolButton::clicked, this, [this] { find(true); });

  matchCase_ = new QCheckBox(tr("Match case"), this);
  matchCase_->setObjectName(QStringLiteral("findMatchCase"));

  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("findStatus"));
  status_->setStyleSheet(QStringLiteral("color: #b91c1c;"));

  auto *closeButton = new QToolButton(this);
  closeButton->setObjectName(QStringLiteral("findCloseButton"));
  closeButton->setText(QStringLiteral("✕"));
  closeButton->setAutoRaise(true);
  closeButton->setToolTip(tr("Close (Escape)"));
  connect(closeButton, &QToolButton::clicked, this, &FindBar::dismiss);

  auto *layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 3, 6, 3);
  layout->setSpacing(4);
  layout->addWidget(new QLabel(tr("Find:"), this));
  layout->addWidget(field_, 1);
  layout->addWidget(previous);
  layout->addWidget(next);
  layout->addWidget(matchCase_);
  layout->addWidget(status_);
  layout->addStretch(0);
  layout->addWidget(closeButton);
  hide();
}

void FindBar::open() {
  if (CudaEditor *editor = tabs_->currentEditor()) {
    const QString selected = editor->selectedText();
    if (!selected.isEmpty() && !selected.contains(QLatin1Char('\n'))) field_->setText(selected);
  }
  show();
  field_->setFocus(Qt::ShortcutFocusReason);
  field_->selectAll();
}

void FindBar::dismiss() {
  hide();
  showResult(true);
  if (CudaEditor *editor = tabs_->currentEditor()) editor->setFocus(Qt::OtherFocusReason);
}

bool FindBar::find(bool forward) {
  if (field_->text().isEmpty()) {
    open();
    return false;
  }
  return search(forward, false);
}

bool FindBar::search(bool forward, bool fromSelectionStart) {
  CudaEditor *editor = tabs_->currentEditor();
  if (!editor) return false;
  int lineFrom = -1;
  int indexFrom = -1;
  int lineTo = -1;
  int indexTo = -1;
  editor->getSelection(&lineFrom, &indexFrom, &lineTo, &indexTo);
  if (lineFrom < 0) {
    editor->getCursorPosition(&lineFrom, &indexFrom);
    lineTo = lineFrom;
    indexTo = indexFrom;
  }
  // Forward from the end of the current match (or its start, while typing); backward from its start.
  const bool fromStart = fromSelectionStart || !forward;
  const bool found = editor->findFirst(field_->text(), /*re=*/false, matchCase_->isChecked(),
                                       /*wo=*/false, /*wrap=*/true, forward, fromStart ? lineFrom : lineTo,
                                       fromStart ? indexFrom : indexTo, /*show=*/true);
  showResult(found);
  return found;
}

void FindBar::showResult(bool found) {
  status_->setText(found ? QString() : tr("No matches"));
  field_->setStyleSheet(found ? QString() : QStringLiteral("QLineEdit { background: #fee2e2; }"));
}

bool FindBar::eventFilter(QObject *watched, QEvent *event) {
  if (watched == field_ && event->type() == QEvent::KeyPress) {
    const auto *key = static_cast<QKeyEvent *>(event);
    if (key->key() == Qt::Key_Escape) {
      dismiss();
      return true;
    }
    if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
      find(!(key->modifiers() & Qt::ShiftModifier));
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace kwb::ui
