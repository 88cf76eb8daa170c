#include "ui/views/side_by_side_diff.h"

#include <QFontDatabase>
#include <QGridLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextCursor>

#include "core/text/line_diff.h"

namespace kwb::ui {

namespace {

const QColor kRemoved(0xfd, 0xe2, 0xe2), kAdded(0xdc, 0xfc, 0xe7), kChanged(0xfe, 0xf9, 0xc3), kFiller(0xf3, 0xf4, 0xf6);
const QColor kRemovedMark(0xfc, 0xa5, 0xa5), kAddedMark(0x86, 0xef, 0xac);

QPlainTextEdit *column(QWidget *parent, const QString &name) {
  auto *e = new QPlainTextEdit(parent);
  e->setObjectName(name);
  e->setReadOnly(true);
  e->setLineWrapMode(QPlainTextEdit::NoWrap);
  e->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  return e;
}

void paintBlock(QPlainTextEdit *edit, int block, const QColor &background) {
  QTextCursor c(edit->document()->findBlockByNumber(block));
  QTextBlockFormat f;
  f.setBackground(background);
  c.setBlockFormat(f);
}

void markRange(QPlainTextEdit *edit, int block, int from, int to, const QColor &background) {
  if (to <= from) return;
  const QTextBlock b = edit->document()->findBlockByNumber(block);
  QTextCursor c(b);
  c.setPosition(b.position() + from);
  c.setPosition(b.position() + to, QTextCursor::KeepAnchor);
  QTextCharFormat f;
  f.setBackground(background);
  c.mergeCharFormat(f);
}

// The UTF-16 offset of a byte offset into UTF-8 text.
int utf16Offset(const std::string &text, std::size_t bytes) {
  return static_cast<int>(QString::fromUtf8(text.data(), static_cast<qsizetype>(std::min(bytes, text.size()))).size());
}

}  // namespace

SideBySideDiff::SideBySideDiff(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("sideBySideDiff"));
  leftTitle_ = new QLabel(this);
  rightTitle_ = new QLabel(this);
  left_ = column(this, QStringLiteral("diffLeft"));
  right_ = column(this, QStringLiteral("diffRight"));
  auto *layout = new QGridLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(leftTitle_, 0, 0);
  layout->addWidget(rightTitle_, 0, 1);
  layout->addWidget(left_, 1, 0);
  layout->addWidget(right_, 1, 1);
  // One scroll for both: the rows line up. The right column's scroll bar moves both; the left's
  // would only take its width.
  left_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  connect(left_->verticalScrollBar(), &QScrollBar::valueChanged, right_->verticalScrollBar(), &QScrollBar::setValue);
  connect(right_->verticalScrollBar(), &QScrollBar::valueChanged, left_->verticalScrollBar(), &QScrollBar::setValue);
  connect(left_->horizontalScrollBar(), &QScrollBar::valueChanged, right_->horizontalScrollBar(), &QScrollBar::setValue);
  connect(right_->horizontalScrollBar(), &QScrollBar::valueChanged, left_->horizontalScrollBar(), &QScrollBar::setValue);
}

void SideBySideDiff::clear() {
  left_->clear();
  right_->clear();
  leftTitle_->clear();
  rightTitle_->clear();
  rows_ = changed_ = removed_ = added_ = 0;
  markedRight_.clear();
}

void SideBySideDiff::setTexts(const QString &oldText, const QString &oldName, const QString &newText, const QString &newName) {
  clear();
  const std::string a = oldText.toStdString(), b = newText.toStdString();
  const auto rows = kwb::sideBySide(a, b);
  QStringList leftLines, rightLines;
  for (const auto &r : rows) {
    leftLines << (r.oldLine ? QString::fromStdString(r.oldText) : QString());
    rightLines << (r.newLine ? QString::fromStdString(r.newText) : QString());
  }
  left_->setPlainText(leftLines.join(QLatin1Char('\n')));
  right_->setPlainText(rightLines.join(QLatin1Char('\n')));
  int i = 0;
  for (const auto &r : rows) {
    switch (r.kind) {
      case kwb::SideBySideRow::Kind::Same: break;
      case kwb::SideBySideRow::Kind::Removed:
        paintBlock(left_, i, kRemoved);
        paintBlock(right_, i, kFiller);
        ++removed_;
        break;
      case kwb::SideBySideRow::Kind::Added:
        paintBlock(left_, i, kFiller);
        paintBlock(right_, i, kAdded);
        ++added_;
        break;
      case kwb::SideBySideRow::Kind::Changed:
        paintBlock(left_, i, kChanged);
        paintBlock(right_, i, kChanged);
        markRange(left_, i, utf16Offset(r.oldText, r.oldFrom), utf16Offset(r.oldText, r.oldTo), kRemovedMark);
        markRange(right_, i, utf16Offset(r.newText, r.newFrom), utf16Offset(r.newText, r.newTo), kAddedMark);
        markedRight_ << QString::fromStdString(r.newText.substr(r.newFrom, r.newTo - r.newFrom));
        ++changed_;
        break;
    }
    ++i;
  }
  rows_ = static_cast<int>(rows.size());
  leftTitle_->setText(tr("%1 (%n line(s) removed)", nullptr, removed_ + changed_).arg(oldName));
  rightTitle_->setText(tr("%1 (%n line(s) added)", nullptr, added_ + changed_).arg(newName));
}

}  // namespace kwb::ui
