#pragma once
// Workspace runs as the workbench stores them, for the experience memory's tests: an evaluation
// result with a speedup per configuration (softmax's small, wide and h200), stored as a run.
#include <cstdint>
#include <string>
#include <vector>

#include "core/eval/evaluation_result.h"
#include "core/memory/experience_store.h"
#include "core/store/workspace.h"

namespace kwb::test {

// Correct with these speedups (relative spread 1 %, 2 %, 3 %), or incorrect with a mismatch.
EvaluationResult memoryRunResult(bool correct, const std::vector<double> &speedups);

// Stores `code` and the run for the task; returns the run's id.
std::int64_t addMemoryRun(Workspace &workspace, std::int64_t taskId, const std::string &code, const EvaluationResult &result,
                          const std::string &file = "kernel.cu");

// A Case as the memory keeps an editor run's: `idea` (an intent), `after` as its kernel, measured on
// sm_90, correct with `speedup` (relative spread 2 %) or incorrect with a mismatch. Its task, GPU,
// session and parent are the caller's.
memory::Case memoryCase(const std::string &idea, bool correct, double speedup, const std::string &after);

}  // namespace kwb::test
