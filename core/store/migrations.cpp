#include "core/store/migrations.h"

#include <string>
#include <utility>

#include "core/store/database.h"
#include "core/text/url_credentials.h"

namespace kwb {

namespace {

// Version 1 is frozen: files written by it exist (tests/fixtures/store/workspace-v1.sql is one).
// Never edit a migration that has shipped; add a new one instead.
constexpr const char *kVersion1 = R"sql(
CREATE TABLE schema_version(
  version INTEGER NOT NULL,
  description TEXT NOT NULL,
  applied_at TEXT NOT NULL
);
CREATE TABLE tasks(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  folder TEXT NOT NULL UNIQUE,
  added_at TEXT NOT NULL
);
CREATE TABLE sources(
  hash TEXT PRIMARY KEY,
  text TEXT NOT NULL
);
CREATE TABLE candidates(
  id INTEGER PRIMARY KEY,
  task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  source_hash TEXT NOT NULL REFERENCES sources(hash),
  label TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL
);
)sql";

constexpr const char *kVersion2 = R"sql(
ALTER TABLE tasks ADD COLUMN manifest_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN last_opened_at TEXT;
UPDATE tasks SET last_opened_at = added_at WHERE last_opened_at IS NULL;
CREATE INDEX candidates_task_id ON candidates(task_id);
CREATE TABLE settings(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
)sql";

// Run history: one row per evaluation of a candidate, its source content-addressed like the
// candidates', the full result kept as the JSON of EvaluationResult::toJson(). task_name is the
// task's name when it ran (tasks.name follows later renames).
constexpr const char *kVersion3 = R"sql(
CREATE TABLE evaluations(
  id INTEGER PRIMARY KEY,
  task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  task_name TEXT NOT NULL,
  source_hash TEXT NOT NULL REFERENCES sources(hash),
  source_name TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL,
  finished_at TEXT NOT NULL,
  outcome TEXT NOT NULL,
  message TEXT NOT NULL DEFAULT '',
  arch TEXT NOT NULL DEFAULT '',
  device TEXT NOT NULL DEFAULT '',
  result_json TEXT NOT NULL
);
CREATE INDEX evaluations_task_id ON evaluations(task_id, started_at);
)sql";

// LLM transcripts: every request to a provider and what came back (keys redacted before they
// reach here), grouped by the session that sent them ('' when none: a connection test).
constexpr const char *kVersion4 = R"sql(
CREATE TABLE llm_transcripts(
  id INTEGER PRIMARY KEY,
  session TEXT NOT NULL DEFAULT '',
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  url TEXT NOT NULL,
  request_headers TEXT NOT NULL,
  request_body TEXT NOT NULL,
  response_text TEXT NOT NULL,
  response_raw TEXT NOT NULL,
  status INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  usage_reported INTEGER NOT NULL,
  cost REAL NOT NULL,
  seconds REAL NOT NULL,
  started_at TEXT NOT NULL
);
CREATE INDEX llm_transcripts_session ON llm_transcripts(session, id);
)sql";

// Agent sessions (issue 16): a session on one task with one provider and model; its groups (G
// candidates for one goal, the DCP decision after their first turn); the attempts (one LLM answer
// in one line of work at one turn: the messages sent, the text received, the parsed code, the
// evaluation, success against the group's goal, the rank reward and the turn's credit). An
// attempt row is written once its answer has arrived (state 'answered') and completed once
// evaluated ('evaluated'), so a killed session resumes without asking again for what it has.
constexpr const char *kVersion5 = R"sql(
CREATE TABLE agent_sessions(
  id TEXT PRIMARY KEY,
  task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  task_name TEXT NOT NULL,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  settings_json TEXT NOT NULL,
  state TEXT NOT NULL,
  stop_reason TEXT NOT NULL DEFAULT '',
  baseline_json TEXT NOT NULL DEFAULT '',
  elapsed_seconds REAL NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX agent_sessions_task ON agent_sessions(task_id, created_at);
CREATE TABLE agent_groups(
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES agent_sessions(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  goal TEXT NOT NULL,
  incumbent_hash TEXT NOT NULL DEFAULT '',
  incumbent_ms REAL,
  state TEXT NOT NULL,
  dcp_json TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  finished_at TEXT NOT NULL DEFAULT '',
  UNIQUE(session_id, ordinal)
);
CREATE TABLE agent_attempts(
  id INTEGER PRIMARY KEY,
  group_id INTEGER NOT NULL REFERENCES agent_groups(id) ON DELETE CASCADE,
  line INTEGER NOT NULL,
  turn INTEGER NOT NULL,
  parent_id INTEGER REFERENCES agent_attempts(id),
  state TEXT NOT NULL,
  messages_json TEXT NOT NULL,
  response_text TEXT NOT NULL,
  finish_reason TEXT NOT NULL DEFAULT '',
  answer_outcome TEXT NOT NULL,
  answer_note TEXT NOT NULL DEFAULT '',
  source_hash TEXT REFERENCES sources(hash),
  evaluation_id INTEGER REFERENCES evaluations(id),
  outcome TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  feedback TEXT NOT NULL DEFAULT '',
  success INTEGER NOT NULL DEFAULT 0,
  objective_ms REAL,
  speedup REAL,
  reward REAL,
  credit REAL,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cost REAL NOT NULL DEFAULT 0,
  llm_seconds REAL NOT NULL DEFAULT 0,
  eval_seconds REAL NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  evaluated_at TEXT NOT NULL DEFAULT '',
  UNIQUE(group_id, line, turn)
);
-- The profiler's bottleneck summary of a kernel the session showed the model (an incumbent, a
-- correct candidate under repair): measured once per session and source, kept for resume.
CREATE TABLE agent_profiles(
  session_id TEXT NOT NULL REFERENCES agent_sessions(id) ON DELETE CASCADE,
  source_hash TEXT NOT NULL REFERENCES sources(hash),
  summary TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(session_id, source_hash)
);
)sql";

// The skill cards (core/lineage) an attempt's prompt carried, as a JSON array of skill ids; a
// repair turn carries its line's first turn's cards.
constexpr const char *kVersion6 = R"sql(
ALTER TABLE agent_attempts ADD COLUMN cards_json TEXT NOT NULL DEFAULT '[]';
)sql";

// The experience memory's part of an attempt's prompt (core/memory/context_assembly.h): what was
// included and left, and why, as JSON ('' when the memory was not used). The memory finds a run's
// attempt by its evaluation, and names a workspace's runs by the workspace's own random id (a
// file deleted and made again, or copied, is another workspace; its run ids start again).
constexpr const char *kVersion7 = R"sql(
ALTER TABLE agent_attempts ADD COLUMN context_json TEXT NOT NULL DEFAULT '';
CREATE INDEX agent_attempts_evaluation ON agent_attempts(evaluation_id);
INSERT OR IGNORE INTO settings(key, value) VALUES('workspace_id', lower(hex(randomblob(16))));
)sql";

// Issue 45, 2: a provider's base URL was stored as given, credentials and all
// ("http://user:KEY@host/v1?key=KEY"), in sessions (provider, settings, stop reason, an answer's
// note) and transcripts (provider, url, error). Every URL in those columns is redacted in place.
void redactStoredUrls(Database &db) {
  static const std::pair<const char *, const char *> kColumns[] = {
      {"agent_sessions", "provider"}, {"agent_sessions", "settings_json"}, {"agent_sessions", "stop_reason"},
      {"agent_attempts", "answer_note"}, {"llm_transcripts", "provider"},   {"llm_transcripts", "url"},
      {"llm_transcripts", "error"}};
  for (const auto &[table, column] : kColumns) {
    std::vector<std::pair<std::int64_t, std::string>> changed;
    Statement rows = db.prepare(std::string("SELECT rowid, ") + column + " FROM " + table + " WHERE " + column +
                                " LIKE '%://%'");
    while (rows.step()) {
      const std::string text = rows.columnText(1);
      if (std::string redacted = redactUrlsIn(text); redacted != text) changed.emplace_back(rows.columnInt(0), std::move(redacted));
    }
    Statement update = db.prepare(std::string("UPDATE ") + table + " SET " + column + " = ?2 WHERE rowid = ?1");
    for (const auto &[rowid, text] : changed) {
      update.bind(1, rowid).bind(2, text);
      update.run();
    }
  }
}

bool hasTable(Database &db, std::string_view name) {
  Statement query = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
  query.bind(1, name);
  return query.step();
}

std::int64_t userTableCount(Database &db) {
  Statement query =
      db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
  query.step();
  return query.columnInt(0);
}

}  // namespace

const std::vector<Migration> &workspaceMigrations() {
  static const std::vector<Migration> migrations = {
      {1, "tasks, content-addressed sources and candidates", kVersion1},
      {2, "task manifest hash and last-opened time, candidate index, settings", kVersion2},
      {3, "evaluation run history", kVersion3},
      {4, "LLM request transcripts", kVersion4},
      {5, "agent sessions, groups and attempts", kVersion5},
      {6, "the skill cards an attempt's prompt carried", kVersion6},
      {7, "the experience an attempt's prompt carried, and why", kVersion7},
      {8, "credentials in stored provider URLs redacted", "", redactStoredUrls},
  };
  return migrations;
}

int readSchemaVersion(Database &db) {
  if (!hasTable(db, "schema_version")) return 0;
  Statement query = db.prepare("SELECT max(version) FROM schema_version");
  if (!query.step() || query.columnIsNull(0)) return 0;
  return static_cast<int>(query.columnInt(0));
}

void migrateForward(Database &db, const std::vector<Migration> &migrations) {
  const std::string file = db.path().string();
  int previous = 0;
  for (const Migration &migration : migrations) {
    if (migration.version <= previous) {
      throw StoreError("internal error: migrations out of order at version " +
                       std::to_string(migration.version));
    }
    previous = migration.version;
  }
  const int newest = migrations.empty() ? 0 : migrations.back().version;

  const auto refuseNewer = [&](int version) {
    if (version > newest) {
      throw StoreError(file + " was written by a newer Kernel Workbench (schema " + std::to_string(version) +
                       ", this build knows up to " + std::to_string(newest) +
                       "); open it with a newer version");
    }
  };

  const int found = readSchemaVersion(db);
  const std::string kind = db.kind() == DatabaseKind::Any ? kindName(DatabaseKind::Workspace) : kindName(db.kind());
  if (db.readOnly()) {
    // Nothing can be migrated here: only the current schema is read.
    if (found == newest) return;
    throw StoreError(file + ": the " + kind + " is at schema version " +
                     std::to_string(found) + ", this build reads " + std::to_string(newest) + ", and it cannot be " +
                     (found < newest ? "upgraded" : "read") +
                     " where it is: it is read-only here (open it once where it may be written)");
  }
  refuseNewer(found);
  if (found == 0 && userTableCount(db) > 0) {
    throw StoreError(file + " is a SQLite database but not a " + kind + " (it has tables but no schema version)");
  }

  bool rewroteRows = false;
  for (const Migration &migration : migrations) {
    if (migration.version <= found) continue;
    db.transaction([&] {
      // Read again under the write lock: another process may have migrated in the meantime.
      const int current = readSchemaVersion(db);
      refuseNewer(current);
      if (migration.version <= current) return;
      db.exec(migration.sql);
      if (migration.step) {
        // On for the step only: the connection then goes on as it was (secure_delete costs every
        // later delete a write of zeros).
        struct SecureDelete {
          Database &db;
          const std::string before = db.pragma("secure_delete");
          explicit SecureDelete(Database &d) : db(d) { db.exec("PRAGMA secure_delete = ON"); }
          ~SecureDelete() {
            try {
              db.exec("PRAGMA secure_delete = " + (before == "2" ? std::string("FAST") : before));  // 2 is read, not taken
            } catch (const StoreError &) {
            }
          }
        } secureDelete(db);
        migration.step(db);
        rewroteRows = rewroteRows || found > 0;
      }
      Statement record =
          db.prepare("INSERT INTO schema_version(version, description, applied_at) VALUES(?1, ?2, ?3)");
      record.bind(1, static_cast<std::int64_t>(migration.version))
          .bind(2, migration.description)
          .bind(3, utcTimestamp());
      record.run();
    });
  }
  if (rewroteRows) {
    // The rows' old bytes: out of the WAL into the file (where secure_delete zeroed them), then the
    // WAL emptied. A reader in another process can hold the checkpoint back: the next one finishes it.
    try {
      db.pragma("wal_checkpoint(TRUNCATE)");
    } catch (const StoreError &) {
    }
  }
}

}  // namespace kwb
