#pragma once
// The window's centre: the editor and the big views, one in front at a time (issue 48, 1). Each
// page is a tab with a shortcut (Ctrl+1 … Ctrl+5, and View ▸ Editor … Profiler): Editor (the
// start page or the open files), Session (an agent session: candidates, answers, contexts,
// speedups), Library (the lineage graph above the skill cards), Experience (the memory's graph)
// and Profiler (metrics, roofline, live samples). Short output stays in the bottom docks.
#include <QTabWidget>

#include "ui/workbench_context.h"

class QAction;
class QActionGroup;
class QSplitter;

namespace kwb::ui {

// In the window's context: an opened selection brings its page forward (a lineage step: Library;
// a session's candidate: the editor; a Case: Experience).
class WorkArea : public QTabWidget, public WorkbenchView {
  Q_OBJECT

 public:
  void onSelectionChanged(const WorkbenchContext &context) override;
  enum class Page { Editor, Session, Library, Experience, Profiler };
  static constexpr int kPages = 5;

  WorkArea(QWidget *editor, QWidget *session, QWidget *lineage, QWidget *skills, QWidget *experience,
           QWidget *profiler, QWidget *parent = nullptr);

  // Brings the page in front (and its tab into view); pageShown() follows when it was not.
  void reveal(Page page);
  Page current() const;
  QWidget *page(Page page) const;
  // The Library page: the lineage above, the skill cards below.
  QSplitter *library() const { return library_; }
  // View menu entries, one per page, checked for the one in front; Ctrl+1 … Ctrl+5.
  const QList<QAction *> &pageActions() const { return actions_; }
  static QString title(Page page);

 signals:
  void pageShown(kwb::ui::WorkArea::Page page);

 private:
  QSplitter *library_ = nullptr;
  QActionGroup *group_ = nullptr;
  QList<QAction *> actions_;
};

}  // namespace kwb::ui
