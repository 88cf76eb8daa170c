#include "app/cli/workers_option.h"
#include "app/cli/lineage_command.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <fstream>
#include <future>
#include <optional>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/candidate_input.h"
#include "app/cli/llm_command.h"
#include "core/agent/deoptimize.h"
#include "core/compile/diagnostics.h"
#include "core/eval/evaluator_pool.h"
#include "core/lineage/lineage.h"
#include "core/lineage/lineage_build.h"
#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_library.h"
#include "core/memory/case_sources.h"
#include "core/task/manifest_parser.h"
#include "core/text/printable.h"

namespace fs = std::filesystem;
using nlohmann::json;

using kwb::fixed;

namespace {

// One step's figures for one configuration.
json configJson(const kwb::Task &task, const kwb::ConfigOutcome &c, const json *previous) {
  json out = {{"config", c.config}, {"outcome", kwb::toString(c.outcome)}};
  if (!c.reason.empty()) out["reason"] = c.reason;
  if (!c.message.empty() && c.outcome != kwb::Outcome::Correct) out["message"] = c.message;
  if (!c.timing || !c.timing->ok) {
    if (c.timing) out["timing_error"] = c.timing->error;
    return out;
  }
  const auto &t = *c.timing;
  const double ms = t.candidate.median;
  out["median_ms"] = ms;
  out["relative_spread"] = t.candidate.relativeSpread;
  out["samples"] = t.candidate.count;
  out["reference_median_ms"] = t.reference.median;
  out["speedup_vs_reference"] = t.speedup;
  if (t.suspicious) out["suspicious"] = t.suspiciousReason;
  if (const auto *config = task.config(c.config); config && ms > 0) {
    const double flops = static_cast<double>(task.flops.evaluate(config->values));
    const double bytes = static_cast<double>(task.bytes.evaluate(config->values));
    out["gflops"] = flops / (ms * 1e-3) / 1e9;
    out["gbytes_per_s"] = bytes / (ms * 1e-3) / 1e9;
  }
  if (previous && previous->contains("median_ms")) out["speedup_vs_previous"] = (*previous)["median_ms"].get<double>() / ms;
  return out;
}

// Every step goes to the pool at once (spread over the GPUs); without a GPU each is compiled
// (and its launch checked) only.
std::vector<kwb::EvaluationResult> evaluateSteps(const kwb::Task &task, const std::vector<const kwb::LineageStep *> &steps,
                                                 const kwb::EvaluationOptions &options, bool noGpu,
                                                 const std::vector<int> &gpus, const kwb::EvaluatorSettings &base,
                                                 bool quiet) {
  std::unique_ptr<kwb::EvaluatorPool> pool;
  if (!noGpu) {
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = base;
    ps.devices = gpus;
    pool = std::make_unique<kwb::EvaluatorPool>(ps, [](const std::string &m) { std::cerr << "kwb: " << m << "\n"; });
    if (pool->devices().empty()) {
      if (!quiet) std::cerr << "kwb: no GPU (" << pool->problem() << "): compiling each step only\n";
      pool.reset();
    }
  }
  std::vector<std::future<kwb::EvaluationResult>> futures;
  for (const auto *s : steps) {
    kwb::EvaluationOptions o = options;
    o.tunables = s->tunables;
    o.sourceName = s->file.string();
    const kwb::Task stepTask = kwb::taskForStep(task, *s);
    const std::string source = kwb::stepSources({*s}).front();
    if (pool) {
      futures.push_back(pool->submit(stepTask, source, o));
    } else {
      kwb::EvaluatorSettings settings;
      settings.useDevice = false;
      std::promise<kwb::EvaluationResult> p;
      try {
        p.set_value(kwb::evaluate(stepTask, source, o, settings));
      } catch (const std::exception &e) {
        kwb::EvaluationResult r;
        r.outcome = kwb::Outcome::Error;
        r.message = e.what();
        p.set_value(r);
      }
      futures.push_back(p.get_future());
    }
  }
  std::vector<kwb::EvaluationResult> results;
  for (auto &f : futures) results.push_back(f.get());
  return results;
}

// The task and its steps (the bundled lineage, or a folder of versions); false, with the problem
// said (file, line and field for a malformed manifest), when they cannot be read.
bool loadSteps(const std::string &taskPath, const std::string &versions, kwb::Task &task,
               std::vector<kwb::LineageStep> &steps) {
  try {
    task = kwb::loadTask(taskPath);
    steps = versions.empty() ? kwb::loadLineage(task).steps : kwb::versionsOf(task, versions);
    return true;
  } catch (const kwb::ManifestError &e) {
    std::cerr << e.what() << "\n";
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << taskPath << ": " << e.what() << "\n";
  }
  return false;
}

}  // namespace

int lineageCommand(const LineageArgs &args, bool asJson) {
  kwb::Task task;
  kwb::Lineage lineage;
  if (!loadSteps(args.task, "", task, lineage.steps)) return 2;
  std::vector<const kwb::LineageStep *> steps;
  for (const auto &s : lineage.steps)
    if (args.steps.empty() || std::find(args.steps.begin(), args.steps.end(), s.index) != args.steps.end())
      steps.push_back(&s);
  if (steps.empty()) {
    std::cerr << "kwb: no such step; " << task.name << "'s lineage has steps 1 to " << lineage.steps.size() << "\n";
    return 2;
  }

  kwb::EvaluationOptions options;
  options.configs = args.configs;
  options.seeds = args.seeds;
  options.arch = args.arch;
  options.time = args.time;
  options.timeTorch = false;  // steps against each other and the reference (kwb eval --time adds PyTorch)
  options.timingCap = std::chrono::milliseconds(static_cast<long long>(args.timeCap * 1000));
  options.timeLimit = std::chrono::milliseconds(static_cast<long long>(args.timeLimit * 1000));

  kwb::EvaluatorSettings base;
  if (!applyWorkers(args.workers, base)) return 2;
  const auto results = evaluateSteps(task, steps, options, args.noGpu, args.gpus, base, asJson);

  json out = {{"task", task.name}, {"description", task.description}, {"steps", json::array()}};
  bool allCorrect = true, anyRun = false;
  const std::size_t width = [&] {
    std::size_t w = 5;
    for (const auto *s : steps) w = std::max(w, s->title.size());
    return w;
  }();
  std::map<std::string, json> previous;  // per configuration: the last step's figures
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto &s = *steps[i];
    const auto &r = results[i];
    if (out.value("device", std::string()).empty() && !r.device.empty()) out["device"] = r.device;
    json step = {{"index", s.index},
                 {"file", fs::relative(s.file, task.folder).string()},
                 {"title", s.title},
                 {"adds", s.adds},
                 {"relies_on", s.reliesOn},
                 {"host_launcher", s.hostLauncher},
                 {"outcome", kwb::toString(r.outcome)},
                 {"message", r.message},
                 {"device_ordinal", r.deviceOrdinal},
                 {"configs", json::array()}};
    for (const auto &k : r.candidate.kernels)
      step["kernels"].push_back({{"name", k.name}, {"registers", k.registers}, {"spill_stores", k.spillStoreBytes},
                                 {"spill_loads", k.spillLoadBytes}, {"static_shared", k.sharedStaticBytes}});
    for (const auto &c : r.configs) {
      const auto it = previous.find(c.config);
      json cj = configJson(kwb::taskForStep(task, s), c, it == previous.end() ? nullptr : &it->second);
      previous[c.config] = cj;
      step["configs"].push_back(cj);
    }
    allCorrect = allCorrect && r.outcome == kwb::Outcome::Correct;
    anyRun = anyRun || r.outcome != kwb::Outcome::NotRun;
    if (!asJson) {
      std::cout << s.index << "/" << lineage.steps.size() << "  " << s.title << std::string(width + 2 - s.title.size(), ' ')
                << kwb::toString(r.outcome);
      for (const auto &cj : step["configs"]) {
        if (!cj.contains("median_ms")) continue;
        std::cout << "  " << cj["config"].get<std::string>() << " " << fixed(cj["median_ms"].get<double>() * 1000, 1)
                  << " us";
        if (cj.contains("speedup_vs_previous")) std::cout << " (" << fixed(cj["speedup_vs_previous"].get<double>(), 2) << "x)";
      }
      std::cout << "\n";
      for (const auto &k : r.candidate.kernels)
        std::cout << "    " << k.name << ": " << k.registers << " registers, " << k.spillStoreBytes << "/"
                  << k.spillLoadBytes << " B spill stores/loads\n";
      for (const auto &c : r.configs)
        if (c.occupancy && !c.occupancy->launchable())
          std::cout << "    " << c.config << ": not launchable: " << c.occupancy->error << "\n";
      if (r.outcome != kwb::Outcome::Correct && r.outcome != kwb::Outcome::NotRun)
        std::cout << "    " << s.file.filename().string() << ": " << r.message << "\n";
      for (const auto &d : r.candidate.diagnostics)
        if (d.severity == kwb::Diagnostic::Severity::Error) std::cout << "    " << kwb::formatDiagnostic(d) << "\n";
    }
    out["steps"].push_back(step);
  }
  if (asJson) std::cout << out.dump(2) << "\n";
  if (!anyRun) return 3;
  return allCorrect ? 0 : 1;
}

namespace {

// --deoptimize: the model's versions, gated one by one, written forward to a folder; the build
// then goes on from that folder (on a GPU). Returns the exit status when the build must not go on.
std::optional<int> deoptimizeInto(LineageBuildArgs &args, bool asJson) {
  if (!args.fromVersions.empty()) {
    std::cerr << "kwb: --deoptimize and --from-versions are two sources of versions: give one\n";
    return 2;
  }
  if (args.provider.empty()) {
    std::cerr << "kwb: --deoptimize needs --provider (a configured provider's name, or a base URL)\n";
    return 2;
  }
  const auto expert = loadCandidate(args.task, args.deoptimize, "kwb lineage build");
  if (!expert) return 2;
  const auto chat = chatProvider(args.provider, args.format, args.model);
  if (!chat) return 2;
  kwb::EvaluatorSettings es;
  if (!applyWorkers(args.workers, es)) return 2;
  if (!args.gpus.empty()) es.device = args.gpus.front();
  kwb::Evaluator evaluator(es);
  kwb::agent::DeoptimizeServices services;
  services.provider = chat.get();
  services.evaluator = &evaluator;
  if (!asJson) services.onProgress = [](const std::string &line) { std::cerr << "kwb: " << line << "\n"; };
  kwb::agent::DeoptimizeSettings settings;
  settings.maxSteps = args.maxSteps;
  settings.maxTokens = args.maxTokens;
  settings.arch = args.arch;
  settings.timingCap = std::chrono::milliseconds(static_cast<long long>(args.timeCap * 1000));
  settings.tunables = expert->tunables;
  const std::string expertName = expert->path.filename().string();
  const fs::path out = !args.out.empty() ? fs::path(args.out) : fs::path(expert->path.stem().string() + "-deoptimized");
  try {
    // The folder is rewritten after every answer: Ctrl+C or a crash keeps the versions so far.
    const auto result = kwb::agent::deoptimizeToFolder(expert->task, expert->text, expertName, out, services, settings);
    const auto &d = result.deoptimization;
    std::size_t accepted = 0;
    for (const auto &s : d.steps) accepted += s.accepted;
    std::cerr << "kwb: de-optimization of " << expertName << " stopped: " << d.stopReason << "; " << accepted << " of "
              << d.steps.size() << " answers accepted" << (d.onGpu ? "" : " (compiled only: no GPU)") << "; "
              << result.files.size() << " versions written forward to " << out.string() << " (deoptimize.json: every answer)\n";
    using Use = kwb::agent::DeoptimizedFolder::Use;
    switch (result.use()) {
      case Use::Cancelled: return 1;
      case Use::TooFewVersions:
        std::cerr << "kwb: fewer than two versions: no lineage to build\n";
        return 1;
      case Use::CompiledOnly:
        std::cerr << "kwb: no GPU: nothing stored; on a GPU, kwb lineage build " << args.task << " --from-versions "
                  << out.string() << " gates each forward step and lifts the cards\n";
        return 3;
      case Use::Build: break;
    }
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return 1;
  }
  args.fromVersions = out.string();
  if (args.name.empty()) args.name = expert->task.name + "@deopt-" + expert->path.stem().string();
  return std::nullopt;
}

}  // namespace

int lineageBuildCommand(const LineageBuildArgs &givenArgs, bool asJson) {
  LineageBuildArgs args = givenArgs;
  if (!args.deoptimize.empty())
    if (const auto status = deoptimizeInto(args, asJson)) return *status;
  kwb::Task task;
  std::vector<kwb::LineageStep> steps;
  const bool fromVersions = !args.fromVersions.empty();
  if (!loadSteps(args.task, args.fromVersions, task, steps)) return 2;
  const std::string name = !args.name.empty() ? args.name
                           : fromVersions     ? task.name + "@" + fs::absolute(args.fromVersions).filename().string()
                                              : task.name;
  const auto sources = kwb::stepSources(steps);
  kwb::LineageBuildOptions options;
  options.name = name;
  options.origin = !args.deoptimize.empty() ? "deoptimization" : fromVersions ? "versions" : "bundled";
  options.evaluation.configs = args.configs;
  options.evaluation.arch = args.arch;
  options.evaluation.timingCap = std::chrono::milliseconds(static_cast<long long>(args.timeCap * 1000));
  options.profile = !args.noProfile;
  options.profileConfig = args.profileConfig;
  if (!options.profileConfig.empty() && !task.config(options.profileConfig)) {
    std::cerr << "kwb: --profile-config " << options.profileConfig << ": " << task.name << " has no such configuration\n";
    return 2;
  }
  kwb::EvaluatorPoolSettings ps;
  if (!applyWorkers(args.workers, ps.evaluator)) return 2;
  ps.devices = args.gpus;
  kwb::EvaluatorPool pool(ps, [](const std::string &m) { std::cerr << "kwb: " << m << "\n"; });
  if (pool.devices().empty()) {
    std::cerr << "kwb: no GPU (" << pool.problem()
              << "): a stored lineage has every step gated and timed on a GPU; nothing stored\n";
    return 3;
  }
  kwb::LineageBuildProgress progress;
  if (!asJson) {
    progress.onMessage = [](const std::string &line) { std::cerr << "kwb: " << line << "\n"; };
    progress.onGated = [&](std::size_t i, std::size_t n, const kwb::EvaluationResult &r) {
      std::cerr << "kwb: gated " << (i + 1) << "/" << n << " " << steps[i].title << ": " << kwb::toString(r.outcome) << "\n";
    };
    progress.onProfiled = [&](std::size_t i, std::size_t n, const kwb::profile::ProfileResult &p) {
      std::cerr << "kwb: profiled " << (i + 1) << "/" << n << " " << steps[i].title << ": " << kwb::toString(p.outcome)
                << (p.outcome == kwb::Outcome::Profiled ? " (" + std::to_string(p.metrics.size()) + " metrics, " +
                                                              std::to_string(p.passes) + " passes)"
                                                        : ": " + p.message)
                << "\n";
    };
  }
  auto built = kwb::buildLineage(task, steps, sources, pool, options, progress);
  if (!built.onGpu) {
    std::cerr << "kwb: no GPU ran the steps: a stored lineage has every step gated and timed on a GPU; nothing stored\n";
    return 3;
  }
  auto &record = built.record;
  std::unique_ptr<kwb::SkillLibrary> library;
  std::vector<kwb::SkillCard> cards;
  try {
    library = kwb::SkillLibrary::open(args.library.empty() ? kwb::SkillLibrary::defaultPath() : fs::path(args.library));
    cards = kwb::storeLineage(*library, record, task, "kwb lineage build");
  } catch (const std::exception &e) {
    std::cerr << "kwb: the skill library: " << e.what() << "\n";
    return 1;
  }
  try {
    // Each step is also experience: a Case in the memory, under the previous accepted step.
    auto memory = kwb::memory::ExperienceStore::open(library->path());
    const auto added = kwb::memory::recordLineageCases(*memory, record, task);
    if (!asJson) std::cerr << "kwb: " << added << " steps recorded in the experience memory\n";
  } catch (const std::exception &e) {
    std::cerr << "kwb: the experience memory: " << e.what() << " (the lineage and its cards are stored)\n";
  }
  if (asJson) {
    json out = record;
    for (auto &s : out["steps"]) s.erase("source");
    out["library"] = library->path().string();
    out["cards"] = json::array();
    for (const auto &c : cards) {
      const auto stored = library->card(c.id);
      out["cards"].push_back({{"skill_id", c.id},
                              {"status", kwb::toString(stored ? stored->status : c.status)},
                              {"provides", c.providedFeatures},
                              {"measured_speedup", c.measuredSpeedup()}});
    }
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "lineage " << name << " on " << record.device << " (" << record.arch << "): " << record.acceptedSteps() << " of "
              << record.steps.size() << " steps passed the gate; stored in " << library->path().string() << "\n";
    for (const auto &s : record.steps) {
      std::cout << "  " << s.position << "  " << (s.accepted ? "accepted" : "REJECTED") << "  " << s.title;
      for (const auto &f : s.figures)
        if (f.medianMs > 0)
          std::cout << "  " << f.config << " " << fixed(f.medianMs * 1000, 1) << " us"
                    << (f.speedupVsPrevious > 0 ? " (" + fixed(f.speedupVsPrevious, 2) + "x)" : "");
      std::cout << "\n";
      if (!s.accepted) std::cout << "     " << s.reason << "\n";
      if (!s.profileNote.empty() && s.accepted) std::cout << "     not profiled: " << s.profileNote << "\n";
      for (const auto &d : s.deltas)
        if (d.metric.rfind("profile ", 0) == 0)
          std::cout << "     " << d.metric << ": " << fixed(d.before, 1) << " -> " << fixed(d.after, 1) << "\n";
    }
    std::cout << cards.size() << " skill card" << (cards.size() == 1 ? "" : "s") << " proposed or merged:\n";
    for (const auto &c : cards)
      std::cout << "  " << c.id << "  " << fixed(c.measuredSpeedup(), 2) << "x  " << c.intent.substr(0, 80) << "\n";
  }
  return record.acceptedSteps() == static_cast<int>(record.steps.size()) ? 0 : 1;
}
