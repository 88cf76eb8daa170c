#pragma once
// kwb skills list|show|import|export|approve|reject: the skill cards of the user's library
// (core/lineage/skill_library.h), and their SKILL.md interchange (core/lineage/skill_markdown.h).
#include <string>

struct SkillsArgs {
  std::string library;  // empty: SkillLibrary::defaultPath()
  std::string id;       // show, approve, reject
  std::string folder;   // import, export
  std::string status;   // list, export: only cards in this status
  std::string scopeCase;
  std::string text;
  std::string by;   // approve, reject: who (default: $USER)
  std::string why;  // approve, reject
};

int skillsListCommand(const SkillsArgs &args, bool asJson);
int skillsShowCommand(const SkillsArgs &args, bool asJson);
int skillsImportCommand(const SkillsArgs &args, bool asJson);
int skillsExportCommand(const SkillsArgs &args, bool asJson);
int skillsReviewCommand(const SkillsArgs &args, bool approve, bool asJson);
