#pragma once
// What the window shows before a task is open (issue 48, 1): what to do first, each a button —
// open a task (the bundled suite is in the Tasks panel), import a PyTorch operator, connect an
// LLM — and a line on where things are. The buttons trigger the window's own actions.
#include <QWidget>

class QAction;
class QLabel;
class QPushButton;

namespace kwb::ui {

class StartPage : public QWidget {
  Q_OBJECT

 public:
  // openTask, importOperator: the window's actions (their text and shortcut are shown);
  // connectLlm: emitted by the third button.
  StartPage(QAction *openTask, QAction *importOperator, QWidget *parent = nullptr);

  QPushButton *openButton() const { return open_; }
  QPushButton *importButton() const { return import_; }
  QPushButton *connectButton() const { return connect_; }
  // Says which LLM is set up ("Optimize uses llama.cpp (smollm2-135m)"), or that none is.
  void setLlmStatus(const QString &text, bool configured);
  // The line on the LLM Optimize would use, read from the LLM settings (the provider chosen last,
  // else the first configured).
  void readLlmStatus();

 signals:
  void connectLlmRequested();

 private:
  QPushButton *open_ = nullptr;
  QPushButton *import_ = nullptr;
  QPushButton *connect_ = nullptr;
  QLabel *llm_ = nullptr;
};

}  // namespace kwb::ui
