#include "ui/services/selection_runs.h"

#include "core/memory/experience_store.h"
#include "ui/services/workspace_service.h"

namespace kwb::ui {

SelectionRuns::SelectionRuns(WorkspaceService *workspace, QObject *parent) : QObject(parent), workspace_(workspace) {
  connect(workspace_, &WorkspaceService::evaluationFetched, this, &SelectionRuns::onFetched);
  connect(workspace_, &WorkspaceService::caseEvaluationFetched, this, &SelectionRuns::onCaseFetched);
}

void SelectionRuns::onSelectionChanged(const WorkbenchContext &context) {
  const auto &s = context.selection();
  if (!s || !workspace_->isOpen()) return;
  if (s->origin == CandidateSelection::Origin::SessionCandidate && s->evaluationId > 0 && !s->hasRun()) {
    candidateEvaluation_ = s->evaluationId;
    workspace_->fetchEvaluation(s->evaluationId);
  } else if (s->origin == CandidateSelection::Origin::GraphNode && s->experienceCase && s->run.historyId == 0 &&
             s->experienceCase->id != caseAsked_) {
    // A Case made from a run of this workspace: its full evaluation (the table per configuration)
    // replaces the summary once read.
    caseAsked_ = s->experienceCase->id;
    workspace_->fetchEvaluationOfCase(*s->experienceCase);
  } else if (s->origin != CandidateSelection::Origin::GraphNode) {
    caseAsked_ = 0;
  }
}

void SelectionRuns::fetchStored(qint64 historyId) {
  stored_.insert(historyId);
  workspace_->fetchEvaluation(historyId);
}

void SelectionRuns::onFetched(const EvaluationRun &run) {
  if (!context()) return;
  if (stored_.remove(run.historyId)) {
    context()->select({CandidateSelection::Origin::History, run});
    emit storedRunSelected(run);
    return;
  }
  const auto &s = context()->selection();
  if (!s || s->origin != CandidateSelection::Origin::SessionCandidate || run.historyId != candidateEvaluation_) return;
  CandidateSelection with = *s;
  with.run = run;
  with.activate = false;  // brought forward already
  context()->select(with);
}

void SelectionRuns::onCaseFetched(qint64 caseId, bool found, const EvaluationRun &run) {
  if (!context() || !found) return;
  const auto &s = context()->selection();
  if (!s || s->origin != CandidateSelection::Origin::GraphNode || !s->experienceCase || s->experienceCase->id != caseId)
    return;  // another workspace's Case, or the selection moved on
  CandidateSelection with = *s;
  EvaluationRun full = run;
  full.sourceName = s->run.sourceName;
  full.message = s->run.message;
  full.taskFolder = s->run.taskFolder;  // the open task's folder only
  with.run = full;
  with.activate = false;
  context()->select(with);
}

}  // namespace kwb::ui
