#include "helpers/measured_lineage.h"
#include "helpers/test_files.h"

#include <filesystem>
#include <stdexcept>

#include "core/lineage/lineage_builder.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"

namespace kwb::test {

EvaluationResult measuredStep(const Task &task, const std::string &kernel, double baseMs, double factor, int registers,
                              bool correct) {
  EvaluationResult r;
  r.outcome = correct ? Outcome::Correct : Outcome::Incorrect;
  r.message = correct ? "" : "mismatch at C[3, 7]";
  r.device = "NVIDIA H200";
  r.arch = "sm_90";
  KernelResources k;
  k.name = kernel;
  k.registers = registers;
  k.sharedStaticBytes = registers * 64;
  r.candidate.kernels.push_back(k);
  for (const auto &config : task.configs) {
    ConfigOutcome c;
    c.config = config.name;
    c.outcome = r.outcome;
    if (correct) {
      TimingOutcome t;
      t.ok = true;
      t.candidate.median = baseMs / factor;
      t.candidate.count = 20;
      t.reference.median = baseMs;
      t.speedup = factor;
      c.timing = t;
    } else {
      c.reason = "mismatch";
    }
    r.configs.push_back(c);
  }
  return r;
}

MeasuredLineage measuredLineage(const std::string &name, int rejected) {
  MeasuredLineage b;
  b.task = loadTask((kernelsDir() / name).string());
  b.steps = loadLineage(b.task).steps;
  std::vector<EvaluationResult> results;
  double factor = 1;
  for (const auto &s : b.steps) {
    SourceReadOptions o;
    b.sources.push_back(readSourceFile(s.file, o));
    const auto t = taskForStep(b.task, s);
    results.push_back(measuredStep(b.task, t.launch ? t.launch->kernel : "k", 8.0, factor, 32 + s.index, s.index != rejected));
    factor *= 2;
  }
  b.record = recordLineage(b.task, b.steps, b.sources, results, name, "bundled");
  return b;
}

SkillCard liftedCard(const std::string &name, const std::string &id) {
  const auto measured = measuredLineage(name);
  for (auto &card : liftCards(measured.record, measured.task))
    if (card.id == id) return card;
  throw std::runtime_error("the " + name + " lineage gave no " + id + " card");
}

}  // namespace kwb::test
