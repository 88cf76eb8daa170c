#pragma once
// Building a stored lineage on the GPUs: every step gated (compiled, checked on every
// configuration and seed, timed) through an EvaluatorPool, every accepted step profiled with
// CUPTI at one configuration (its metrics, and their deltas against the previous accepted
// step, go with the step), the record stored in the skill library and its cards lifted. Shared
// by `kwb lineage build` and the workbench's Lineage panel; no Qt.
//
//   pool     = EvaluatorPool over the GPUs
//   built    = buildLineage(task, steps, sources, pool, options, progress, &cancel)
//   stored   = storeLineage(library, built.record, task, "kwb lineage build")   the cards too
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "core/eval/evaluation_result.h"
#include "core/eval/evaluator_pool.h"
#include "core/lineage/lineage.h"
#include "core/lineage/skill_library.h"
#include "core/profile/profiler.h"
#include "core/task/task.h"

namespace kwb {

struct LineageBuildOptions {
  std::string name;              // the stored lineage's name
  std::string origin = "bundled";  // "bundled", "versions", "deoptimization"
  EvaluationOptions evaluation;  // `time` is forced on: a stored step is measured
  bool profile = true;           // profile every accepted step
  std::string profileConfig;     // empty: largestConfiguration(task)
};

struct LineageBuildProgress {
  std::function<void(std::size_t index, std::size_t count, const EvaluationResult &)> onGated;
  std::function<void(std::size_t index, std::size_t count, const profile::ProfileResult &)> onProfiled;
  std::function<void(const std::string &)> onMessage;  // one line: what is happening
};

struct LineageBuild {
  LineageRecord record;  // with every step's source
  std::vector<EvaluationResult> results;
  std::vector<profile::ProfileResult> profiles;  // per step; NotRun where not profiled
  bool onGpu = false;     // some step ran on a GPU (else nothing may be stored)
  bool cancelled = false;
};

// Gates every step on the pool (all submitted at once, spread over its GPUs), then profiles the
// accepted ones there (unless options.profile is off), and records the lineage. Setting `cancel`
// stops it: what runs is cancelled, nothing more is profiled, and the result says cancelled.
LineageBuild buildLineage(const Task &task, const std::vector<LineageStep> &steps, const std::vector<std::string> &sources,
                          EvaluatorPool &pool, const LineageBuildOptions &options, const LineageBuildProgress &progress = {},
                          const std::atomic<bool> *cancel = nullptr);

// Puts each step's profile in its record (the metrics at the profiled configuration, or why it
// was not profiled) and the deltas of every metric both it and the previous accepted step have,
// named "profile <config>: <label> (<unit>)". `profiles[i]` belongs to steps[i].
void recordProfiles(LineageRecord &lineage, const std::vector<profile::ProfileResult> &profiles);

// How a profiled metric's delta is named: "profile <config>: <label> (<unit>)".
std::string profileMetricName(const std::string &config, const profile::MetricValue &metric);

// The configuration with the most bytes and FLOPs by the task's formulas (where the speedups
// that matter are), the one a lineage's steps are profiled at by default.
std::string largestConfiguration(const Task &task);

// A bundled lineage as it reads, before (or without) a build: every step with its title, header,
// risks and code, outcome "not-measured" and `why` as the reason, nothing timed. What the window
// shows where the library has no build of it (compile-only machines). Throws ManifestError.
LineageRecord unmeasuredLineage(const Task &task, const std::string &why);

// Stores the lineage (replacing one of the same name) and proposes (or merges) its cards.
// Returns the cards lifted. Throws StoreError.
std::vector<SkillCard> storeLineage(SkillLibrary &library, LineageRecord &record, const Task &task, const std::string &who);

}  // namespace kwb
