#pragma once
// A candidate's PTX or SASS for the source views: compiled as the evaluator would compile it
// (the task's kernel, tunables, architecture, line information), then disassembled and
// annotated with source lines. Shared by `kwb asm` and the GUI's Source/PTX/SASS view. No Qt.
#include <map>
#include <string>

#include "core/compile/compiler.h"
#include "core/compile/source_views.h"

namespace kwb {

struct ListingResult {
  bool ok = false;
  std::string error;     // why there is no listing (a compile error, a missing tool)
  std::string text;      // the raw PTX or SASS
  Listing listing;       // annotated
};

enum class ListingKind { Ptx, Sass };

// Throws std::invalid_argument for a tunable the task does not have.
ListingResult candidateListing(const Compiler &compiler, const Task &task, const std::string &source,
                               const std::string &sourceName, const std::string &arch, ListingKind kind,
                               const std::map<std::string, std::int64_t> &tunables = {});

}  // namespace kwb
