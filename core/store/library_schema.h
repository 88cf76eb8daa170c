#pragma once
// The schema of the user's library database ($XDG_DATA_HOME/kernel-workbench/library.sqlite): the
// skill library (core/lineage, KLineage) and the experience memory (core/memory, KOPE) share the
// file, and one list of forward migrations, because lessons outlive workspaces
// (../shared/DESIGN.md, Data).
#include <filesystem>
#include <vector>

#include "core/store/migrations.h"

namespace kwb {

const std::vector<Migration> &libraryMigrations();

// $KWB_LIBRARY when set, else $XDG_DATA_HOME/kernel-workbench/library.sqlite (~/.local/share/...).
std::filesystem::path libraryDatabasePath();

}  // namespace kwb
