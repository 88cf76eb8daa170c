#pragma once
// The ablation runner's logic (issue 47, 7): the same agent sessions over a set of tasks, once per
// arm, each arm with one part of the methods switched off, and per arm the figures each paper
// reports: solve rate, fast_p, LLM calls, tokens and GPU evaluations. `kwb suite TASKS --agent`
// runs the sessions (app/cli/ablation_command.cpp); this header says what each arm changes and
// how its sessions are summed up. No I/O beyond the session store; no Qt.
//
//   none    the methods as configured (the baseline arm)
//   memory  no experience memory in any prompt (KOPE off)
//   skills  no skill cards in any prompt (KLineage's cards off)
//   dcp     no Difficulty-Conditioned Pruning: every group with a failure is repaired up to K turns
//           (LEAP's pruning off: easyBelow 1, hopelessAbove G)
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/agent/session_store.h"

namespace kwb::agent {

enum class Arm { None, Memory, Skills, Dcp };
std::string toString(Arm arm);                         // "none", "memory", "skills", "dcp"
std::optional<Arm> armFromString(const std::string &text);

// `base` with the arm's part switched off.
SessionSettings armSettings(const SessionSettings &base, Arm arm);

// One task's session in an arm.
struct ArmTask {
  std::string task, sessionId, state, stopReason;
  bool solved = false;                 // a correct kernel was found (timed on a GPU)
  std::optional<double> bestSpeedup;   // the best correct kernel's speedup over the reference
  std::int64_t llmCalls = 0, tokens = 0;
  std::size_t gpuEvaluations = 0;      // candidates run on a GPU (compiled-only ones not counted)
  std::size_t compiledOnly = 0;        // candidates compiled and launch-checked only (no GPU)
  double seconds = 0;
};

struct ArmSummary {
  Arm arm = Arm::None;
  std::vector<ArmTask> tasks;
  double solveRate() const;            // solved / tasks, 0 for none
  double fastP(double p) const;        // tasks whose best is correct and more than p times the reference / tasks
  std::int64_t llmCalls() const, tokens() const;
  std::size_t gpuEvaluations() const, compiledOnly() const;
};

// A finished (or stopped) session of `store` as one task's row.
ArmTask armTaskOf(SessionStore &store, const std::string &sessionId);

// The table the papers report, one row per arm: solve rate, fast_1, fast_1.5, fast_2, LLM calls,
// tokens, GPU evaluations; and the JSON of every arm with its tasks.
std::string ablationTable(const std::vector<ArmSummary> &arms);
nlohmann::json ablationJson(const std::vector<ArmSummary> &arms);

}  // namespace kwb::agent
