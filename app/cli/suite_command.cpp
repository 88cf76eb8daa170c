#include "app/cli/workers_option.h"
#include "app/cli/suite_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/eval/evaluator_pool.h"
#include "core/eval/suite_metrics.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"
#include "kwb/version.h"

namespace fs = std::filesystem;

namespace {

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string utcNow() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The task folders in `dir` (those with a task.toml), by name.
std::vector<fs::path> taskFolders(const fs::path &dir) {
  std::vector<fs::path> out;
  for (const auto &e : fs::directory_iterator(dir))
    if (e.is_directory() && fs::exists(e.path() / "task.toml")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void printRow(const kwb::SuiteEntry &e) {
  auto ms = [](double v) { return v > 0 ? fixed(v, 4) : std::string("-"); };
  auto x = [](double v) { return v > 0 ? fixed(v, 2) + "x" : std::string("-"); };
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %-14s %10s %10s %9s %10s %10s", e.task.c_str(), e.outcome.c_str(),
                ms(e.candidateMs).c_str(), ms(e.eagerMs).c_str(), x(e.speedupEager).c_str(), ms(e.compiledMs).c_str(),
                x(e.speedupCompiled).c_str());
  std::cout << line << "\n";
  if (!e.correct && !e.message.empty()) std::cout << "    " << e.message << "\n";
  std::cout.flush();  // a row as soon as its task is done
}

}  // namespace

int suiteCommand(const SuiteArgs &args, bool asJson) {
  if (!fs::is_directory(args.tasks) || !fs::is_directory(args.candidates)) {
    std::cerr << "kwb suite: " << (fs::is_directory(args.tasks) ? args.candidates : args.tasks)
              << " is not a folder\n";
    return 2;
  }
  const auto folders = taskFolders(args.tasks);
  if (folders.empty()) {
    std::cerr << "kwb suite: no task folders (with a task.toml) in " << args.tasks << "\n";
    return 2;
  }
  kwb::EvaluatorPoolSettings settings;
  if (!applyWorkers(args.workers, settings.evaluator)) return 2;
  settings.devices = args.devices;
  settings.evaluator.torch.python = args.python;
  kwb::EvaluatorPool pool(settings, [asJson](const std::string &m) {
    if (!asJson) std::cerr << "pool: " << m << "\n";
  });
  if (!pool.problem().empty()) {
    std::cerr << "kwb suite: " << pool.problem() << "\n";
    return 3;
  }

  // Everything queued at once; the pool spreads it over the GPUs.
  struct Pending {
    std::string task, candidate;
    std::optional<kwb::SuiteEntry> done;  // settled without evaluating (no candidate, bad task)
    std::future<kwb::EvaluationResult> result;
  };
  std::vector<Pending> pending;
  const auto started = std::chrono::steady_clock::now();
  for (const auto &folder : folders) {
    Pending p;
    p.task = folder.filename().string();
    const fs::path candidate = fs::path(args.candidates) / (p.task + ".cu");
    kwb::Task task;
    std::string source;
    try {
      task = kwb::loadTask(folder);
      if (fs::exists(candidate)) source = kwb::readSourceFile(candidate, {kwb::kMaxSourceBytes, true, "candidate"});
    } catch (const std::exception &e) {
      p.done = kwb::SuiteEntry{p.task, "", "error", e.what()};
      pending.push_back(std::move(p));
      continue;
    }
    if (!fs::exists(candidate)) {
      p.done = kwb::SuiteEntry{p.task, "", "no-candidate", "no " + candidate.string()};
      pending.push_back(std::move(p));
      continue;
    }
    p.candidate = candidate.string();
    kwb::EvaluationOptions o;
    for (const auto &c : args.configs)
      if (task.config(c)) o.configs.push_back(c);
    o.time = true;
    o.timingCap = std::chrono::milliseconds(static_cast<long long>(args.timeCap * 1000));
    o.timeLimit = std::chrono::milliseconds(static_cast<long long>(args.timeLimit * 1000));
    o.timeTorchCompiled = !args.noTorchCompile;
    o.sourceName = candidate.string();
    p.result = pool.submit(std::move(task), std::move(source), o);
    pending.push_back(std::move(p));
  }
  if (!asJson) {
    std::cout << "kwb suite: " << pending.size() << " tasks from " << args.tasks << ", candidates from " << args.candidates
              << "\n";
    char head[256];
    std::snprintf(head, sizeof head, "%-24s %-14s %10s %10s %9s %10s %10s", "task", "outcome", "cand ms", "eager ms",
                  "vs eager", "compile ms", "vs compile");
    std::cout << head << "\n";
  }
  std::vector<kwb::SuiteEntry> entries;
  std::string device;
  for (auto &p : pending) {
    kwb::SuiteEntry e;
    if (p.done) {
      e = *p.done;
    } else {
      const auto r = p.result.get();
      if (device.empty()) device = r.device;
      e = kwb::suiteEntry(p.task, p.candidate, r);
      if (e.correct && e.configsTimed == 0 && !r.torchProblem.empty()) e.message = r.torchProblem;
    }
    if (!asJson) printRow(e);
    entries.push_back(e);
  }
  const auto metrics = kwb::suiteMetrics(entries);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  nlohmann::json j = {{"program", "kwb suite"},
                      {"version", kwb::kVersion},
                      {"date", utcNow()},
                      {"gpu", device},
                      {"tasks_folder", args.tasks},
                      {"candidates_folder", args.candidates},
                      {"seconds", seconds},
                      {"metrics", kwb::toJson(metrics)},
                      {"entries", nlohmann::json::array()}};
  for (const auto &e : entries) j["entries"].push_back(kwb::toJson(e));
  if (!args.out.empty()) std::ofstream(args.out) << j.dump(2) << "\n";
  if (asJson) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  auto fast = [](const std::vector<kwb::FastP> &v) {
    std::string s;
    for (const auto &f : v) s += (s.empty() ? "" : ", ") + ("fast_" + fixed(f.p, f.p == static_cast<int>(f.p) ? 0 : 1)) + " " + fixed(f.fraction, 2);
    return s;
  };
  std::cout << "correct " << metrics.correct << "/" << metrics.tasks << " (" << fixed(100.0 * metrics.correctnessRate, 0)
            << "%); over PyTorch eager: " << fast(metrics.fastEager) << "; over torch.compile: " << fast(metrics.fastCompiled)
            << " (" << fixed(seconds, 1) << " s" << (args.out.empty() ? "" : "; JSON in " + args.out) << ")\n";
  return 0;
}
