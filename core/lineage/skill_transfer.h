#pragma once
// Skill cards in and out of a library as SKILL.md files (kwb skills import / export, and the
// Skills view's Import and Export). An import reads and checks every file before storing any: it
// never half-applies. An export writes FOLDER/<skill_id>/SKILL.md without following links.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "core/lineage/skill_library.h"

namespace kwb {

struct SkillImport {
  std::size_t files = 0;               // SKILL.md files found
  std::vector<std::string> problems;   // file problems (nothing was stored), or cards already known
  std::vector<std::string> added, merged;  // ids, when stored
  std::vector<std::string> known;      // ids already in the library (nothing stored without replace)
  std::vector<std::string> notTaken;   // what a file said of a card's record that the library did not take
  bool stored() const { return !added.empty() || !merged.empty(); }
};

// `from`: a SKILL.md file, or a folder holding SKILL.md and/or */SKILL.md (links leading outside
// it refused). `replace`: cards already known get the files' text, keeping status, evidence and
// log; else any known card refuses the whole import. Throws std::runtime_error for a missing
// `from` or one without SKILL.md, and the library's errors.
SkillImport importSkillFiles(SkillLibrary &library, const std::filesystem::path &from, bool replace,
                             const std::string &who);

// Writes each card as `to`/<id>/SKILL.md and returns the files written. Throws std::runtime_error
// (a card whose id cannot name a folder: nothing is written) and SafeWriteError.
std::vector<std::filesystem::path> exportSkillCards(const std::vector<SkillCard> &cards, const std::filesystem::path &to,
                                                    const std::string &libraryPath);

}  // namespace kwb
