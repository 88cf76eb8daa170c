#include "core/lineage/lineage_build.h"

#include <future>
#include <map>

#include "core/lineage/lineage_builder.h"
#include "core/compile/temporary_directory.h"
#include "core/lineage/lineage.h"

namespace kwb {

namespace {

bool stopped(const std::atomic<bool> *cancel) { return cancel && cancel->load(); }

}  // namespace

std::string profileMetricName(const std::string &config, const profile::MetricValue &m) {
  return "profile " + config + ": " + (m.label.empty() ? m.name : m.label) + (m.unit.empty() ? "" : " (" + m.unit + ")");
}

std::string largestConfiguration(const Task &task) {
  std::string best;
  double most = -1;
  for (const auto &c : task.configs) {
    double size = 0;
    try {
      size = static_cast<double>(task.bytes.evaluate(c.values)) + static_cast<double>(task.flops.evaluate(c.values));
    } catch (const std::exception &) {
      size = 0;
    }
    if (size > most) most = size, best = c.name;
  }
  return best;
}

void recordProfiles(LineageRecord &lineage, const std::vector<profile::ProfileResult> &profiles) {
  const LineageStepRecord *previous = nullptr;  // the last accepted step
  for (std::size_t i = 0; i < lineage.steps.size(); ++i) {
    auto &s = lineage.steps[i];
    if (i < profiles.size()) {
      const auto &p = profiles[i];
      s.profileConfig = p.config;
      if (p.outcome == Outcome::Profiled) {
        s.profile = p.metrics;
        s.profileNote.clear();
      } else {
        s.profile.clear();
        s.profileNote = toString(p.outcome) + (p.reason.empty() ? "" : " (" + p.reason + ")") +
                        (p.message.empty() ? "" : ": " + p.message);
      }
    }
    if (!s.accepted) continue;
    if (previous && previous->profileConfig == s.profileConfig)
      for (const auto &after : s.profile)
        for (const auto &before : previous->profile)
          if (before.name == after.name) s.deltas.push_back(MetricDelta{profileMetricName(s.profileConfig, after), before.value, after.value});
    previous = &s;
  }
}

LineageBuild buildLineage(const Task &task, const std::vector<LineageStep> &steps, const std::vector<std::string> &sources,
                          EvaluatorPool &pool, const LineageBuildOptions &options, const LineageBuildProgress &progress,
                          const std::atomic<bool> *cancel) {
  LineageBuild b;
  const std::size_t n = std::min(steps.size(), sources.size());
  auto say = [&](const std::string &line) {
    if (progress.onMessage) progress.onMessage(line);
  };
  say("gating " + std::to_string(n) + " steps of " + options.name + " (compile, check every configuration and seed, time)");
  std::vector<std::future<EvaluationResult>> futures;
  for (std::size_t i = 0; i < n; ++i) {
    EvaluationOptions o = options.evaluation;
    o.time = true;
    o.timeTorch = false;  // a step is measured against the one before it
    o.tunables = steps[i].tunables;
    o.sourceName = steps[i].file.string();
    futures.push_back(pool.submit(taskForStep(task, steps[i]), sources[i], o));
  }
  // Waiting in order. After a cancel, what runs on every device is cancelled, and so is each
  // queued evaluation within a tenth of a second of its start (the pool runs what is queued).
  for (std::size_t i = 0; i < n; ++i) {
    while (futures[i].wait_for(std::chrono::milliseconds(100)) != std::future_status::ready)
      if (stopped(cancel)) pool.cancelAll();
    b.results.push_back(futures[i].get());
    if (stopped(cancel)) pool.cancelAll();
    if (progress.onGated) progress.onGated(i, n, b.results.back());
  }
  b.cancelled = stopped(cancel);
  for (const auto &r : b.results) b.onGpu = b.onGpu || !r.device.empty();
  b.record = recordLineage(task, std::vector<LineageStep>(steps.begin(), steps.begin() + static_cast<long>(n)),
                           std::vector<std::string>(sources.begin(), sources.begin() + static_cast<long>(n)), b.results,
                           options.name, options.origin);
  b.profiles.resize(n);
  for (auto &p : b.profiles) {
    p.outcome = Outcome::NotRun;
    p.message = options.profile ? "not accepted by the gate" : "not profiled (profiling was off)";
  }
  if (options.profile && b.onGpu && !b.cancelled) {
    std::size_t accepted = 0;
    for (const auto &s : b.record.steps) accepted += s.accepted;
    const std::string config = options.profileConfig.empty() ? largestConfiguration(task) : options.profileConfig;
    say("profiling " + std::to_string(accepted) + " accepted steps at " + config);
    for (std::size_t i = 0; i < n && !stopped(cancel); ++i) {
      if (!b.record.steps[i].accepted) continue;
      profile::ProfileOptions o;
      o.config = config;
      o.tunables = steps[i].tunables;
      o.arch = options.evaluation.arch;
      o.sourceName = steps[i].file.string();
      const Task stepTask = taskForStep(task, steps[i]);
      auto &result = b.profiles[i];
      // On the device that gated the step, so its figures and its metrics come from one GPU.
      auto done = pool.submitWork(
          [&](Evaluator &evaluator) { result = profile::profileCandidate(stepTask, sources[i], o, evaluator); },
          b.results[i].deviceOrdinal);
      bool ran = false;
      try {
        ran = done.get();
      } catch (const std::exception &e) {
        result.outcome = Outcome::Error;
        result.message = e.what();
        ran = true;
      }
      if (!ran) {
        result.outcome = Outcome::NotRun;
        result.message = "the GPU that gated it left the pool";
      }
      if (progress.onProfiled) progress.onProfiled(i, n, result);
    }
    b.cancelled = stopped(cancel);
  }
  recordProfiles(b.record, b.profiles);
  return b;
}

std::vector<SkillCard> storeLineage(SkillLibrary &library, LineageRecord &record, const Task &task, const std::string &who) {
  record.id = library.putLineage(record);
  auto cards = liftCards(record, task);
  for (const auto &card : cards)
    library.proposeCard(card, who, "from lineage " + record.name + " (" + std::to_string(card.evidence.size()) + " measurements)");
  return cards;
}

LineageRecord unmeasuredLineage(const Task &task, const std::string &why) {
  const Lineage lineage = loadLineage(task);
  LineageRecord r;
  r.name = task.name;
  r.task = task.name;
  r.taskFolder = task.folder.string();
  r.origin = "bundled";
  for (const auto &s : lineage.steps) {
    LineageStepRecord step;
    step.position = s.index;
    step.title = s.title;
    step.sourceName = s.file.filename().string();
    readWholeFile(s.file, step.source);
    step.adds = s.adds;
    step.reliesOn = s.reliesOn;
    step.risks = s.risks;
    step.outcome = "not-measured";
    step.reason = why;
    r.steps.push_back(std::move(step));
  }
  return r;
}

}  // namespace kwb
