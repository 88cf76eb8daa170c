#include "core/eval/suite_metrics.h"

#include <cmath>
#include <cstdio>

#include "core/eval/outcome.h"

namespace kwb {

namespace {

// The geometric mean of the positive values, 0 when there are none.
double geometricMean(const std::vector<double> &values) {
  double logs = 0;
  std::size_t n = 0;
  for (const double v : values)
    if (v > 0) {
      logs += std::log(v);
      ++n;
    }
  return n ? std::exp(logs / static_cast<double>(n)) : 0.0;
}

std::vector<FastP> fastAt(const std::vector<SuiteEntry> &entries, const std::vector<double> &ps, bool compiled) {
  std::vector<FastP> out;
  for (const double p : ps) {
    FastP f;
    f.p = p;
    for (const auto &e : entries)
      if (e.correct && (compiled ? e.speedupCompiled : e.speedupEager) > p) ++f.count;
    f.fraction = entries.empty() ? 0.0 : static_cast<double>(f.count) / static_cast<double>(entries.size());
    out.push_back(f);
  }
  return out;
}

}  // namespace

SuiteEntry suiteEntry(const std::string &task, const std::string &candidate, const EvaluationResult &result) {
  SuiteEntry e;
  e.task = task;
  e.candidate = candidate;
  e.outcome = toString(result.outcome);
  e.message = result.message;
  e.correct = result.outcome == Outcome::Correct;
  e.seconds = result.seconds;
  std::vector<double> cand, eager, compiled, sEager, sCompiled;
  for (const auto &c : result.configs) {
    if (!c.timing || !c.timing->ok || !c.torch) continue;
    cand.push_back(c.timing->candidate.median);
    eager.push_back(c.torch->eagerMs);
    compiled.push_back(c.torch->compiledMs);
    sEager.push_back(c.torch->speedupEager);
    sCompiled.push_back(c.torch->speedupCompiled);
    ++e.configsTimed;
  }
  e.candidateMs = geometricMean(cand);
  e.eagerMs = geometricMean(eager);
  e.compiledMs = geometricMean(compiled);
  e.speedupEager = geometricMean(sEager);
  e.speedupCompiled = geometricMean(sCompiled);
  return e;
}

SuiteMetrics suiteMetrics(const std::vector<SuiteEntry> &entries, const std::vector<double> &ps) {
  SuiteMetrics m;
  m.tasks = entries.size();
  for (const auto &e : entries) {
    m.correct += e.correct;
    m.timed += e.configsTimed > 0;
  }
  m.correctnessRate = m.tasks ? static_cast<double>(m.correct) / static_cast<double>(m.tasks) : 0.0;
  m.fastEager = fastAt(entries, ps, false);
  m.fastCompiled = fastAt(entries, ps, true);
  return m;
}

nlohmann::json toJson(const SuiteEntry &e) {
  return {{"task", e.task},
          {"candidate", e.candidate},
          {"outcome", e.outcome},
          {"message", e.message},
          {"correct", e.correct},
          {"candidate_ms", e.candidateMs},
          {"eager_ms", e.eagerMs},
          {"compiled_ms", e.compiledMs},
          {"speedup_eager", e.speedupEager},
          {"speedup_compiled", e.speedupCompiled},
          {"configs_timed", e.configsTimed},
          {"seconds", e.seconds}};
}

nlohmann::json toJson(const SuiteMetrics &m) {
  auto fast = [](const std::vector<FastP> &v) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto &f : v) {
      char key[32];
      std::snprintf(key, sizeof key, "fast_%g", f.p);
      out[key] = {{"count", f.count}, {"fraction", f.fraction}};
    }
    return out;
  };
  return {{"tasks", m.tasks},
          {"correct", m.correct},
          {"timed", m.timed},
          {"correctness_rate", m.correctnessRate},
          {"over_eager", fast(m.fastEager)},
          {"over_compile", fast(m.fastCompiled)}};
}

}  // namespace kwb
