#pragma once
// The Log panel: read-only, one timestamped line per message, coloured by level.
#include <QString>
#include <QWidget>

class QAction;
class QPlainTextEdit;

namespace kwb::ui {

class LogPanel : public QWidget {
  Q_OBJECT

 public:
  enum class Level { Info, Warning, Error };
  Q_ENUM(Level)

  explicit LogPanel(QWidget *parent = nullptr);

  void append(Level level, const QString &message);
  void info(const QString &message) { append(Level::Info, message); }
  void warning(const QString &message) { append(Level::Warning, message); }
  void error(const QString &message) { append(Level::Error, message); }

  // Everything shown, as plain text ("12:01:02  error  message" per line).
  QString text() const;
  int messageCount() const { return count_; }
  QAction *clearAction() const { return clear_; }
  QPlainTextEdit *view() const { return view_; }

 public slots:
  void clear();

 signals:
  void messageAppended(kwb::ui::LogPanel::Level level, const QString &message);

 private:
  QPlainTextEdit *view_ = nullptr;
  QAction *clear_ = nullptr;
  int count_ = 0;
};

}  // namespace kwb::ui
