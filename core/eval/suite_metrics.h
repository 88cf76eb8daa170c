#pragma once
// KernelBench's metrics over a suite of tasks, each with one candidate (kwb suite): the
// correctness rate, and fast_p, the fraction of all tasks whose candidate is correct AND faster
// than PyTorch by more than p (Ouyang et al. 2025, KernelBench: fast_p = (1/N) Σ 1(correct_i ∧
// speedup_i > p)), over PyTorch eager and over torch.compile. A task without a candidate, or
// whose candidate was not timed, counts in N and never as fast. Pure: no I/O.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval/evaluation_result.h"

namespace kwb {

struct SuiteEntry {
  std::string task;
  std::string candidate;  // the file evaluated; empty: none was found
  std::string outcome;    // "correct", "incorrect", ..., or "no-candidate"
  std::string message;
  bool correct = false;
  // Geometric means over the configurations timed against PyTorch (0: not timed).
  double candidateMs = 0, eagerMs = 0, compiledMs = 0;
  double speedupEager = 0, speedupCompiled = 0;
  std::size_t configsTimed = 0;
  double seconds = 0;  // the evaluation's wall time
};

// One entry from an evaluation's result: outcome, and the geometric means of the candidate's
// medians, the module's and the speedups over the configurations with PyTorch figures.
SuiteEntry suiteEntry(const std::string &task, const std::string &candidate, const EvaluationResult &result);

struct FastP {
  double p = 1.0;
  std::size_t count = 0;  // correct and faster than PyTorch by more than p
  double fraction = 0;    // count / tasks
};

struct SuiteMetrics {
  std::size_t tasks = 0, correct = 0, timed = 0;
  double correctnessRate = 0;
  std::vector<FastP> fastEager, fastCompiled;  // p = 1, 1.5, 2
};

SuiteMetrics suiteMetrics(const std::vector<SuiteEntry> &entries, const std::vector<double> &ps = {1.0, 1.5, 2.0});

nlohmann::json toJson(const SuiteEntry &e);
nlohmann::json toJson(const SuiteMetrics &m);

}  // namespace kwb
