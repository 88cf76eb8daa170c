#include "helpers/memory_fixtures.h"

namespace kwb::test {

EvaluationResult memoryRunResult(bool correct, const std::vector<double> &speedups) {
  EvaluationResult r;
  r.outcome = correct ? Outcome::Correct : Outcome::Incorrect;
  r.message = correct ? "correct on every configuration" : "wide: 12 elements differ (first at row 3)";
  r.device = "NVIDIA H200";
  r.arch = "sm_90";
  const char *names[] = {"small", "wide", "h200"};
  for (std::size_t i = 0; i < speedups.size() && i < 3; ++i) {
    ConfigOutcome c;
    c.config = names[i];
    c.outcome = r.outcome;
    if (correct) {
      TimingOutcome t;
      t.ok = true;
      t.speedup = speedups[i];
      t.candidate.relativeSpread = 0.01 * static_cast<double>(i + 1);
      c.timing = t;
    }
    r.configs.push_back(c);
  }
  return r;
}

std::int64_t addMemoryRun(Workspace &workspace, std::int64_t taskId, const std::string &code, const EvaluationResult &result,
                          const std::string &file) {
  EvaluationRecord e;
  e.taskId = taskId;
  e.taskName = "softmax";
  e.sourceName = file;
  e.outcome = toString(result.outcome);
  e.message = result.message;
  e.arch = result.arch;
  e.device = result.device;
  e.resultJson = evaluationResultText(result);
  return workspace.addEvaluation(e, code).id;
}

memory::Case memoryCase(const std::string &idea, bool correct, double speedup, const std::string &after) {
  memory::Case c;
  c.source = "editor";
  c.arch = "sm_90";
  c.idea = idea;
  c.ideaKind = "intent";
  c.after = after;
  c.outcome = correct ? "correct" : "incorrect";
  c.correct = correct;
  c.speedup = speedup;
  c.relativeSpread = 0.02;
  c.feedback = correct ? "" : "mismatch at y[17]: 0.25 expected 0.5";
  c.journal = idea + (correct ? " worked" : " broke the output");
  return c;
}

}  // namespace kwb::test
