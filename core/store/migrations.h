#pragma once
// Forward-only schema migrations for the workspace database.
#include <functional>
#include <string>
#include <vector>

namespace kwb {

class Database;

struct Migration {
  int version;              // schema version after this step
  std::string description;
  std::string sql;
  // Work SQL cannot do (parsing URLs), run after `sql` in the same transaction. A step rewrites
  // rows so that what they held is gone: it runs with secure_delete on, and once every migration
  // is applied the WAL is checkpointed and truncated, so the old bytes leave the files too.
  std::function<void(Database &)> step = {};
};

const std::vector<Migration> &workspaceMigrations();

// Reads the current version (0 for a new, empty file).
int readSchemaVersion(Database &db);
// Applies every migration above the current version, each in its own transaction. A read-only
// database is only checked: it must be at the newest version.
// Throws StoreError when the file's version is newer than the newest known one.
void migrateForward(Database &db, const std::vector<Migration> &migrations);

}  // namespace kwb
