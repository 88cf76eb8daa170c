#pragma once
// The schema of the user's library database ($XDG_DATA_HOME/kernel-workbench/library.sqlite): the
// skill library (core/lineage, KLineage) and the experience memory (core/memory, KOPE) share the
// file, and one list of forward migrations, because lessons outlive workspaces
// (../shared/DESIGN.md, Data).
#include <filesystem>
#include <vector>

#include "core/store/database.h"
#include "core/store/migrations.h"

namespace kwb {

const std::vector<Migration> &libraryMigrations();

// $KWB_LIBRARY when set, else $XDG_DATA_HOME/kernel-workbench/library.sqlite (~/.local/share/...).
std::filesystem::path libraryDatabasePath();

// How the library at `path` opens: created or written, or, when the file exists and this process
// may not write it or its folder, read-only (listed and searched; every change refused).
Database::Mode libraryOpenMode(const std::filesystem::path &path);

}  // namespace kwb
