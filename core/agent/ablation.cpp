#include "core/agent/ablation.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace kwb::agent {

std::string toString(Arm arm) {
  switch (arm) {
    case Arm::None: return "none";
    case Arm::Memory: return "memory";
    case Arm::Skills: return "skills";
    case Arm::Dcp: return "dcp";
  }
  return "none";
}

std::optional<Arm> armFromString(const std::string &text) {
  for (Arm a : {Arm::None, Arm::Memory, Arm::Skills, Arm::Dcp})
    if (toString(a) == text) return a;
  return std::nullopt;
}

SessionSettings armSettings(const SessionSettings &base, Arm arm) {
  SessionSettings s = base;
  switch (arm) {
    case Arm::None: break;
    case Arm::Memory: s.memory = false; break;
    case Arm::Skills: s.skills = false; break;
    case Arm::Dcp:
      // Nothing pruned: no group is easy while a candidate failed, none is hopeless.
      s.dcp.easyBelow = 1;
      s.dcp.hopelessAbove = s.candidates;
      break;
  }
  return s;
}

ArmTask armTaskOf(SessionStore &store, const std::string &sessionId) {
  ArmTask t;
  t.sessionId = sessionId;
  const auto record = store.session(sessionId);
  if (!record) return t;
  t.task = record->taskName;
  t.state = toString(record->state);
  t.stopReason = record->stopReason;
  t.seconds = record->elapsedSeconds;
  const auto totals = store.totals(sessionId);
  t.solved = totals.bestMs.has_value();
  t.bestSpeedup = totals.bestSpeedup;
  const auto spend = store.spend(sessionId);
  t.llmCalls = spend.requests;
  t.tokens = spend.tokens;
  for (const auto &a : store.sessionAttempts(sessionId)) {
    if (!a.evaluated || !a.evaluationId) continue;
    if (a.outcome == "not-run") ++t.compiledOnly;
    else if (a.outcome != "compile-error") ++t.gpuEvaluations;  // a compile error never reached a GPU
  }
  return t;
}

double ArmSummary::solveRate() const {
  if (tasks.empty()) return 0;
  return static_cast<double>(std::count_if(tasks.begin(), tasks.end(), [](const ArmTask &t) { return t.solved; })) /
         static_cast<double>(tasks.size());
}

double ArmSummary::fastP(double p) const {
  if (tasks.empty()) return 0;
  return static_cast<double>(std::count_if(tasks.begin(), tasks.end(), [p](const ArmTask &t) {
           return t.solved && t.bestSpeedup && *t.bestSpeedup > p;
         })) /
         static_cast<double>(tasks.size());
}

std::int64_t ArmSummary::llmCalls() const {
  return std::accumulate(tasks.begin(), tasks.end(), std::int64_t{0}, [](std::int64_t n, const ArmTask &t) { return n + t.llmCalls; });
}
std::int64_t ArmSummary::tokens() const {
  return std::accumulate(tasks.begin(), tasks.end(), std::int64_t{0}, [](std::int64_t n, const ArmTask &t) { return n + t.tokens; });
}
std::size_t ArmSummary::gpuEvaluations() const {
  return std::accumulate(tasks.begin(), tasks.end(), std::size_t{0},
                         [](std::size_t n, const ArmTask &t) { return n + t.gpuEvaluations; });
}
std::size_t ArmSummary::compiledOnly() const {
  return std::accumulate(tasks.begin(), tasks.end(), std::size_t{0},
                         [](std::size_t n, const ArmTask &t) { return n + t.compiledOnly; });
}

std::string ablationTable(const std::vector<ArmSummary> &arms) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-8s %6s %7s %7s %7s %7s %9s %10s %9s %9s\n", "off", "tasks", "solved", "fast_1",
                "fast_1.5", "fast_2", "LLM calls", "tokens", "GPU evals", "compiled");
  out += line;
  for (const auto &a : arms) {
    std::snprintf(line, sizeof line, "%-8s %6zu %6.0f%% %6.0f%% %7.0f%% %6.0f%% %9lld %10lld %9zu %9zu\n",
                  toString(a.arm).c_str(), a.tasks.size(), 100 * a.solveRate(), 100 * a.fastP(1.0), 100 * a.fastP(1.5),
                  100 * a.fastP(2.0), static_cast<long long>(a.llmCalls()), static_cast<long long>(a.tokens()),
                  a.gpuEvaluations(), a.compiledOnly());
    out += line;
  }
  return out;
}

nlohmann::json ablationJson(const std::vector<ArmSummary> &arms) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto &a : arms) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const auto &t : a.tasks) {
      nlohmann::json row = {{"task", t.task},         {"session", t.sessionId},          {"state", t.state},
                            {"stop_reason", t.stopReason}, {"solved", t.solved},      {"llm_calls", t.llmCalls},
                            {"tokens", t.tokens},     {"gpu_evaluations", t.gpuEvaluations},
                            {"compiled_only", t.compiledOnly}, {"seconds", t.seconds}};
      row["best_speedup"] = t.bestSpeedup ? nlohmann::json(*t.bestSpeedup) : nlohmann::json(nullptr);
      tasks.push_back(row);
    }
    out.push_back({{"off", toString(a.arm)},
                   {"tasks", tasks},
                   {"solve_rate", a.solveRate()},
                   {"fast_1", a.fastP(1.0)},
                   {"fast_1.5", a.fastP(1.5)},
                   {"fast_2", a.fastP(2.0)},
                   {"llm_calls", a.llmCalls()},
                   {"tokens", a.tokens()},
                   {"gpu_evaluations", a.gpuEvaluations()},
                   {"compiled_only", a.compiledOnly()}});
  }
  return out;
}

}  // namespace kwb::agent
