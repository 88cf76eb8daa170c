#include "core/memory/case_sources.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/compile/diagnostics.h"
#include "core/lineage/lineage_build.h"
#include "core/lineage/lineage_builder.h"
#include "core/task/manifest_parser.h"
#include "core/text/printable.h"
#include "core/text/content_hash.h"
#include "core/profile/bottleneck.h"

namespace kwb::memory {

std::string bottleneckOf(const std::vector<profile::MetricValue> &metrics) {
  if (metrics.empty()) return {};
  profile::ProfileResult r;
  r.outcome = Outcome::Profiled;
  r.metrics = metrics;
  switch (profile::limiterOf(r)) {
    case profile::Limiter::Memory: return "memory";
    case profile::Limiter::Compute: return "compute";
    case profile::Limiter::Latency: return "latency";
    case profile::Limiter::Balanced: return "balanced";
    case profile::Limiter::Unknown: break;
  }
  return {};
}

namespace {

constexpr const char *kEvaluationRef = "#evaluation-";  // a workspace run's Case: KEY#evaluation-ID

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace

Measured measuredOf(const EvaluationResult &result, const Task *task) {
  Measured m;
  double logSum = 0;
  int timed = 0;
  for (const auto &c : result.configs) {
    if (!c.timing || !c.timing->ok || !(c.timing->speedup > 0)) continue;
    logSum += std::log(c.timing->speedup);
    ++timed;
    m.relativeSpread = std::max(m.relativeSpread, c.timing->candidate.relativeSpread);
  }
  m.correct = result.outcome == Outcome::Correct && timed > 0;
  if (timed) m.speedup = std::exp(logSum / timed);
  m.feedback = result.message;
  int errors = 0;
  for (const auto &d : result.candidate.diagnostics)
    if (d.severity == Diagnostic::Severity::Error && errors++ < 3) m.feedback += "\n" + formatDiagnostic(d);
  for (const auto &c : result.configs)
    if (c.outcome != Outcome::Correct && !c.message.empty() && c.message != result.message) {
      m.feedback += "\n" + c.config + ": " + c.message;
      break;
    }
  m.feedback = trim(m.feedback);
  if (m.feedback.size() > 2000) m.feedback = clippedLine(m.feedback, 2000);
  if (task) {
    const std::string largest = largestConfiguration(*task);
    if (const auto *config = task->config(largest)) {
      for (const auto &[name, value] : config->values)
        m.shape += (m.shape.empty() ? "" : ",") + name + "=" + std::to_string(value);
      const double bytes = static_cast<double>(task->bytes.evaluate(config->values));
      if (bytes > 0) m.intensity = static_cast<double>(task->flops.evaluate(config->values)) / bytes;
    }
  }
  return m;
}

std::string statedIntent(const std::string &response) {
  std::size_t at = 0;
  while (at < response.size()) {
    const auto end = std::min(response.find('\n', at), response.size());
    std::string line = trim(response.substr(at, end - at));
    at = end + 1;
    if (line.rfind("```", 0) == 0) return {};  // code came first
    while (!line.empty() && (line.front() == '#' || line.front() == '*' || line.front() == '-' || line.front() == '>'))
      line = trim(line.substr(1));
    for (auto bold = line.find("**"); bold != std::string::npos; bold = line.find("**")) line.erase(bold, 2);
    line = trim(line);
    if (line.empty()) continue;
    return clippedLine(line, 200);
  }
  return {};
}

std::string workspaceKey(Workspace &workspace) {
  // The workspace's own id (schema 7): run ids start again in a new file at the same path.
  auto id = workspace.database().prepare("SELECT value FROM settings WHERE key = 'workspace_id'");
  if (!id.step() || id.columnText(0).empty())
    throw std::runtime_error(workspace.path().string() + " has no workspace id (schema 7 gives one)");
  return "workspace:" + id.columnText(0);
}

std::optional<std::int64_t> evaluationOfCase(const Case &c, const std::string &workspaceKey) {
  if (c.source != "editor" && c.source != "session") return std::nullopt;
  const std::string prefix = workspaceKey + kEvaluationRef;
  if (workspaceKey.empty() || c.sourceRef.size() <= prefix.size() || c.sourceRef.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  std::int64_t id = 0;
  for (std::size_t i = prefix.size(); i < c.sourceRef.size(); ++i) {
    const char ch = c.sourceRef[i];
    if (ch < '0' || ch > '9' || id > (INT64_MAX - 9) / 10) return std::nullopt;
    id = id * 10 + (ch - '0');
  }
  return id;
}

namespace {

// Records one run of `workspace` (of task `taskRecord`, loaded as `task` when its folder is there)
// unless it is recorded already; `previousEditor`, the task's previous editor run's Case, moves on
// to this run's when it is an editor run. Counts it in `report`.
void recordRun(ExperienceStore &store, Workspace &workspace, const std::string &key, const TaskRecord &taskRecord,
               const Task *task, const EvaluationRecord &run, std::optional<std::int64_t> &previousEditor,
               SyncReport &report) {
  Database &db = workspace.database();
  auto refOf = [&](std::int64_t evaluationId) { return key + kEvaluationRef + std::to_string(evaluationId); };
  const std::string ref = refOf(run.id);
  if (const auto editor = store.find("editor", ref)) {
    ++report.known;
    previousEditor = *editor;
    return;
  }
  if (store.find("session", ref)) {
    ++report.known;
    return;
  }
  // A session's candidate: its attempt, group and session.
  auto attempt = db.prepare(
      "SELECT a.parent_id, a.response_text, a.cards_json, g.session_id, g.incumbent_hash, p.evaluation_id "
      "FROM agent_attempts a JOIN agent_groups g ON g.id = a.group_id "
      "LEFT JOIN agent_attempts p ON p.id = a.parent_id WHERE a.evaluation_id = ?");
  attempt.bind(1, run.id);
  const bool fromSession = attempt.step();
  const std::string source = fromSession ? "session" : "editor";
  // Compiled only (no GPU ran it): nothing was learned about speed or correctness.
  if (run.outcome == toString(Outcome::NotRun)) {
    ++report.notRun;
    return;
  }
  const auto full = workspace.evaluation(run.id);
  if (!full) return;
  const EvaluationResult result = parseEvaluationResult(full->resultJson);
  const Measured m = measuredOf(result, task);
  Case c;
  c.source = source;
  c.sourceRef = ref;
  c.task = taskRecord.name;
  c.operatorClass = task ? operatorClassOf(*task) : taskRecord.name;
  c.gpu = run.device;
  c.arch = run.arch;
  c.after = workspace.source(run.sourceHash).value_or("");
  c.outcome = run.outcome;
  c.correct = m.correct;
  c.speedup = m.speedup;
  c.relativeSpread = m.relativeSpread;
  c.feedback = m.feedback;
  c.shape = m.shape;
  c.intensity = m.intensity;
  c.createdAt = run.finishedAt;
  const std::string file = std::filesystem::path(run.sourceName).filename().string();
  if (fromSession) {
    c.session = attempt.columnText(3);
    c.ideaKind = "intent";
    c.idea = statedIntent(attempt.columnText(1));
    const auto cards = nlohmann::json::parse(attempt.columnText(2), nullptr, false);
    if (cards.is_array() && !cards.empty()) {
      std::string names;
      for (const auto &card : cards)
        if (card.is_string()) names += (names.empty() ? "" : ", ") + card.get<std::string>();
      if (c.idea.empty()) {
        c.idea = names;
        c.ideaKind = "card";
      } else {
        c.idea += " (cards: " + names + ")";
      }
    }
    if (!attempt.columnIsNull(5)) c.parent = store.find("session", refOf(attempt.columnInt(5)));
    if (!c.parent && !attempt.columnText(4).empty()) c.parent = store.findByCode(taskRecord.name, attempt.columnText(4));
    if (c.parent) c.before = store.get(*c.parent, true)->after;
    else if (const auto incumbent = workspace.source(attempt.columnText(4))) c.before = *incumbent;
    c.journal = "session " + c.session + " candidate (" + (c.idea.empty() ? std::string("no stated idea") : c.idea) +
                "): " + run.outcome;
  } else {
    c.ideaKind = "edit";
    c.idea = file.empty() ? std::string("an edit") : "run of " + file;
    c.parent = previousEditor;
    if (c.parent) c.before = store.get(*c.parent, true)->after;
    c.journal = "editor run of " + (file.empty() ? std::string("the editor's kernel") : file) + ": " + run.outcome;
  }
  if (m.correct) c.journal += ", " + fixed(m.speedup, 2) + "x over the reference";
  if (!run.device.empty()) c.journal += " on " + run.device;
  try {
    const auto id = store.record(c);
    if (!fromSession) previousEditor = id;
    ++report.added;
  } catch (const std::exception &e) {
    report.problems.push_back(taskRecord.name + " run " + std::to_string(run.id) + ": " + e.what());
  }
}

std::optional<Task> loadedTask(const TaskRecord &taskRecord) {
  try {
    return loadTask(taskRecord.folder);
  } catch (const std::exception &) {
    return std::nullopt;  // the folder moved or is gone: the Cases keep what the runs say
  }
}

}  // namespace

SyncReport syncWorkspace(ExperienceStore &store, Workspace &workspace) {
  SyncReport report;
  const std::string key = workspaceKey(workspace);
  for (const auto &taskRecord : workspace.tasks()) {
    const std::optional<Task> task = loadedTask(taskRecord);
    auto runs = workspace.evaluations(taskRecord.id);
    std::reverse(runs.begin(), runs.end());  // oldest first
    std::optional<std::int64_t> previousEditor;
    for (const auto &run : runs) recordRun(store, workspace, key, taskRecord, task ? &*task : nullptr, run, previousEditor, report);
  }
  return report;
}

SyncReport recordSessionRun(ExperienceStore &store, Workspace &workspace, std::int64_t evaluationId, const Task *task) {
  SyncReport report;
  const auto run = workspace.evaluation(evaluationId);
  if (!run) {
    report.problems.push_back("run " + std::to_string(evaluationId) + " is not in the workspace");
    return report;
  }
  const std::string key = workspaceKey(workspace);
  std::optional<TaskRecord> taskRecord;
  for (const auto &t : workspace.tasks())
    if (t.id == run->taskId) taskRecord = t;
  if (!taskRecord) {
    report.problems.push_back("run " + std::to_string(evaluationId) + ": its task is not in the workspace");
    return report;
  }
  std::optional<Task> loaded;
  if (!task) loaded = loadedTask(*taskRecord);
  std::optional<std::int64_t> previousEditor;  // a session's run has its parent from its attempt
  recordRun(store, workspace, key, *taskRecord, task ? task : (loaded ? &*loaded : nullptr), *run, previousEditor, report);
  return report;
}

std::size_t recordLineageCases(ExperienceStore &store, const LineageRecord &lineage, const Task &task) {
  std::size_t added = 0;
  std::optional<std::int64_t> parent;
  std::string before;
  for (const auto &step : lineage.steps) {
    const std::string ref = lineage.name + "@" + lineage.builtAt + "#step-" + std::to_string(step.position);
    if (const auto known = store.find("lineage", ref)) {
      if (step.accepted) {
        parent = *known;
        before = step.source;
      }
      continue;
    }
    Case c;
    c.source = "lineage";
    c.sourceRef = ref;
    c.task = task.name;
    c.operatorClass = operatorClassOf(task);
    c.gpu = lineage.device;
    c.arch = lineage.arch;
    c.idea = step.title.empty() ? clippedLine(step.adds, 200) : step.title;
    c.ideaKind = "step";
    c.before = before;
    c.after = step.source;
    c.outcome = step.outcome;
    c.parent = parent;
    // Speedup over the reference: the geometric mean over the step's configurations.
    double logSum = 0;
    int timed = 0;
    for (const auto &f : step.figures) {
      if (!(f.speedupVsReference > 0)) continue;
      logSum += std::log(f.speedupVsReference);
      ++timed;
      c.relativeSpread = std::max(c.relativeSpread, f.relativeSpread);
    }
    c.correct = step.accepted && timed > 0;
    if (timed) c.speedup = std::exp(logSum / timed);
    c.feedback = step.reason;
    c.bottleneck = bottleneckOf(step.profile);
    const Measured shape = measuredOf(EvaluationResult{}, &task);
    c.shape = shape.shape;
    c.intensity = shape.intensity;
    c.journal = "lineage " + lineage.name + " step " + std::to_string(step.position) + " (" + step.title + "): " +
                (step.accepted ? "accepted, " + fixed(c.speedup, 2) + "x over the reference" : "rejected: " + step.reason);
    if (!step.adds.empty()) c.journal += ". Adds: " + step.adds;
    const auto id = store.record(c);
    ++added;
    if (step.accepted) {
      parent = id;
      before = step.source;
    }
  }
  return added;
}

std::size_t recordTuningCases(ExperienceStore &store, const tune::TuneReport &report, const Task &task,
                              const std::string &source, const std::string &gpu) {
  const std::string sourceHash = contentHash(source);
  const auto parent = store.findByCode(task.name, sourceHash);
  const Measured shape = measuredOf(EvaluationResult{}, &task);
  // The reference's time per configuration, from the points that timed it (the tuner times it
  // until one has): each point's speedup over the reference comes from it.
  std::map<std::string, double> referenceMs;
  for (const auto &p : report.points)
    for (const auto &[config, ms] : p.result.referenceMs) referenceMs.emplace(config, ms);
  auto speedupOf = [&referenceMs](const tune::PointResult &r) {
    if (r.speedup > 0) return r.speedup;
    double logSum = 0;
    int n = 0;
    for (const auto &[config, ms] : r.configMs)
      if (const auto ref = referenceMs.find(config); ref != referenceMs.end() && ms > 0) {
        logSum += std::log(ref->second / ms);
        ++n;
      }
    return n > 0 && n == static_cast<int>(r.configMs.size()) ? std::exp(logSum / n) : 0.0;
  };
  std::size_t added = 0;
  store.transaction([&] {
    for (const auto &p : report.points) {
      const auto &r = p.result;
      if (r.outcome == Outcome::NotRun) continue;  // compiled only: nothing measured
      const double speedup = r.outcome == Outcome::Correct ? speedupOf(r) : 0;
      if (r.outcome == Outcome::Correct && speedup == 0) continue;  // timed, but against no reference time
      const std::string arch = report.arch;
      const std::string ref = sourceHash + "@" + arch + "#" + p.label;
      if (store.find("tune", ref)) continue;
      Case c;
      c.source = "tune";
      c.sourceRef = ref;
      c.task = task.name;
      c.operatorClass = operatorClassOf(task);
      c.gpu = r.device.empty() ? gpu : r.device;
      c.arch = arch;
      c.idea = p.label.empty() ? "the source as it is (no tunables)" : p.label;
      c.ideaKind = "tuning";
      c.before = source;
      std::string defines = "// kwb tune: " + c.idea + "\n";
      for (const auto &[name, value] : p.point) defines += "#define " + name + " " + std::to_string(value) + "\n";
      c.after = defines + source;
      c.outcome = toString(r.outcome);
      c.correct = r.outcome == Outcome::Correct;
      c.speedup = speedup;
      c.relativeSpread = r.relativeSpread;
      c.feedback = r.outcome == Outcome::Correct ? "" : r.message;
      c.parent = parent;
      c.shape = shape.shape;
      c.intensity = shape.intensity;
      c.journal = "tuning point " + c.idea + ": " +
                  (c.correct ? fixed(c.speedup, 2) + "x over the reference" + (r.objectiveMs ? ", " + fixed(*r.objectiveMs, 4) + " ms" : "")
                             : c.outcome + (r.message.empty() ? "" : " (" + clippedLine(r.message, 160) + ")"));
      store.record(std::move(c));
      ++added;
    }
  });
  return added;
}

}  // namespace kwb::memory
