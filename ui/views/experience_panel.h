#pragma once
// The Experience view (issue 19 item 5): the experience memory as a graph to explore. Filters
// (task, operator class, GPU, label, session, age) choose the Cases laid out; search marks the
// Cases whose text holds the words (Enter steps through them); the inspector shows the Case
// selected: what was tried, its numbers, the feedback, and its code against its parent's.
// "Open in editor" and "Optimize from here" continue from it (the main window does that); the
// selection goes to the workbench context, so the editor, Results and the Profiler follow.
#include <QSet>
#include <QWidget>

#include <optional>

#include "ui/services/memory_service.h"
#include "ui/workbench_context.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTextBrowser;

namespace kwb::ui {

class ExperienceGraphView;
class GraphOverview;
class SideBySideDiff;

class ExperiencePanel : public QWidget, public WorkbenchView {
  Q_OBJECT

 public:
  explicit ExperiencePanel(QWidget *parent = nullptr);
  void attach(MemoryService *service);

  // Reads the memory again (then lays out what the filters let through).
  void refresh();
  // Shows the Case: the filters cleared when they hide it, selected, centred, inspected.
  // Asked before the memory is read (refresh() first), once it is.
  void selectCase(qint64 id);
  // The fastest correct Case of the task (of any task when empty); 0 when there is none.
  qint64 bestCase(const QString &task = {}) const;

  ExperienceGraphView *graph() const { return graph_; }
  QComboBox *taskFilter() const { return task_; }
  QComboBox *labelFilter() const { return label_; }
  QLineEdit *searchBox() const { return search_; }
  QString statusText() const;
  const std::optional<CaseDetail> &inspected() const { return inspected_; }
  QString inspectorText() const;
  SideBySideDiff *diff() const { return diff_; }
  // Laid out, drawn and inspected: nothing in flight.
  bool isSettled() const;

 signals:
  void caseSelected(const kwb::ui::CaseDetail &detail);
  void openRequested(const kwb::ui::CaseDetail &detail);
  void optimizeRequested(const kwb::ui::CaseDetail &detail);
  void settled();

 private:
  void fillFilters();
  void applyFilters();
  void runSearch();
  void nextMatch();
  void inspect(const CaseDetail &detail);
  void updateStatus();
  void checkSettled();

  MemoryService *service_ = nullptr;
  QComboBox *task_ = nullptr, *operator_ = nullptr, *gpu_ = nullptr, *label_ = nullptr, *session_ = nullptr,
            *age_ = nullptr;
  QLineEdit *search_ = nullptr;
  QPushButton *fit_ = nullptr, *refresh_ = nullptr, *open_ = nullptr, *optimize_ = nullptr;
  QLabel *status_ = nullptr;
  ExperienceGraphView *graph_ = nullptr;
  GraphOverview *overview_ = nullptr;
  QTextBrowser *summary_ = nullptr;
  SideBySideDiff *diff_ = nullptr;

  std::vector<kwb::memory::Case> shown_;  // the Cases the filters let through
  int layoutGeneration_ = 0;
  bool laying_ = false;
  QString layoutNote_;
  QSet<qint64> matches_;
  QString searchedText_;
  bool searching_ = false;
  qint64 wanted_ = 0;  // a Case to select once it is drawn
  bool fetching_ = false;
  std::optional<CaseDetail> inspected_;
};

}  // namespace kwb::ui
