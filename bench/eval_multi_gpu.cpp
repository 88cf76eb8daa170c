// Evaluation throughput over several GPUs (issue 7): the same candidates evaluated (correctness
// and timing) through kwb::EvaluatorPool with 1, 2, 4, ... of the visible GPUs, on two
// workloads: a tuning sweep (one task's starter over its first tunable's values) and a batch of
// independent candidates (the starters of several tasks). Compiles are done once beforehand
// (the disk cache), so the figures are about spreading GPU work. Prints a table, writes JSON.
//
// --hosts (issue 49): the batch again through workers over ssh, one host against two in one pool
// (two OpenSSH servers on loopback stand for two GPU servers: tests/helpers/loopback_sshd.h),
// each host giving the pool one GPU: a different one per host where this machine has two or more,
// else the same one (the ratio then says what spreading over hosts costs or gains with the GPU
// shared, not what a second GPU gains; the JSON says which). The ratio is candidates per minute
// with two hosts over one.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <set>
#include <tuple>

#include <CLI/CLI.hpp>

#include "bench/bench_report.h"
#include "core/compile/compiler.h"
#include "core/eval/evaluator_pool.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"
#include "core/worker/worker_launcher.h"
#include "helpers/loopback_sshd.h"

namespace fs = std::filesystem;
namespace kb = kwb::bench;

namespace {

constexpr const char *kProgram = "kwb-bench-eval-multi-gpu";
using Clock = std::chrono::steady_clock;

struct Candidate {
  const kwb::Task *task = nullptr;
  std::string config;
  std::string name, source;
  std::map<std::string, std::int64_t> tunables;
};

struct Run {
  int gpus = 0;
  double seconds = 0;
  std::size_t correct = 0, total = 0;
  std::map<int, std::size_t> perDevice;
  bool pairsOnOneDevice = true;
};

// `ps`: the pool's devices and workers (one host or several); the compile cache is set here.
Run measure(const std::vector<Candidate> &candidates, kwb::EvaluatorPoolSettings ps, double timeCap,
            const fs::path &cache) {
  const std::size_t devices = ps.devices.size();
  ps.evaluator.compiler.cacheDirectory = cache;
  kwb::EvaluatorPool pool(ps, [](const std::string &m) { std::cerr << kProgram << ": " << m << "\n"; });
  auto optionsFor = [&](const Candidate &c) {
    kwb::EvaluationOptions o;
    o.configs = {c.config};
    o.time = true;
    o.timingCap = std::chrono::milliseconds(static_cast<long long>(timeCap * 1000));
    o.tunables = c.tunables;
    o.sourceName = c.name;
    return o;
  };
  // Start every device's worker (and its reference cache) before the clock starts.
  std::vector<std::future<kwb::EvaluationResult>> warm;
  for (std::size_t i = 0; i < devices; ++i)
    warm.push_back(pool.submit(*candidates[0].task, candidates[0].source, optionsFor(candidates[0])));
  for (auto &f : warm) f.get();

  Run run;
  run.gpus = static_cast<int>(devices);
  const auto started = Clock::now();
  std::vector<std::future<kwb::EvaluationResult>> results;
  for (const auto &c : candidates) results.push_back(pool.submit(*c.task, c.source, optionsFor(c)));
  for (auto &f : results) {
    const auto r = f.get();
    ++run.total;
    if (r.outcome == kwb::Outcome::Correct) ++run.correct;
    ++run.perDevice[r.deviceOrdinal];
    // A timing pair is one `time` request: both kernels on the device the result names.
    for (const auto &c : r.configs)
      if (c.timing && c.timing->ok && r.deviceOrdinal < 0) run.pairsOnOneDevice = false;
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return run;
}

// --hosts: the batch through ssh workers, one host's GPU against two hosts' (see the top). Rows
// go into `table`, the runs and the ratio into out["hosts"]. False with `problem` when the
// servers or the pools could not be set up, or not every candidate ended correct.
bool hostsRuns(const std::vector<Candidate> &batch, const std::vector<int> &all, double timeCap, const fs::path &cache,
               std::string workerPath, kb::Table &table, nlohmann::json &out, std::string &problem) {
  if (workerPath.empty())
    if (const auto found = kwb::workerExecutable()) workerPath = found->string();
  if (workerPath.empty()) {
    problem = "no kwb-worker found; name it with --worker";
    return false;
  }
  workerPath = fs::absolute(workerPath).string();
  const fs::path runtime = cache / "ssh-runtime";
  fs::create_directories(runtime);
  ::setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);  // the shared connections' sockets
  kwb::test::LoopbackSshd a("kwb-host-a"), b("kwb-host-b");
  for (const auto *server : {&a, &b})
    if (!server->problem().empty()) {
      problem = "the loopback sshd did not start: " + server->problem();
      return false;
    }
  fs::create_directories(cache / "ssh-config");  // both servers' ssh_config, included by one
  ::setenv("KWB_SSH_COMMAND", kwb::test::LoopbackSshd::sshCommandFor({&a, &b}, cache / "ssh-config").c_str(), 1);
  const auto launchers =
      kwb::worker::parseWorkerLaunchers("ssh://" + a.alias() + workerPath + ",ssh://" + b.alias() + workerPath, problem);
  if (!launchers) return false;
  // The pool numbers GPUs host after host: the first host's first, the second host's second
  // where there are two (another GPU), else its first (the same GPU).
  const int hostGpus = static_cast<int>(all.size());
  const bool distinct = hostGpus > 1;
  kwb::EvaluatorPoolSettings one;
  one.evaluator.launcher = launchers->front();
  one.devices = {0};
  kwb::EvaluatorPoolSettings two;
  two.evaluator.launcher = launchers->front();
  two.evaluator.hosts = *launchers;
  two.devices = {0, hostGpus + (distinct ? 1 : 0)};
  const Run r1 = measure(batch, one, timeCap, cache);
  const Run r2 = measure(batch, two, timeCap, cache);
  // Correct candidates per minute: a run whose workers never started has done nothing, fast.
  const double m1 = r1.seconds > 0 ? 60.0 * static_cast<double>(r1.correct) / r1.seconds : 0;
  const double m2 = r2.seconds > 0 ? 60.0 * static_cast<double>(r2.correct) / r2.seconds : 0;
  const double ratio = m1 > 0 ? m2 / m1 : 0;
  nlohmann::json runs = nlohmann::json::array();
  for (const auto &[label, r, perMinute] : {std::tuple{"1 host", r1, m1}, std::tuple{"2 hosts", r2, m2}}) {
    std::string spread;
    nlohmann::json per = nlohmann::json::object();
    for (const auto &[d, k] : r.perDevice) {
      spread += (spread.empty() ? "" : " ") + std::to_string(d) + ":" + std::to_string(k);
      per[std::to_string(d)] = k;
    }
    table.add({std::string("batch via ssh, ") + label, std::to_string(r.gpus) + (r.gpus > 1 && !distinct ? " (1 shared)" : ""),
               kb::formatNumber(r.seconds, 2), kb::formatNumber(perMinute, 1),
               r.gpus > 1 ? "x" + kb::formatNumber(ratio, 2) + " over 1 host" : "",
               std::to_string(r.correct) + "/" + std::to_string(r.total), spread});
    runs.push_back({{"hosts", label}, {"gpus", r.gpus}, {"seconds", r.seconds}, {"candidates_per_minute", perMinute},
                    {"correct", r.correct}, {"total", r.total}, {"per_device", per}});
  }
  out["hosts"] = {{"runs", runs},
                  {"ratio_two_over_one", ratio},
                  {"distinct_gpus", distinct},
                  {"note", distinct ? "each host's pool GPU a different GPU of this machine"
                                    : "both hosts give the pool this machine's one GPU: the ratio is what spreading over "
                                      "hosts costs or gains with the GPU shared, not a second GPU's gain"}};
  if (r1.correct != r1.total || r2.correct != r2.total) {
    problem = "not every candidate ended correct through ssh";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"Evaluation throughput with 1, 2, 4, ... GPUs (kwb::EvaluatorPool). Prints a table, writes JSON.",
               kProgram};
  int count = 32;
  double timeCap = 0.3;
  std::string outPath, workerPath;
  bool hosts = false, hostsOnly = false;
  app.add_option("--candidates", count, "Candidates per workload (default 32)")->check(CLI::Range(1, 10000));
  app.add_flag("--hosts", hosts,
               "Also the batch through ssh workers, one host against two (two sshd servers on loopback)");
  app.add_flag("--hosts-only", hostsOnly, "Only the batch through ssh workers, one host against two (implies --hosts)");
  app.add_option("--worker", workerPath, "With --hosts: kwb-worker (default: $KWB_WORKER, the build's, or PATH)");
  app.add_option("--time-cap", timeCap, "Seconds of timing samples per candidate (default 0.3)")->check(CLI::PositiveNumber);
  app.add_option("--out", outPath, "JSON file to write");
  CLI11_PARSE(app, argc, argv);

  const auto inventory = kwb::probeGpus();
  const kwb::DeviceInfo *gpu = kb::requireDevice(kProgram, inventory, 0);
  if (!gpu) return kb::kExitNoDevice;
  const std::string arch = kb::archOf(*gpu);
  std::vector<int> all;
  for (const auto &d : inventory.devices) all.push_back(d.ordinal);

  auto kernels = kwb::bundledKernelsDir();
  if (!kernels) {
    std::cerr << kProgram << ": the bundled kernels folder was not found\n";
    return kb::kExitUsage;
  }
  std::map<std::string, kwb::Task> tasks;
  for (const char *name : {"softmax", "sgemm"}) tasks[name] = kwb::loadTask(*kernels / name);

  const auto nonce = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  auto variant = [&](const kwb::Task &task, const std::string &config, int i) {
    Candidate c;
    c.task = &task;
    c.config = config;
    c.name = task.name + "-" + std::to_string(i) + ".cu";
    c.source = "// " + std::string(kProgram) + " " + nonce + " candidate " + std::to_string(i) + "\n" +
               kb::readText(task.folder / task.starterSource());
    return c;
  };
  std::map<std::string, std::vector<Candidate>> workloads;
  const auto &softmax = tasks["softmax"];
  for (int i = 0; i < count; ++i) {
    auto c = variant(softmax, "small", i);
    const auto &t = softmax.tunables.front();
    c.tunables[t.name] = t.values[static_cast<std::size_t>(i) % t.values.size()];
    workloads["sweep"].push_back(std::move(c));
  }
  for (int i = 0; i < count; ++i) workloads["batch"].push_back(variant(i % 2 ? tasks["sgemm"] : softmax, "small", i));

  // Compile everything once into the cache the pools use.
  const fs::path cache = fs::temp_directory_path() / ("kwb-bench-multi-gpu-" + nonce);
  kwb::CompilerOptions co;
  co.cacheDirectory = cache;
  kwb::Compiler compiler(co);
  for (const auto &[name, list] : workloads)
    for (const auto &c : list) {
      const auto r = compiler.compile(kwb::requestFor(*c.task, c.source, c.name, arch,
                                                      kwb::effectiveTunables(*c.task, c.tunables)));
      if (!r.ok) {
        std::cerr << kProgram << ": " << c.name << " does not compile\n";
        return kb::kExitFailed;
      }
    }

  std::vector<int> counts;
  for (std::size_t n = 1; n <= all.size(); n *= 2) counts.push_back(static_cast<int>(n));
  if (counts.back() != static_cast<int>(all.size())) counts.push_back(static_cast<int>(all.size()));
  if (hostsOnly) {
    hosts = true;
    counts.clear();
  }

  nlohmann::json out = {{"meta", kb::benchMeta(kProgram, inventory)},
                        {"candidates", count},
                        {"time_cap_s", timeCap},
                        {"gpus_visible", all.size()},
                        {"runs", nlohmann::json::array()}};
  kb::Table table({"workload", "GPUs", "seconds", "candidates/min", "scaling efficiency", "correct", "per GPU"});
  bool ok = true;
  for (const auto &[name, list] : workloads) {
    double single = 0;
    for (int n : counts) {
      kwb::EvaluatorPoolSettings ps;
      ps.devices.assign(all.begin(), all.begin() + n);
      const Run r = measure(list, ps, timeCap, cache);
      const double perMinute = r.seconds > 0 ? 60.0 * static_cast<double>(r.correct) / r.seconds : 0;  // as --hosts
      if (n == 1) single = perMinute;
      const double efficiency = single > 0 ? perMinute / (single * n) : 0;
      std::string spread;
      for (const auto &[d, k] : r.perDevice) spread += (spread.empty() ? "" : " ") + std::to_string(d) + ":" + std::to_string(k);
      table.add({name, std::to_string(n), kb::formatNumber(r.seconds, 2), kb::formatNumber(perMinute, 1),
                 kb::formatNumber(100 * efficiency, 0) + "%", std::to_string(r.correct) + "/" + std::to_string(r.total),
                 spread});
      nlohmann::json per = nlohmann::json::object();
      for (const auto &[d, k] : r.perDevice) per[std::to_string(d)] = k;
      out["runs"].push_back({{"workload", name}, {"gpus", n}, {"seconds", r.seconds}, {"candidates_per_minute", perMinute},
                             {"scaling_efficiency", efficiency}, {"correct", r.correct}, {"total", r.total},
                             {"per_device", per}, {"timing_pairs_on_one_device", r.pairsOnOneDevice}});
      ok = ok && r.correct == r.total;
    }
  }
  if (hosts) {
    std::string problem;
    if (!hostsRuns(workloads["batch"], all, timeCap, cache, workerPath, table, out, problem)) {
      std::cerr << kProgram << ": --hosts: " << problem << "\n";
      ok = false;
    }
  }
  std::cout << "Evaluation throughput over GPUs on " << all.size() << " x " << gpu->name << ", " << count
            << " candidates per workload, time cap " << timeCap << " s, commit " << kb::benchCommit() << "\n"
            << table.str();
  std::error_code ec;
  fs::remove_all(cache, ec);
  if (!outPath.empty() && !kb::writeJson(outPath, out)) return kb::kExitFailed;
  return ok ? kb::kExitOk : kb::kExitFailed;
}
