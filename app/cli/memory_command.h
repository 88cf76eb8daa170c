#pragma once
// kwb memory stats|query|export|graph|import: KOPE's experience memory in the user's library
// database (core/memory/experience_store.h).
#include <string>

struct MemoryArgs {
  std::string library;    // empty: libraryDatabasePath()
  std::string text;       // query
  std::string task;       // query, graph: only this task
  std::string label;      // query: effective, partial, ineffective, negative
  std::string idea;       // query: a substring of the idea
  std::string format = "jsonl";  // export
  std::string workspace;  // import: the workspace file (default: the workbench's)
  std::size_t limit = 20;  // query
  bool dot = false;        // graph
};

int memoryStatsCommand(const MemoryArgs &args, bool asJson);
int memoryQueryCommand(const MemoryArgs &args, bool asJson);
int memoryExportCommand(const MemoryArgs &args);
int memoryGraphCommand(const MemoryArgs &args);
// Records every run of a workspace not yet in the memory (its history, once; then what is new).
int memoryImportCommand(const MemoryArgs &args, bool asJson);
