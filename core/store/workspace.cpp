#include "core/store/workspace.h"

#include "core/store/migrations.h"
#include "core/text/content_hash.h"
#include "core/text/url_credentials.h"

namespace kwb {

namespace {

constexpr const char *kTaskColumns =
    "id, name, folder, manifest_hash, added_at, coalesce(last_opened_at, added_at)";

TaskRecord readTask(const Statement &row) {
  TaskRecord task;
  task.id = row.columnInt(0);
  task.name = row.columnText(1);
  task.folder = row.columnText(2);
  task.manifestHash = row.columnText(3);
  task.addedAt = row.columnText(4);
  task.lastOpenedAt = row.columnText(5);
  return task;
}

CandidateRecord readCandidate(const Statement &row) {
  CandidateRecord candidate;
  candidate.id = row.columnInt(0);
  candidate.taskId = row.columnInt(1);
  candidate.sourceHash = row.columnText(2);
  candidate.label = row.columnText(3);
  candidate.createdAt = row.columnText(4);
  return candidate;
}

// The columns readEvaluation() reads, in its order; resultJson is last and only sometimes read.
constexpr const char *kEvaluationColumns =
    "id, task_id, task_name, source_hash, source_name, started_at, finished_at, outcome, message, arch, "
    "device";

EvaluationRecord readEvaluation(const Statement &row, bool withResult) {
  EvaluationRecord run;
  run.id = row.columnInt(0);
  run.taskId = row.columnInt(1);
  run.taskName = row.columnText(2);
  run.sourceHash = row.columnText(3);
  run.sourceName = row.columnText(4);
  run.startedAt = row.columnText(5);
  run.finishedAt = row.columnText(6);
  run.outcome = row.columnText(7);
  run.message = row.columnText(8);
  run.arch = row.columnText(9);
  run.device = row.columnText(10);
  if (withResult) run.resultJson = row.columnText(11);
  return run;
}

}  // namespace

std::unique_ptr<Workspace> Workspace::open(const std::filesystem::path &path) {
  return std::unique_ptr<Workspace>(new Workspace(path, Database::Mode::OpenOrCreate));
}

std::unique_ptr<Workspace> Workspace::openExisting(const std::filesystem::path &path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw StoreError("no workspace at " + path.string() + " (is the path right? the workbench's own is " +
                     "~/.local/share/kernel-workbench/workspace.kwb)");
  return std::unique_ptr<Workspace>(
      new Workspace(path, Database::writable(path) ? Database::Mode::OpenExisting : Database::Mode::ReadOnly));
}

Workspace::Workspace(const std::filesystem::path &path, Database::Mode mode)
    : db_(path, mode, DatabaseKind::Workspace) {
  migrateForward(db_, workspaceMigrations());
}

int Workspace::schemaVersion() {
  return readSchemaVersion(db_);
}

TaskRecord Workspace::recordTaskOpened(const std::string &name, const std::string &folder,
                                       const std::string &manifestHash) {
  TaskRecord result;
  db_.transaction([&] {
    const std::string now = utcTimestamp();
    Statement upsert = db_.prepare(
        "INSERT INTO tasks(name, folder, manifest_hash, added_at, last_opened_at) "
        "VALUES(?1, ?2, ?3, ?4, ?4) "
        "ON CONFLICT(folder) DO UPDATE SET name = excluded.name, "
        "manifest_hash = excluded.manifest_hash, last_opened_at = excluded.last_opened_at");
    upsert.bind(1, name).bind(2, folder).bind(3, manifestHash).bind(4, now);
    upsert.run();
    Statement query = db_.prepare(std::string("SELECT ") + kTaskColumns + " FROM tasks WHERE folder = ?1");
    query.bind(1, folder);
    if (!query.step()) {
      throw StoreError(path().string() + ": task " + folder + " vanished while it was recorded");
    }
    result = readTask(query);
  });
  return result;
}

std::vector<TaskRecord> Workspace::tasks() {
  std::vector<TaskRecord> result;
  Statement query = db_.prepare(std::string("SELECT ") + kTaskColumns + " FROM tasks ORDER BY id");
  while (query.step()) result.push_back(readTask(query));
  return result;
}

std::optional<TaskRecord> Workspace::taskByFolder(const std::string &folder) {
  Statement query = db_.prepare(std::string("SELECT ") + kTaskColumns + " FROM tasks WHERE folder = ?1");
  query.bind(1, folder);
  if (!query.step()) return std::nullopt;
  return readTask(query);
}

std::string Workspace::putSource(const std::string &text) {
  const std::string hash = contentHash(text);
  db_.transaction([&] {
    Statement insert = db_.prepare("INSERT OR IGNORE INTO sources(hash, text) VALUES(?1, ?2)");
    insert.bind(1, hash).bind(2, text);
    insert.run();
  });
  return hash;
}

std::optional<std::string> Workspace::source(const std::string &hash) {
  Statement query = db_.prepare("SELECT text FROM sources WHERE hash = ?1");
  query.bind(1, hash);
  if (!query.step()) return std::nullopt;
  return query.columnText(0);
}

CandidateRecord Workspace::addCandidate(std::int64_t taskId, const std::string &sourceText,
                                        const std::string &label) {
  CandidateRecord result;
  // One transaction for both rows: a candidate never points at a source that is not stored,
  // and a failed insert (an unknown task) leaves no orphaned source behind.
  db_.transaction([&] {
    result.taskId = taskId;
    result.sourceHash = putSource(sourceText);
    result.label = label;
    result.createdAt = utcTimestamp();
    Statement insert =
        db_.prepare("INSERT INTO candidates(task_id, source_hash, label, created_at) VALUES(?1, ?2, ?3, ?4)");
    insert.bind(1, taskId).bind(2, result.sourceHash).bind(3, label).bind(4, result.createdAt);
    insert.run();
    result.id = db_.lastInsertId();
  });
  return result;
}

std::vector<CandidateRecord> Workspace::candidates(std::int64_t taskId) {
  std::vector<CandidateRecord> result;
  Statement query = db_.prepare(
      "SELECT id, task_id, source_hash, label, created_at FROM candidates "
      "WHERE task_id = ?1 ORDER BY id");
  query.bind(1, taskId);
  while (query.step()) result.push_back(readCandidate(query));
  return result;
}

EvaluationRecord Workspace::addEvaluation(const EvaluationRecord &run, const std::string &sourceText) {
  EvaluationRecord result = run;
  db_.transaction([&] {
    result.sourceHash = putSource(sourceText);
    const std::string now = utcTimestamp();
    if (result.startedAt.empty()) result.startedAt = now;
    if (result.finishedAt.empty()) result.finishedAt = now;
    Statement insert = db_.prepare(
        "INSERT INTO evaluations(task_id, task_name, source_hash, source_name, started_at, finished_at, "
        "outcome, message, arch, device, result_json) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    insert.bind(1, result.taskId)
        .bind(2, result.taskName)
        .bind(3, result.sourceHash)
        .bind(4, result.sourceName)
        .bind(5, result.startedAt)
        .bind(6, result.finishedAt)
        .bind(7, result.outcome)
        .bind(8, result.message)
        .bind(9, result.arch)
        .bind(10, result.device)
        .bind(11, result.resultJson);
    insert.run();
    result.id = db_.lastInsertId();
  });
  return result;
}

std::vector<EvaluationRecord> Workspace::evaluations(std::int64_t taskId, std::size_t limit) {
  std::vector<EvaluationRecord> result;
  // LIMIT -1 is SQLite's "no limit".
  Statement query = db_.prepare(std::string("SELECT ") + kEvaluationColumns +
                                " FROM evaluations WHERE task_id = ?1 ORDER BY started_at DESC, id DESC LIMIT ?2");
  query.bind(1, taskId).bind(2, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
  while (query.step()) result.push_back(readEvaluation(query, false));
  return result;
}

std::optional<EvaluationRecord> Workspace::evaluation(std::int64_t id) {
  Statement query =
      db_.prepare(std::string("SELECT ") + kEvaluationColumns + ", result_json FROM evaluations WHERE id = ?1");
  query.bind(1, id);
  if (!query.step()) return std::nullopt;
  return readEvaluation(query, true);
}

LlmTranscriptRecord Workspace::addLlmTranscript(const LlmTranscriptRecord &record) {
  std::lock_guard lock(transcriptMutex_);
  LlmTranscriptRecord r = record;
  if (r.startedAt.empty()) r.startedAt = utcTimestamp();
  // A base URL's credentials are never stored (issue 45, 2), whoever sends the record.
  r.provider = redactUrlsIn(r.provider);
  r.url = redactedUrl(r.url);
  r.error = redactUrlsIn(r.error);
  db_.transaction([&] {
    Statement insert = db_.prepare(
        "INSERT INTO llm_transcripts(session, provider, model, url, request_headers, request_body, response_text, "
        "response_raw, status, attempts, outcome, error, input_tokens, output_tokens, usage_reported, cost, seconds, "
        "started_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)");
    insert.bind(1, r.session)
        .bind(2, r.provider)
        .bind(3, r.model)
        .bind(4, r.url)
        .bind(5, r.requestHeaders)
        .bind(6, r.requestBody)
        .bind(7, r.responseText)
        .bind(8, r.responseRaw)
        .bind(9, static_cast<std::int64_t>(r.status))
        .bind(10, static_cast<std::int64_t>(r.attempts))
        .bind(11, r.outcome)
        .bind(12, r.error)
        .bind(13, r.inputTokens)
        .bind(14, r.outputTokens)
        .bind(15, static_cast<std::int64_t>(r.usageReported ? 1 : 0))
        .bind(16, r.cost)
        .bind(17, r.seconds)
        .bind(18, r.startedAt);
    insert.run();
    r.id = db_.lastInsertId();
  });
  return r;
}

std::vector<LlmTranscriptRecord> Workspace::llmTranscripts(const std::string &session, std::size_t limit) {
  std::lock_guard lock(transcriptMutex_);
  std::vector<LlmTranscriptRecord> out;
  Statement query = db_.prepare(
      "SELECT id, session, provider, model, url, request_headers, request_body, response_text, response_raw, status, "
      "attempts, outcome, error, input_tokens, output_tokens, usage_reported, cost, seconds, started_at "
      "FROM llm_transcripts WHERE session = ?1 ORDER BY id LIMIT ?2");
  query.bind(1, session).bind(2, limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit));
  while (query.step()) {
    LlmTranscriptRecord r;
    r.id = query.columnInt(0);
    r.session = query.columnText(1);
    r.provider = query.columnText(2);
    r.model = query.columnText(3);
    r.url = query.columnText(4);
    r.requestHeaders = query.columnText(5);
    r.requestBody = query.columnText(6);
    r.responseText = query.columnText(7);
    r.responseRaw = query.columnText(8);
    r.status = static_cast<int>(query.columnInt(9));
    r.attempts = static_cast<int>(query.columnInt(10));
    r.outcome = query.columnText(11);
    r.error = query.columnText(12);
    r.inputTokens = query.columnInt(13);
    r.outputTokens = query.columnInt(14);
    r.usageReported = query.columnInt(15) != 0;
    r.cost = query.columnDouble(16);
    r.seconds = query.columnDouble(17);
    r.startedAt = query.columnText(18);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kwb
