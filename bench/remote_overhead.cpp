// kwb-bench-remote-overhead (issue 22, "Measure"): what a worker started through ssh, and through
// srun, costs against a local one, on loopback (a real sshd and, as root, a one-node Slurm cluster
// started by the program: tests/helpers/loopback_sshd.h, one_node_slurm.h):
//   start        start() to ready: spawn, hello, sandbox made and probed (by the relay, remotely)
//   connect      the shared ssh connection's set-up (ensureSshMaster), paid once per host
//   ping         a request's round trip with a small body, sequential
//   1 MiB, 16 MiB  the round trip of a ping carrying that much (a CUBIN, given outputs)
//   evaluate (GPU)  where there is a GPU: a whole timed evaluation of the softmax starter at
//                   `small` (compile cached), the Evaluator's wall time, local against ssh
// Loopback has no network latency: over a real network add its round trip per request and its
// bandwidth per byte. Prints a table and writes JSON. Needs no GPU (the last row does).
//
// srun's column needs root and Slurm's packages (packaging/install-deps.sh); without them it is left
// out, saying why.
//   kwb-bench-remote-overhead [--pings 200] [--starts 5] [--out F] [--worker PATH]
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <iterator>
#include <optional>

#include <CLI/CLI.hpp>

#include "bench/bench_report.h"
#include "core/eval/evaluator.h"
#include "core/gpu/device_info.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"
#include "core/worker/worker_client.h"
#include "helpers/loopback_sshd.h"
#include "helpers/one_node_slurm.h"

namespace fs = std::filesystem;
namespace kb = kwb::bench;
using nlohmann::json;
using namespace kwb::worker;

namespace {

constexpr const char *kProgram = "kwb-bench-remote-overhead";

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

struct Row {
  std::string what;
  kb::Spread local, ssh;
  std::optional<kb::Spread> slurm;
};

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"Remote workers' overhead: a worker through ssh on loopback against a local one"};
  int pings = 200, starts = 5, evaluations = 5;
  std::string out, workerPath;
  app.add_option("--pings", pings, "sequential round trips per body size")->check(CLI::PositiveNumber);
  app.add_option("--starts", starts, "worker starts measured per kind")->check(CLI::PositiveNumber);
  app.add_option("--evaluations", evaluations, "timed evaluations per kind, where there is a GPU")
      ->check(CLI::PositiveNumber);
  app.add_option("--out", out, "the JSON file to write");
  app.add_option("--worker", workerPath, "kwb-worker (default: $KWB_WORKER, the build's, or PATH)");
  CLI11_PARSE(app, argc, argv);
  if (workerPath.empty()) {
    if (const auto found = kwb::workerExecutable()) workerPath = found->string();
  }
  if (workerPath.empty()) {
    std::cerr << kProgram << ": no kwb-worker found; name it with --worker\n";
    return kb::kExitUsage;
  }
  workerPath = fs::absolute(workerPath).string();

  // ssh's shared connection in a folder of this run's, ended with its sshd.
  const fs::path runtime = fs::temp_directory_path() / ("kwb-bench-remote-" + std::to_string(::getpid()));
  fs::create_directories(runtime);
  fs::permissions(runtime, fs::perms::owner_all);
  ::setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);
  kwb::test::LoopbackSshd sshd;
  if (!sshd.problem().empty()) {
    std::cerr << kProgram << ": " << sshd.problem() << "\n";
    return kb::kExitFailed;
  }
  ::setenv("KWB_SSH_COMMAND", sshd.sshCommand().c_str(), 1);

  WorkerClientOptions local;
  local.workerPath = workerPath;
  WorkerClientOptions remote;
  std::string problem;
  remote.launcher = *parseWorkerLauncher(std::string("ssh://") + kwb::test::LoopbackSshd::kHost + workerPath, problem);

  const auto connectStart = std::chrono::steady_clock::now();
  if (const auto down = ensureSshMaster(remote.launcher); !down.empty()) {
    std::cerr << kProgram << ": " << down << "\n";
    return kb::kExitFailed;
  }
  const double connectMs = msSince(connectStart);
  // Its figures are a shared connection's only if one answers (a worker start that logs in on its
  // own costs a whole login more: resources/guide/15-remote-gpus.md).
  if (const auto shared = sshConnectionStats(remote.launcher); !shared.up) {
    std::cerr << kProgram << ": "
              << (shared.asked ? "the shared ssh connection is down: " + shared.problem
                               : std::string("ssh connection sharing is off: no private folder for its sockets "
                                             "($XDG_RUNTIME_DIR/kwb-ssh or /tmp/kwb-ssh-UID)"))
              << "\n";
    return kb::kExitFailed;
  }
  // srun, where a one-node cluster can be started here (root, Slurm's packages).
  kwb::test::OneNodeSlurm cluster;
  std::optional<WorkerClientOptions> slurm;
  if (cluster.problem().empty()) {
    slurm.emplace();
    slurm->launcher = *parseWorkerLauncher(std::string("slurm:partition=") + kwb::test::OneNodeSlurm::kPartition +
                                               ",gpus=0,worker=" + workerPath,
                                           problem);
  } else {
    std::cerr << kProgram << ": no srun column: " << cluster.problem() << "\n";
  }

  auto startTimes = [&](const WorkerClientOptions &o) -> std::optional<kb::Spread> {
    std::vector<double> ms;
    for (int i = 0; i < starts; ++i) {
      WorkerClient client(o);
      const auto t = std::chrono::steady_clock::now();
      client.start();
      if (!client.waitUntilReady(std::chrono::seconds(60))) {
        const auto e = client.lastExit();
        std::cerr << kProgram << ": the worker did not start: " << (e ? e->description + " " + e->stderrTail : "?") << "\n";
        return std::nullopt;
      }
      ms.push_back(msSince(t));
    }
    return kb::spreadOf(ms);
  };
  auto roundTrips = [&](WorkerClient &client, std::size_t bytes, int n) -> std::optional<kb::Spread> {
    const Json body = {{"payload", std::string(bytes, 'k')}};
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) {
      const auto t = std::chrono::steady_clock::now();
      const auto r = client.call("ping", body, std::chrono::seconds(60));
      if (!r.ok) {
        std::cerr << kProgram << ": ping failed: " << r.error.message << "\n";
        return std::nullopt;
      }
      ms.push_back(msSince(t));
    }
    return kb::spreadOf(ms);
  };

  std::vector<Row> rows;
  {
    const auto l = startTimes(local), s = startTimes(remote);
    if (!l || !s) return kb::kExitFailed;
    rows.push_back({"start", *l, *s, slurm ? startTimes(*slurm) : std::nullopt});
  }
  WorkerClient localClient(local), remoteClient(remote);
  std::unique_ptr<WorkerClient> slurmClient;
  if (slurm) slurmClient = std::make_unique<WorkerClient>(*slurm);
  localClient.start();
  remoteClient.start();
  if (slurmClient) slurmClient->start();
  if (!localClient.waitUntilReady(std::chrono::seconds(60)) || !remoteClient.waitUntilReady(std::chrono::seconds(60)) ||
      (slurmClient && !slurmClient->waitUntilReady(std::chrono::seconds(60)))) {
    std::cerr << kProgram << ": a worker did not start\n";
    return kb::kExitFailed;
  }
  for (const auto &[name, bytes, n] : std::vector<std::tuple<std::string, std::size_t, int>>{
           {"ping", 16, pings}, {"ping 1 MiB", std::size_t(1) << 20, std::max(5, pings / 10)},
           {"ping 16 MiB", std::size_t(16) << 20, std::max(3, pings / 40)}}) {
    const auto l = roundTrips(localClient, bytes, n), s = roundTrips(remoteClient, bytes, n);
    if (!l || !s) return kb::kExitFailed;
    rows.push_back({name, *l, *s, slurmClient ? roundTrips(*slurmClient, bytes, n) : std::nullopt});
  }

  // A whole evaluation on the GPU, the Evaluator's wall time: what a remote worker adds to the
  // work it exists for (a shared evaluator each: worker, device and ceilings kept between runs).
  const auto inventory = kwb::probeGpus();
  if (inventory.hasDevices()) {
    const auto kernels = kwb::bundledKernelsDir();
    if (!kernels) {
      std::cerr << kProgram << ": no bundled kernels/ ($KWB_KERNELS_DIR): no evaluation row\n";
    } else {
      const auto task = kwb::loadTask(*kernels / "softmax");
      std::ifstream in(task.folder / task.starterSource());
      const std::string starter((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      kwb::EvaluationOptions o;
      o.configs = {"small"};
      o.time = true;
      o.timeTorch = false;
      o.timingCap = std::chrono::milliseconds(300);
      auto evaluationTimes = [&](const kwb::EvaluatorSettings &settings) -> std::optional<kb::Spread> {
        kwb::Evaluator evaluator(settings);
        if (evaluator.evaluate(task, starter, o).outcome != kwb::Outcome::Correct) return std::nullopt;  // warm
        std::vector<double> ms;
        for (int i = 0; i < evaluations; ++i) {
          const auto t = std::chrono::steady_clock::now();
          const auto r = evaluator.evaluate(task, starter, o);
          if (r.outcome != kwb::Outcome::Correct) {
            std::cerr << kProgram << ": the evaluation ended " << kwb::toString(r.outcome) << ": " << r.message << "\n";
            return std::nullopt;
          }
          ms.push_back(msSince(t));
        }
        return kb::spreadOf(ms);
      };
      kwb::EvaluatorSettings here, there;
      here.workerPath = workerPath;
      there.launcher = remote.launcher;
      const auto l = evaluationTimes(here), s = evaluationTimes(there);
      if (!l || !s) return kb::kExitFailed;
      rows.push_back({"evaluate (GPU)", *l, *s, std::nullopt});
    }
  } else {
    std::cerr << kProgram << ": no evaluation row: " << inventory.problem << "\n";
  }

  kb::Table table({"", "local median", "local p95", "ssh median", "ssh p95", "ssh - local", "srun median", "srun p95",
                   "srun - local"});
  json j = kb::benchMeta(kProgram, inventory);
  j["connect_ms"] = connectMs;
  j["transport"] = "loopback sshd (" + std::string(remote.launcher.describe()) + "), shared connection";
  j["rows"] = json::array();
  for (const auto &r : rows) {
    const auto cell = [&](double ms) { return r.slurm ? kb::formatMs(ms) : std::string("-"); };
    table.add({r.what, kb::formatMs(r.local.median), kb::formatMs(r.local.p95), kb::formatMs(r.ssh.median),
               kb::formatMs(r.ssh.p95), kb::formatMs(r.ssh.median - r.local.median),
               cell(r.slurm ? r.slurm->median : 0), cell(r.slurm ? r.slurm->p95 : 0),
               cell(r.slurm ? r.slurm->median - r.local.median : 0)});
    auto figures = [](const kb::Spread &s) { return json{{"median", s.median}, {"p95", s.p95}, {"max", s.max}}; };
    j["rows"].push_back({{"what", r.what},
                         {"local_ms", figures(r.local)},
                         {"ssh_ms", figures(r.ssh)},
                         {"srun_ms", r.slurm ? figures(*r.slurm) : json(nullptr)}});
  }
  std::cout << "shared ssh connection set up in " << kb::formatMs(connectMs) << " (once per host)\n" << table.str();
  std::error_code ec;
  fs::remove_all(runtime, ec);
  if (!out.empty() && !kb::writeJson(out, j)) return kb::kExitFailed;
  return kb::kExitOk;
}
