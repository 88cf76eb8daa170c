#include "ui/views/log_panel.h"

#include <QAction>
#include <QContextMenuEvent>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QIcon>
#include <QMenu>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextCursor>
#include <QTime>
#include <QToolBar>

namespace kwb::ui {

namespace {

constexpr int kMaxLines = 10000;

QString levelName(LogPanel::Level level) {
  switch (level) {
    case LogPanel::Level::Info:
      return QStringLiteral("info ");
    case LogPanel::Level::Warning:
      return QStringLiteral("warn ");
    case LogPanel::Level::Error:
      return QStringLiteral("error");
  }
  return {};
}

QColor levelColour(LogPanel::Level level) {
  switch (level) {
    case LogPanel::Level::Info:
      return QColor(0x25, 0x63, 0xeb);
    case LogPanel::Level::Warning:
      return QColor(0xb4, 0x53, 0x09);
    case LogPanel::Level::Error:
      return QColor(0xdc, 0x26, 0x26);
  }
  return {};
}

QColor messageColour(LogPanel::Level level) {
  switch (level) {
    case LogPanel::Level::Info:
      return QColor(0x1f, 0x29, 0x37);
    case LogPanel::Level::Warning:
      return QColor(0x92, 0x40, 0x0e);
    case LogPanel::Level::Error:
      return QColor(0xb9, 0x1c, 0x1c);
  }
  return {};
}

}  // namespace

LogPanel::LogPanel(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("logPanel"));
  view_ = new QPlainTextEdit(this);
  view_->setObjectName(QStringLiteral("logView"));
  view_->setReadOnly(true);
  view_->setUndoRedoEnabled(false);
  view_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  view_->setMaximumBlockCount(kMaxLines);
  view_->setFrameShape(QFrame::NoFrame);
  QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  font.setStyleHint(QFont::Monospace);
  view_->setFont(font);

  clear_ =
      new QAction(QIcon::fromTheme(QStringLiteral("edit-clear"), QIcon(QStringLiteral(":/icons/clear.svg"))),
                  tr("Clear Log"), this);
  clear_->setObjectName(QStringLiteral("actionClearLog"));
  clear_->setToolTip(tr("Clear the log"));
  connect(clear_, &QAction::triggered, this, &LogPanel::clear);

  auto *tools = new QToolBar(this);
  tools->setOrientation(Qt::Vertical);
  tools->setIconSize(QSize(16, 16));
  tools->addAction(clear_);

  view_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(view_, &QWidget::customContextMenuRequested, this, [this](const QPoint &pos) {
    QMenu *menu = view_->createStandardContextMenu(pos);
    menu->addSeparator();
    menu->addAction(clear_);
    menu->setAttribute(Qt::WA_DeleteOnClose);
    menu->popup(view_->viewport()->mapToGlobal(pos));
  });

  auto *layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(view_, 1);
  layout->addWidget(tools);
}

void LogPanel::append(Level level, const QString &message) {
  QScrollBar *bar = view_->verticalScrollBar();
  const bool atEnd = bar->value() == bar->maximum();

  QTextCursor cursor(view_->document());
  cursor.movePosition(QTextCursor::End);
  if (!view_->document()->isEmpty()) cursor.insertBlock();

  QTextCharFormat timeFormat;
  timeFormat.setForeground(QColor(0x8a, 0x93, 0xa1));
  cursor.insertText(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")) + QLatin1String("  "),
                    timeFormat);

  QTextCharFormat levelFormat;
  levelFormat.setForeground(levelColour(level));
  levelFormat.setFontWeight(QFont::Bold);
  cursor.insertText(levelName(level), levelFormat);

  QTextCharFormat messageFormat;
  messageFormat.setForeground(messageColour(level));
  cursor.insertText(QLatin1String("  ") + message, messageFormat);

  ++count_;
  if (atEnd) bar->setValue(bar->maximum());
  emit messageAppended(level, message);
}

QString LogPanel::text() const {
  return view_->toPlainText();
}

void LogPanel::clear() {
  view_->clear();
  count_ = 0;
}

}  // namespace kwb::ui
