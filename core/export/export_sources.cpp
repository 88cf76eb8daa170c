#include "core/export/export_sources.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/agent/session_store.h"
#include "core/memory/case_sources.h"
#include "core/tune/search_space.h"
#include "core/text/content_hash.h"

namespace kwb::exporting {

namespace {

std::int64_t numberOf(const std::string &text, const std::string &what) {
  if (text.empty() || text.size() > 18) throw ExportError(what + " needs a number: '" + text + "'");
  std::int64_t n = 0;
  for (const char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) throw ExportError(what + " needs a number: '" + text + "'");
    n = n * 10 + (c - '0');
  }
  return n;
}

bool launchMatches(const Launch &launch, const std::map<std::string, std::int64_t> &values, const LaunchDims &dims) {
  try {
    for (std::size_t i = 0; i < 3; ++i) {
      const std::int64_t g = i < launch.grid.size() ? launch.grid[i].evaluate(values) : 1;
      const std::int64_t b = i < launch.block.size() ? launch.block[i].evaluate(values) : 1;
      if (g != dims.grid[i] || b != dims.block[i]) return false;
    }
    return launch.sharedBytes.evaluate(values) == dims.sharedBytes;
  } catch (const std::exception &) {
    return false;
  }
}

// The tunable values a run used, read back from its launches: the point whose grid, block and
// shared memory match every configuration's recorded launch (of those, the nearest to the task's
// first values). Empty when the task has no tunables, no launch was recorded, or none matches.
std::map<std::string, std::int64_t> tunablesOfRun(const Task &task, const EvaluationResult &result,
                                                  std::vector<std::string> &notes) {
  if (task.tunables.empty() || !task.launch) return {};
  std::vector<const ConfigOutcome *> launched;
  for (const auto &c : result.configs)
    if (c.candidateLaunch.threadsPerBlock() > 1 || c.candidateLaunch.grid[0] > 1) launched.push_back(&c);
  if (launched.empty()) return {};
  std::optional<std::map<std::string, std::int64_t>> best;
  int bestChanged = 0, matches = 0;
  const tune::SearchSpace space(task.tunables);
  for (std::uint64_t index = 0; index < std::min<std::uint64_t>(space.size(), 4096); ++index) {
    const tune::Point point = space.point(space.at(index));
    bool all = true;
    for (const auto *c : launched) {
      const SizeConfig *sizes = task.config(c->config);
      if (!sizes) continue;
      auto values = sizes->values;
      values.insert(point.begin(), point.end());
      if (!launchMatches(*task.launch, values, c->candidateLaunch)) {
        all = false;
        break;
      }
    }
    if (!all) continue;
    ++matches;
    int changed = 0;
    for (const auto &t : task.tunables) changed += point.at(t.name) != t.values.front();
    if (!best || changed < bestChanged) {
      best = point;
      bestChanged = changed;
    }
  }
  if (!best) {
    notes.push_back("no tunable values give the run's launches; the task's first values are baked in");
    return {};
  }
  if (matches > 1)
    notes.push_back("several tunable values give the run's launches; those nearest the task's first values are baked in "
                    "(--set NAME=V to choose)");
  return *best;
}

}  // namespace

SourceSpec parseSourceSpec(const std::string &text) {
  SourceSpec s;
  auto after = [&](const char *prefix) { return text.substr(std::string(prefix).size()); };
  if (text.rfind("run:", 0) == 0) {
    s.kind = SourceSpec::Kind::Run;
    s.id = numberOf(after("run:"), "run:");
  } else if (text.rfind("case:", 0) == 0) {
    s.kind = SourceSpec::Kind::Case;
    s.id = numberOf(after("case:"), "case:");
  } else if (text.rfind("session:", 0) == 0) {
    s.kind = SourceSpec::Kind::Session;
    s.text = after("session:");
    if (s.text.empty()) throw ExportError("session: needs a session's id (kwb optimize --list shows them)");
  } else if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    s.kind = SourceSpec::Kind::Run;
    s.id = numberOf(text, "a run");
  } else {
    s.text = text;
  }
  return s;
}

ExportInput exportInputFromRun(const Task &task, Workspace &workspace, std::int64_t runId) {
  const auto run = workspace.evaluation(runId);
  if (!run) throw ExportError("the workspace " + workspace.path().string() + " has no run " + std::to_string(runId));
  if (run->taskName != task.name)
    throw ExportError("run " + std::to_string(runId) + " is of task " + run->taskName + ", not " + task.name);
  ExportInput in;
  in.task = task;
  in.code = workspace.source(run->sourceHash).value_or("");
  if (in.code.empty()) throw ExportError("run " + std::to_string(runId) + "'s code is not in the workspace");
  in.result = parseEvaluationResult(run->resultJson);
  std::vector<std::string> notes;
  in.tunables = tunablesOfRun(task, *in.result, notes);
  in.provenance.what = "run " + std::to_string(runId);
  in.provenance.workspace = workspace.path().string();
  in.provenance.run = runId;
  in.provenance.sourceName = run->sourceName;
  in.notes = notes;
  return in;
}

ExportInput exportInputFromFile(const Task &task, const std::filesystem::path &file, const std::string &code,
                                Workspace *workspace, const std::map<std::string, std::int64_t> &tunables) {
  ExportInput in;
  in.task = task;
  in.code = code;
  in.tunables = tunables;
  in.provenance.what = "file " + file.filename().string();
  in.provenance.sourceName = file.string();
  if (workspace) {
    const std::string hash = contentHash(code);
    // The newest run of this code on a GPU, in any folder of a task of this name.
    std::optional<EvaluationRecord> newest;
    for (const auto &record : workspace->tasks()) {
      if (record.name != task.name) continue;
      for (const auto &run : workspace->evaluations(record.id))  // newest first
        if (run.sourceHash == hash && !run.device.empty() && (!newest || run.id > newest->id)) {
          newest = run;
          break;
        }
    }
    if (newest)
      if (const auto full = workspace->evaluation(newest->id)) {
        in.result = parseEvaluationResult(full->resultJson);
        if (tunables.empty()) in.tunables = tunablesOfRun(task, *in.result, in.notes);
        in.provenance.what += " (measured as run " + std::to_string(newest->id) + ")";
        in.provenance.workspace = workspace->path().string();
        in.provenance.run = newest->id;
      }
  }
  return in;
}

ExportInput exportInputFromSessionBest(const Task &task, Workspace &workspace, const std::string &sessionId) {
  agent::SessionStore store(std::shared_ptr<Workspace>(&workspace, [](Workspace *) {}));
  const auto session = store.session(sessionId);
  if (!session) throw ExportError("the workspace " + workspace.path().string() + " has no session " + sessionId);
  if (session->taskName != task.name)
    throw ExportError("session " + sessionId + " optimized task " + session->taskName + ", not " + task.name);
  const auto totals = store.totals(sessionId);
  if (totals.bestAttemptId == 0) throw ExportError("session " + sessionId + " has no correct candidate yet");
  std::int64_t runId = 0;
  int turn = 0;
  for (const auto &a : store.sessionAttempts(sessionId))
    if (a.id == totals.bestAttemptId) {
      runId = a.evaluationId;
      turn = a.turn;
    }
  if (runId == 0) throw ExportError("session " + sessionId + "'s best candidate has no stored run");
  ExportInput in = exportInputFromRun(task, workspace, runId);
  in.provenance.what = "session " + sessionId + "'s best (attempt " + std::to_string(totals.bestAttemptId) + ", turn " +
                       std::to_string(turn) + ", run " + std::to_string(runId) + ")";
  in.provenance.session = sessionId;
  in.model = session->provider + " / " + session->model;
  return in;
}

ExportInput exportInputFromCase(const Task &task, memory::ExperienceStore &store, std::int64_t caseId,
                                Workspace *workspace) {
  const auto c = store.get(caseId, true);
  if (!c) throw ExportError("the experience memory " + store.path().string() + " has no Case " + std::to_string(caseId));
  if (c->task != task.name) throw ExportError("Case " + std::to_string(caseId) + " is of task " + c->task + ", not " + task.name);
  std::optional<std::int64_t> run;
  if (workspace) try {
      run = memory::evaluationOfCase(*c, memory::workspaceKey(*workspace));
    } catch (const std::exception &) {
      // A workspace without an id (older than schema 7): the Case's own code.
    }
  if (run) {
    ExportInput in = exportInputFromRun(task, *workspace, *run);
    in.provenance.what = "Case " + std::to_string(caseId) + " (run " + std::to_string(*run) + ")";
    return in;
  }
  if (c->after.empty()) throw ExportError("Case " + std::to_string(caseId) + " keeps no code");
  ExportInput in;
  in.task = task;
  in.code = c->after;
  in.provenance.what = "Case " + std::to_string(caseId) + " of the experience memory (" + c->source + ")";
  in.provenance.session = c->session;
  if (c->ideaKind == "tuning") {
    // "BX=32 BY=8": the parameters the tuner compiled it with.
    std::istringstream words(c->idea);
    for (std::string w; words >> w;)
      if (const auto eq = w.find('='); eq != std::string::npos && task.tunables.size())
        try {
          in.tunables[w.substr(0, eq)] = std::stoll(w.substr(eq + 1));
        } catch (const std::exception &) {
        }
  }
  return in;
}

}  // namespace kwb::exporting
