#pragma once
// Forward-only schema migrations for the workspace database.
#include <string>
#include <vector>

namespace kwb {

class Database;

struct Migration {
  int version;              // schema version after this step
  std::string description;
  std::string sql;
};

const std::vector<Migration> &workspaceMigrations();

// Reads the current version (0 for a new, empty file).
int readSchemaVersion(Database &db);
// Applies every migration above the current version, each in its own transaction. A read-only
// database is only checked: it must be at the newest version.
// Throws StoreError when the file's version is newer than the newest known one.
void migrateForward(Database &db, const std::vector<Migration> &migrations);

}  // namespace kwb
