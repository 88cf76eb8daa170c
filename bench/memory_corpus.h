#pragma once
// A synthetic experience memory for the memory benchmarks (issue 19, "Measure"): Cases in the
// shapes the workbench records them — lineage chains (5-15 steps), agent sessions (3-6 turns of 4
// candidates, each turn from the best so far), editor runs chained per task (1-30) — over many
// tasks (the eight bundled ones, then task-K, one per 250 Cases), eight operator classes and three
// GPUs, a fifth incorrect with feedback, each with its own ~1.2 KB kernel, recorded over 90 days.
// Deterministic for a seed.
#include <cstddef>
#include <string>
#include <vector>

#include "core/memory/experience_store.h"

namespace kwb::bench {

struct CorpusSummary {
  std::size_t cases = 0, trees = 0, tasks = 0;
  double seconds = 0;  // to record them
};

// Records `n` Cases into `store` in transactions of a thousand.
CorpusSummary fillMemory(kwb::memory::ExperienceStore &store, std::size_t n, unsigned seed = 1);

// The corpus's task names, in the order fillMemory uses them (for queries that hit).
std::vector<std::string> corpusTasks(std::size_t n);

// The phrases ideas are made of (for queries that hit).
const std::vector<std::string> &corpusIdeas();

}  // namespace kwb::bench
