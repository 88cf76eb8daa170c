#include "core/store/library_schema.h"

#include <cstdlib>

#include "core/paths/install_paths.h"

namespace kwb {

namespace {

// Never edit a migration that has shipped; add one.
constexpr const char *kLibraryVersion1 = R"sql(
CREATE TABLE schema_version(
  version INTEGER NOT NULL,
  description TEXT NOT NULL,
  applied_at TEXT NOT NULL
);
CREATE TABLE sources(
  hash TEXT PRIMARY KEY,
  text TEXT NOT NULL
);
CREATE TABLE lineages(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  task TEXT NOT NULL,
  task_folder TEXT NOT NULL,
  origin TEXT NOT NULL,
  device TEXT NOT NULL DEFAULT '',
  arch TEXT NOT NULL DEFAULT '',
  built_at TEXT NOT NULL
);
CREATE TABLE lineage_steps(
  id INTEGER PRIMARY KEY,
  lineage_id INTEGER NOT NULL REFERENCES lineages(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  source_hash TEXT NOT NULL REFERENCES sources(hash),
  accepted INTEGER NOT NULL,
  step_json TEXT NOT NULL,
  UNIQUE(lineage_id, position)
);
CREATE TABLE skill_cards(
  id TEXT PRIMARY KEY,
  status TEXT NOT NULL,
  card_json TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE card_audit(
  id INTEGER PRIMARY KEY,
  card_id TEXT NOT NULL REFERENCES skill_cards(id) ON DELETE CASCADE,
  at TEXT NOT NULL,
  who TEXT NOT NULL,
  action TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX card_audit_card ON card_audit(card_id);
)sql";

// Version 2: the experience memory (KOPE). One row per Case: every evaluation the workbench makes,
// with the Case it started from; step ratio, label and downstream score are kept current as Cases
// arrive. memory_text indexes the words of each Case (FTS5, rowid = the Case's id).
constexpr const char *kLibraryVersion2 = R"sql(
CREATE TABLE memory_cases(
  id INTEGER PRIMARY KEY,
  source TEXT NOT NULL,
  source_ref TEXT NOT NULL DEFAULT '',
  task TEXT NOT NULL,
  operator_class TEXT NOT NULL DEFAULT '',
  config TEXT NOT NULL DEFAULT '',
  gpu TEXT NOT NULL DEFAULT '',
  arch TEXT NOT NULL DEFAULT '',
  idea TEXT NOT NULL DEFAULT '',
  idea_kind TEXT NOT NULL DEFAULT '',
  session TEXT NOT NULL DEFAULT '',
  before_hash TEXT REFERENCES sources(hash),
  after_hash TEXT REFERENCES sources(hash),
  feedback TEXT NOT NULL DEFAULT '',
  outcome TEXT NOT NULL,
  correct INTEGER NOT NULL,
  speedup REAL NOT NULL DEFAULT 0,
  relative_spread REAL NOT NULL DEFAULT 0,
  confidence REAL NOT NULL DEFAULT 0,
  parent_id INTEGER REFERENCES memory_cases(id),
  journal TEXT NOT NULL DEFAULT '',
  bottleneck TEXT NOT NULL DEFAULT '',
  intensity REAL NOT NULL DEFAULT 0,
  shape TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  ratio REAL NOT NULL,
  label TEXT NOT NULL,
  score REAL NOT NULL
);
CREATE INDEX memory_cases_parent ON memory_cases(parent_id);
CREATE INDEX memory_cases_task ON memory_cases(task);
CREATE UNIQUE INDEX memory_cases_source ON memory_cases(source, source_ref) WHERE source_ref <> '';
CREATE VIRTUAL TABLE memory_text USING fts5(task, operator_class, idea, journal, feedback);
CREATE TABLE memory_settings(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
)sql";

// Version 3: a reviewer's approval and the gate's admission are two statuses (issue 47). An
// "admitted" card the gate never admitted since its last rejection or reopening (a reviewer's
// word only) becomes "approved"; one the gate admitted stays admitted, whatever a reviewer said
// after; the gate's "approved" audit entries read "admitted".
constexpr const char *kLibraryVersion3 = R"sql(
UPDATE skill_cards SET status = 'approved', card_json = json_set(card_json, '$.status', 'approved')
WHERE status = 'admitted' AND NOT EXISTS (SELECT 1 FROM card_audit g WHERE g.card_id = skill_cards.id
  AND g.who = 'gate' AND g.action = 'approved' AND g.id > COALESCE((SELECT MAX(r.id) FROM card_audit r
  WHERE r.card_id = skill_cards.id AND r.action IN ('rejected', 'reopened')), 0));
UPDATE card_audit SET action = 'admitted' WHERE action = 'approved' AND who = 'gate';
)sql";

}  // namespace

const std::vector<Migration> &libraryMigrations() {
  static const std::vector<Migration> migrations = {
      {1, "lineages, their steps and sources, skill cards and their audit trail", kLibraryVersion1},
      {2, "the experience memory: Cases, their scores and their words (FTS5)", kLibraryVersion2},
      {3, "a reviewer's approval apart from the gate's admission", kLibraryVersion3},
  };
  return migrations;
}

std::filesystem::path libraryDatabasePath() {
  if (const char *p = std::getenv("KWB_LIBRARY"); p && *p) return p;
  return userDataDir() / "library.sqlite";
}

Database::Mode libraryOpenMode(const std::filesystem::path &path) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path, ec);
  return exists && !Database::writable(path) ? Database::Mode::ReadOnly : Database::Mode::OpenOrCreate;
}

}  // namespace kwb
