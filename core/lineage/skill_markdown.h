#pragma once
// SKILL.md, the interchange form of a skill card, compatible with the cards the KLineage authors
// publish: YAML front matter between "---" lines, then a Markdown body.
//
//   ---
//   skill_id: gemm-bf16-cp-async-double-buffer
//   intent: Overlap the next K tile's global loads with this tile's MMAs
//   preconditions:
//   - 'Data types: ...'          (five, labelled Data types, Layout, Storage, Pipeline, Hardware)
//   scope:
//     cases: [gemm]              ('*' is a wildcard)
//     languages: [cuda]
//     platforms: [sm_80, sm_90]
//   anchor: ...                  (this workbench's: anchor, requires, provides, conflicts,
//   requires: [...]               status, evidence, verification; all optional)
//   ---
//   # Overview / ## Example configuration / # Precondition / # Scope / # Code Change Snippet /
//   ## Before / ## After / # Risk, and any other sections, kept verbatim in their order.
//
// Reading collects every problem with the file's line; writing then reading gives the same card.
// The file is UTF-8 (a bad byte is named by its line and column).
#include <optional>
#include <string>
#include <vector>

#include "core/lineage/skill_card.h"

namespace kwb {

struct SkillFileProblem {
  std::string file;
  int line = 0;  // 1-based; 0 for the file as a whole
  std::string message;
  std::string text() const;  // "file:line: message"
};

// A key of the card's record that a file holds: status, evidence or verification, with its line.
// The library keeps its own record: an import or an edit never takes these from a file
// (SkillLibrary::recordClaims says where a file's differ).
struct SkillRecordKey {
  std::string key;
  int line = 0;
};

struct SkillFileRead {
  std::optional<SkillCard> card;  // set when problems is empty
  std::vector<SkillFileProblem> problems;
  std::vector<SkillRecordKey> recordKeys;
};

// The largest SKILL.md read (the published ones are 5-27 kB).
inline constexpr std::size_t kMaxSkillFileBytes = 4u << 20;
// The deepest nesting of lists and mappings in the front matter (the published cards need 3).
// Checked by one pass over the text before the YAML parser sees it: libyaml takes time
// quadratic in the depth (100,000 '[' took 36 s).
inline constexpr int kMaxSkillNesting = 64;

SkillFileRead readSkillMarkdown(const std::string &text, const std::string &displayPath);
// The card as SKILL.md; without its record (status, evidence, verification log) for a text that
// is edited (the Skills view's Edit), since an edit does not change the record.
std::string writeSkillMarkdown(const SkillCard &card, bool withRecord = true);

}  // namespace kwb
