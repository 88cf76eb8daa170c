// kwb-bench-eval-throughput: candidates evaluated per minute on one GPU, (a) serially, one
// Evaluator compiling and evaluating each candidate in turn, and (b) overlapped: a pool of
// threads compiles the next candidates into the same disk cache through kwb::Compiler, with the
// very request the Evaluator builds (kwb::requestFor), while the Evaluator works on the GPU; the
// Evaluator then finds each candidate in the cache.
//
// The M candidates are the task's starter, each with a distinct first line (so each is a real
// compile miss) and the task's first tunable cycling through its values. Each mode starts from
// an empty cache directory and a fresh Evaluator whose worker is started (and the reference
// compiled) by one untimed warm-up evaluation of the plain starter. Each candidate is evaluated
// for correctness on one configuration and timed with a short time cap.
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "core/compile/compiler.h"
#include "core/eval/evaluator.h"
#include "core/gpu/device_info.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace kb = kwb::bench;

namespace {

constexpr const char *kProgram = "kwb-bench-eval-throughput";

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Candidate {
  std::string name;  // the source name, part of the compile request
  std::string source;
  std::map<std::string, std::int64_t> tunables;
};

struct Evaluated {
  std::string outcome;
  bool cacheHit = false;
  double compileSeconds = 0;    // the Evaluator's compile (a cache lookup when pre-compiled)
  double poolCompileSeconds = 0;  // the pool's compile (overlapped mode)
  bool poolCompileOk = true;
  double waitSeconds = 0;       // waiting for the pool before evaluating
  double evaluateSeconds = 0;   // the whole evaluate() call
};

struct ModeResult {
  std::string mode;
  double seconds = 0;
  std::vector<Evaluated> candidates;
  std::string warmupOutcome;

  json toJson() const {
    std::map<std::string, int> outcomes;
    int hits = 0;
    double compile = 0, pool = 0, wait = 0, eval = 0;
    json rows = json::array();
    for (const auto &c : candidates) {
      ++outcomes[c.outcome];
      hits += c.cacheHit;
      compile += c.compileSeconds;
      pool += c.poolCompileSeconds;
      wait += c.waitSeconds;
      eval += c.evaluateSeconds;
      rows.push_back({{"outcome", c.outcome},
                      {"cache_hit", c.cacheHit},
                      {"compile_s", c.compileSeconds},
                      {"pool_compile_s", c.poolCompileSeconds},
                      {"pool_compile_ok", c.poolCompileOk},
                      {"wait_s", c.waitSeconds},
                      {"evaluate_s", c.evaluateSeconds}});
    }
    const double n = candidates.empty() ? 1.0 : static_cast<double>(candidates.size());
    return {{"mode", mode},
            {"seconds", seconds},
            {"candidates", candidates.size()},
            {"candidates_per_minute", seconds > 0 ? 60.0 * static_cast<double>(candidates.size()) / seconds : 0.0},
            {"outcomes", outcomes},
            {"evaluator_cache_hits", hits},
            {"mean_evaluator_compile_s", compile / n},
            {"mean_pool_compile_s", pool / n},
            {"mean_wait_s", wait / n},
            {"mean_evaluate_s", eval / n},
            {"warmup_outcome", warmupOutcome},
            {"per_candidate", rows}};
  }
};

fs::path freshDirectory(const fs::path &root, const std::string &stem) {
  std::string pattern = (root / (stem + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a folder under " + root.string());
  return pattern;
}

ModeResult runMode(bool overlapped, const kwb::Task &task, const std::string &starter,
                   const std::vector<Candidate> &candidates, const kwb::EvaluationOptions &base,
                   kwb::EvaluatorSettings settings, const fs::path &cacheDir, const std::string &arch, int threads) {
  ModeResult mode;
  mode.mode = overlapped ? "overlapped" : "serial";
  settings.compiler.cacheDirectory = cacheDir;
  kwb::Evaluator evaluator(settings);
  {
    kwb::EvaluationOptions warm = base;
    warm.sourceName = "warmup.cu";
    mode.warmupOutcome = kwb::toString(evaluator.evaluate(task, starter, warm).outcome);
  }

  // The pool: each thread takes the next candidate not yet taken and compiles it.
  const kwb::Compiler compiler(settings.compiler);
  std::vector<std::promise<kwb::CompileResult>> compiled(candidates.size());
  std::vector<std::future<kwb::CompileResult>> ready;
  for (auto &p : compiled) ready.push_back(p.get_future());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  struct Joiner {
    std::vector<std::thread> &threads;
    ~Joiner() {
      for (auto &t : threads)
        if (t.joinable()) t.join();
    }
  } joiner{pool};

  const auto started = Clock::now();
  if (overlapped)
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (std::size_t i = next++; i < candidates.size(); i = next++) {
          const auto &c = candidates[i];
          // The very request Evaluator::evaluate builds for this candidate.
          const auto request =
              kwb::requestFor(task, c.source, c.name, arch, kwb::effectiveTunables(task, c.tunables));
          compiled[i].set_value(compiler.compile(request));
        }
      });
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    Evaluated e;
    if (overlapped) {
      const auto waitStart = Clock::now();
      const auto r = ready[i].get();
      e.waitSeconds = since(waitStart);
      e.poolCompileSeconds = r.seconds;
      e.poolCompileOk = r.ok;
    }
    kwb::EvaluationOptions options = base;
    options.sourceName = candidates[i].name;
    options.tunables = candidates[i].tunables;
    const auto evalStart = Clock::now();
    const auto result = evaluator.evaluate(task, candidates[i].source, options);
    e.evaluateSeconds = since(evalStart);
    e.outcome = kwb::toString(result.outcome);
    e.cacheHit = result.candidate.cacheHit;
    e.compileSeconds = result.candidate.seconds;
    mode.candidates.push_back(e);
  }
  mode.seconds = since(started);
  return mode;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"Candidates evaluated per minute on one GPU: serially, and with compilation of the next\n"
               "candidates overlapped with GPU work. Prints a table and writes JSON.",
               kProgram};
  std::string taskArg = "softmax", configName = "small", outPath;
  int count = 12, threads = 2, device = 0;
  double timeCap = 0.3;
  bool compileOnly = false;
  app.add_option("TASK", taskArg, "Task folder or a bundled task's name (default softmax)");
  app.add_option("--config", configName, "Size configuration evaluated (default small)");
  app.add_option("--candidates", count, "Distinct candidates M (default 12)")->check(CLI::Range(1, 1000));
  app.add_option("--threads", threads, "Compile threads in the overlapped mode (default 2)")->check(CLI::Range(1, 64));
  app.add_option("--time-cap", timeCap, "Seconds of timing samples per candidate (default 0.3)")
      ->check(CLI::PositiveNumber);
  app.add_option("--device", device, "CUDA device ordinal");
  app.add_option("--out", outPath, "JSON file to write");
  app.add_flag("--compile-only", compileOnly,
               "No GPU use: the same steps with a compile-only Evaluator (checks on a machine without a GPU that "
               "the pool's requests hit the Evaluator's cache; the figures are not the benchmark's)");
  CLI11_PARSE(app, argc, argv);

  const auto inventory = kwb::probeGpus();
  const kwb::DeviceInfo *gpu = kb::requireDevice(kProgram, inventory, device);
  if (!gpu && !compileOnly) return kb::kExitNoDevice;
  // As the Evaluator chooses: the device's architecture, else sm_90.
  const std::string arch = gpu && !compileOnly ? kb::archOf(*gpu) : "sm_90";

  kwb::Task task;
  std::string starter;
  try {
    std::error_code ec;
    fs::path path = taskArg;
    if (!fs::exists(path, ec))
      if (auto kernels = kwb::bundledKernelsDir()) path = *kernels / taskArg;
    task = kwb::loadTask(path);
    starter = kb::readText(task.folder / task.starterSource());
  } catch (const std::exception &e) {
    std::cerr << kProgram << ": " << taskArg << ": " << e.what() << "\n";
    return kb::kExitUsage;
  }
  if (!task.config(configName)) {
    std::cerr << kProgram << ": task '" << task.name << "' has no size configuration '" << configName << "'\n";
    return kb::kExitUsage;
  }

  // M distinct candidates: a distinct first line, the first tunable cycling through its values.
  const auto nonce = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  std::vector<Candidate> candidates;
  for (int i = 0; i < count; ++i) {
    Candidate c;
    c.name = task.name + "-variant-" + std::to_string(i) + ".cu";
    c.source = "// " + std::string(kProgram) + " variant " + std::to_string(i) + " (run " + nonce + ")\n#define KWB_BENCH_VARIANT " +
               std::to_string(i) + "\n" + starter;
    if (!task.tunables.empty()) {
      const auto &t = task.tunables.front();
      c.tunables[t.name] = t.values[static_cast<std::size_t>(i) % t.values.size()];
    }
    candidates.push_back(std::move(c));
  }

  kwb::EvaluationOptions options;
  options.configs = {configName};
  options.time = true;
  options.timingCap = std::chrono::milliseconds(static_cast<long long>(timeCap * 1000));
  kwb::EvaluatorSettings settings;
  settings.device = device;
  settings.useDevice = !compileOnly;

  const fs::path scratch = freshDirectory(fs::temp_directory_path(), "kwb-bench-throughput");
  std::vector<ModeResult> modes;
  try {
    modes.push_back(runMode(false, task, starter, candidates, options, settings, freshDirectory(scratch, "serial"), arch,
                            threads));
    std::cerr << "serial: " << kb::formatSeconds(modes.back().seconds) << " s\n";
    modes.push_back(runMode(true, task, starter, candidates, options, settings, freshDirectory(scratch, "overlapped"),
                            arch, threads));
    std::cerr << "overlapped: " << kb::formatSeconds(modes.back().seconds) << " s\n";
  } catch (const std::exception &e) {
    std::cerr << kProgram << ": " << e.what() << "\n";
    std::error_code ec;
    fs::remove_all(scratch, ec);
    return kb::kExitFailed;
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);

  json report = {{"meta", kb::benchMeta(kProgram, inventory, device)},
                 {"settings",
                  {{"task", task.name}, {"config", configName}, {"candidates", count}, {"compile_threads", threads},
                   {"time_cap_s", timeCap}, {"seeds", task.seeds}, {"arch", arch}, {"compile_only", compileOnly}}},
                 {"modes", json::array()}};
  kb::Table table({"mode", "candidates", "seconds", "candidates/min", "outcomes", "evaluator cache hits",
                   "mean compile s", "mean wait s", "mean evaluate s"});
  int status = kb::kExitOk;
  for (const auto &m : modes) {
    const auto j = m.toJson();
    report["modes"].push_back(j);
    std::string outcomes;
    for (const auto &[o, n] : j["outcomes"].items())
      outcomes += (outcomes.empty() ? "" : ",") + o + "x" + std::to_string(n.get<int>());
    const bool overlapped = m.mode == "overlapped";
    table.add({m.mode, std::to_string(m.candidates.size()), kb::formatSeconds(m.seconds),
               kb::formatNumber(j["candidates_per_minute"].get<double>(), 1), outcomes,
               std::to_string(j["evaluator_cache_hits"].get<int>()) + "/" + std::to_string(m.candidates.size()),
               kb::formatSeconds(overlapped ? j["mean_pool_compile_s"].get<double>()
                                            : j["mean_evaluator_compile_s"].get<double>()),
               kb::formatSeconds(j["mean_wait_s"].get<double>()), kb::formatSeconds(j["mean_evaluate_s"].get<double>())});
    // Every pre-compiled candidate must be a hit, or the pool's request is not the Evaluator's.
    if (overlapped && j["evaluator_cache_hits"].get<int>() != static_cast<int>(m.candidates.size())) {
      std::cerr << kProgram << ": the Evaluator missed the cache for "
                << m.candidates.size() - j["evaluator_cache_hits"].get<std::size_t>()
                << " pre-compiled candidate(s): the pool's request differs from the Evaluator's\n";
      status = kb::kExitFailed;
    }
  }
  if (modes.size() == 2 && modes[0].seconds > 0 && modes[1].seconds > 0)
    report["overlap_speedup"] = modes[0].seconds / modes[1].seconds;
  std::cout << "Evaluation throughput on " << (gpu && !compileOnly ? gpu->name : "no GPU (compile only)") << ": "
            << task.name << " " << configName << ", " << count << " distinct candidates, time cap " << timeCap << " s, "
            << threads << " compile thread(s), commit " << kb::benchCommit() << "\n"
            << table.str();
  if (report.contains("overlap_speedup"))
    std::cout << "overlapped / serial throughput: " << kb::formatNumber(report["overlap_speedup"].get<double>(), 2)
              << "x\n";
  if (!outPath.empty() && !kb::writeJson(outPath, report)) status = kb::kExitFailed;
  return compileOnly && !gpu ? kb::kExitNoDevice : status;
}
