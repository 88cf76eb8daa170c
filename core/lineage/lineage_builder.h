#pragma once
// KLineage without an LLM: an ordered series of kernel versions (a bundled lineage, a folder of
// versions) becomes a stored lineage, every step gated, and each accepted transition, read
// forward, becomes a skill card.
//
//   steps   = versionsOf(task, folder)                 the versions, with launch and header
//   results = evaluate each (compile, check, time)     the caller's: a pool over the GPUs
//   record  = recordLineage(task, steps, sources, results, name, origin)
//   cards   = liftCards(record, task)                  measured fields filled; prose for review
#include <filesystem>
#include <string>
#include <vector>

#include "core/eval/evaluation_result.h"
#include "core/lineage/lineage.h"
#include "core/lineage/skill_card.h"
#include "core/lineage/skill_library.h"
#include "core/task/task.h"

namespace kwb {

// The versions in `folder`: as its lineage.toml lists them when it has one (headers required, as
// for a bundled lineage), else every *.cu file in name order, each run with the task's launch
// (the "Adds:"/"Relies on:" header read when present, the title from the file name). Throws
// ManifestError naming the file, line and field.
std::vector<LineageStep> versionsOf(const Task &task, const std::filesystem::path &folder);

// The text of each step's file, in order (a file that cannot be read, or is not text, throws with
// its path).
std::vector<std::string> stepSources(const std::vector<LineageStep> &steps);

// Whether a step's evaluation passes the gate: compiled, correct on every configuration and seed,
// and timed on every configuration. `why` says what failed.
bool passesGate(const EvaluationResult &result, std::string *why = nullptr);

// The lineage as stored: each step's figures, its speedup over the previous accepted step per
// configuration, and the deltas of its kernel's figures (registers, shared memory, spills,
// occupancy, GFLOP/s) against that step. `sources[i]` is the text of steps[i]. A step that passes
// the gate but is not faster than the previous accepted step at the task's largest configuration
// (the one a lineage targets) is not accepted: "does not pay: ..." with both times.
LineageRecord recordLineage(const Task &task, const std::vector<LineageStep> &steps,
                            const std::vector<std::string> &sources, const std::vector<EvaluationResult> &results,
                            const std::string &name, const std::string &origin);

// The operator class a task belongs to, for a card's scope ("gemm" for sgemm and gemm-bf16).
std::string operatorClassOf(const Task &task);

// One card per accepted transition (step k-1 to k, both accepted), read forward: its id from the
// features the step adds (kernel_features.h) or else its title, so transitions of the same kind
// from different lineages share an id and merge in the library; intent, anchor, carrier
// (the changed lines with context), preconditions in the five categories derived from the task,
// the kernels and the header, scope, requires / provides / conflicts, evidence per
// configuration, risk from the rejected steps after it, and a verification log entry.
// `lineage` must carry its steps' sources (SkillLibrary::lineage(name, true) or recordLineage's).
std::vector<SkillCard> liftCards(const LineageRecord &lineage, const Task &task);

// The changed lines of `before` -> `after` with `context` lines around each change, as two
// snippets ("// ..." between hunks), each at most `maxLines` lines. `firstChangedLine` is the
// first changed line of `after` (1-based), 0 when nothing changed.
struct Carrier {
  std::string before, after;
  int firstChangedLine = 0, lastChangedLine = 0;
};
Carrier carrierOf(const std::string &before, const std::string &after, std::size_t context = 2,
                  std::size_t maxLines = 80);

}  // namespace kwb
