#pragma once
// The user's skill library: stored lineages (every step gated and measured) and the skill cards
// lifted from them, with each card's audit trail. It lives in the user's library database
// ($XDG_DATA_HOME/kernel-workbench/library.sqlite), shared by every workspace, because lessons
// outlive projects (../shared/DESIGN.md, Data). Every change is one transaction.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/lineage/skill_card.h"
#include "core/lineage/skill_markdown.h"
#include "core/profile/profile_request.h"
#include "core/store/database.h"

namespace kwb {

// One configuration's figures for a lineage step.
struct StepFigures {
  std::string config;
  double medianMs = 0;
  double relativeSpread = 0;
  double speedupVsPrevious = 0;   // the previous gated step's median over this one's; 0 for the first
  double speedupVsReference = 0;  // the task's reference median over this one's
  double gflops = 0, gbytesPerS = 0;
  friend bool operator==(const StepFigures &, const StepFigures &) = default;
};

// A figure of the compiled kernel or the measurement, before and after a step.
struct MetricDelta {
  std::string metric;  // "registers", "static_shared_bytes", "spill_store_bytes", "occupancy", "gflops:large"...
  double before = 0, after = 0;
  friend bool operator==(const MetricDelta &, const MetricDelta &) = default;
};

struct LineageStepRecord {
  int position = 0;  // 1-based
  std::string title;
  std::string sourceName;  // the file it came from
  std::string sourceHash;  // the text is SkillLibrary::source(sourceHash)
  std::string source;      // the text, when read with it (lineage(id, true)) or before storing
  std::string adds, reliesOn;
  std::vector<std::string> risks;   // lineage.toml's risks (LineageStep::risks)
  std::string kernel;               // the launched kernel
  nlohmann::json launch;            // the step's [launch] and tunables, to run it again
  bool accepted = false;            // passed the gate: compiled, correct everywhere, timed
  std::string outcome;              // the evaluation's outcome ("correct", "incorrect", ...)
  std::string reason;               // why it was not accepted
  std::vector<StepFigures> figures;
  std::vector<MetricDelta> deltas;  // against the previous accepted step
  // The profiler's metrics at one configuration (lineage_build.h), or why there are none.
  std::string profileConfig;
  std::vector<profile::MetricValue> profile;
  std::string profileNote;
  nlohmann::json kernels = nlohmann::json::array();  // the compiled kernels' resources
  friend bool operator==(const LineageStepRecord &, const LineageStepRecord &) = default;
};

struct LineageRecord {
  std::int64_t id = 0;
  std::string name;        // unique in the library: the task's name for a bundled lineage
  std::string task;        // the task's name
  std::string taskFolder;  // where the task was when built
  std::string origin;      // "bundled", "versions", "deoptimization"
  std::string device, arch;
  std::string builtAt;     // UTC, ISO 8601
  std::vector<LineageStepRecord> steps;
  int acceptedSteps() const;
};

// One entry of a card's audit trail.
struct CardAuditEntry {
  std::int64_t id = 0;
  std::string cardId;
  std::string at;      // UTC, ISO 8601
  std::string who;     // "kwb lineage build", "reviewer:alice", "gate"
  std::string action;  // "proposed", "merged", "admitted" (the gate), "approved" (a reviewer), "rejected",
                       // "reopened", "edited", "imported", "evidence"
  std::string detail;
};

struct CardFilter {
  std::optional<CardStatus> status;
  std::string scopeCase;  // cards whose scope.cases match this (wildcards on the card's side)
  std::string text;       // in the id, intent or anchor (case-insensitive)
};

// `text` with the record (status, evidence, verification log) of `record`.
SkillCard withRecordOf(SkillCard text, const SkillCard &record);
// Where a file read as `read` claims a record that is not `kept`'s (a status, evidence or a
// verification log that differs): one problem for each, at the key's line in `file`, saying what
// the card keeps and how its record changes. An import reports them; an edit is refused with them.
std::vector<SkillFileProblem> recordClaims(const SkillFileRead &read, const std::string &file, const SkillCard &kept);

// Whether `pattern` (with '*' for any run of characters) matches `text`, ignoring case.
bool wildcardMatch(const std::string &pattern, const std::string &text);
// Whether any of `patterns` matches `text` (an empty list matches everything).
bool anyWildcardMatches(const std::vector<std::string> &patterns, const std::string &text);

class SkillLibrary {
 public:
  static constexpr int kSchemaVersion = 3;  // the library file's (core/store/library_schema.h)

  // The user's library: $XDG_DATA_HOME/kernel-workbench/library.sqlite (or ~/.local/share/...),
  // or $KWB_LIBRARY when set. Created, or migrated forward, on open. Throws StoreError.
  static std::filesystem::path defaultPath();
  static std::unique_ptr<SkillLibrary> open(const std::filesystem::path &path = defaultPath());
  // The user's library when its file exists (an agent session uses the cards there, and does not
  // make an empty library); null otherwise, or when it cannot be opened (`problem` says why).
  static std::shared_ptr<SkillLibrary> openIfPresent(std::string *problem = nullptr);

  const std::filesystem::path &path() const { return db_.path(); }
  Database &database() { return db_; }

  // Stores the lineage, replacing one of the same name (its steps and the evidence its steps gave
  // to cards) in the same transaction. Returns its id.
  std::int64_t putLineage(const LineageRecord &lineage);
  std::vector<LineageRecord> lineages();  // without steps, by name
  std::optional<LineageRecord> lineage(const std::string &name, bool withSources = false);
  std::optional<std::string> source(const std::string &hash);

  // A card's record — its status, evidence and verification log — changes only here: through
  // review or the gate (setStatus), a measurement (addEvidence) or a lineage's cards (proposeCard,
  // putLineage). An import or an edit changes a card's text and keeps its record.

  // Adds a card lifted from a lineage (as proposed, whatever its status says), or merges it into
  // the card of the same id: its evidence is appended (evidence of the same lineage step is
  // replaced), empty fields of the stored card are filled, the rest kept (a reviewer's edits
  // win). Records "proposed" or "merged" in the audit trail.
  void proposeCard(const SkillCard &card, const std::string &who, const std::string &detail);

  // Imports cards read from files, all in one transaction. A new card enters as proposed, with no
  // evidence and no verification log, whatever its file says ("imported", "from FILE"). A card
  // whose id the library holds is, with KnownCards::Merge, given the file's text (intent, anchor,
  // preconditions, scope, features, body, extra keys) and keeps its status, evidence and log
  // ("merged", "from FILE: ..."); with KnownCards::Refuse nothing at all is stored and the
  // result's `known` names those ids. Throws StoreError for an unusable id (nothing stored).
  enum class KnownCards { Refuse, Merge };
  struct CardFromFile {
    SkillCard card;
    std::string file;  // where it was read, for the audit trail
  };
  struct ImportResult {
    std::vector<std::string> added, merged, known;  // ids
  };
  ImportResult importCards(const std::vector<CardFromFile> &cards, KnownCards known, const std::string &who);
  // Gives the card of `edited.id` the edited text, as an import's merge does: its status,
  // evidence and verification log stay as stored. Records "edited". Throws StoreError when the
  // card is unknown.
  void editCard(const SkillCard &edited, const std::string &who, const std::string &detail);

  // Sets the status, recording who and why. Throws StoreError when the card is unknown.
  void setStatus(const std::string &id, CardStatus status, const std::string &who, const std::string &why);
  // Adds one piece of evidence (a gated application, success or failure).
  void addEvidence(const std::string &id, const CardEvidence &evidence, const std::string &who);

  std::optional<SkillCard> card(const std::string &id);
  std::vector<SkillCard> cards(const CardFilter &filter = {});  // by id
  std::vector<CardAuditEntry> audit(const std::string &id);     // oldest first

 private:
  explicit SkillLibrary(const std::filesystem::path &path);
  void writeCard(const SkillCard &card, bool exists);
  void record(const std::string &id, const std::string &who, const std::string &action, const std::string &detail);
  Database db_;
};

void to_json(nlohmann::json &j, const StepFigures &v);
void from_json(const nlohmann::json &j, StepFigures &v);
void to_json(nlohmann::json &j, const MetricDelta &v);
void from_json(const nlohmann::json &j, MetricDelta &v);
void to_json(nlohmann::json &j, const LineageStepRecord &v);
void from_json(const nlohmann::json &j, LineageStepRecord &v);
void to_json(nlohmann::json &j, const LineageRecord &v);
void to_json(nlohmann::json &j, const CardAuditEntry &v);

}  // namespace kwb
