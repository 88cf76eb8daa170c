#include "app/cli/workers_option.h"
#include "app/cli/tune_command.h"

#include "app/cli/candidate_input.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "core/store/database.h"
#include "core/task/manifest_parser.h"
#include "core/memory/case_sources.h"
#include "core/tune/tune_cache.h"
#include "core/tune/tuner.h"

namespace fs = std::filesystem;

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNotRun = 3;

volatile std::sig_atomic_t gInterrupted = 0;
extern "C" void onTuneInterrupt(int) { gInterrupted = 1; }

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 1 ? "%.3f ms" : "%.1f us", v >= 1 ? v : v * 1000);
  return buf;
}

std::string setFlags(const kwb::tune::Point &p) {
  std::string s;
  for (const auto &[k, v] : p) s += " --set " + k + "=" + std::to_string(v);
  return s;
}

}  // namespace

int tuneCommand(const TuneArgs &args, bool asJson) {
  auto input = loadCandidate(args.task, args.candidate);
  if (!input) return kExitUsage;
  const kwb::Task &task = input->task;
  const fs::path &candidatePath = input->path;
  const auto strategy = kwb::tune::parseStrategy(args.strategy);
  if (!strategy) {
    std::cerr << "kwb: --strategy " << args.strategy << ": use auto, exhaustive or random-local\n";
    return kExitUsage;
  }

  kwb::tune::TuneSettings s;
  if (!applyWorkers(args.workers, s.evaluator)) return kExitUsage;
  s.strategy = *strategy;
  s.budget = args.budget;
  s.seed = args.searchSeed;
  s.configs = args.configs;
  s.seeds = args.seeds;
  s.arch = args.arch;
  s.gpus = args.gpus;
  s.timingCap = std::chrono::milliseconds(static_cast<long long>(args.timeCap * 1000));
  s.timeLimit = std::chrono::milliseconds(static_cast<long long>(args.timeLimit * 1000));
  s.useDevice = !args.noGpu;
  s.compileAhead = !args.noCompileAhead;
  s.useCache = !args.noCache;
  s.fresh = args.fresh;
  if (!args.cacheFile.empty()) s.cacheFile = args.cacheFile;

  const kwb::tune::SearchSpace space(task.tunables);
  if (!asJson) {
    std::cout << "tuning " << candidatePath.string() << " on " << task.name << ": " << task.tunables.size()
              << " tunable(s), " << space.size() << " point(s)";
    if (task.tunables.empty()) std::cout << " (the task declares no [tunables]: one evaluation)";
    std::cout << "\n";
  }

  kwb::tune::Tuner tuner(s);
  // Ctrl+C stops the search: what runs is cancelled, what was measured stays in the cache.
  gInterrupted = 0;
  std::signal(SIGINT, onTuneInterrupt);
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    while (!finished) {
      if (gInterrupted) {
        tuner.cancel();
        gInterrupted = 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  kwb::tune::TuneReport report;
  int status = 0;
  try {
    report = tuner.tune(task, input->text, candidatePath.string(), [&](const kwb::tune::TunedPoint &p, const kwb::tune::TuneReport &r) {
      if (asJson) return;
      std::cout << "[" << r.points.size() << "/" << r.budget << "] " << p.label << "  " << kwb::toString(p.result.outcome);
      if (p.result.objectiveMs) std::cout << "  " << ms(*p.result.objectiveMs);
      if (p.result.outcome == kwb::Outcome::NotRun && p.result.registers >= 0)
        std::cout << "  (compiled: " << p.result.registers << " registers)";
      if (p.cached) std::cout << "  (cached)";
      if (r.best && *r.best == p.order) std::cout << "  best so far";
      if (p.result.outcome != kwb::Outcome::Correct && p.result.outcome != kwb::Outcome::NotRun && !p.result.message.empty())
        std::cout << "  " << p.result.message;
      std::cout << std::endl;
    });
  } catch (const std::invalid_argument &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    status = kExitUsage;
  } catch (const kwb::StoreError &e) {
    std::cerr << "kwb: the tuning cache " << (s.cacheFile.empty() ? kwb::tune::TuneCache::defaultPath() : s.cacheFile).string()
              << " cannot be used: " << e.what() << " (use --cache FILE or --no-cache)\n";
    status = kExitFailed;
  }
  finished = true;
  watcher.join();
  std::signal(SIGINT, SIG_DFL);
  if (status) return status;

  // Every measured point is experience (issue 19): a Case each in the library's memory.
  std::string memoryLine;
  if (!args.noMemory) {
    try {
      auto store = kwb::memory::ExperienceStore::open();
      const auto added = kwb::memory::recordTuningCases(*store, report, task, input->text);
      if (added) memoryLine = std::to_string(added) + " point(s) recorded in the experience memory (kwb memory stats)";
    } catch (const std::exception &e) {
      std::cerr << "kwb: the experience memory did not record the points: " << e.what() << "\n";
    }
  }

  if (asJson) {
    std::cout << nlohmann::json(report).dump(2) << "\n";
  } else {
    if (report.stop == "no-device")
      std::cout << "\n" << report.points.size() << " point(s) compiled, none measured; strategy "
                << kwb::tune::toString(report.strategy) << "; " << static_cast<int>(report.seconds + 0.5) << " s\n";
    else
      std::cout << "\n" << report.points.size() << " point(s): " << report.measured << " measured, " << report.cached
                << " from the cache, " << report.rejected << " rejected; strategy " << kwb::tune::toString(report.strategy)
                << ", " << report.compiledAhead << " compiled ahead; " << static_cast<int>(report.seconds + 0.5) << " s\n";
    if (!report.message.empty()) std::cout << report.message << "\n";
    // The five fastest correct points.
    std::vector<const kwb::tune::TunedPoint *> ranked;
    for (const auto &p : report.points)
      if (p.result.objectiveMs) ranked.push_back(&p);
    std::sort(ranked.begin(), ranked.end(), [](auto *a, auto *b) { return *a->result.objectiveMs < *b->result.objectiveMs; });
    for (std::size_t i = 0; i < ranked.size() && i < 5; ++i) {
      std::cout << (i == 0 ? "best  " : "      ") << ms(*ranked[i]->result.objectiveMs) << "  " << ranked[i]->label;
      for (const auto &[config, t] : ranked[i]->result.configMs) std::cout << "  " << config << " " << ms(t);
      std::cout << "\n";
    }
    if (!ranked.empty())
      std::cout << "reproduce: kwb eval " << args.task << " " << candidatePath.string() << setFlags(ranked.front()->point)
                << " --time\n";
    if (!report.cacheFile.empty()) std::cout << "cache: " << report.cacheFile << "\n";
    if (!memoryLine.empty()) std::cout << "memory: " << memoryLine << "\n";
  }
  if (report.stop == "no-device") return kExitNotRun;
  if (report.stop == "cancelled") return kExitFailed;
  return report.best ? 0 : kExitFailed;
}
