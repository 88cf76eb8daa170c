#include "app/cli/workers_option.h"
#include "app/cli/optimize_command.h"

#include "core/memory/case_sources.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/llm_command.h"
#include "core/agent/ablation.h"
#include "core/agent/session.h"
#include "core/store/database.h"
#include "core/lineage/skill_library.h"
#include "core/agent/trajectories.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"
#include "core/task/task_catalog.h"
#include "core/task/source_file.h"
#include "core/text/url_credentials.h"

namespace fs = std::filesystem;
namespace agent = kwb::agent;
using nlohmann::json;

namespace {

// kwb optimize's exit statuses (documented in its --help).
constexpr int kExitFaster = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNotRun = 3;
constexpr int kExitCorrect = 4;
constexpr int kExitPaused = 5;

volatile std::sig_atomic_t gInterrupts = 0;
extern "C" void onOptimizeInterrupt(int) {
  gInterrupts = gInterrupts + 1;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl+C quits at once, whatever is under way
}

// Ctrl+C and SIGTERM set gInterrupts while it lives; the defaults come back after.
struct InterruptHandlers {
  InterruptHandlers() {
    gInterrupts = 0;
    std::signal(SIGINT, onOptimizeInterrupt);
    std::signal(SIGTERM, onOptimizeInterrupt);
  }
  ~InterruptHandlers() {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
};

// The GPUs sessions evaluate on (--workers, --gpu), a wait for them ended by an interrupt; null
// with `noDevice` saying why when there are none. `evaluator` becomes the pool's settings. False
// for a --workers value that cannot be used (said on stderr).
bool gpuPool(const std::string &workers, const std::vector<int> &gpus, std::shared_ptr<kwb::EvaluatorPool> &pool,
             kwb::EvaluatorSettings &evaluator, std::string &noDevice) {
  kwb::EvaluatorSettings es;
  if (!applyWorkers(workers, es)) return false;
  kwb::EvaluatorPoolSettings ps;
  ps.evaluator = es;
  ps.cancelled = [] { return gInterrupts > 0; };
  std::vector<kwb::VisibleDevice> chosen;
  if ((pool = kwb::poolOfChosenDevices(ps, gpus, chosen, noDevice))) evaluator = pool->evaluatorSettings();
  return true;
}

fs::path workspaceFile(const std::string &arg) {
  return arg.empty() ? kwb::userDataDir() / "workspace.kwb" : fs::path(arg);
}

std::string msText(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms >= 1 ? "%.3f ms" : "%.1f us", ms >= 1 ? ms : ms * 1000);
  return buf;
}

std::string fixed(double v, const char *format = "%.2f") {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Reading (sessions, trajectories export): the workspace must exist and may be read-only.
// Writing (optimize): a new one is made, and said so, so a mistyped path does not pass unnoticed.
std::shared_ptr<agent::SessionStore> openStore(const std::string &arg, bool forReading) {
  try {
    const auto path = workspaceFile(arg);
    if (forReading)
      return std::make_shared<agent::SessionStore>(std::shared_ptr<kwb::Workspace>(kwb::Workspace::openExisting(path)));
    std::error_code ec;
    if (!fs::exists(path, ec)) std::cerr << "kwb: no workspace at " << path.string() << ": a new one is made\n";
    return std::make_shared<agent::SessionStore>(path);
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return nullptr;
  }
}

// A new session's settings from the command line; `groups` unless --groups says.
agent::SessionSettings settingsOf(const OptimizeArgs &args, std::size_t groups) {
  agent::SessionSettings s;
  s.candidates = args.candidates;
  s.dcp.maxTurns = args.turns;
  s.dcp.easyBelow = args.easyBelow;
  s.dcp.hopelessAbove = args.hopelessAbove;
  s.discount = args.discount;
  s.groups = args.groups.value_or(groups);
  s.dollars = args.dollars;
  if (args.tokens) s.tokens = *args.tokens;
  s.wallSeconds = args.wallSeconds;
  s.maxTokens = args.maxTokens;
  if (args.temperature) s.temperature = args.temperature;
  s.configs = args.configs;
  s.timingCapSeconds = args.timeCap;
  s.timeLimitSeconds = args.timeLimit;
  s.useDevice = !args.noGpu;
  s.profile = !args.noProfile;
  s.sanitizeBest = !args.noSanitize;
  s.skills = !args.noSkills;
  s.proposedCards = args.proposedCards;
  s.memory = !args.noMemory;
  if (args.contextWindow) s.contextWindow = args.contextWindow;
  return s;
}

// One line per event, as a log a person can follow.
void printEvent(std::ostream &out, const agent::SessionEvent &e) {
  using Kind = agent::SessionEvent::Kind;
  const std::string where = "[g" + std::to_string(e.group) + " l" + std::to_string(e.line) + " t" + std::to_string(e.turn) + "] ";
  switch (e.kind) {
    case Kind::Text:
    case Kind::Requesting:
    case Kind::Rewarded:
      return;
    case Kind::State:
      out << "session " << agent::toString(e.state) << (e.text.empty() ? "" : ": " + e.text) << std::endl;
      return;
    case Kind::Message:
    case Kind::Baseline:
      out << e.text << std::endl;
      return;
    case Kind::Answered:
      if (e.attempt && e.attempt->answerOutcome != "code")
        out << where << "answer: " << e.attempt->answerOutcome
                  << (e.attempt->answerNote.empty() ? "" : " (" + e.attempt->answerNote + ")") << std::endl;
      return;
    case Kind::Evaluated: {
      if (!e.attempt) return;
      const auto &a = *e.attempt;
      out << where << a.outcome;
      if (a.ms) out << "  " << msText(*a.ms);
      if (a.speedup) out << "  " << fixed(*a.speedup) << "x the reference";
      out << (a.success ? "  goal met" : "");
      if (!a.success && !a.message.empty() && a.outcome != "correct") out << "  " << a.message.substr(0, 160);
      out << std::endl;
      return;
    }
    case Kind::Dcp:
      out << "[g" << e.group << "] DCP " << e.text << std::endl;
      return;
    case Kind::GroupDone:
      out << "[g" << e.group << "] " << e.text << std::endl;
      return;
    case Kind::Best:
      out << where << "best so far: " << e.text << std::endl;
      return;
  }
}

json sessionJson(agent::SessionStore &store, const agent::SessionRecord &s) {
  const auto totals = store.totals(s.id);
  const auto spend = store.spend(s.id);
  json groups = json::array();
  for (const auto &g : store.groups(s.id)) {
    json jg = {{"ordinal", g.ordinal}, {"goal", agent::toString(g.goal)}, {"done", g.done},
               {"incumbent_ms", g.incumbentMs ? json(*g.incumbentMs) : json(nullptr)}};
    if (g.dcp) jg["dcp"] = *g.dcp;
    groups.push_back(jg);
  }
  return {{"session", s.id},
          {"task", s.taskName},
          {"provider", s.provider},
          {"model", s.model},
          {"state", agent::toString(s.state)},
          {"reason", s.stopReason},
          {"created_at", s.createdAt},
          {"elapsed_s", s.elapsedSeconds},
          {"baseline", s.baseline ? json(*s.baseline) : json(nullptr)},
          {"groups", groups},
          {"attempts", totals.attempts},
          {"successes", totals.successes},
          {"requests", spend.requests},
          {"answers_cut_and_asked_again", spend.interrupted},
          {"answers_broken_off", spend.incomplete},
          {"tokens", spend.tokens},
          {"cost", spend.cost},
          {"best_ms", totals.bestMs ? json(*totals.bestMs) : json(nullptr)},
          {"best_speedup", totals.bestSpeedup ? json(*totals.bestSpeedup) : json(nullptr)},
          {"best_attempt", totals.bestAttemptId}};
}

}  // namespace

SessionCommands addSessionCommands(CLI::App &app, OptimizeArgs &o, SessionsArgs &s, bool &asJson) {
  SessionCommands c;
  c.optimize = app.add_subcommand(
      "optimize",
      "Run an agent session: an LLM improves TASK's kernel group by group (G candidates per group,\n"
      "requested concurrently; each compiled, checked and timed over the GPUs; LEAP's Difficulty-\n"
      "Conditioned Pruning decides after each group's first turn whether the failed ones get repair\n"
      "turns with their feedback; rank-based rewards per attempt). Everything is kept in the workspace:\n"
      "Ctrl+C pauses cleanly (a second Ctrl+C quits at once), --resume ID continues, even after kill -9.\n"
      "Without a CUDA device every answer is compiled and its launch checked only.\n"
      "Exit status: 0 a correct kernel faster than the starter; 4 correct, not faster; 1 nothing correct,\n"
      "or the session failed; 2 usage error; 3 not run (no CUDA device); 5 paused (resumable).");
  c.optimize->add_option("TASK", o.task, "Task folder or its task.toml (not needed with --resume)");
  c.optimize->add_option("CANDIDATE", o.candidate, "The .cu file to start from (default: the task's starter)");
  c.optimize->add_option("--provider", o.provider, "A configured provider's name, or a base URL such as http://127.0.0.1:8080/v1");
  c.optimize->add_option("--format", o.format, "Wire format for a base URL: openai (default), anthropic or ollama");
  c.optimize->add_option("--model", o.model, "Model (default: the provider's)");
  c.optimize->add_option("--candidates,-G", o.candidates, "Candidates per group, G (default 4, at most 16)")->check(CLI::Range(1, 16));
  c.optimize->add_option("--turns,-K", o.turns, "Turns per group in all, the first included, K (default 3)")->check(CLI::Range(1, 10));
  c.optimize->add_option("--groups", o.groups, "Groups in the session (default 3)")->check(CLI::Range(1, 1000));
  c.optimize->add_option("--easy-below", o.easyBelow, "DCP: fewer first-turn failures than this: easy, no repair (default ceil(G/2))");
  c.optimize->add_option("--hopeless-above", o.hopelessAbove, "DCP: more first-turn failures than this: hopeless, no repair (default G: never)");
  c.optimize->add_option("--discount", o.discount, "Discount of the reward passed back to earlier turns (default 0.5)")->check(CLI::Range(0.0, 1.0));
  c.optimize->add_option("--budget-dollars", o.dollars, "Stop asking once this much was spent")->check(CLI::PositiveNumber);
  c.optimize->add_option("--budget-tokens", o.tokens, "Stop asking once this many tokens (in + out) were used")->check(CLI::PositiveNumber);
  c.optimize->add_option("--budget-time", o.wallSeconds, "Stop asking after this many seconds of running (over every resume)")->check(CLI::PositiveNumber);
  c.optimize->add_option("--max-tokens", o.maxTokens, "Most tokens per answer (default 4096)")->check(CLI::PositiveNumber);
  c.optimize->add_option("--temperature", o.temperature, "Sampling temperature (default 0.7)")->check(CLI::Range(0.0, 2.0));
  c.optimize->add_option("--config", o.configs, "Size configuration to check and time (repeatable; default: all)");
  c.optimize->add_option("--time-cap", o.timeCap, "Seconds of sampling per configuration (default 1)")->check(CLI::PositiveNumber);
  c.optimize->add_option("--time-limit", o.timeLimit, "Seconds per configuration before a run is stopped (default 120)")->check(CLI::PositiveNumber);
  c.optimize->add_option("--gpu", o.gpus, "CUDA device to use (repeatable; default: every visible one)");
  addWorkersOption(c.optimize, o.workers);
  c.optimize->add_flag("--no-gpu", o.noGpu, "Compile every answer and check its launch only");
  c.optimize->add_flag("--no-profile", o.noProfile,
                       "Leave out the profiler's bottleneck summary of the incumbent and of correct candidates under repair");
  c.optimize->add_flag("--no-memory", o.noMemory,
                       "Leave the experience memory's Cases out of the prompts (KOPE; kwb memory stats shows them)");
  c.optimize->add_option("--context-window", o.contextWindow,
                         "The model's context window in tokens: the experience's budget is what the prompt leaves of it "
                         "(default: the provider's context_window, else 32768 assumed)");
  c.optimize->add_flag("--no-skills", o.noSkills,
                       "Leave the skill library's cards out of the prompts (default: up to 3 admitted or approved cards "
                       "chosen for the kernel)");
  c.optimize->add_flag("--proposed-cards", o.proposedCards,
                       "Let proposed (unproven) cards into the prompts too; each attempt's context record says so");
  c.optimize->add_flag("--no-sanitize", o.noSanitize,
                       "Do not run compute-sanitizer on a kernel before it becomes the session's best");
  c.optimize->add_option("--resume", o.resume, "Continue session ID (kwb sessions lists them)");
  c.optimize->add_option("--workspace", o.workspace, "Workspace file (default: the workbench's)");
  c.optimize->add_option("--output,-o", o.output, "Write the best kernel here (default: TASK-SESSION-best.cu in the current folder)");
  c.optimize->add_flag("--json", asJson, "Machine-readable summary at the end (the log goes to stderr)");

  c.sessions = app.add_subcommand("sessions", "List the agent sessions in a workspace");
  c.sessions->add_option("--workspace", s.workspace, "Workspace file (default: the workbench's)");
  c.sessions->add_flag("--json", asJson, "Machine-readable output");

  auto *trajectories = app.add_subcommand("trajectories", "Agent sessions' trajectories as training data");
  trajectories->require_subcommand(1);
  c.trajectoriesExport = trajectories->add_subcommand(
      "export",
      "Write every attempt of the sessions as one JSON Lines record: the chat messages (system, user,\n"
      "assistant), the turn's reward (rank reward with credit passed back), the line's reward, and\n"
      "metadata (group, goal, line, turn, outcome, time, speedup, DCP decision, tokens, cost).\n"
      "Only finished groups carry rewards; --all adds the others with null rewards.");
  c.trajectoriesExport->add_option("SESSION", s.sessions, "Session id (repeatable)")->required();
  c.trajectoriesExport->add_option("--format", s.format, "jsonl (the only one)")->check(CLI::IsMember({"jsonl"}));
  c.trajectoriesExport->add_option("--output,-o", s.output, "File to write (default: standard output)");
  c.trajectoriesExport->add_flag("--all", s.all, "Also attempts of unfinished groups (rewards null)");
  c.trajectoriesExport->add_option("--workspace", s.workspace, "Workspace file (default: the workbench's)");
  return c;
}

int optimizeCommand(const OptimizeArgs &args, bool asJson) {
  auto store = openStore(args.workspace, false);
  if (!store) return kExitFailed;
  std::ostream &log = asJson ? std::cerr : std::cout;

  // The session: a new one, or the one to resume.
  std::string sessionId = args.resume;
  std::string providerTarget = args.provider;
  if (!sessionId.empty()) {
    const auto existing = store->session(sessionId);
    if (!existing) {
      std::cerr << "kwb: no session " << sessionId << " in " << store->workspace().path().string()
                << " (kwb sessions --workspace FILE lists them)\n";
      return kExitUsage;
    }
    if (providerTarget.empty()) {
      // A base URL's credentials were not stored (issue 45, 2): only the user can give them again.
      if (kwb::urlHasCredentials(existing->provider)) {
        std::cerr << "kwb: session " << sessionId << " was started with a provider URL holding credentials, which are "
                  << "not stored (" << existing->provider << "); give it again: kwb optimize --resume " << sessionId
                  << " --provider URL\n";
        return kExitUsage;
      }
      providerTarget = existing->provider;
    }
    // Budgets and the group count given now replace the stored ones (to resume with more).
    agent::SessionSettings s = existing->settings;
    bool changed = false;
    if (args.dollars) s.dollars = args.dollars, changed = true;
    if (args.tokens) s.tokens = *args.tokens, changed = true;
    if (args.wallSeconds) s.wallSeconds = args.wallSeconds, changed = true;
    if (args.groups) s.groups = *args.groups, changed = true;
    if (changed) store->setSettings(sessionId, s);
  } else {
    if (args.task.empty() || args.provider.empty()) {
      std::cerr << "kwb: optimize needs TASK and --provider (or --resume SESSION)\n";
      return kExitUsage;
    }
  }
  LlmArgs llmArgs;
  llmArgs.target = providerTarget;
  llmArgs.format = args.format;
  const auto provider = providerAndKey(llmArgs);
  if (!provider) return kExitUsage;

  if (sessionId.empty()) {
    kwb::Task task;
    try {
      fs::path p = args.task;
      task = kwb::loadTask(fs::is_directory(p) ? p : p.parent_path());
    } catch (const std::exception &e) {
      std::cerr << "kwb: " << e.what() << "\n";
      return kExitUsage;
    }
    const agent::SessionSettings s = settingsOf(args, 3);
    std::string starter;
    if (!args.candidate.empty()) {
      try {
        kwb::SourceReadOptions o;
        o.what = "candidate";
        starter = kwb::readSourceFile(args.candidate, o);
      } catch (const kwb::SourceFileError &e) {
        std::cerr << "kwb: " << e.what() << "\n";
        return kExitUsage;
      }
    }
    try {
      sessionId = agent::Session::create(*store, task, s, providerTarget,
                                         args.model.empty() ? provider->first.model : args.model, starter,
                                         fs::path(args.candidate).filename().string())
                      .id;
    } catch (const std::exception &e) {
      std::cerr << "kwb: " << e.what() << "\n";
      return kExitUsage;
    }
  }
  const auto record = store->session(sessionId);

  // GPUs: every visible one (or those --gpu names); none: compile only.
  agent::SessionServices services;
  services.store = store;
  services.provider = provider->first;
  services.apiKey = provider->second;
  std::string skillsProblem;
  services.skills = kwb::SkillLibrary::openIfPresent(&skillsProblem);
  if (record->settings.memory) {
    try {
      services.memory = kwb::memory::ExperienceStore::open();
    } catch (const std::exception &e) {
      log << "experience left out: " << e.what() << "\n";
    }
  }
  if (!skillsProblem.empty()) log << "skill cards left out: " << skillsProblem << "\n";
  // Ctrl+C pauses: requests in flight are cancelled (asked again on resume), what was stored stays.
  // From here on: it also ends a wait for a Slurm allocation (the session then starts paused).
  InterruptHandlers interruptHandlers;
  std::string noDevice;
  if (record->settings.useDevice) {
    if (!gpuPool(args.workers, args.gpus, services.pool, services.evaluator, noDevice)) return 2;
  } else {
    noDevice = "--no-gpu";
  }

  log << (args.resume.empty() ? "session " : "resuming session ") << sessionId << " on " << record->taskName << " with "
      << record->provider << (record->model.empty() ? "" : " (" + record->model + ")") << ": G=" << record->settings.candidates
      << ", K=" << record->settings.dcp.maxTurns << ", " << record->settings.groups << " group(s)\n";
  if (!services.pool)
    log << "no CUDA device (" << noDevice << "): every answer is compiled and its launch checked; nothing is run\n";
  log.flush();

  std::mutex printMutex;
  std::unique_ptr<agent::Session> session;
  try {
    session = std::make_unique<agent::Session>(services, sessionId, [&](const agent::SessionEvent &e) {
      std::lock_guard lock(printMutex);
      printEvent(log, e);
    });
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return kExitFailed;
  }

  // Ctrl+C while it waited for the GPUs: the session starts paused.
  if (gInterrupts > 0) session->pause("interrupted (Ctrl+C); resume with kwb optimize --resume " + sessionId);
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    bool paused = false;
    while (!finished) {
      if (gInterrupts > 0 && !paused) {
        session->pause("interrupted (Ctrl+C); resume with kwb optimize --resume " + sessionId);
        paused = true;
        std::signal(SIGINT, SIG_DFL);  // a second Ctrl+C quits at once
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  const agent::SessionState state = session->run();
  finished = true;
  watcher.join();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  // Every candidate evaluated is experience: a Case in the user's memory, under the Case it
  // started from.
  try {
    auto memory = kwb::memory::ExperienceStore::open();
    const auto synced = kwb::memory::syncWorkspace(*memory, store->workspace());
    log << synced.added << " evaluations recorded in the experience memory (" << memory->path().string() << ")\n";
    for (const auto &p : synced.problems) log << "experience memory: " << p << "\n";
  } catch (const std::exception &e) {
    log << "experience memory: not recorded: " << e.what() << "\n";
  }

  const auto after = store->session(sessionId);
  const auto totals = store->totals(sessionId);
  std::string bestFile;
  if (totals.bestAttemptId) {
    for (const auto &a : store->sessionAttempts(sessionId)) {
      if (a.id != totals.bestAttemptId) continue;
      bestFile = args.output.empty() ? after->taskName + "-" + sessionId + "-best.cu" : args.output;
      std::ofstream out(bestFile, std::ios::binary);
      out << store->source(a.sourceHash).value_or("");
      if (!out) {
        std::cerr << "kwb: cannot write " << bestFile << "\n";
        bestFile.clear();
      }
    }
  }
  std::optional<double> baselineMs;
  if (after->baseline) baselineMs = after->baseline->ms;
  const bool faster = totals.bestMs && baselineMs && *totals.bestMs * (1.0 + after->settings.minGain) <= *baselineMs;
  if (asJson) {
    json j = sessionJson(*store, *after);
    j["best_file"] = bestFile;
    j["faster_than_starter"] = faster;
    std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    const auto spend = store->spend(sessionId);
    std::cout << "\nsession " << sessionId << ": " << agent::toString(state)
              << (after->stopReason.empty() ? "" : " (" + after->stopReason + ")") << "\n"
              << totals.attempts << " attempt(s), " << totals.successes << " met their goal; " << spend.requests
              << " request(s), " << spend.tokens << " tokens, $" << fixed(spend.cost, "%.4f") << "; "
              << fixed(after->elapsedSeconds, "%.0f") << " s\n";
    if (totals.bestMs) {
      std::cout << "best " << msText(*totals.bestMs);
      if (totals.bestSpeedup) std::cout << " (" << fixed(*totals.bestSpeedup) << "x the reference)";
      if (baselineMs) std::cout << ", starter " << msText(*baselineMs);
      std::cout << (bestFile.empty() ? "" : " -> " + bestFile) << "\n";
    }
    if (state == agent::SessionState::Paused || state == agent::SessionState::Failed ||
        state == agent::SessionState::Finished)
      std::cout << "resume: kwb optimize --resume " << sessionId
                << (args.workspace.empty() ? "" : " --workspace " + args.workspace) << "\n";
    std::cout << "trajectories: kwb trajectories export " << sessionId
              << (args.workspace.empty() ? "" : " --workspace " + args.workspace) << "\n";
  }
  if (state == agent::SessionState::Paused) return kExitPaused;
  if (faster) return kExitFaster;
  if (totals.bestMs) return kExitCorrect;
  if (!services.pool && state != agent::SessionState::Failed) return kExitNotRun;
  return kExitFailed;
}

int sessionsCommand(const SessionsArgs &args, bool asJson) {
  auto store = openStore(args.workspace, true);
  if (!store) return kExitFailed;
  const auto sessions = store->sessions();
  if (asJson) {
    json out = json::array();
    for (const auto &s : sessions) out.push_back(sessionJson(*store, s));
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (sessions.empty()) {
    std::cout << "No sessions in " << store->workspace().path().string() << "\n";
    return 0;
  }
  for (const auto &s : sessions) {
    const auto totals = store->totals(s.id);
    std::cout << s.id << "  " << s.taskName << "  " << s.provider << (s.model.empty() ? "" : "/" + s.model) << "  "
              << agent::toString(s.state) << "  " << store->groups(s.id).size() << " group(s), " << totals.attempts
              << " attempt(s)";
    if (totals.bestMs) std::cout << ", best " << msText(*totals.bestMs);
    if (!s.stopReason.empty()) std::cout << "  (" << s.stopReason << ")";
    std::cout << "\n";
  }
  return 0;
}

int trajectoriesExportCommand(const SessionsArgs &args) {
  auto store = openStore(args.workspace, true);
  if (!store) return kExitFailed;
  try {
    agent::TrajectoryExportOptions options;
    options.includeUnrewarded = args.all;
    std::size_t n = 0;
    if (args.output.empty()) {
      n = agent::exportTrajectories(*store, args.sessions, std::cout, options);
    } else {
      std::ofstream out(args.output, std::ios::binary);
      if (!out) {
        std::cerr << "kwb: cannot write " << args.output << "\n";
        return kExitFailed;
      }
      n = agent::exportTrajectories(*store, args.sessions, out, options);
      if (!out.flush()) {
        std::cerr << "kwb: writing " << args.output << " failed\n";
        return kExitFailed;
      }
    }
    std::cerr << n << " record(s)" << (args.output.empty() ? "" : " written to " + args.output) << "\n";
  } catch (const std::invalid_argument &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return kExitUsage;
  }
  return 0;
}

int agentSuiteCommand(const AgentSuiteArgs &args, bool asJson) {
  std::ostream &log = asJson ? std::cerr : std::cout;
  std::vector<agent::Arm> arms;
  for (const auto &name : args.ablate.empty() ? std::vector<std::string>{"none"} : args.ablate) {
    const auto arm = agent::armFromString(name);
    if (!arm) {
      std::cerr << "kwb: --ablate " << name << " is not one of none, memory, skills, dcp\n";
      return kExitUsage;
    }
    if (std::find(arms.begin(), arms.end(), *arm) == arms.end()) arms.push_back(*arm);
  }
  if (args.session.provider.empty()) {
    std::cerr << "kwb: suite --agent needs --provider (a configured provider's name or a base URL)\n";
    return kExitUsage;
  }
  std::vector<kwb::Task> tasks;
  std::error_code ec;
  if (!fs::is_directory(args.tasks, ec)) {
    std::cerr << "kwb: " << args.tasks << " is not a folder of task folders\n";
    return kExitUsage;
  }
  for (const auto &entry : kwb::listTasks(args.tasks)) {
    if (entry.task) tasks.push_back(*entry.task);
    else log << "skipped " << entry.folder.string() << ": " << entry.error << "\n";
  }
  if (tasks.empty()) {
    std::cerr << "kwb: no task folder (with a task.toml) in " << args.tasks << "\n";
    return kExitUsage;
  }
  LlmArgs llmArgs;
  llmArgs.target = args.session.provider;
  llmArgs.format = args.session.format;
  const auto provider = providerAndKey(llmArgs);
  if (!provider) return kExitUsage;
  auto store = openStore(args.session.workspace, false);
  if (!store) return kExitFailed;

  // Each arm's library: a copy of the user's (its cards and its memory) as it is now.
  const fs::path library = kwb::SkillLibrary::defaultPath();
  // A folder only this user may read (the library's cards and Cases are theirs).
  std::string pattern = (fs::temp_directory_path() / "kwb-ablation-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    std::cerr << "kwb: cannot make a folder for the arms' libraries in " << fs::temp_directory_path().string() << "\n";
    return kExitFailed;
  }
  const fs::path copies = pattern;
  struct RemoveCopies {
    fs::path dir;
    ~RemoveCopies() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } removeCopies{copies};

  std::shared_ptr<kwb::EvaluatorPool> pool;
  kwb::EvaluatorSettings evaluatorSettings;
  std::string noDevice = "--no-gpu";
  InterruptHandlers interruptHandlers;
  if (!args.session.noGpu && !gpuPool(args.session.workers, args.session.gpus, pool, evaluatorSettings, noDevice))
    return kExitUsage;
  if (!pool) log << "no CUDA device (" << noDevice << "): every answer is compiled and its launch checked; nothing is run\n";

  const agent::SessionSettings base = settingsOf(args.session, 1);

  std::vector<agent::ArmSummary> summaries;
  std::mutex printMutex;
  for (const agent::Arm arm : arms) {
    agent::ArmSummary summary;
    summary.arm = arm;
    const agent::SessionSettings settings = agent::armSettings(base, arm);
    agent::SessionServices services;
    services.store = store;
    services.provider = provider->first;
    services.apiKey = provider->second;
    services.pool = pool;
    services.evaluator = evaluatorSettings;
    services.noDevice = pool ? std::string() : noDevice;
    if (fs::exists(library, ec)) {
      const fs::path copy = copies / ("library-" + agent::toString(arm) + ".sqlite");
      try {
        // Opened as any writer opens it (with locks, through its WAL): the copy is what was committed.
        kwb::Database db(library, kwb::Database::Mode::OpenExisting, kwb::DatabaseKind::Library);
        std::string quoted;
        for (char ch : copy.string()) quoted += ch == '\'' ? std::string("''") : std::string(1, ch);
        db.exec("VACUUM INTO '" + quoted + "'");
        if (settings.skills) services.skills = kwb::SkillLibrary::open(copy);
        if (settings.memory) services.memory = kwb::memory::ExperienceStore::open(copy);
      } catch (const std::exception &e) {
        log << "arm " << agent::toString(arm) << ": the library is left out: " << e.what() << "\n";
      }
    }
    for (const auto &task : tasks) {
      if (gInterrupts > 0) break;
      std::string id;
      try {
        id = agent::Session::create(*store, task, settings, args.session.provider,
                                    args.session.model.empty() ? provider->first.model : args.session.model)
                 .id;
        log << "arm " << agent::toString(arm) << " (" << (arm == agent::Arm::None ? "everything on" : agent::toString(arm) + " off")
            << "): " << task.name << ": session " << id << "\n";
        log.flush();
        agent::Session session(services, id, [&](const agent::SessionEvent &e) {
          if (e.kind != agent::SessionEvent::Kind::GroupDone && e.kind != agent::SessionEvent::Kind::State) return;
          std::lock_guard lock(printMutex);
          printEvent(log, e);
        });
        std::atomic<bool> finished{false};
        std::thread watcher([&] {
          while (!finished) {
            if (gInterrupts > 0) {
              session.stop("interrupted (Ctrl+C)");
              return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
        });
        struct Join {  // also when run() throws
          std::atomic<bool> &finished;
          std::thread &watcher;
          ~Join() {
            finished = true;
            watcher.join();
          }
        } join{finished, watcher};
        session.run();
      } catch (const std::exception &e) {
        log << task.name << ": " << e.what() << "\n";
        if (id.empty()) continue;
      }
      summary.tasks.push_back(agent::armTaskOf(*store, id));
    }
    summaries.push_back(std::move(summary));
    if (gInterrupts > 0) break;
  }
  const json j = {{"tasks", args.tasks},
                  {"provider", kwb::llm::shownName(provider->first)},
                  {"model", args.session.model.empty() ? provider->first.model : args.session.model},
                  {"on_gpu", pool != nullptr},
                  {"settings", base},
                  {"arms", agent::ablationJson(summaries)}};
  if (!args.out.empty()) {
    std::ofstream out(args.out, std::ios::binary);
    out << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    if (!out) std::cerr << "kwb: cannot write " << args.out << "\n";
  }
  if (asJson) std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  else std::cout << "\n" << agent::ablationTable(summaries);
  return gInterrupts > 0 ? kExitPaused : 0;
}
