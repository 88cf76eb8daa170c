#pragma once
// A bundled lineage recorded as if every step had run on a GPU: what kwb lineage build stores,
// with figures the test chooses (each step twice as fast as the one before, its kernel one
// register more), so the code that records, lifts and shows lineages runs on real sources
// without a GPU. Used by tst_skill_library and tst_skills_views.
#include <string>
#include <vector>

#include "core/eval/evaluation_result.h"
#include "core/lineage/lineage.h"
#include "core/lineage/skill_library.h"
#include "core/task/task.h"

namespace kwb::test {

struct MeasuredLineage {
  Task task;
  std::vector<LineageStep> steps;
  std::vector<std::string> sources;
  LineageRecord record;
};

// A step's evaluation as a GPU gives it: correct on every configuration and timed (the reference
// at baseMs, the step `factor` times faster), or incorrect.
EvaluationResult measuredStep(const Task &task, const std::string &kernel, double baseMs, double factor, int registers,
                              bool correct = true);

// The lineage of bundled task `name`, step `rejected` (1-based; 0 none) incorrect.
MeasuredLineage measuredLineage(const std::string &name, int rejected = 0);

// The card `id` lifted (liftCards) from measuredLineage(name). Throws std::runtime_error without one.
SkillCard liftedCard(const std::string &name, const std::string &id);

}  // namespace kwb::test
