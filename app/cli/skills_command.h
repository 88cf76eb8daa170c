#pragma once
// kwb skills list|show|import|export|approve|reject|apply: the skill cards of the user's library
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
  bool replace = false;  // import: a card whose id the library holds takes the file's text (else refused)
  // apply: the task, the kernel (default: the task's starter; a lineage step runs as that step)
  // and the provider that applies the card.
  std::string task, kernel, provider, format, model;
  double timeCap = 0.5;
  int maxTokens = 8192;  // apply: the most tokens of the model's answer
  int tasksToAdmit = 2;  // apply: tasks besides its own a card must be reproduced on to be admitted
};

int skillsListCommand(const SkillsArgs &args, bool asJson);
int skillsShowCommand(const SkillsArgs &args, bool asJson);
int skillsImportCommand(const SkillsArgs &args, bool asJson);
int skillsExportCommand(const SkillsArgs &args, bool asJson);
int skillsReviewCommand(const SkillsArgs &args, bool approve, bool asJson);
// kwb skills apply ID TASK [KERNEL.cu] --provider P: a gated application (admission): the model
// applies the card to the kernel, the result is checked and timed against it, and the card's
// evidence and, while it is proposed, its status record the outcome.
int skillsApplyCommand(const SkillsArgs &args, bool asJson);
