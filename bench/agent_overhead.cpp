// kwb-bench-agent-overhead (issue 16, "Measure: overhead"): an agent session on a task with a
// lineage, its LLM answered by the replay server on loopback (tests/helpers/replay_llm_server.h:
// the lineage's next step each time, streamed in OpenAI's wire format with a fixed delay between
// chunks to stand in for generation), evaluated by the real worker on the GPU. For every turn:
// its wall time (first request out to last evaluation in), the critical path spent in the LLM and
// on the evaluator (the longest line's answer time plus evaluation time, queueing for the GPU
// included), and the rest, the session's own overhead (prompt building, parsing, storage,
// scheduling) as a share of the turn. Run twice: G lines at once, then one after another.
//   kwb-bench-agent-overhead [--task softmax] [-G 8] [--groups 2] [--config h200] [--chunk-delay-ms 5] [--json FILE]
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "bench/bench_report.h"
#include "core/agent/session.h"
#include "core/llm/provider_config.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"
#include "tests/helpers/replay_llm_server.h"

using namespace kwb;
using namespace kwb::agent;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct TurnTimes {
  Clock::time_point first = Clock::time_point::max(), last = Clock::time_point::min();
};

json runSession(const Task &task, const std::filesystem::path &dir, std::size_t g, std::size_t groups,
                const std::string &config, int chunkDelayMs, std::size_t parallel, const std::string &worker) {
  test::ReplayLlmServer server(task.folder);
  server.setDelays(std::chrono::milliseconds(0), std::chrono::milliseconds(chunkDelayMs));
  auto store = std::make_shared<SessionStore>(dir / ("bench-" + std::to_string(parallel) + ".kwb"));
  SessionSettings s;
  s.candidates = g;
  s.dcp.maxTurns = 2;
  s.groups = groups;
  s.configs = {config};
  s.timingCapSeconds = 0.3;
  s.profile = false;  // profiling is GPU work of its own, not orchestration: tst_gpu_agent reports its time
  s.sanitizeBest = false;  // the same for compute-sanitizer before a new best
  const auto created = Session::create(*store, task, s, server.baseUrl(), "replay");
  SessionServices services;
  services.store = store;
  services.provider = llm::adHocProvider(server.baseUrl());
  services.provider.maxConcurrent = static_cast<int>(g);
  services.parallelLines = parallel;
  EvaluatorPoolSettings ps;
  if (!worker.empty()) ps.evaluator.workerPath = worker;
  services.pool = std::make_shared<EvaluatorPool>(ps);
  services.evaluator = ps.evaluator;

  std::mutex mutex;
  std::map<std::pair<int, int>, TurnTimes> turns;
  Session session(services, created.id, [&](const SessionEvent &e) {
    if (e.kind != SessionEvent::Kind::Requesting && e.kind != SessionEvent::Kind::Evaluated) return;
    std::lock_guard lock(mutex);
    auto &t = turns[{e.group, e.turn}];
    const auto now = Clock::now();
    if (e.kind == SessionEvent::Kind::Requesting) t.first = std::min(t.first, now);
    else t.last = std::max(t.last, now);
  });
  const auto t0 = Clock::now();
  const SessionState state = session.run();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();

  json out = {{"parallel_lines", parallel == 0 ? g : parallel}, {"state", toString(state)},
              {"reason", store->session(created.id)->stopReason}, {"wall_s", wall}, {"turns", json::array()}};
  double totalTurn = 0, totalOverhead = 0;
  for (const auto &grp : store->groups(created.id)) {
    std::map<int, double> critical;  // turn -> longest line (llm + eval)
    std::map<int, double> llm, eval;
    std::map<int, int> count;
    for (const auto &a : store->attempts(grp.id)) {
      critical[a.turn] = std::max(critical[a.turn], a.llmSeconds + a.evalSeconds);
      llm[a.turn] += a.llmSeconds;
      eval[a.turn] += a.evalSeconds;
      ++count[a.turn];
    }
    for (const auto &[turn, crit] : critical) {
      const auto &t = turns[{grp.ordinal, turn}];
      if (t.first == Clock::time_point::max() || t.last == Clock::time_point::min()) continue;
      const double turnWall = std::chrono::duration<double>(t.last - t.first).count();
      // One after another, the critical path is the sum of the lines' times, not the longest.
      const double path = parallel == 1 ? llm[turn] + eval[turn] : crit;
      const double overhead = std::max(0.0, turnWall - path);
      totalTurn += turnWall;
      totalOverhead += overhead;
      out["turns"].push_back({{"group", grp.ordinal}, {"turn", turn}, {"candidates", count[turn]},
                              {"turn_s", turnWall}, {"llm_plus_eval_critical_s", path}, {"overhead_s", overhead},
                              {"overhead_share", turnWall > 0 ? overhead / turnWall : 0.0},
                              {"llm_s_sum", llm[turn]}, {"eval_s_sum", eval[turn]}});
    }
  }
  out["turn_s_total"] = totalTurn;
  out["overhead_s_total"] = totalOverhead;
  out["overhead_share"] = totalTurn > 0 ? totalOverhead / totalTurn : 0.0;
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"Agent session overhead with the replay LLM server on the GPU (issue 16)"};
  std::string taskName = "softmax", config = "h200", jsonPath;
  std::size_t g = 8, groups = 2;
  int chunkDelayMs = 5;
  app.add_option("--task", taskName, "Bundled task with a lineage (default softmax)");
  app.add_option("-G", g, "Candidates per group (default 8)");
  app.add_option("--groups", groups, "Groups per session (default 2)");
  app.add_option("--config", config, "Size configuration (default h200)");
  app.add_option("--chunk-delay-ms", chunkDelayMs, "Delay between streamed chunks (default 5)");
  app.add_option("--json", jsonPath, "Write the results here");
  CLI11_PARSE(app, argc, argv);

  const auto inventory = probeGpus();
  if (!bench::requireDevice("kwb-bench-agent-overhead", inventory)) return bench::kExitNoDevice;
  const auto kernels = bundledKernelsDir();
  if (!kernels) {
    std::cerr << "kwb-bench-agent-overhead: no bundled kernels folder (set KWB_KERNELS_DIR)\n";
    return bench::kExitUsage;
  }
  const Task task = loadTask(*kernels / taskName);
  const auto dir = std::filesystem::temp_directory_path() / ("kwb-bench-agent-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string worker = std::getenv("KWB_WORKER") ? std::getenv("KWB_WORKER") : "";
  json out = bench::benchMeta("kwb-bench-agent-overhead", inventory);
  out["task"] = taskName;
  out["config"] = config;
  out["G"] = g;
  out["groups"] = groups;
  out["chunk_delay_ms"] = chunkDelayMs;
  out["concurrent"] = runSession(task, dir, g, groups, config, chunkDelayMs, 0, worker);
  out["one_after_another"] = runSession(task, dir, g, groups, config, chunkDelayMs, 1, worker);

  std::printf("%-18s %8s %10s %12s %10s\n", "mode", "turns", "turn s", "overhead s", "share");
  for (const char *mode : {"concurrent", "one_after_another"}) {
    const auto &m = out[mode];
    std::printf("%-18s %8zu %10.2f %12.3f %9.2f%%\n", mode, m["turns"].size(), m["turn_s_total"].get<double>(),
                m["overhead_s_total"].get<double>(), 100.0 * m["overhead_share"].get<double>());
  }
  std::printf("session wall: concurrent %.2f s, one after another %.2f s (%.2fx)\n",
              out["concurrent"]["wall_s"].get<double>(), out["one_after_another"]["wall_s"].get<double>(),
              out["one_after_another"]["wall_s"].get<double>() / std::max(1e-9, out["concurrent"]["wall_s"].get<double>()));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!jsonPath.empty() && !bench::writeJson(jsonPath, out)) return bench::kExitFailed;
  return bench::kExitOk;
}
