#include "core/agent/session_store.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <stdexcept>

#include "core/llm/transcript_store.h"
#include "core/text/url_credentials.h"

using nlohmann::json;

namespace kwb::agent {

namespace {

template <typename T>
std::optional<T> optionalAt(const json &j, const char *key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<T>();
}

template <typename T>
void putOptional(json &j, const char *key, const std::optional<T> &v) {
  j[key] = v ? json(*v) : json(nullptr);
}

void bindOptional(Statement &s, int index, const std::optional<double> &v) {
  if (v) s.bind(index, *v);
  else s.bindNull(index);
}

std::optional<double> columnOptional(const Statement &s, int index) {
  if (s.columnIsNull(index)) return std::nullopt;
  return s.columnDouble(index);
}

std::string newSessionId() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", static_cast<unsigned>(rd() & 0xffff));
  return std::string(stamp) + "-" + suffix;
}

constexpr const char *kSessionColumns =
    "id, task_id, task_name, provider, model, settings_json, state, stop_reason, baseline_json, elapsed_seconds, "
    "created_at, updated_at";

SessionRecord readSession(const Statement &row) {
  SessionRecord r;
  r.id = row.columnText(0);
  r.taskId = row.columnInt(1);
  r.taskName = row.columnText(2);
  r.provider = row.columnText(3);
  r.model = row.columnText(4);
  r.settings = json::parse(row.columnText(5)).get<SessionSettings>();
  r.state = sessionStateFromName(row.columnText(6)).value_or(SessionState::Failed);
  r.stopReason = row.columnText(7);
  const std::string baseline = row.columnText(8);
  if (!baseline.empty()) r.baseline = json::parse(baseline).get<Incumbent>();
  r.elapsedSeconds = row.columnDouble(9);
  r.createdAt = row.columnText(10);
  r.updatedAt = row.columnText(11);
  return r;
}

constexpr const char *kGroupColumns =
    "id, session_id, ordinal, goal, incumbent_hash, incumbent_ms, state, dcp_json, created_at, finished_at";

GroupRecord readGroup(const Statement &row) {
  GroupRecord g;
  g.id = row.columnInt(0);
  g.sessionId = row.columnText(1);
  g.ordinal = static_cast<int>(row.columnInt(2));
  g.goal = goalFromName(row.columnText(3)).value_or(Goal::Correct);
  g.incumbentHash = row.columnText(4);
  g.incumbentMs = columnOptional(row, 5);
  g.done = row.columnText(6) == "done";
  const std::string dcp = row.columnText(7);
  if (!dcp.empty()) g.dcp = json::parse(dcp).get<DcpDecision>();
  g.createdAt = row.columnText(8);
  g.finishedAt = row.columnText(9);
  return g;
}

constexpr const char *kAttemptColumns =
    "a.id, a.group_id, a.line, a.turn, a.parent_id, a.state, a.messages_json, a.response_text, a.finish_reason, "
    "a.answer_outcome, a.answer_note, a.source_hash, a.evaluation_id, a.outcome, a.message, a.feedback, a.success, "
    "a.objective_ms, a.speedup, a.reward, a.credit, a.input_tokens, a.output_tokens, a.cost, a.llm_seconds, "
    "a.eval_seconds, a.created_at, a.evaluated_at, a.cards_json, a.context_json";

AttemptRecord readAttempt(const Statement &row) {
  AttemptRecord a;
  a.id = row.columnInt(0);
  a.groupId = row.columnInt(1);
  a.line = static_cast<int>(row.columnInt(2));
  a.turn = static_cast<int>(row.columnInt(3));
  a.parentId = row.columnIsNull(4) ? 0 : row.columnInt(4);
  a.evaluated = row.columnText(5) == "evaluated";
  a.messages = messagesFromJson(json::parse(row.columnText(6)));
  a.responseText = row.columnText(7);
  a.finishReason = row.columnText(8);
  a.answerOutcome = row.columnText(9);
  a.answerNote = row.columnText(10);
  a.sourceHash = row.columnIsNull(11) ? std::string() : row.columnText(11);
  a.evaluationId = row.columnIsNull(12) ? 0 : row.columnInt(12);
  a.outcome = row.columnText(13);
  a.message = row.columnText(14);
  a.feedback = row.columnText(15);
  a.success = row.columnInt(16) != 0;
  a.ms = columnOptional(row, 17);
  a.speedup = columnOptional(row, 18);
  a.reward = columnOptional(row, 19);
  a.credit = columnOptional(row, 20);
  a.inputTokens = row.columnInt(21);
  a.outputTokens = row.columnInt(22);
  a.cost = row.columnDouble(23);
  a.llmSeconds = row.columnDouble(24);
  a.evalSeconds = row.columnDouble(25);
  a.createdAt = row.columnText(26);
  a.evaluatedAt = row.columnText(27);
  a.cards = json::parse(row.columnText(28)).get<std::vector<std::string>>();
  if (const auto context = row.columnText(29); !context.empty()) a.context = json::parse(context, nullptr, false);
  return a;
}

}  // namespace

const char *toString(Goal goal) {
  switch (goal) {
    case Goal::Compiles: return "compiles";
    case Goal::Correct: return "correct";
    case Goal::Faster: return "faster";
  }
  return "correct";
}

std::optional<Goal> goalFromName(const std::string &name) {
  for (Goal g : {Goal::Compiles, Goal::Correct, Goal::Faster})
    if (name == toString(g)) return g;
  return std::nullopt;
}

const char *toString(SessionState state) {
  switch (state) {
    case SessionState::Running: return "running";
    case SessionState::Paused: return "paused";
    case SessionState::Finished: return "finished";
    case SessionState::Stopped: return "stopped";
    case SessionState::Failed: return "failed";
  }
  return "failed";
}

std::optional<SessionState> sessionStateFromName(const std::string &name) {
  for (SessionState s : {SessionState::Running, SessionState::Paused, SessionState::Finished, SessionState::Stopped,
                         SessionState::Failed})
    if (name == toString(s)) return s;
  return std::nullopt;
}

void to_json(json &j, const SessionSettings &s) {
  j = json{{"task_folder", s.taskFolder},
           {"provider", redactUrlsIn(s.provider)},  // a base URL's credentials are never stored (issue 45, 2)
           {"model", s.model},
           {"candidates", s.candidates},
           {"max_turns", s.dcp.maxTurns},
           {"discount", s.discount},
           {"min_gain", s.minGain},
           {"time_tolerance", s.timeTolerance},
           {"groups", s.groups},
           {"max_tokens", s.maxTokens},
           {"configs", s.configs},
           {"timing_cap_s", s.timingCapSeconds},
           {"time_limit_s", s.timeLimitSeconds},
           {"use_device", s.useDevice},
           {"profile", s.profile},
           {"sanitize_best", s.sanitizeBest},
           {"skills", s.skills},
           {"skill_cards", s.skillCards},
           {"proposed_cards", s.proposedCards},
           {"memory", s.memory},
           {"context_window", s.contextWindow},
           {"starter_hash", s.starterHash},
           {"starter_name", s.starterName}};
  putOptional(j, "easy_below", s.dcp.easyBelow);
  putOptional(j, "hopeless_above", s.dcp.hopelessAbove);
  putOptional(j, "dollars", s.dollars);
  putOptional(j, "tokens", s.tokens);
  putOptional(j, "wall_s", s.wallSeconds);
  putOptional(j, "temperature", s.temperature);
}

void from_json(const json &j, SessionSettings &s) {
  s = SessionSettings{};
  s.taskFolder = j.value("task_folder", std::string());
  s.provider = j.value("provider", std::string());
  s.model = j.value("model", std::string());
  s.candidates = j.value("candidates", s.candidates);
  s.dcp.maxTurns = j.value("max_turns", s.dcp.maxTurns);
  s.dcp.easyBelow = optionalAt<std::size_t>(j, "easy_below");
  s.dcp.hopelessAbove = optionalAt<std::size_t>(j, "hopeless_above");
  s.discount = j.value("discount", s.discount);
  s.minGain = j.value("min_gain", s.minGain);
  s.timeTolerance = j.value("time_tolerance", s.timeTolerance);
  s.dollars = optionalAt<double>(j, "dollars");
  s.tokens = optionalAt<std::int64_t>(j, "tokens");
  s.wallSeconds = optionalAt<double>(j, "wall_s");
  s.groups = j.value("groups", s.groups);
  s.maxTokens = j.value("max_tokens", s.maxTokens);
  s.temperature = optionalAt<double>(j, "temperature");
  s.configs = j.value("configs", std::vector<std::string>{});
  s.timingCapSeconds = j.value("timing_cap_s", s.timingCapSeconds);
  s.timeLimitSeconds = j.value("time_limit_s", s.timeLimitSeconds);
  s.useDevice = j.value("use_device", s.useDevice);
  s.profile = j.value("profile", s.profile);
  s.sanitizeBest = j.value("sanitize_best", s.sanitizeBest);
  s.skills = j.value("skills", s.skills);
  s.skillCards = j.value("skill_cards", s.skillCards);
  s.proposedCards = j.value("proposed_cards", s.proposedCards);
  s.memory = j.value("memory", s.memory);
  s.contextWindow = j.value("context_window", s.contextWindow);
  s.starterHash = j.value("starter_hash", std::string());
  s.starterName = j.value("starter_name", std::string());
}

void to_json(json &j, const Incumbent &v) {
  j = json{{"source_hash", v.sourceHash}, {"outcome", v.outcome}, {"attempt", v.attemptId}, {"feedback", v.feedback}};
  putOptional(j, "ms", v.ms);
  putOptional(j, "speedup", v.speedup);
}

void from_json(const json &j, Incumbent &v) {
  v.sourceHash = j.value("source_hash", std::string());
  v.outcome = j.value("outcome", std::string());
  v.attemptId = j.value("attempt", std::int64_t{0});
  v.feedback = j.value("feedback", std::string());
  v.ms = optionalAt<double>(j, "ms");
  v.speedup = optionalAt<double>(j, "speedup");
}

void to_json(json &j, const DcpDecision &d) {
  j = json{{"verdict", std::string(dcpVerdictName(d.verdict))},
           {"failures", d.failures},
           {"group_size", d.groupSize},
           {"easy_below", d.easyBelow},
           {"hopeless_above", d.hopelessAbove},
           {"repair_turns", d.repairTurns},
           {"reason", d.reason}};
}

void from_json(const json &j, DcpDecision &d) {
  const std::string verdict = j.value("verdict", std::string("easy"));
  d.verdict = verdict == "repair" ? DcpVerdict::Repair : verdict == "hopeless" ? DcpVerdict::Hopeless : DcpVerdict::Easy;
  d.failures = j.value("failures", std::size_t{0});
  d.groupSize = j.value("group_size", std::size_t{0});
  d.easyBelow = j.value("easy_below", std::size_t{0});
  d.hopelessAbove = j.value("hopeless_above", std::size_t{0});
  d.repairTurns = j.value("repair_turns", std::size_t{0});
  d.reason = j.value("reason", std::string());
}

json messagesToJson(const std::vector<llm::Message> &messages) {
  json out = json::array();
  for (const auto &m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

std::vector<llm::Message> messagesFromJson(const json &j) {
  std::vector<llm::Message> out;
  if (!j.is_array()) return out;
  for (const auto &m : j) {
    llm::Message message;
    message.role = m.value("role", std::string());
    message.content = m.value("content", std::string());
    out.push_back(std::move(message));
  }
  return out;
}

SessionStore::SessionStore(const std::filesystem::path &workspaceFile)
    : workspace_(std::shared_ptr<Workspace>(Workspace::open(workspaceFile))) {}

SessionStore::SessionStore(std::shared_ptr<Workspace> workspace) : workspace_(std::move(workspace)) {
  if (!workspace_) throw std::invalid_argument("SessionStore needs a workspace");
}

SessionRecord SessionStore::createSession(const std::string &taskName, const std::string &taskFolder,
                                          const std::string &manifestHash, const std::string &provider,
                                          const std::string &model, const SessionSettings &settings) {
  std::lock_guard lock(mutex_);
  const TaskRecord task = workspace_->recordTaskOpened(taskName, taskFolder, manifestHash);
  SessionRecord r;
  r.taskId = task.id;
  r.taskName = taskName;
  r.provider = redactUrlsIn(provider);  // a base URL's credentials are never stored (issue 45, 2)
  r.model = model;
  r.settings = settings;
  r.settings.provider = redactUrlsIn(settings.provider);
  r.createdAt = r.updatedAt = utcTimestamp();
  Database &db = workspace_->database();
  for (int tries = 0;; ++tries) {
    r.id = newSessionId();
    Statement exists = db.prepare("SELECT 1 FROM agent_sessions WHERE id = ?1");
    exists.bind(1, r.id);
    if (!exists.step() || tries > 16) break;
  }
  db.transaction([&] {
    Statement insert = db.prepare(
        "INSERT INTO agent_sessions(id, task_id, task_name, provider, model, settings_json, state, created_at, "
        "updated_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)");
    insert.bind(1, r.id).bind(2, r.taskId).bind(3, taskName).bind(4, r.provider).bind(5, model);
    insert.bind(6, json(r.settings).dump()).bind(7, toString(r.state)).bind(8, r.createdAt);
    insert.run();
  });
  return r;
}

std::optional<SessionRecord> SessionStore::session(const std::string &id) {
  std::lock_guard lock(mutex_);
  Statement q = workspace_->database().prepare(std::string("SELECT ") + kSessionColumns + " FROM agent_sessions WHERE id = ?1");
  q.bind(1, id);
  if (!q.step()) return std::nullopt;
  return readSession(q);
}

std::vector<SessionRecord> SessionStore::sessions() {
  std::lock_guard lock(mutex_);
  Statement q = workspace_->database().prepare(std::string("SELECT ") + kSessionColumns +
                                               " FROM agent_sessions ORDER BY created_at DESC, id DESC");
  std::vector<SessionRecord> out;
  while (q.step()) out.push_back(readSession(q));
  return out;
}

void SessionStore::setState(const std::string &id, SessionState state, const std::string &reason) {
  std::lock_guard lock(mutex_);
  Database &db = workspace_->database();
  db.transaction([&] {
    Statement u = db.prepare("UPDATE agent_sessions SET state = ?2, stop_reason = ?3, updated_at = ?4 WHERE id = ?1");
    u.bind(1, id).bind(2, toString(state)).bind(3, redactUrlsIn(reason)).bind(4, utcTimestamp());
    u.run();
  });
}

void SessionStore::setBaseline(const std::string &id, const Incumbent &baseline) {
  std::lock_guard lock(mutex_);
  Database &db = workspace_->database();
  db.transaction([&] {
    Statement u = db.prepare("UPDATE agent_sessions SET baseline_json = ?2, updated_at = ?3 WHERE id = ?1");
    u.bind(1, id).bind(2, json(baseline).dump()).bind(3, utcTimestamp());
    u.run();
  });
}

void SessionStore::setSettings(const std::string &id, const SessionSettings &settings) {
  std::lock_guard lock(mutex_);
  Database &db = workspace_->database();
  db.transaction([&] {
    Statement u = db.prepare("UPDATE agent_sessions SET settings_json = ?2, updated_at = ?3 WHERE id = ?1");
    u.bind(1, id).bind(2, json(settings).dump()).bind(3, utcTimestamp());
    u.run();
  });
}

void SessionStore::addElapsed(const std::string &id, double seconds) {
  std::lock_guard lock(mutex_);
  Database &db = workspace_->database();
  db.transaction([&] {
    Statement u = db.prepare(
        "UPDATE agent_sessions SET elapsed_seconds = elapsed_seconds + ?2, updated_at = ?3 WHERE id = ?1");
    u.bind(1, id).bind(2, seconds).bind(3, utcTimestamp());
    u.run();
  });
}

GroupRecord SessionStore::addGroup(const std::string &sessionId, int ordinal, Goal goal, const Incumbent &incumbent) {
  std::lock_guard lock(mutex_);
  GroupRecord g;
  g.sessionId = sessionId;
  g.ordinal = ordinal;
  g.goal = goal;
  g.incumbentHash = incumbent.sourceHash;
  g.incumbentMs = incumbent.ms;
  g.createdAt = utcTimestamp();
  Database &db = workspace_->database();
  db.transaction([&] {
    Statement insert = db.prepare(
        "INSERT INTO agent_groups(session_id, ordinal, goal, incumbent_hash, incumbent_ms, state, created_at) "
        "VALUES(?1, ?2, ?3, ?4, ?5, 'running', ?6)");
    insert.bind(1, sessionId).bind(2, static_cast<std::int64_t>(ordinal)).bind(3, toString(goal));
    insert.bind(4, incumbent.sourceHash);
    bindOptional(insert, 5, incumbent.ms);
    insert.bind(6, g.createdAt);
    insert.run();
    g.id = db.lastInsertId();
  });
  return g;
}

void SessionStore::setDcp(std::int64_t groupId, const DcpDecision &decision) {
  std::lock_guard lock(mutex_);
  Database &db = workspace_->database();
  db.transaction([&] {
    Statement u = db.prepare("UPDATE agent_groups SET dcp_json = ?2 WHERE id = ?1");
    u.bind(1, groupId).bind(2, json(decision).dump());
    u.run();
  });
}

void SessionStore::finishGroup(std::int64_t groupId) {
  std::lock_guard lock(mutex_);
  Database &db = workspace_->database();
  db.transaction([&] {
    Statement u = db.prepare("UPDATE agent_groups SET state = 'done', finished_at = ?2 WHERE id = ?1");
    u.bind(1, groupId).bind(2, utcTimestamp());
    u.run();
  });
}

std::vector<GroupRecord> SessionStore::groups(const std::string &sessionId) {
  std::lock_guard lock(mutex_);
  Statement q = workspace_->database().prepare(std::string("SELECT ") + kGroupColumns +
                                               " FROM agent_groups WHERE session_id = ?1 ORDER BY ordinal");
  q.bind(1, sessionId);
  std::vector<GroupRecord> out;
  while (q.step()) out.push_back(readGroup(q));
  return out;
}

AttemptRecord SessionStore::addAttempt(const AttemptRecord &attempt, const std::string &sourceText) {
  std::lock_guard lock(mutex_);
  AttemptRecord a = attempt;
  a.evaluated = false;
  a.createdAt = utcTimestamp();
  Database &db = workspace_->database();
  db.transaction([&] {
    a.sourceHash = sourceText.empty() ? std::string() : workspace_->putSource(sourceText);
    Statement insert = db.prepare(
        "INSERT INTO agent_attempts(group_id, line, turn, parent_id, state, messages_json, response_text, "
        "finish_reason, answer_outcome, answer_note, source_hash, outcome, message, input_tokens, output_tokens, cost, "
        "llm_seconds, created_at, cards_json, context_json) VALUES(?1, ?2, ?3, ?4, 'answered', ?5, ?6, ?7, ?8, ?9, ?10, "
        "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)");
    insert.bind(1, a.groupId).bind(2, static_cast<std::int64_t>(a.line)).bind(3, static_cast<std::int64_t>(a.turn));
    if (a.parentId) insert.bind(4, a.parentId);
    else insert.bindNull(4);
    insert.bind(5, messagesToJson(a.messages).dump(-1, ' ', false, json::error_handler_t::replace));
    insert.bind(6, a.responseText).bind(7, a.finishReason).bind(8, a.answerOutcome).bind(9, redactUrlsIn(a.answerNote));
    if (a.sourceHash.empty()) insert.bindNull(10);
    else insert.bind(10, a.sourceHash);
    insert.bind(11, a.outcome).bind(12, a.message).bind(13, a.inputTokens).bind(14, a.outputTokens);
    insert.bind(15, a.cost).bind(16, a.llmSeconds).bind(17, a.createdAt).bind(18, json(a.cards).dump());
    insert.bind(19, a.context.is_null() ? std::string() : a.context.dump(-1, ' ', false, json::error_handler_t::replace));
    insert.run();
    a.id = db.lastInsertId();
  });
  return a;
}

void SessionStore::setEvaluation(AttemptRecord &attempt, const std::optional<EvaluationRecord> &run,
                                 const std::string &sourceText) {
  std::lock_guard lock(mutex_);
  attempt.evaluatedAt = utcTimestamp();
  Database &db = workspace_->database();
  db.transaction([&] {
    if (run) attempt.evaluationId = workspace_->addEvaluation(*run, sourceText).id;
    Statement u = db.prepare(
        "UPDATE agent_attempts SET state = 'evaluated', evaluation_id = ?2, outcome = ?3, message = ?4, feedback = ?5, "
        "success = ?6, objective_ms = ?7, speedup = ?8, eval_seconds = ?9, evaluated_at = ?10 WHERE id = ?1");
    u.bind(1, attempt.id);
    if (attempt.evaluationId) u.bind(2, attempt.evaluationId);
    else u.bindNull(2);
    u.bind(3, attempt.outcome).bind(4, attempt.message).bind(5, attempt.feedback);
    u.bind(6, static_cast<std::int64_t>(attempt.success ? 1 : 0));
    bindOptional(u, 7, attempt.ms);
    bindOptional(u, 8, attempt.speedup);
    u.bind(9, attempt.evalSeconds).bind(10, attempt.evaluatedAt);
    u.run();
  });
  attempt.evaluated = true;
}

void SessionStore::setRewards(std::int64_t attemptId, double reward, double credit) {
  std::lock_guard lock(mutex_);
  Database &db = workspace_->database();
  db.transaction([&] {
    Statement u = db.prepare("UPDATE agent_attempts SET reward = ?2, credit = ?3 WHERE id = ?1");
    u.bind(1, attemptId).bind(2, reward).bind(3, credit);
    u.run();
  });
}

std::vector<AttemptRecord> SessionStore::attempts(std::int64_t groupId) {
  std::lock_guard lock(mutex_);
  Statement q = workspace_->database().prepare(std::string("SELECT ") + kAttemptColumns +
                                               " FROM agent_attempts a WHERE a.group_id = ?1 ORDER BY a.line, a.turn");
  q.bind(1, groupId);
  std::vector<AttemptRecord> out;
  while (q.step()) out.push_back(readAttempt(q));
  return out;
}

std::vector<AttemptRecord> SessionStore::sessionAttempts(const std::string &sessionId) {
  std::lock_guard lock(mutex_);
  Statement q = workspace_->database().prepare(
      std::string("SELECT ") + kAttemptColumns +
      " FROM agent_attempts a JOIN agent_groups g ON g.id = a.group_id WHERE g.session_id = ?1 "
      "ORDER BY g.ordinal, a.line, a.turn");
  q.bind(1, sessionId);
  std::vector<AttemptRecord> out;
  while (q.step()) out.push_back(readAttempt(q));
  return out;
}

std::optional<std::string> SessionStore::source(const std::string &hash) {
  std::lock_guard lock(mutex_);
  return workspace_->source(hash);
}

void SessionStore::setProfile(const std::string &sessionId, const std::string &sourceHash, const std::string &summary) {
  std::lock_guard lock(mutex_);
  Database &db = workspace_->database();
  Statement u = db.prepare(
      "INSERT OR REPLACE INTO agent_profiles(session_id, source_hash, summary, created_at) VALUES(?1, ?2, ?3, ?4)");
  u.bind(1, sessionId).bind(2, sourceHash).bind(3, summary).bind(4, utcTimestamp());
  u.run();
}

std::optional<std::string> SessionStore::profile(const std::string &sessionId, const std::string &sourceHash) {
  std::lock_guard lock(mutex_);
  Statement q = workspace_->database().prepare(
      "SELECT summary FROM agent_profiles WHERE session_id = ?1 AND source_hash = ?2");
  q.bind(1, sessionId).bind(2, sourceHash);
  if (!q.step()) return std::nullopt;
  return q.columnText(0);
}

SessionTotals SessionStore::totals(const std::string &sessionId) {
  SessionTotals t;
  for (const auto &a : sessionAttempts(sessionId)) {
    ++t.attempts;
    if (a.evaluated) ++t.evaluated;
    if (a.success) ++t.successes;
    t.inputTokens += a.inputTokens;
    t.outputTokens += a.outputTokens;
    t.cost += a.cost;
    if (a.ms && a.outcome == "correct" && (!t.bestMs || *a.ms < *t.bestMs)) {
      t.bestMs = a.ms;
      t.bestSpeedup = a.speedup;
      t.bestAttemptId = a.id;
    }
  }
  return t;
}

void SessionStore::addTranscript(const llm::TranscriptEntry &entry, const std::string &sessionId) {
  std::lock_guard lock(mutex_);
  workspace_->addLlmTranscript(llm::toRecord(entry, sessionId));
}

SessionSpend SessionStore::spend(const std::string &sessionId) {
  std::lock_guard lock(mutex_);
  Statement q = workspace_->database().prepare(
      "SELECT count(*), coalesce(sum(input_tokens + output_tokens), 0), coalesce(sum(cost), 0), "
      "coalesce(sum(outcome = 'interrupted'), 0), coalesce(sum(outcome = 'incomplete'), 0) FROM llm_transcripts "
      "WHERE session = ?1");
  q.bind(1, sessionId);
  SessionSpend s;
  if (q.step()) {
    s.requests = q.columnInt(0);
    s.tokens = q.columnInt(1);
    s.cost = q.columnDouble(2);
    s.interrupted = q.columnInt(3);
    s.incomplete = q.columnInt(4);
  }
  return s;
}

void SessionStore::withWorkspace(const std::function<void(Workspace &)> &work) {
  std::lock_guard lock(mutex_);
  work(*workspace_);
}

}  // namespace kwb::agent
