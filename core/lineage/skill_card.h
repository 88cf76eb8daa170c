#pragma once
// A skill card (KLineage, ../shared/RESEARCH.md): one optimization lesson, learned from a
// lineage step read forward, with the conditions under which it holds and the measurements that
// back it. A card is a hypothesis ("proposed") until a gated application admits it; a reviewer
// or the gate may reject it. Cards are stored in the user's library (core/lineage/skill_library.h)
// and travel as SKILL.md files (core/lineage/skill_markdown.h).
//
// The body is kept as the ordered list of its Markdown sections, verbatim: a card imported from
// elsewhere keeps its prose, tables and extra sections through any number of round trips, and
// the known sections (Overview, Precondition, Scope, Code Change Snippet, Before, After, Risk)
// are read and written through accessors.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kwb {

// Proposed: lifted or imported, unproven. Admitted: passed the gate (reproduced on tasks it was
// not lifted from, correct and faster; core/agent/card_application.h). Approved: a reviewer read
// it and vouches for it, without the gate's proof. Rejected: by the gate or a reviewer. Prompts
// carry admitted and approved cards; proposed ones only when a session asks for them.
enum class CardStatus { Proposed, Admitted, Approved, Rejected };
std::string toString(CardStatus status);  // "proposed", "admitted", "approved", "rejected"
// Admitted or approved: a card an agent's prompt carries by default.
bool provenStatus(CardStatus status);
std::optional<CardStatus> cardStatusFromString(std::string_view text);

// The five categories every card's preconditions cover, each with a reason.
inline constexpr std::array<const char *, 5> kPreconditionCategories = {"Data types", "Layout", "Storage", "Pipeline",
                                                                        "Hardware"};

struct CardScope {
  std::vector<std::string> cases;      // operator classes ("gemm", "softmax", "*")
  std::vector<std::string> languages;  // "cuda", "*"
  std::vector<std::string> platforms;  // "sm_90", "hopper", "*"
  friend bool operator==(const CardScope &, const CardScope &) = default;
};

// One measurement behind a card: a lineage step it was lifted from, or a gated application.
struct CardEvidence {
  std::string kind;     // "lineage-step", "application", "rejected-step"
  std::string lineage;  // the lineage's name, for a lineage step
  int step = 0;         // the step (1-based) the card's "after" is
  std::string task, config, device, arch;
  double beforeMs = 0, afterMs = 0;
  double speedup = 0;    // beforeMs / afterMs
  bool success = true;   // an application that failed the gate, or missed the declared effect: false
  std::string note;
  std::string at;        // UTC, ISO 8601
  friend bool operator==(const CardEvidence &, const CardEvidence &) = default;
};

// One Markdown section of the body: its heading (level 1 for "#", 2 for "##"; 0 for text before
// the first heading) and its text up to the next heading, verbatim.
struct CardSection {
  int level = 1;
  std::string heading;
  std::string text;
  friend bool operator==(const CardSection &, const CardSection &) = default;
};

struct SkillCard {
  std::string id;      // skill_id: lower case, digits, '-', '_' and '.'
  std::string intent;  // one line
  std::string anchor;  // where in the code it acts
  std::vector<std::string> preconditions;  // "Data types: reason", one per category
  CardScope scope;
  std::vector<std::string> requiredFeatures, providedFeatures, conflictingFeatures;  // requires, provides, conflicts
  std::vector<CardEvidence> evidence;
  std::vector<std::string> verification;  // the verification log, oldest first
  CardStatus status = CardStatus::Proposed;
  std::vector<CardSection> body;
  nlohmann::json extra = nlohmann::json::object();  // front-matter keys this workbench does not know, kept

  // A known section's text ("Overview", "Before", ...): empty when absent.
  std::string section(std::string_view heading) const;
  // Sets a known section's text, adding it in the published order when absent.
  void setSection(std::string_view heading, const std::string &text);
  // The first fenced code block of the Before or After section (the carrier).
  std::string beforeCode() const;
  std::string afterCode() const;
  // The measured gain: the median speedup of the successful evidence, 0 without any.
  double measuredSpeedup() const;
  // Where the card helps (KLineage: a gain is per configuration): its best successful
  // lineage-step measurement, with the task and configuration it was measured on; none without.
  struct Gain {
    std::string task, config;
    double speedup = 0;
  };
  std::optional<Gain> declaredGain() const;
  // The tasks the card was lifted from (its lineage-step evidence), sorted.
  std::vector<std::string> liftedFrom() const;
  // The tasks it was not lifted from where a gated application succeeded, sorted.
  std::vector<std::string> reproducedOn() const;
  // The categories of kPreconditionCategories no precondition is labelled with.
  std::vector<std::string> missingCategories() const;

  friend bool operator==(const SkillCard &, const SkillCard &) = default;
};

// The body's known sections, in the order the published cards have them: heading and level.
struct KnownSection {
  const char *heading;
  int level;
};
inline constexpr std::array<KnownSection, 8> kKnownSections = {{{"Overview", 1},
                                                                {"Example configuration", 2},
                                                                {"Precondition", 1},
                                                                {"Scope", 1},
                                                                {"Code Change Snippet", 1},
                                                                {"Before", 2},
                                                                {"After", 2},
                                                                {"Risk", 1}}};

// A Markdown code fence at the start of a line (up to three spaces in): its mark ('`' or '~'),
// its length (3 or more) and where its info string starts; nothing for any other line.
struct CodeFence {
  char mark = '`';
  std::size_t length = 0, end = 0;
};
std::optional<CodeFence> codeFenceOf(const std::string &line);
// Whether `line` closes a block that `open` opened.
bool closesFence(const std::string &line, const CodeFence &open);

// The text of a Markdown fenced block: "```cuda\n" + code + "\n```\n".
std::string fencedCode(const std::string &code, const std::string &language = "cuda");
// The first fenced code block's content in `markdown`, empty when there is none.
std::string firstFencedCode(const std::string &markdown);

// Whether `id` is a usable skill_id (non-empty, at most 128 characters of [a-z0-9._-], starting
// with a letter or digit); `problem` says why not.
bool validSkillId(const std::string &id, std::string *problem = nullptr);
// A skill_id made of free text: lower case, runs of other characters as one '-'.
std::string skillIdFrom(const std::string &text);

void to_json(nlohmann::json &j, const CardScope &s);
void from_json(const nlohmann::json &j, CardScope &s);
void to_json(nlohmann::json &j, const CardEvidence &e);
void from_json(const nlohmann::json &j, CardEvidence &e);
void to_json(nlohmann::json &j, const CardSection &s);
void from_json(const nlohmann::json &j, CardSection &s);
void to_json(nlohmann::json &j, const SkillCard &c);
void from_json(const nlohmann::json &j, SkillCard &c);

}  // namespace kwb
