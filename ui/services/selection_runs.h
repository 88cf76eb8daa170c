#pragma once
// Reads from the workspace what a selection lacks: the stored run of a session's candidate (its
// evaluation id) or of a Case made from a run of this workspace, and selects it again with the run,
// so Results, the Profiler and Export show it. A run fetched for the History (fetchStored) is
// selected as a History selection. After the selection moves on, an answer about the old one is
// dropped.
#include <QObject>
#include <QSet>

#include "ui/workbench_context.h"

namespace kwb::ui {

class WorkspaceService;

class SelectionRuns : public QObject, public WorkbenchView {
  Q_OBJECT

 public:
  SelectionRuns(WorkspaceService *workspace, QObject *parent = nullptr);

  void onSelectionChanged(const WorkbenchContext &context) override;
  // A stored run (the History's), read and selected as History.
  void fetchStored(qint64 historyId);

 signals:
  // The History's run is selected (what fetchStored asked for).
  void storedRunSelected(const kwb::ui::EvaluationRun &run);

 private:
  void onFetched(const EvaluationRun &run);
  void onCaseFetched(qint64 caseId, bool found, const EvaluationRun &run);

  WorkspaceService *workspace_;
  qint64 candidateEvaluation_ = 0;  // the session candidate's run being read
  qint64 caseAsked_ = 0;            // the Case whose run is being read
  QSet<qint64> stored_;             // History runs being read
};

}  // namespace kwb::ui
