#include "core/lineage/skill_library.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/paths/install_paths.h"
#include "core/store/library_schema.h"
#include "core/store/migrations.h"
#include "core/text/content_hash.h"
#include "core/text/json_fields.h"

namespace kwb {

using nlohmann::json;
using json_fields::field;
using json_fields::omitEmpty;

namespace {

constexpr auto kFigureFields = std::tuple{
    field("config", &StepFigures::config),
    field("median_ms", &StepFigures::medianMs),
    field("relative_spread", &StepFigures::relativeSpread),
    field("speedup_vs_previous", &StepFigures::speedupVsPrevious),
    field("speedup_vs_reference", &StepFigures::speedupVsReference),
    field("gflops", &StepFigures::gflops),
    field("gbytes_per_s", &StepFigures::gbytesPerS)};

constexpr auto kDeltaFields = std::tuple{field("metric", &MetricDelta::metric), field("before", &MetricDelta::before),
                                         field("after", &MetricDelta::after)};

constexpr auto kStepFields = std::tuple{
    field("position", &LineageStepRecord::position),   field("title", &LineageStepRecord::title),
    field("source_name", &LineageStepRecord::sourceName), field("source_hash", &LineageStepRecord::sourceHash),
    field("adds", &LineageStepRecord::adds),           field("relies_on", &LineageStepRecord::reliesOn),
    field("kernel", &LineageStepRecord::kernel),       field("launch", &LineageStepRecord::launch),
    field("accepted", &LineageStepRecord::accepted),   field("outcome", &LineageStepRecord::outcome),
    field("reason", &LineageStepRecord::reason),       field("figures", &LineageStepRecord::figures),
    field("deltas", &LineageStepRecord::deltas),       field("kernels", &LineageStepRecord::kernels),
    omitEmpty("profile_config", &LineageStepRecord::profileConfig),
    omitEmpty("profile", &LineageStepRecord::profile),
    omitEmpty("profile_note", &LineageStepRecord::profileNote),
    omitEmpty("risks", &LineageStepRecord::risks),
    omitEmpty("source", &LineageStepRecord::source)};

std::string lower(std::string s) {
  for (auto &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool wildcardFrom(const std::string &p, std::size_t pi, const std::string &t, std::size_t ti) {
  // Iterative matching with backtracking to the last '*'.
  std::size_t star = std::string::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && p[pi] != '*' && p[pi] == t[ti]) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

constexpr const char *kLineageColumns = "l.id, l.name, l.task, l.task_folder, l.origin, l.device, l.arch, l.built_at";

LineageRecord readLineageRow(const Statement &q) {
  LineageRecord l;
  l.id = q.columnInt(0);
  l.name = q.columnText(1);
  l.task = q.columnText(2);
  l.taskFolder = q.columnText(3);
  l.origin = q.columnText(4);
  l.device = q.columnText(5);
  l.arch = q.columnText(6);
  l.builtAt = q.columnText(7);
  return l;
}

}  // namespace

void to_json(json &j, const StepFigures &v) { json_fields::writeFields(j, v, kFigureFields); }
void from_json(const json &j, StepFigures &v) { json_fields::readFields(j, v, kFigureFields); }
void to_json(json &j, const MetricDelta &v) { json_fields::writeFields(j, v, kDeltaFields); }
void from_json(const json &j, MetricDelta &v) { json_fields::readFields(j, v, kDeltaFields); }
void to_json(json &j, const LineageStepRecord &v) { json_fields::writeFields(j, v, kStepFields); }
void from_json(const json &j, LineageStepRecord &v) { json_fields::readFields(j, v, kStepFields); }

void to_json(json &j, const LineageRecord &v) {
  j = json{{"id", v.id},         {"name", v.name},     {"task", v.task},       {"task_folder", v.taskFolder},
           {"origin", v.origin}, {"device", v.device}, {"arch", v.arch},       {"built_at", v.builtAt},
           {"accepted_steps", v.acceptedSteps()},      {"steps", v.steps}};
}

void to_json(json &j, const CardAuditEntry &v) {
  j = json{{"at", v.at}, {"who", v.who}, {"action", v.action}, {"detail", v.detail}};
}

int LineageRecord::acceptedSteps() const {
  return static_cast<int>(std::count_if(steps.begin(), steps.end(), [](const auto &s) { return s.accepted; }));
}

SkillCard withRecordOf(SkillCard text, const SkillCard &record) {
  text.status = record.status;
  text.evidence = record.evidence;
  text.verification = record.verification;
  return text;
}

std::vector<SkillFileProblem> recordClaims(const SkillFileRead &read, const std::string &file, const SkillCard &kept) {
  std::vector<SkillFileProblem> out;
  if (!read.card) return out;
  const auto &claimed = *read.card;
  const auto count = [](std::size_t n, const char *one, const char *many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  for (const auto &[key, line] : read.recordKeys) {
    if (key == "status" && claimed.status != kept.status)
      out.push_back({file, line,
                     "status '" + toString(claimed.status) + "' is not taken from the file: the card is " +
                         toString(kept.status) +
                         " (a status changes only by review: kwb skills approve or reject, or the Skills view; or by "
                         "the gate: kwb skills apply)"});
    if (key == "evidence" && claimed.evidence != kept.evidence)
      out.push_back({file, line,
                     "evidence (" + count(claimed.evidence.size(), "measurement", "measurements") +
                         ") is not taken from the file: the card keeps its " +
                         count(kept.evidence.size(), "measurement", "measurements") +
                         " (evidence comes only from measurements this library made)"});
    if (key == "verification" && claimed.verification != kept.verification)
      out.push_back({file, line,
                     "verification (" + count(claimed.verification.size(), "entry", "entries") +
                         ") is not taken from the file: the card keeps its log of " +
                         count(kept.verification.size(), "entry", "entries") + " (written by review and the gate)"});
  }
  return out;
}

bool wildcardMatch(const std::string &pattern, const std::string &text) {
  return wildcardFrom(lower(pattern), 0, lower(text), 0);
}

bool anyWildcardMatches(const std::vector<std::string> &patterns, const std::string &text) {
  if (patterns.empty()) return true;
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string &p) { return wildcardMatch(p, text); });
}

std::filesystem::path SkillLibrary::defaultPath() { return libraryDatabasePath(); }

std::shared_ptr<SkillLibrary> SkillLibrary::openIfPresent(std::string *problem) {
  const auto path = defaultPath();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return nullptr;
  try {
    return std::shared_ptr<SkillLibrary>(open(path));
  } catch (const std::exception &e) {
    if (problem) *problem = path.string() + ": " + e.what();
    return nullptr;
  }
}

std::unique_ptr<SkillLibrary> SkillLibrary::open(const std::filesystem::path &path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  return std::unique_ptr<SkillLibrary>(new SkillLibrary(path));
}

SkillLibrary::SkillLibrary(const std::filesystem::path &path)
    : db_(path, libraryOpenMode(path), DatabaseKind::Library) {
  migrateForward(db_, libraryMigrations());
}

std::int64_t SkillLibrary::putLineage(const LineageRecord &lineage) {
  std::int64_t id = 0;
  db_.transaction([&] {
    // The cards' evidence from the lineage being replaced goes with it.
    for (auto card : cards()) {
      const auto before = card.evidence.size();
      std::erase_if(card.evidence, [&](const CardEvidence &e) { return e.kind != "application" && e.lineage == lineage.name; });
      if (card.evidence.size() != before) writeCard(card, true);
    }
    auto remove = db_.prepare("DELETE FROM lineages WHERE name = ?");
    remove.bind(1, lineage.name).run();
    auto insert = db_.prepare(
        "INSERT INTO lineages(name, task, task_folder, origin, device, arch, built_at) VALUES(?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, lineage.name)
        .bind(2, lineage.task)
        .bind(3, lineage.taskFolder)
        .bind(4, lineage.origin)
        .bind(5, lineage.device)
        .bind(6, lineage.arch)
        .bind(7, lineage.builtAt.empty() ? utcTimestamp() : lineage.builtAt)
        .run();
    id = db_.lastInsertId();
    auto putSource = db_.prepare("INSERT OR IGNORE INTO sources(hash, text) VALUES(?, ?)");
    auto putStep = db_.prepare(
        "INSERT INTO lineage_steps(lineage_id, position, source_hash, accepted, step_json) VALUES(?, ?, ?, ?, ?)");
    for (auto step : lineage.steps) {
      step.sourceHash = contentHash(step.source);
      putSource.bind(1, step.sourceHash).bind(2, step.source).run();
      putSource.reset();
      step.source.clear();
      putStep.bind(1, id)
          .bind(2, static_cast<std::int64_t>(step.position))
          .bind(3, step.sourceHash)
          .bind(4, static_cast<std::int64_t>(step.accepted ? 1 : 0))
          .bind(5, json(step).dump())
          .run();
      putStep.reset();
    }
  });
  return id;
}

std::vector<LineageRecord> SkillLibrary::lineages() {
  std::vector<LineageRecord> out;
  auto q = db_.prepare(std::string("SELECT ") + kLineageColumns +
                       ", (SELECT count(*) FROM lineage_steps s WHERE s.lineage_id = l.id), "
                       "(SELECT count(*) FROM lineage_steps s WHERE s.lineage_id = l.id AND s.accepted) "
                       "FROM lineages l ORDER BY l.name");
  while (q.step()) {
    LineageRecord l = readLineageRow(q);
    // Steps without their figures: only whether each was accepted, for counts.
    const auto total = q.columnInt(8), accepted = q.columnInt(9);
    for (std::int64_t i = 0; i < total; ++i) {
      LineageStepRecord s;
      s.position = static_cast<int>(i + 1);
      s.accepted = i < accepted;
      l.steps.push_back(std::move(s));
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::optional<LineageRecord> SkillLibrary::lineage(const std::string &name, bool withSources) {
  auto q = db_.prepare(std::string("SELECT ") + kLineageColumns + " FROM lineages l WHERE l.name = ?");
  q.bind(1, name);
  if (!q.step()) return std::nullopt;
  LineageRecord l = readLineageRow(q);
  auto steps = db_.prepare(
      "SELECT s.step_json, src.text FROM lineage_steps s JOIN sources src ON src.hash = s.source_hash "
      "WHERE s.lineage_id = ? ORDER BY s.position");
  steps.bind(1, l.id);
  while (steps.step()) {
    auto step = json::parse(steps.columnText(0)).get<LineageStepRecord>();
    if (withSources) step.source = steps.columnText(1);
    l.steps.push_back(std::move(step));
  }
  return l;
}

std::optional<std::string> SkillLibrary::source(const std::string &hash) {
  auto q = db_.prepare("SELECT text FROM sources WHERE hash = ?");
  q.bind(1, hash);
  if (!q.step()) return std::nullopt;
  return q.columnText(0);
}

void SkillLibrary::record(const std::string &id, const std::string &who, const std::string &action,
                          const std::string &detail) {
  auto q = db_.prepare("INSERT INTO card_audit(card_id, at, who, action, detail) VALUES(?, ?, ?, ?, ?)");
  q.bind(1, id).bind(2, utcTimestamp()).bind(3, who).bind(4, action).bind(5, detail).run();
}

void SkillLibrary::writeCard(const SkillCard &card, bool exists) {
  const std::string now = utcTimestamp();
  if (exists) {
    auto q = db_.prepare("UPDATE skill_cards SET status = ?, card_json = ?, updated_at = ? WHERE id = ?");
    q.bind(1, toString(card.status)).bind(2, json(card).dump()).bind(3, now).bind(4, card.id).run();
  } else {
    auto q = db_.prepare("INSERT INTO skill_cards(id, status, card_json, created_at, updated_at) VALUES(?, ?, ?, ?, ?)");
    q.bind(1, card.id).bind(2, toString(card.status)).bind(3, json(card).dump()).bind(4, now).bind(5, now).run();
  }
}

void SkillLibrary::proposeCard(const SkillCard &card, const std::string &who, const std::string &detail) {
  if (std::string why; !validSkillId(card.id, &why)) throw StoreError("skill_id '" + card.id + "' is not usable: " + why);
  db_.transaction([&] {
    auto stored = this->card(card.id);
    if (!stored) {
      SkillCard proposed = card;
      proposed.status = CardStatus::Proposed;  // admitted or rejected only by review or the gate
      writeCard(proposed, false);
      record(card.id, who, "proposed", detail);
      return;
    }
    SkillCard merged = *stored;
    for (const auto &e : card.evidence) {
      std::erase_if(merged.evidence, [&](const CardEvidence &m) {
        return m.kind == e.kind && m.kind != "application" && m.lineage == e.lineage && m.step == e.step &&
               m.config == e.config;
      });
      merged.evidence.push_back(e);
    }
    auto fill = [](auto &mine, const auto &theirs) {
      if (mine.empty()) mine = theirs;
    };
    fill(merged.intent, card.intent);
    fill(merged.anchor, card.anchor);
    fill(merged.preconditions, card.preconditions);
    fill(merged.scope.cases, card.scope.cases);
    fill(merged.scope.languages, card.scope.languages);
    fill(merged.scope.platforms, card.scope.platforms);
    fill(merged.requiredFeatures, card.requiredFeatures);
    fill(merged.providedFeatures, card.providedFeatures);
    fill(merged.conflictingFeatures, card.conflictingFeatures);
    for (const auto &c : card.scope.cases)
      if (std::find(merged.scope.cases.begin(), merged.scope.cases.end(), c) == merged.scope.cases.end())
        merged.scope.cases.push_back(c);
    for (const auto &p : card.scope.platforms)
      if (std::find(merged.scope.platforms.begin(), merged.scope.platforms.end(), p) == merged.scope.platforms.end())
        merged.scope.platforms.push_back(p);
    for (const auto &s : card.body)
      if (merged.section(s.heading).empty()) merged.setSection(s.heading, s.text);
    for (const auto &v : card.verification) merged.verification.push_back(v);
    writeCard(merged, true);
    record(card.id, who, "merged", detail);
  });
}

SkillLibrary::ImportResult SkillLibrary::importCards(const std::vector<CardFromFile> &cards, KnownCards known,
                                                     const std::string &who) {
  for (const auto &[card, file] : cards)
    if (std::string why; !validSkillId(card.id, &why)) throw StoreError("skill_id '" + card.id + "' is not usable: " + why);
  ImportResult result;
  db_.transaction([&] {
    for (const auto &[card, file] : cards)
      if (this->card(card.id)) result.known.push_back(card.id);
    if (known == KnownCards::Refuse && !result.known.empty()) return;
    result.known.clear();
    for (const auto &[card, file] : cards) {
      const auto stored = this->card(card.id);
      writeCard(withRecordOf(card, stored ? *stored : SkillCard{}), stored.has_value());
      if (stored) {
        record(card.id, who, "merged", "from " + file + ": its text; status, evidence and verification log kept");
        result.merged.push_back(card.id);
      } else {
        record(card.id, who, "imported", "from " + file);
        result.added.push_back(card.id);
      }
    }
  });
  return result;
}

void SkillLibrary::editCard(const SkillCard &edited, const std::string &who, const std::string &detail) {
  db_.transaction([&] {
    const auto stored = this->card(edited.id);
    if (!stored) throw StoreError("no skill card '" + edited.id + "' in the library (kwb skills list shows them)");
    writeCard(withRecordOf(edited, *stored), true);
    record(edited.id, who, "edited", detail);
  });
}

void SkillLibrary::setStatus(const std::string &id, CardStatus status, const std::string &who, const std::string &why) {
  db_.transaction([&] {
    auto card = this->card(id);
    if (!card) throw StoreError("no skill card '" + id + "' in the library (kwb skills list shows them)");
    const auto from = card->status;
    card->status = status;
    card->verification.push_back(utcTimestamp() + ": " + toString(status) + " by " + who + (why.empty() ? "" : ": " + why));
    writeCard(*card, true);
    const std::string action = status == CardStatus::Admitted   ? "admitted"
                               : status == CardStatus::Approved ? "approved"
                               : status == CardStatus::Rejected ? "rejected"
                                                                : "reopened";
    record(id, who, action, toString(from) + " -> " + toString(status) + (why.empty() ? "" : ": " + why));
  });
}

void SkillLibrary::addEvidence(const std::string &id, const CardEvidence &evidence, const std::string &who) {
  db_.transaction([&] {
    auto card = this->card(id);
    if (!card) throw StoreError("no skill card '" + id + "' in the library");
    card->evidence.push_back(evidence);
    writeCard(*card, true);
    record(id, who, "evidence",
           evidence.kind + (evidence.success ? " (success)" : " (failure)") + (evidence.note.empty() ? "" : ": " + evidence.note));
  });
}

std::optional<SkillCard> SkillLibrary::card(const std::string &id) {
  auto q = db_.prepare("SELECT card_json FROM skill_cards WHERE id = ?");
  q.bind(1, id);
  if (!q.step()) return std::nullopt;
  return json::parse(q.columnText(0)).get<SkillCard>();
}

std::vector<SkillCard> SkillLibrary::cards(const CardFilter &filter) {
  std::vector<SkillCard> out;
  auto q = db_.prepare("SELECT card_json FROM skill_cards ORDER BY id");
  const std::string text = lower(filter.text);
  while (q.step()) {
    auto card = json::parse(q.columnText(0)).get<SkillCard>();
    if (filter.status && card.status != *filter.status) continue;
    if (!filter.scopeCase.empty() && !anyWildcardMatches(card.scope.cases, filter.scopeCase)) continue;
    if (!text.empty() && lower(card.id + "\n" + card.intent + "\n" + card.anchor).find(text) == std::string::npos) continue;
    out.push_back(std::move(card));
  }
  return out;
}

std::vector<CardAuditEntry> SkillLibrary::audit(const std::string &id) {
  std::vector<CardAuditEntry> out;
  auto q = db_.prepare("SELECT id, card_id, at, who, action, detail FROM card_audit WHERE card_id = ? ORDER BY id");
  q.bind(1, id);
  while (q.step())
    out.push_back(CardAuditEntry{q.columnInt(0), q.columnText(1), q.columnText(2), q.columnText(3), q.columnText(4),
                                 q.columnText(5)});
  return out;
}

}  // namespace kwb
