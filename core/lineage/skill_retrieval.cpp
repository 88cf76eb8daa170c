#include "core/lineage/skill_retrieval.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <unordered_set>

#include "core/lineage/kernel_features.h"
#include "core/lineage/skill_library.h"
#include "core/text/printable.h"

namespace kwb {

namespace {

std::string lower(std::string s) {
  for (auto &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string &s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

template <typename Range>
std::string joined(const Range &parts, const std::string &separator = ", ") {
  std::string out;
  for (const auto &p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

// The text on one line: runs of white space as one space.
std::string oneLine(const std::string &text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string ordinal(std::size_t n) {
  const char *suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

// ---- text similarity ------------------------------------------------------------------------

const std::unordered_set<std::string> &stopWords() {
  static const std::unordered_set<std::string> words = {
      "a",     "about", "above", "after", "again", "all",   "also",  "am",    "an",    "and",   "any",   "are",
      "as",    "at",    "be",    "been",  "before", "being", "below", "both",  "but",   "by",    "can",   "could",
      "did",   "do",    "does",  "doing", "down",  "each",  "few",   "for",   "from",  "further", "had", "has",
      "have",  "having", "he",   "her",   "here",  "hers",  "him",   "his",   "how",   "if",    "in",    "into",
      "is",    "it",    "its",   "itself", "just", "me",    "more",  "most",  "my",    "no",    "nor",   "not",
      "now",   "of",    "off",   "on",    "once",  "one",   "only",  "or",    "other", "our",   "ours",  "out",
      "over",  "own",   "same",  "she",   "should", "so",   "some",  "such",  "than",  "that",  "the",   "their",
      "them",  "then",  "there", "these", "they",  "this",  "those", "through", "to",  "too",   "under", "until",
      "up",    "us",    "very",  "was",   "we",    "were",  "what",  "when",  "where", "which", "while", "who",
      "whom",  "why",   "will",  "with",  "would", "you",   "your",  "per",   "via",   "its",   "yet",   "may",
      "might", "must",  "shall", "upon",  "onto",  "within", "without", "every", "many", "much", "lets"};
  return words;
}

std::map<std::string, double> termCounts(const std::string &text) {
  std::map<std::string, double> counts;
  for (const auto &t : similarityTerms(text)) counts[t] += 1;
  return counts;
}

double cosine(const std::map<std::string, double> &a, const std::map<std::string, double> &b) {
  if (a.empty() || b.empty()) return 0;
  double dot = 0, na = 0, nb = 0;
  for (const auto &[t, n] : a) {
    na += n * n;
    if (auto it = b.find(t); it != b.end()) dot += n * it->second;
  }
  for (const auto &[t, n] : b) nb += n * n;
  return dot / (std::sqrt(na) * std::sqrt(nb));
}

std::string cardText(const SkillCard &card) {
  return card.intent + "\n" + card.section("Overview") + "\n" + card.section("Scope") + "\n" + joined(card.scope.cases, " ");
}

// ---- shape similarity -----------------------------------------------------------------------

ShapeSizes lowerNames(const ShapeSizes &s) {
  ShapeSizes out;
  for (const auto &[k, v] : s)
    if (v > 0) out[lower(trim(k))] = v;
  return out;
}

double sampleSimilarity(const ShapeSizes &q, const ShapeSizes &e) {
  std::set<std::string> names;
  for (const auto &[k, v] : q) names.insert(k);
  for (const auto &[k, v] : e) names.insert(k);
  if (names.empty() || q.empty() || e.empty()) return 0;
  double sum = 0;
  for (const auto &[k, v] : q)
    if (auto it = e.find(k); it != e.end())
      sum += 1.0 / (1.0 + std::fabs(std::log2(static_cast<double>(v) / static_cast<double>(it->second))));
  return sum / static_cast<double>(names.size());
}

std::optional<std::int64_t> integerOf(const std::string &text) {
  const std::string t = trim(text);
  if (t.empty() || t.size() > 18) return std::nullopt;
  for (char c : t)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return std::stoll(t);
}

// "M=512,N=512,K=512" (also ';' or spaces between, ':' for '='); nothing unless every part is a size.
std::optional<ShapeSizes> sizesWritten(const std::string &config) {
  ShapeSizes out;
  std::string part;
  auto take = [&]() -> bool {
    const std::string p = trim(part);
    part.clear();
    if (p.empty()) return true;
    const auto eq = p.find_first_of("=:");
    if (eq == std::string::npos) return false;
    const std::string name = trim(p.substr(0, eq));
    const auto value = integerOf(p.substr(eq + 1));
    if (name.empty() || !value) return false;
    out[lower(name)] = *value;
    return true;
  };
  for (char c : config) {
    if (c == ',' || c == ';' || c == ' ') {
      if (!take()) return std::nullopt;
    } else {
      part += c;
    }
  }
  if (!take() || out.empty()) return std::nullopt;
  return out;
}

std::vector<std::string> tableCells(const std::string &line) {
  std::string t = trim(line);
  if (t.empty() || t.front() != '|') return {};
  t = t.substr(1);
  if (!t.empty() && t.back() == '|') t.pop_back();
  std::vector<std::string> cells;
  std::string cell;
  for (char c : t) {
    if (c == '|') {
      cells.push_back(trim(cell));
      cell.clear();
    } else {
      cell += c;
    }
  }
  cells.push_back(trim(cell));
  return cells;
}

bool separatorRow(const std::vector<std::string> &cells) {
  if (cells.empty()) return false;
  for (const auto &c : cells)
    if (c.empty() || c.find_first_not_of("-: ") != std::string::npos) return false;
  return true;
}

// The rows of the tables in `markdown` whose header names sizes of `q`: those columns' integers.
std::vector<ShapeSizes> tableSamples(const std::string &markdown, const ShapeSizes &q) {
  std::vector<ShapeSizes> samples;
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos <= markdown.size()) {
    std::size_t end = markdown.find('\n', pos);
    if (end == std::string::npos) end = markdown.size();
    lines.push_back(markdown.substr(pos, end - pos));
    pos = end + 1;
  }
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    const auto header = tableCells(lines[i]);
    if (header.empty() || !separatorRow(tableCells(lines[i + 1]))) continue;
    std::vector<std::pair<std::size_t, std::string>> columns;  // column, size name
    for (std::size_t c = 0; c < header.size(); ++c)
      if (q.count(lower(header[c]))) columns.emplace_back(c, lower(header[c]));
    std::size_t row = i + 2;
    for (; row < lines.size(); ++row) {
      const auto cells = tableCells(lines[row]);
      if (cells.empty()) break;
      ShapeSizes s;
      for (const auto &[c, name] : columns)
        if (c < cells.size())
          if (auto v = integerOf(cells[c]); v && *v > 0) s[name] = *v;
      if (!s.empty()) samples.push_back(std::move(s));
    }
    i = row - 1;
  }
  return samples;
}

bool countsAsMeasurement(const CardEvidence &e) { return e.success && e.kind != "rejected-step"; }

// ---- scope ----------------------------------------------------------------------------------

const std::map<std::string, std::vector<std::string>> &families() {
  static const std::map<std::string, std::vector<std::string>> f = {
      {"volta", {"sm_70", "sm_72"}},
      {"turing", {"sm_75"}},
      {"ampere", {"sm_80", "sm_86", "sm_87"}},
      {"ada", {"sm_89"}},
      {"hopper", {"sm_90"}},
      {"blackwell", {"sm_100", "sm_101", "sm_103", "sm_110", "sm_120", "sm_121"}},
  };
  return f;
}

// "sm_90a" -> "sm_90"; "SM_90" -> "sm_90".
std::string baseArch(const std::string &arch) {
  std::string a = lower(trim(arch));
  if (a.size() > 3 && a.rfind("sm_", 0) == 0 && (a.back() == 'a' || a.back() == 'f') &&
      std::isdigit(static_cast<unsigned char>(a[a.size() - 2])))
    a.pop_back();
  return a;
}

// sm_NN's number, -1 for anything else; 'a' counts half a step up (sm_90a needs more than sm_90).
int archRank(const std::string &arch) {
  const std::string a = lower(trim(arch));
  if (a.rfind("sm_", 0) != 0) return -1;
  int n = 0;
  std::size_t i = 3;
  for (; i < a.size() && std::isdigit(static_cast<unsigned char>(a[i])); ++i) n = n * 10 + (a[i] - '0');
  if (i == 3) return -1;
  return n * 2 + (i < a.size() && a[i] == 'a' ? 1 : 0);
}

// Whether a feature whose oldest architecture is `minimum` runs on `platform`. "sm_90a" features
// (wgmma) are arch-specific: they run on sm_90 GPUs (sm_90 and sm_90a name the same ones), not on
// newer ones; the others run on their architecture and every newer one.
bool availableOn(const std::string &minimum, const std::string &platform) {
  if (minimum.empty()) return true;
  if (lower(minimum).back() == 'a') return baseArch(minimum) == baseArch(platform);
  return archRank(baseArch(platform)) >= archRank(minimum);
}

std::string scopeProblem(const SkillCard &card, const RetrievalQuery &q) {
  auto list = [](const std::vector<std::string> &v) { return "{" + joined(v) + "}"; };
  if (!q.operatorClass.empty() && !anyWildcardMatches(card.scope.cases, q.operatorClass))
    return "scope: cases " + list(card.scope.cases) + " do not match " + q.operatorClass;
  if (!q.language.empty() && !anyWildcardMatches(card.scope.languages, q.language))
    return "scope: languages " + list(card.scope.languages) + " do not include " + q.language;
  if (!q.platform.empty() && !card.scope.platforms.empty() &&
      std::none_of(card.scope.platforms.begin(), card.scope.platforms.end(),
                   [&](const std::string &p) { return platformMatches(p, q.platform); }))
    return "scope: platforms " + list(card.scope.platforms) + " do not include " + q.platform;
  return {};
}

// ---- the walk -------------------------------------------------------------------------------

enum class Alone { Open, Had, Blocked };

struct Judgement {
  Alone verdict = Alone::Open;
  std::string reason;
};

std::vector<std::string> sortedUnique(const std::vector<std::string> &v) {
  std::set<std::string> s(v.begin(), v.end());
  return {s.begin(), s.end()};
}

Judgement judgeAlone(const SkillCard &card, const std::set<std::string> &features, const std::string &platform) {
  const auto provides = sortedUnique(card.providedFeatures);
  if (!provides.empty() &&
      std::all_of(provides.begin(), provides.end(), [&](const std::string &f) { return features.count(f) > 0; }))
    return {Alone::Had, "already has " + joined(provides)};
  if (archRank(platform) >= 0) {
    std::vector<std::string> unavailable;
    std::string needs;
    for (const auto &f : provides)
      if (const auto *k = kernelFeature(f); k && !availableOn(k->minimumArch, platform)) {
        unavailable.push_back(f);
        if (needs.empty() || archRank(k->minimumArch) > archRank(needs)) needs = k->minimumArch;
      }
    if (!unavailable.empty())
      return {Alone::Blocked, "needs " + needs + (needs.back() == 'a' ? " (those GPUs only)" : " or newer") + " for " +
                                  joined(unavailable) + "; the platform is " + platform};
  }
  std::vector<std::string> conflicts, missing;
  for (const auto &f : sortedUnique(card.conflictingFeatures))
    if (features.count(f)) conflicts.push_back(f);
  if (!conflicts.empty()) return {Alone::Blocked, "conflicts with " + joined(conflicts) + " the kernel has"};
  for (const auto &f : sortedUnique(card.requiredFeatures))
    if (!features.count(f)) missing.push_back(f);
  if (!missing.empty()) return {Alone::Blocked, "requires " + joined(missing) + " the kernel lacks"};
  return {};
}

struct PathEntry {
  int step = 0;
  std::size_t card = 0;  // index into the candidates
};

// ---- ranking --------------------------------------------------------------------------------

struct RankKey {
  long long text, shape, gain;  // in units of the quantum, so ties compare exactly
  int admitted;
  std::string id;
};

RankKey rankKey(const RetrievedCard &r) {
  return RankKey{std::llround(r.textScore / 0.05), std::llround(r.shapeScore / 0.05), std::llround(r.gain / 0.01),
                 r.card.status == CardStatus::Admitted ? 2 : r.card.status == CardStatus::Approved ? 1 : 0, r.card.id};
}

bool rankedBefore(const RetrievedCard &a, const RetrievedCard &b) {
  const RankKey x = rankKey(a), y = rankKey(b);
  if (x.text != y.text) return x.text > y.text;
  if (x.shape != y.shape) return x.shape > y.shape;
  if (x.gain != y.gain) return x.gain > y.gain;
  if (x.admitted != y.admitted) return x.admitted > y.admitted;
  return x.id < y.id;
}

}  // namespace

// ---- public ---------------------------------------------------------------------------------

std::vector<std::string> similarityTerms(const std::string &text) {
  std::vector<std::string> terms;
  std::string t;
  auto flush = [&] {
    if (t.size() >= 2 && !stopWords().count(t)) {
      if (t.size() > 3 && t.back() == 's' && t[t.size() - 2] != 's' && !std::isdigit(static_cast<unsigned char>(t[t.size() - 2])))
        t.pop_back();
      terms.push_back(t);
    }
    t.clear();
  };
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    else flush();
  }
  flush();
  return terms;
}

double textSimilarity(const std::string &problemText, const SkillCard &card) {
  return cosine(termCounts(problemText), termCounts(cardText(card)));
}

double shapeSimilarity(const ShapeSizes &shape, const SkillCard &card, const ConfigShapes &configShapes) {
  const ShapeSizes q = lowerNames(shape);
  if (q.empty()) return 0;
  double best = 0;
  for (const auto &e : card.evidence) {
    if (!countsAsMeasurement(e)) continue;
    if (auto t = configShapes.find(e.task); t != configShapes.end())
      if (auto c = t->second.find(e.config); c != t->second.end()) {
        best = std::max(best, sampleSimilarity(q, lowerNames(c->second)));
        continue;
      }
    if (auto written = sizesWritten(e.config)) best = std::max(best, sampleSimilarity(q, *written));
  }
  for (const auto &s : tableSamples(card.section("Example configuration"), q)) best = std::max(best, sampleSimilarity(q, s));
  return best;
}

bool platformMatches(const std::string &cardPlatform, const std::string &arch) {
  const std::string p = lower(trim(cardPlatform)), a = baseArch(arch);
  if (p.empty()) return false;
  if (auto f = families().find(p); f != families().end())
    return std::find(f->second.begin(), f->second.end(), a) != f->second.end();
  if (p.find('*') != std::string::npos) return wildcardMatch(p, lower(trim(arch))) || wildcardMatch(p, a);
  return baseArch(p) == a;
}

ConfigShapes configShapesOf(const std::vector<Task> &tasks) {
  ConfigShapes out;
  for (const auto &t : tasks)
    for (const auto &c : t.configs) out[t.name][c.name] = ShapeSizes(c.values.begin(), c.values.end());
  return out;
}

Retrieval retrieveCards(const std::vector<SkillCard> &cards, const RetrievalQuery &query) {
  Retrieval out;
  const std::set<std::string> features = detectFeatures(query.kernelSource);
  out.kernelFeatures.assign(features.begin(), features.end());

  // Stages 1 and 2: status and scope.
  std::vector<std::size_t> candidates;       // indices into cards
  std::vector<std::string> reasons(cards.size());  // why each card is left out, "" while it is not
  for (std::size_t i = 0; i < cards.size(); ++i) {
    const auto &c = cards[i];
    if (c.status == CardStatus::Rejected) reasons[i] = "rejected";
    else if (c.status == CardStatus::Proposed && !query.includeProposed)
      reasons[i] = "proposed: not admitted by the gate nor approved by a reviewer (proven cards only)";
    else if (auto why = scopeProblem(c, query); !why.empty()) reasons[i] = why;
    else candidates.push_back(i);
  }

  // Stage 3: alone, then along each lineage path.
  std::vector<Judgement> alone(candidates.size());
  std::map<std::string, std::vector<PathEntry>> paths;  // by lineage name: sorted below
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const auto &card = cards[candidates[k]];
    alone[k] = judgeAlone(card, features, query.platform);
    std::set<std::pair<std::string, int>> seen;
    for (const auto &e : card.evidence)
      if (e.kind == "lineage-step" && e.success && !e.lineage.empty() && seen.insert({e.lineage, e.step}).second)
        paths[e.lineage].push_back({e.step, k});
  }
  std::vector<bool> taken(candidates.size(), false), onPath(candidates.size(), false);
  std::vector<std::string> pathReason(candidates.size());
  std::vector<std::string> how(candidates.size());  // for `why`
  for (auto &[lineage, entries] : paths) {
    std::stable_sort(entries.begin(), entries.end(), [](const PathEntry &a, const PathEntry &b) { return a.step < b.step; });
    int position = 0;  // the last step the kernel already has, 0 for none
    std::string positionCard;
    for (const auto &e : entries)
      if (alone[e.card].verdict == Alone::Had && e.step >= position) {
        position = e.step;
        positionCard = cards[candidates[e.card]].id;
      }
    std::string stop;  // set once the walk stops
    for (const auto &e : entries) {
      const std::size_t k = e.card;
      const auto &card = cards[candidates[k]];
      onPath[k] = true;
      std::string reason;
      const std::string where = "step " + std::to_string(e.step) + " of lineage " + lineage;
      if (!stop.empty()) {
        reason = stop;
      } else if (e.step <= position) {
        if (alone[k].verdict == Alone::Open && card.providedFeatures.empty())
          reason = "passed: the kernel is at step " + std::to_string(position) + " of lineage " + lineage +
                   " or beyond (it has what " + positionCard + " provides)";
        else if (alone[k].verdict == Alone::Open) {
          if (how[k].empty()) how[k] = where + ", before the kernel's position (step " + std::to_string(position) + ")";
        } else
          reason = alone[k].reason;
      } else if (alone[k].verdict == Alone::Open) {
        if (how[k].empty())
          how[k] = where + (position ? ", after step " + std::to_string(position) + " the kernel has reached"
                                     : ", the kernel has no step of it yet");
      } else {
        reason = alone[k].reason;
        if (alone[k].verdict == Alone::Blocked)
          stop = "beyond " + card.id + " (" + where + "), where the walk stops: " + alone[k].reason;
      }
      if (reason.empty()) taken[k] = true;
      else if (pathReason[k].empty()) pathReason[k] = reason;
    }
  }
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    if (!onPath[k]) {
      if (alone[k].verdict == Alone::Open) {
        taken[k] = true;
        how[k] = "on no lineage path; nothing it requires is missing";
      } else {
        pathReason[k] = alone[k].reason;
      }
    }
    if (!taken[k]) reasons[candidates[k]] = pathReason[k];
  }

  // Stage 4: rank.
  std::vector<RetrievedCard> ranked;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    if (!taken[k]) continue;
    RetrievedCard r;
    r.card = cards[candidates[k]];
    r.textScore = textSimilarity(query.problemText, r.card);
    r.shapeScore = shapeSimilarity(query.shape, r.card, query.configShapes);
    r.gain = r.card.measuredSpeedup();
    r.why = how[k] + "; text " + fixed(r.textScore, 2) + ", shape " + fixed(r.shapeScore, 2) + ", gain " +
            (r.gain > 0 ? fixed(r.gain, 2) + "x" : std::string("not measured"));
    ranked.push_back(std::move(r));
  }
  std::sort(ranked.begin(), ranked.end(), rankedBefore);
  std::map<std::string, std::string> overflow;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    if (query.limit <= 0 || i < static_cast<std::size_t>(query.limit)) {
      out.chosen.push_back(std::move(ranked[i]));
    } else {
      overflow[ranked[i].card.id] = "ranked " + ordinal(i + 1) + "; the limit is " + std::to_string(query.limit) + " (" +
                                    ranked[i].why.substr(ranked[i].why.find("text ")) + ")";
    }
  }
  for (std::size_t i = 0; i < cards.size(); ++i) {
    if (!reasons[i].empty()) out.skipped.push_back({cards[i].id, reasons[i]});
    else if (auto o = overflow.find(cards[i].id); o != overflow.end()) out.skipped.push_back({cards[i].id, o->second});
  }
  return out;
}

// ---- the prompt section ---------------------------------------------------------------------

namespace {

std::string cardBlock(const RetrievedCard &r, std::size_t number) {
  return "### " + std::to_string(number) + ". " + r.card.id + " (" + toString(r.card.status) + ")\n\n" +
         cardPromptText(r.card) + "\n";
}

}  // namespace

std::string cardPromptText(const SkillCard &c) {
  std::string s = "Intent: " + oneLine(c.intent) + "\n";
  std::size_t measurements = 0;
  std::set<std::string> tasks;
  for (const auto &e : c.evidence)
    if (countsAsMeasurement(e) && e.speedup > 0) {
      ++measurements;
      if (!e.task.empty()) tasks.insert(e.task);
    }
  const double gain = c.measuredSpeedup();
  s += "Measured gain: " +
       (gain > 0 ? fixed(gain, 2) + "x (median of " + std::to_string(measurements) + " measurement" +
                       (measurements == 1 ? "" : "s") + (tasks.empty() ? "" : " on " + joined(tasks)) + ")"
                 : std::string("not measured yet")) +
       "\n";
  auto features = [](const std::vector<std::string> &v) { return v.empty() ? std::string("-") : joined(sortedUnique(v)); };
  s += "Requires: " + features(c.requiredFeatures) + "; provides: " + features(c.providedFeatures) +
       "; conflicts with: " + features(c.conflictingFeatures) + "\n";
  if (!c.preconditions.empty()) {
    s += "Preconditions (apply the card only where all hold):\n";
    for (const auto &p : c.preconditions) s += "- " + oneLine(p) + "\n";
  }
  if (const std::string risk = oneLine(c.section("Risk")); !risk.empty()) s += "Risk: " + risk + "\n";
  const std::string before = c.beforeCode(), after = c.afterCode();
  if (before.empty() && after.empty()) {
    s += "\n(no code carrier)\n";
  } else {
    s += "\nBefore:\n" + fencedCode(before) + "\nAfter:\n" + fencedCode(after);
  }
  return s;
}

std::string formatCardsForPrompt(const std::vector<RetrievedCard> &cards, std::size_t maxChars,
                                 std::vector<std::string> *included) {
  if (included) included->clear();
  const std::string heading =
      "## Skill cards\n\n"
      "Optimizations measured on expert kernel lineages whose scope covers this problem, best match first. "
      "Use a card only where its preconditions hold for this kernel; Before/After is a code hint that shows "
      "the change, not code to paste.\n\n";
  std::string body;
  std::size_t shown = 0;
  for (const auto &r : cards) {
    const std::string block = cardBlock(r, shown + 1);
    if (heading.size() + body.size() + block.size() > maxChars) continue;
    body += block;
    ++shown;
    if (included) included->push_back(r.card.id);
  }
  return shown ? heading + body : std::string();
}

}  // namespace kwb
