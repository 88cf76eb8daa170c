#include "core/lineage/skill_card.h"

#include <algorithm>
#include <set>
#include <cctype>

#include "core/text/json_fields.h"

namespace kwb {

using nlohmann::json;
using json_fields::field;
using json_fields::omitEmpty;

std::string toString(CardStatus status) {
  switch (status) {
    case CardStatus::Proposed: return "proposed";
    case CardStatus::Admitted: return "admitted";
    case CardStatus::Approved: return "approved";
    case CardStatus::Rejected: return "rejected";
  }
  return "proposed";
}

std::optional<CardStatus> cardStatusFromString(std::string_view text) {
  for (auto s : {CardStatus::Proposed, CardStatus::Admitted, CardStatus::Approved, CardStatus::Rejected})
    if (toString(s) == text) return s;
  return std::nullopt;
}

bool provenStatus(CardStatus status) { return status == CardStatus::Admitted || status == CardStatus::Approved; }

namespace {

const KnownSection *known(std::string_view heading) {
  for (const auto &k : kKnownSections)
    if (heading == k.heading) return &k;
  return nullptr;
}

int knownRank(std::string_view heading) {
  for (std::size_t i = 0; i < kKnownSections.size(); ++i)
    if (heading == kKnownSections[i].heading) return static_cast<int>(i);
  return -1;
}

bool startsWithLabel(const std::string &text, const char *label) {
  const std::size_t n = std::char_traits<char>::length(label);
  if (text.size() <= n || text[n] != ':') return false;
  for (std::size_t i = 0; i < n; ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != std::tolower(static_cast<unsigned char>(label[i])))
      return false;
  return true;
}

}  // namespace

std::string SkillCard::section(std::string_view heading) const {
  for (const auto &s : body)
    if (s.heading == heading) return s.text;
  return {};
}

void SkillCard::setSection(std::string_view heading, const std::string &text) {
  for (auto &s : body)
    if (s.heading == heading) {
      s.text = text;
      return;
    }
  const auto *k = known(heading);
  CardSection added{k ? k->level : 1, std::string(heading), text};
  const int rank = knownRank(heading);
  // Before the first known section that comes later in the published order; else at the end.
  auto at = body.end();
  if (rank >= 0)
    at = std::find_if(body.begin(), body.end(), [&](const CardSection &s) { return knownRank(s.heading) > rank; });
  body.insert(at, std::move(added));
}

std::string SkillCard::beforeCode() const { return firstFencedCode(section("Before")); }
std::string SkillCard::afterCode() const { return firstFencedCode(section("After")); }

double SkillCard::measuredSpeedup() const {
  std::vector<double> gains;
  for (const auto &e : evidence)
    if (e.success && e.speedup > 0 && e.kind != "rejected-step") gains.push_back(e.speedup);
  if (gains.empty()) return 0;
  std::sort(gains.begin(), gains.end());
  const std::size_t n = gains.size();
  return n % 2 ? gains[n / 2] : (gains[n / 2 - 1] + gains[n / 2]) / 2;
}

std::optional<SkillCard::Gain> SkillCard::declaredGain() const {
  std::optional<Gain> best;
  for (const auto &e : evidence)
    // On a tie the later measurement: lineages list configurations from small to large, and a
    // card should name the largest where it helps as much.
    if (e.kind == "lineage-step" && e.success && e.speedup > 0 && (!best || e.speedup >= best->speedup))
      best = Gain{e.task, e.config, e.speedup};
  return best;
}

std::vector<std::string> SkillCard::liftedFrom() const {
  std::set<std::string> tasks;
  for (const auto &e : evidence)
    if (e.kind == "lineage-step" && !e.task.empty()) tasks.insert(e.task);
  return {tasks.begin(), tasks.end()};
}

std::vector<std::string> SkillCard::reproducedOn() const {
  const auto lifted = liftedFrom();
  std::set<std::string> tasks;
  for (const auto &e : evidence)
    if (e.kind == "application" && e.success && !e.task.empty() &&
        std::find(lifted.begin(), lifted.end(), e.task) == lifted.end())
      tasks.insert(e.task);
  return {tasks.begin(), tasks.end()};
}

std::vector<std::string> SkillCard::missingCategories() const {
  std::vector<std::string> missing;
  for (const char *category : kPreconditionCategories) {
    const bool found = std::any_of(preconditions.begin(), preconditions.end(),
                                   [&](const std::string &p) { return startsWithLabel(p, category); });
    if (!found) missing.emplace_back(category);
  }
  return missing;
}

std::string fencedCode(const std::string &code, const std::string &language) {
  std::string fence = "```";
  // A fence longer than any run of backticks in the code.
  std::size_t run = 0, longest = 0;
  for (char c : code) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  if (longest >= 3) fence.assign(longest + 1, '`');
  std::string out = fence + language + "\n" + code;
  if (!code.empty() && code.back() != '\n') out += "\n";
  return out + fence + "\n";
}

std::optional<CodeFence> codeFenceOf(const std::string &line) {
  std::size_t indent = 0;
  while (indent < line.size() && indent < 3 && line[indent] == ' ') ++indent;
  const char mark = indent < line.size() ? line[indent] : '\0';
  if (mark != '`' && mark != '~') return std::nullopt;
  std::size_t n = indent;
  while (n < line.size() && line[n] == mark) ++n;
  if (n - indent < 3) return std::nullopt;
  return CodeFence{mark, n - indent, n};
}

bool closesFence(const std::string &line, const CodeFence &open) {
  const auto f = codeFenceOf(line);
  return f && f->mark == open.mark && f->length >= open.length &&
         line.find_first_not_of(" \t\r", f->end) == std::string::npos;
}

std::string firstFencedCode(const std::string &markdown) {
  std::optional<CodeFence> open;
  std::string code;
  std::size_t pos = 0;
  while (pos < markdown.size()) {
    std::size_t end = markdown.find('\n', pos);
    if (end == std::string::npos) end = markdown.size();
    const std::string line = markdown.substr(pos, end - pos);
    pos = end + 1;
    if (!open) {
      open = codeFenceOf(line);
      continue;
    }
    if (closesFence(line, *open)) return code;
    code += line + "\n";
  }
  return code;  // an unclosed fence runs to the end
}

bool validSkillId(const std::string &id, std::string *problem) {
  auto fail = [&](const std::string &why) {
    if (problem) *problem = why;
    return false;
  };
  if (id.empty()) return fail("it is empty");
  if (id.size() > 128) return fail("it is longer than 128 characters");
  if (!std::isalnum(static_cast<unsigned char>(id[0]))) return fail("it does not start with a letter or digit");
  for (char c : id)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
          c == '_' || c == '.'))
      return fail(std::string("it holds '") + c + "' (use a-z, 0-9, '-', '_' and '.')");
  return true;
}

std::string skillIdFrom(const std::string &text) {
  std::string id;
  for (unsigned char c : text) {
    if (std::isalnum(c)) id += static_cast<char>(std::tolower(c));
    else if (!id.empty() && id.back() != '-') id += '-';
  }
  while (!id.empty() && id.back() == '-') id.pop_back();
  if (id.size() > 96) id.resize(96);
  while (!id.empty() && id.back() == '-') id.pop_back();
  return id.empty() ? "skill" : id;
}

namespace {

constexpr auto kScopeFields = std::tuple{field("cases", &CardScope::cases), field("languages", &CardScope::languages),
                                         field("platforms", &CardScope::platforms)};

constexpr auto kEvidenceFields = std::tuple{
    field("kind", &CardEvidence::kind),         omitEmpty("lineage", &CardEvidence::lineage),
    field("step", &CardEvidence::step),         field("task", &CardEvidence::task),
    field("config", &CardEvidence::config),     field("device", &CardEvidence::device),
    field("arch", &CardEvidence::arch),         field("before_ms", &CardEvidence::beforeMs),
    field("after_ms", &CardEvidence::afterMs),  field("speedup", &CardEvidence::speedup),
    field("success", &CardEvidence::success),   omitEmpty("note", &CardEvidence::note),
    field("at", &CardEvidence::at)};

constexpr auto kSectionFields = std::tuple{field("level", &CardSection::level), field("heading", &CardSection::heading),
                                           field("text", &CardSection::text)};

}  // namespace

void to_json(json &j, const CardScope &s) { json_fields::writeFields(j, s, kScopeFields); }
void from_json(const json &j, CardScope &s) { json_fields::readFields(j, s, kScopeFields); }
void to_json(json &j, const CardEvidence &e) { json_fields::writeFields(j, e, kEvidenceFields); }
void from_json(const json &j, CardEvidence &e) { json_fields::readFields(j, e, kEvidenceFields); }
void to_json(json &j, const CardSection &s) { json_fields::writeFields(j, s, kSectionFields); }
void from_json(const json &j, CardSection &s) { json_fields::readFields(j, s, kSectionFields); }

void to_json(json &j, const SkillCard &c) {
  j = json{{"skill_id", c.id},
           {"intent", c.intent},
           {"anchor", c.anchor},
           {"preconditions", c.preconditions},
           {"scope", c.scope},
           {"requires", c.requiredFeatures},
           {"provides", c.providedFeatures},
           {"conflicts", c.conflictingFeatures},
           {"evidence", c.evidence},
           {"verification", c.verification},
           {"status", toString(c.status)},
           {"body", c.body},
           {"extra", c.extra}};
}

void from_json(const json &j, SkillCard &c) {
  c = SkillCard{};
  c.id = j.value("skill_id", std::string());
  c.intent = j.value("intent", std::string());
  c.anchor = j.value("anchor", std::string());
  c.preconditions = j.value("preconditions", std::vector<std::string>{});
  if (j.contains("scope")) c.scope = j.at("scope").get<CardScope>();
  c.requiredFeatures = j.value("requires", std::vector<std::string>{});
  c.providedFeatures = j.value("provides", std::vector<std::string>{});
  c.conflictingFeatures = j.value("conflicts", std::vector<std::string>{});
  if (j.contains("evidence")) c.evidence = j.at("evidence").get<std::vector<CardEvidence>>();
  c.verification = j.value("verification", std::vector<std::string>{});
  c.status = cardStatusFromString(j.value("status", std::string("proposed"))).value_or(CardStatus::Proposed);
  if (j.contains("body")) c.body = j.at("body").get<std::vector<CardSection>>();
  if (j.contains("extra") && j.at("extra").is_object()) c.extra = j.at("extra");
}

}  // namespace kwb
