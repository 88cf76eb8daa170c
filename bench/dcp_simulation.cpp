// kwb-bench-dcp: what Difficulty-Conditioned Pruning (core/agent/leap.h) saves, simulated over a
// population of tasks with a spread of difficulty, against unpruned multi-turn repair (issue 16,
// "Measure": at least 50% of repair turns saved with the solve rate within 1 point).
//
// Model (stated, not measured): each task has a first-turn success probability p, drawn from
// Beta(a, b) (default 0.5, 0.5: many easy tasks and many hard ones, some between), and a repair
// probability q = min(0.95, q0 + q1 · p) that a failed candidate, given feedback, succeeds on one
// repair turn (default q0 = 0.15, q1 = 0.5: feedback helps, more on easier tasks). A group is G
// first-turn candidates (default 8, LEAP's); a repaired candidate takes turns until it succeeds
// or has used K turns in all (default 3). Every attempt is one LLM call and one GPU evaluation.
// A turn of a group costs `llm_s + eval_s` of wall time (the candidates of a turn run
// concurrently); a group ends after its last turn. "Repair calls" counts repair requests, "repair
// turns" a group's turns after its first (each one round of concurrent requests, the unit of
// LEAP's "debugging activated" and of wall time). A task is solved when any attempt succeeds;
// "attempts solved" is the fraction of first-turn lines that end in success (LEAP's accuracy).
//
// Policies: unpruned (every group with a failure is repaired: easyBelow = 1), DCP with the
// paper's best setting (easyBelow = ceil(G/2)) and a sweep of easyBelow and hopelessAbove. The
// same tasks and the same random draws for every policy (each candidate's outcomes per turn are
// drawn once), so the differences are the policy's alone.
//
//   kwb-bench-dcp [--tasks N] [--group G] [--turns K] [--beta A B] [--repair Q0 Q1] [--llm-s S]
//                 [--eval-s S] [--seed N] [--out FILE.json]
// Prints a table and writes JSON. Needs no GPU.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "core/agent/leap.h"

using nlohmann::json;
namespace kb = kwb::bench;
namespace agent = kwb::agent;

namespace {

constexpr const char *kProgram = "kwb-bench-dcp";

struct Model {
  std::size_t tasks = 20000, group = 8, turns = 3;
  double betaA = 0.5, betaB = 0.5, q0 = 0.15, q1 = 0.5, llmSeconds = 20.0, evalSeconds = 3.0;
  unsigned seed = 1;
};

// One task's draws, shared by every policy: p, and for each candidate whether it succeeds at
// turn 1, 2, ... (a candidate stops at its first success).
struct TaskDraw {
  double p = 0;
  std::vector<std::vector<bool>> success;  // [candidate][turn]
};

struct Totals {
  std::string policy;
  std::size_t easyBelow = 0, hopelessAbove = 0;
  std::size_t attempts = 0, repairAttempts = 0, repairedGroups = 0, solvedTasks = 0, solvedLines = 0;
  std::size_t repairTurns = 0;  // group turns after the first (a turn's candidates run together)
  double wallSeconds = 0;
};

double beta(std::mt19937_64 &rng, double a, double b) {
  const double x = std::gamma_distribution<double>(a, 1.0)(rng), y = std::gamma_distribution<double>(b, 1.0)(rng);
  return x + y > 0 ? x / (x + y) : 0.5;
}

std::vector<TaskDraw> drawTasks(const Model &m) {
  std::mt19937_64 rng(m.seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<TaskDraw> tasks(m.tasks);
  for (auto &t : tasks) {
    t.p = beta(rng, m.betaA, m.betaB);
    const double q = std::min(0.95, m.q0 + m.q1 * t.p);
    t.success.assign(m.group, std::vector<bool>(m.turns, false));
    for (auto &c : t.success)
      for (std::size_t k = 0; k < m.turns; ++k) c[k] = u(rng) < (k == 0 ? t.p : q);
  }
  return tasks;
}

Totals simulate(const Model &m, const std::vector<TaskDraw> &tasks, const std::string &name,
                const agent::DcpSettings &settings) {
  Totals t;
  t.policy = name;
  for (const auto &task : tasks) {
    std::size_t failures = 0;
    for (const auto &c : task.success) failures += !c[0];
    const auto d = agent::decideRepair(failures, m.group, settings);
    t.easyBelow = d.easyBelow;
    t.hopelessAbove = d.hopelessAbove;
    t.attempts += m.group;
    std::size_t groupTurns = 1, solvedLines = m.group - failures;
    if (d.verdict == agent::DcpVerdict::Repair && d.repairTurns > 0) {
      ++t.repairedGroups;
      for (const auto &c : task.success) {
        if (c[0]) continue;
        for (std::size_t k = 1; k <= d.repairTurns && k < m.turns; ++k) {
          ++t.attempts;
          ++t.repairAttempts;
          groupTurns = std::max(groupTurns, k + 1);
          if (c[k]) {
            ++solvedLines;
            break;
          }
        }
      }
    }
    t.solvedLines += solvedLines;
    t.repairTurns += groupTurns - 1;
    t.solvedTasks += solvedLines > 0;
    t.wallSeconds += static_cast<double>(groupTurns) * (m.llmSeconds + m.evalSeconds);
  }
  return t;
}

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

}  // namespace

int main(int argc, char **argv) {
  Model m;
  std::string out;
  std::vector<double> betaAB, repairQ;
  CLI::App app{"Difficulty-Conditioned Pruning simulated against unpruned multi-turn repair (prints a table, writes JSON)"};
  app.add_option("--tasks", m.tasks, "tasks in the population")->check(CLI::Range(1, 10'000'000));
  app.add_option("--group", m.group, "G, first-turn candidates per group")->check(CLI::Range(1, 64));
  app.add_option("--turns", m.turns, "K, turns in all")->check(CLI::Range(1, 10));
  app.add_option("--beta", betaAB, "the Beta(a, b) of first-turn success")->expected(2);
  app.add_option("--repair", repairQ, "q0 q1: repair success q = min(0.95, q0 + q1 p)")->expected(2);
  app.add_option("--llm-s", m.llmSeconds, "wall seconds of a turn's LLM answers");
  app.add_option("--eval-s", m.evalSeconds, "wall seconds of a turn's evaluations");
  app.add_option("--seed", m.seed, "random seed");
  app.add_option("--out", out, "JSON file to write");
  CLI11_PARSE(app, argc, argv);
  if (betaAB.size() == 2) m.betaA = betaAB[0], m.betaB = betaAB[1];
  if (repairQ.size() == 2) m.q0 = repairQ[0], m.q1 = repairQ[1];
  if (m.betaA <= 0 || m.betaB <= 0) {
    std::cerr << kProgram << ": --beta takes two positive numbers\n";
    return kb::kExitUsage;
  }

  const auto tasks = drawTasks(m);
  struct Policy {
    std::string name;
    agent::DcpSettings settings;
  };
  std::vector<Policy> policies;
  auto add = [&](std::string name, std::size_t easyBelow, std::size_t hopelessAbove) {
    agent::DcpSettings s;
    s.maxTurns = m.turns;
    s.easyBelow = easyBelow;
    s.hopelessAbove = hopelessAbove;
    policies.push_back({std::move(name), s});
  };
  const std::size_t G = m.group, half = (G + 1) / 2;
  add("unpruned", 1, G);
  add("DCP (LEAP's best)", half, G);
  add("DCP easy<G/4", std::max<std::size_t>(1, (G + 3) / 4), G);
  add("DCP easy<3G/4", std::max<std::size_t>(1, (3 * G + 3) / 4), G);
  add("DCP + hopeless>G-1", half, G - 1);
  add("DCP + hopeless>G-2", half, G >= 2 ? G - 2 : 0);

  std::vector<Totals> results;
  for (const auto &p : policies) results.push_back(simulate(m, tasks, p.name, p.settings));
  const Totals &base = results.front();

  kb::Table table({"policy", "easy<", "hopeless>", "groups repaired", "LLM calls", "repair calls saved",
                   "repair turns saved", "wall saved",
                   "tasks solved", "vs unpruned", "attempts solved"});
  json rows = json::array();
  for (const auto &r : results) {
    const double saved = pct(static_cast<double>(base.repairAttempts) - static_cast<double>(r.repairAttempts),
                             static_cast<double>(base.repairAttempts));
    const double wallSaved = pct(base.wallSeconds - r.wallSeconds, base.wallSeconds);
    const double turnsSaved = pct(static_cast<double>(base.repairTurns) - static_cast<double>(r.repairTurns),
                                  static_cast<double>(base.repairTurns));
    const double solved = pct(static_cast<double>(r.solvedTasks), static_cast<double>(m.tasks));
    const double baseSolved = pct(static_cast<double>(base.solvedTasks), static_cast<double>(m.tasks));
    const double lines = pct(static_cast<double>(r.solvedLines), static_cast<double>(m.tasks * m.group));
    table.add({r.policy, std::to_string(r.easyBelow), std::to_string(r.hopelessAbove),
               kb::formatNumber(pct(static_cast<double>(r.repairedGroups), static_cast<double>(m.tasks)), 1) + "%",
               std::to_string(r.attempts), kb::formatNumber(saved, 1) + "%", kb::formatNumber(turnsSaved, 1) + "%",
               kb::formatNumber(wallSaved, 1) + "%",
               kb::formatNumber(solved, 2) + "%", kb::formatNumber(solved - baseSolved, 2) + " pt",
               kb::formatNumber(lines, 2) + "%"});
    rows.push_back({{"policy", r.policy},
                    {"easy_below", r.easyBelow},
                    {"hopeless_above", r.hopelessAbove},
                    {"groups_repaired_pct", pct(static_cast<double>(r.repairedGroups), static_cast<double>(m.tasks))},
                    {"llm_calls", r.attempts},
                    {"gpu_evaluations", r.attempts},
                    {"repair_calls", r.repairAttempts},
                    {"repair_calls_saved_pct", saved},
                    {"repair_turns", r.repairTurns},
                    {"repair_turns_saved_pct", turnsSaved},
                    {"wall_seconds", r.wallSeconds},
                    {"wall_saved_pct", wallSaved},
                    {"tasks_solved_pct", solved},
                    {"solve_rate_vs_unpruned_pt", solved - baseSolved},
                    {"attempts_solved_pct", lines}});
  }
  std::cout << kProgram << ": " << m.tasks << " tasks, G = " << m.group << ", K = " << m.turns
            << " turns; first-turn success ~ Beta(" << m.betaA << ", " << m.betaB << "), repair q = min(0.95, "
            << m.q0 << " + " << m.q1 << " p); a turn " << m.llmSeconds << " s LLM + " << m.evalSeconds
            << " s evaluation; seed " << m.seed << "\n"
            << table.str();
  if (!out.empty()) {
    json j = kb::benchMeta(kProgram, kwb::GpuInventory{});
    j["model"] = {{"tasks", m.tasks}, {"group", m.group}, {"turns", m.turns}, {"beta", {m.betaA, m.betaB}},
                  {"repair", {m.q0, m.q1}}, {"llm_seconds", m.llmSeconds}, {"eval_seconds", m.evalSeconds},
                  {"seed", m.seed}};
    j["policies"] = rows;
    if (!kb::writeJson(out, j)) return kb::kExitFailed;
  }
  return kb::kExitOk;
}
