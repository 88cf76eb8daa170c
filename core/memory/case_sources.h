#pragma once
// Where Cases come from (issue 19 item 1): every evaluation a workspace holds (editor runs and
// agent sessions' candidates, with the Case each started from) and every step of a stored lineage.
// Recording is idempotent: each Case carries a reference to what it was made from, so a workspace
// synced twice (or its history imported once, then synced after every run) gives each evaluation
// one Case. No Qt.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/eval/evaluation_result.h"
#include "core/lineage/skill_library.h"
#include "core/memory/experience_store.h"
#include "core/store/workspace.h"
#include "core/task/task.h"
#include "core/tune/tuner.h"
#include "core/profile/profile_request.h"

namespace kwb::memory {

// What a Case keeps of an evaluation: correct (ran, and correct everywhere), its speedup over the
// reference (geometric mean over the timed configurations), the widest relative spread, the
// feedback (the message and the first compiler errors), and, with the task, the shape and
// arithmetic intensity of its largest configuration.
struct Measured {
  bool correct = false;
  double speedup = 0, relativeSpread = 0;
  std::string feedback, shape;
  double intensity = 0;
};
Measured measuredOf(const EvaluationResult &result, const Task *task);

// The profiler's bottleneck class of a kernel from its metrics (core/profile/bottleneck.h):
// "memory", "compute", "latency", "balanced", or "" when the metrics do not say.
std::string bottleneckOf(const std::vector<profile::MetricValue> &metrics);

// The idea an agent's answer states: its first line of prose before any code (a heading's marks
// taken off), at most 200 characters; "" when it opens with code.
std::string statedIntent(const std::string &response);

struct SyncReport {
  std::size_t added = 0, known = 0;
  std::size_t notRun = 0;  // compiled only (no GPU): not experience, not recorded
  std::vector<std::string> problems;  // runs skipped, and why
};

// Records every evaluation of `workspace` not recorded yet, oldest first: a session's candidate as
// source "session" (idea: the answer's stated intent, or the cards it carried; its parent: the
// previous turn's Case, or the Case of the incumbent it started from), any other run as "editor"
// (its parent: the previous editor run of the task in this workspace). A run that was compiled
// only (outcome not-run: no GPU) says nothing about speed or correctness and is not recorded. Tasks whose folder is gone
// are recorded without shape and intensity.
SyncReport syncWorkspace(ExperienceStore &store, Workspace &workspace);
// Records one run of `workspace` as syncWorkspace would (an agent session records each candidate
// as its evaluation ends, so the next group's prompt can learn from it; issue 47). `task`: the
// run's task when the caller has it loaded (else it is loaded from its folder). Idempotent.
SyncReport recordSessionRun(ExperienceStore &store, Workspace &workspace, std::int64_t evaluationId,
                            const Task *task = nullptr);

// The key a workspace's Cases are referenced by ("workspace:" and its id, schema 7); throws
// std::runtime_error for a workspace without an id.
std::string workspaceKey(Workspace &workspace);
// The run (evaluation id) of `workspace` a Case was made from: for an editor or session Case whose
// reference carries that workspace's key; none for other sources or other workspaces.
std::optional<std::int64_t> evaluationOfCase(const Case &c, const std::string &workspaceKey);

// Records a stored lineage's steps as Cases (source "lineage", idea: the step's title, with what it
// adds in the journal; each the child of the previous accepted step). Returns how many were new.
std::size_t recordLineageCases(ExperienceStore &store, const LineageRecord &lineage, const Task &task);

// Records a tuning's measured points as Cases (source "tune", idea: the parameters, "BX=32 BY=8";
// the code: `source` with the parameters as #defines before it, as the tuner compiled it with
// -D; each the child of the Case of `source` itself when the memory has one, else a root). A
// point's speedup over the reference is its own, else its times against the reference's time from
// the points that timed it (the tuner times the reference until one has). Points compiled only
// (no GPU), and correct points with no reference time to compare with (a tuning served wholly
// from the cache of an older version), are not recorded; a point is recorded once. `gpu` names the GPU when a point does not. Returns how many were new.
std::size_t recordTuningCases(ExperienceStore &store, const tune::TuneReport &report, const Task &task,
                              const std::string &source, const std::string &gpu = {});

}  // namespace kwb::memory
