#pragma once
// The Lineage panel (issue 18): a stored lineage (kwb lineage build) as a horizontal path from
// naive to expert, one node per step (green: passed the gate, red: rejected) under a bar for its
// speedup over the step before, for the chosen configuration; selecting a step shows it side by
// side with its parent (changed lines and the changed part of each line marked) and its figures:
// medians, speedups, and the deltas of its kernel's registers, shared memory, spills, GFLOP/s and
// profiler metrics. Build lineage / De-optimize current kernel start a build (with progress and
// Cancel) through the main window, which knows the open task, the editor and the model.
#include <optional>
#include <vector>

#include <QWidget>

#include "core/lineage/skill_library.h"
#include "ui/workbench_context.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSplitter;
class QTableWidget;

namespace kwb::ui {

class LineageStepsModel;
class SideBySideDiff;
class SkillLibraryService;

// The path itself: nodes and bars, painted; a click selects a step.
class LineagePath : public QWidget {
  Q_OBJECT

 public:
  explicit LineagePath(QWidget *parent = nullptr);
  // The steps it draws, as the model has them; the selection is kept across a reset when the
  // step is still there.
  void setModel(LineageStepsModel *model);
  int steps() const;
  int selected() const { return selected_; }  // index into the steps; -1 none
  void select(int index);
  QRect nodeRect(int index) const;  // where step `index` is drawn
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void stepSelected(int index);

 protected:
  void paintEvent(QPaintEvent *) override;
  void mousePressEvent(QMouseEvent *) override;

 private:
  int barArea() const;  // the height of the speedup bars above the nodes (none unmeasured)
  LineageStepsModel *model_ = nullptr;
  int selected_ = -1;
};

// In the window's context: a step the user picks is selected there (a LineageStep); a lineage step
// selected anywhere (a skill card's evidence) is shown here.
class LineagePanel : public QWidget, public WorkbenchView {
  Q_OBJECT

 public:
  void onSelectionChanged(const WorkbenchContext &context) override;
  explicit LineagePanel(QWidget *parent = nullptr);
  void attach(SkillLibraryService *service);

  // Shows the lineage named `name` and, with step > 0, that step; false when the library read so
  // far lacks it (it is then shown once a read has it).
  bool showLineage(const QString &name, int step = 0);
  QString currentLineage() const;
  // The open task's bundled lineage as it reads (kwb::unmeasuredLineage): listed first, grey, with
  // its code and diffs, where the library has no build of that name; nullopt takes it away.
  void setPreview(std::optional<kwb::LineageRecord> preview);
  bool isPreview() const;  // the preview is the lineage shown
  // Why the preview is not measured, as it becomes known (the GPU probe answered).
  void setPreviewReason(const QString &why);
  int currentStep() const;  // the selected step's position (1-based); 0 none

  LineagePath *path() const { return path_; }
  LineageStepsModel *steps() const { return steps_; }
  SideBySideDiff *diff() const { return diff_; }
  QTableWidget *figures() const { return figures_; }
  // Why the step shown has no figures ("" when it has some, or no step is shown).
  QString figuresNote() const;
  QComboBox *lineageBox() const { return lineages_; }
  QString summary() const;

  // A build the main window started (SkillLibraryService::buildLineage): the progress row shows
  // until it is built or fails; Cancel stops it.
  void buildStarted(const QString &what);
  void showBuildMessage(const QString &message);  // why a build could not start
  // The GPU gate's answers for the two buttons (disabled with the reason in their tooltips).
  void setGate(bool buildAllowed, const QString &buildWhy, bool deoptimizeAllowed, const QString &deoptimizeWhy);
  QString buildStatus() const;
  bool isBuilding() const { return building_; }
  QPushButton *buildButton() const { return build_; }
  QPushButton *deoptimizeButton() const { return deoptimize_; }
  QPushButton *cancelButton() const { return cancel_; }
  QProgressBar *buildProgress() const { return progress_; }

 signals:
  void buildRequested();       // the open task's bundled lineage
  void deoptimizeRequested();  // the editor's kernel, by the model Optimize uses

 private:
  void setBuilding(bool building);
  void setBuildStatus(const QString &text);
  void reload();
  void showStep(int index);
  const kwb::LineageRecord *lineage() const;

  SkillLibraryService *service_ = nullptr;
  QComboBox *lineages_ = nullptr, *configs_ = nullptr;
  QLabel *summary_ = nullptr, *stepTitle_ = nullptr;
  LineageStepsModel *steps_ = nullptr;
  LineagePath *path_ = nullptr;
  SideBySideDiff *diff_ = nullptr;
  QTableWidget *figures_ = nullptr;
  QLabel *figuresNote_ = nullptr;  // why a step has no figures (the table is hidden then)
  QScrollArea *pathScroll_ = nullptr;
  QSplitter *stepSplit_ = nullptr;
  QPushButton *build_ = nullptr, *deoptimize_ = nullptr, *cancel_ = nullptr;
  QProgressBar *progress_ = nullptr;
  QLabel *buildStatus_ = nullptr;
  bool building_ = false;
  bool buildAllowed_ = true, deoptimizeAllowed_ = true;
  QString buildTip_, deoptimizeTip_;
  std::optional<kwb::LineageRecord> preview_;
  QString previewKey() const;  // the preview's item data in the lineage box
  bool following_ = false;  // showing what the context selected: not told back to it
  QString pendingName_;  // asked for before the library's read had it
  int pendingStep_ = 0;
};

}  // namespace kwb::ui
