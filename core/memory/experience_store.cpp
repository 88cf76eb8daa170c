#include "core/memory/experience_store.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <iterator>
#include <ostream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/store/library_schema.h"
#include "core/store/migrations.h"
#include "core/text/content_hash.h"
#include "core/text/printable.h"

namespace kwb::memory {

namespace {

constexpr const char *kColumnNames[] = {
    "id", "source", "source_ref", "task", "operator_class", "config", "gpu", "arch", "idea", "idea_kind",
    "session", "before_hash", "after_hash", "feedback", "outcome", "correct", "speedup", "relative_spread",
    "confidence", "parent_id", "journal", "bottleneck", "intensity", "shape", "created_at", "ratio", "label", "score"};

// The columns read() reads, qualified (memory_text has columns of the same names).
const std::string kColumns = [] {
  std::string out;
  for (const char *name : kColumnNames) out += std::string(out.empty() ? "" : ", ") + "memory_cases." + name;
  return out;
}();
constexpr int kExtraColumn = static_cast<int>(std::size(kColumnNames));

std::string lower(std::string s) {
  for (auto &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<std::string> putSource(Database &db, const std::string &text) {
  if (text.empty()) return std::nullopt;
  const auto hash = contentHash(text);
  db.prepare("INSERT OR IGNORE INTO sources(hash, text) VALUES(?, ?)").bind(1, hash).bind(2, text).run();
  return hash;
}

Statement &bindOptional(Statement &s, int index, const std::optional<std::string> &text) {
  return text ? s.bind(index, *text) : s.bindNull(index);
}

}  // namespace

double featureSimilarity(const MemoryQuery &query, const Case &c) {
  double similarity = 1;
  if (!query.bottleneck.empty() && !c.bottleneck.empty() && lower(query.bottleneck) != lower(c.bottleneck))
    similarity *= 0.5;
  if (query.intensity > 0 && c.intensity > 0) {
    // A factor of 10 apart in FLOP per byte halves it.
    const double decades = std::fabs(std::log10(query.intensity / c.intensity));
    similarity *= 1.0 / (1.0 + decades);
  }
  if (!query.shape.empty() && !c.shape.empty() && query.shape != c.shape) similarity *= 0.8;
  // What was learned on another architecture may not carry over (sm_80's best tile is not sm_90's).
  if (!query.nearArch.empty() && !c.arch.empty() && lower(query.nearArch) != lower(c.arch)) similarity *= 0.7;
  else if (!query.nearGpu.empty() && !c.gpu.empty() && query.nearGpu != c.gpu) similarity *= 0.9;
  return similarity;
}

std::string ftsQuery(const std::string &text, bool any) {
  // With any word: words that say nothing about a kernel (and the journal's own phrasing) would
  // match every Case.
  static const std::set<std::string> kStopWords = {
      "the", "and", "for", "with", "from", "into", "over", "each", "this", "that", "are", "was", "its", "per",
      "not", "one", "two", "all", "any", "has", "have", "run", "runs", "reference", "correct", "editor", "step"};
  std::string out, word;
  auto flush = [&] {
    if (word.empty()) return;
    if (any && (word.size() < 3 || kStopWords.count(lower(word)))) {
      word.clear();
      return;
    }
    if (!out.empty()) out += any ? " OR " : " ";
    out += '"' + word + '"';
    word.clear();
  };
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) || ch == '_' || u >= 0x80) word += ch;
    else flush();
  }
  flush();
  return out;
}

std::unique_ptr<ExperienceStore> ExperienceStore::open(const std::filesystem::path &path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  return std::unique_ptr<ExperienceStore>(new ExperienceStore(path));
}

std::unique_ptr<ExperienceStore> ExperienceStore::open() { return open(libraryDatabasePath()); }

ExperienceStore::ExperienceStore(const std::filesystem::path &path)
    : db_(path, libraryOpenMode(path), DatabaseKind::Library) {
  migrateForward(db_, libraryMigrations());
  // Retrieval and score updates touch pages all over a large memory (100k Cases: ~130 MB): up to
  // 32 MB of them stay in this connection's cache instead of being read again from the file.
  db_.exec("PRAGMA cache_size=-32768");
}

std::optional<std::int64_t> ExperienceStore::find(const std::string &source, const std::string &sourceRef) {
  auto s = db_.prepare("SELECT id FROM memory_cases WHERE source = ? AND source_ref = ? AND source_ref <> ''");
  s.bind(1, source).bind(2, sourceRef);
  if (!s.step()) return std::nullopt;
  return s.columnInt(0);
}

std::optional<std::int64_t> ExperienceStore::findByCode(const std::string &task, const std::string &codeHash) {
  auto s = db_.prepare("SELECT id FROM memory_cases WHERE task = ? AND after_hash = ? ORDER BY correct DESC, id DESC LIMIT 1");
  s.bind(1, task).bind(2, codeHash);
  if (!s.step()) return std::nullopt;
  return s.columnInt(0);
}

std::int64_t ExperienceStore::record(Case c) {
  std::int64_t id = 0;
  db_.transaction([&] {
    const ScoreWeights w = weights();  // inside: another process may change them
    if (!c.sourceRef.empty()) {
      auto existing = db_.prepare("SELECT id FROM memory_cases WHERE source = ? AND source_ref = ?");
      existing.bind(1, c.source).bind(2, c.sourceRef);
      if (existing.step()) {
        id = existing.columnInt(0);
        return;
      }
    }
    // The baseline: the speedup of the nearest correct Case this one descends from.
    std::optional<double> baseline;
    for (auto up = c.parent; up;) {
      auto s = db_.prepare("SELECT correct, speedup, parent_id FROM memory_cases WHERE id = ?");
      s.bind(1, *up);
      if (!s.step())
        throw StoreError("Case " + std::to_string(*up) + " (the Case this one starts from) is not in the memory");
      if (s.columnInt(0) && s.columnDouble(1) > 0) {
        baseline = s.columnDouble(1);
        break;
      }
      up = s.columnIsNull(2) ? std::nullopt : std::optional<std::int64_t>(s.columnInt(2));
    }
    c.ratio = stepRatio(c.correct, c.speedup, baseline);
    c.label = labelOf(c.ratio);
    c.confidence = confidenceOf(c.correct, c.speedup, c.relativeSpread);
    c.score = w.self * c.ratio;
    if (c.createdAt.empty()) c.createdAt = utcTimestamp();
    const auto before = putSource(db_, c.before), after = putSource(db_, c.after);
    auto insert = db_.prepare(
        "INSERT INTO memory_cases(source, source_ref, task, operator_class, config, gpu, arch, idea, idea_kind, "
        "session, before_hash, after_hash, feedback, outcome, correct, speedup, relative_spread, confidence, "
        "parent_id, journal, bottleneck, intensity, shape, created_at, ratio, label, score) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, c.source).bind(2, c.sourceRef).bind(3, c.task).bind(4, c.operatorClass).bind(5, c.config);
    insert.bind(6, c.gpu).bind(7, c.arch).bind(8, c.idea).bind(9, c.ideaKind).bind(10, c.session);
    bindOptional(insert, 11, before);
    bindOptional(insert, 12, after);
    insert.bind(13, c.feedback).bind(14, c.outcome).bind(15, std::int64_t{c.correct}).bind(16, c.speedup);
    insert.bind(17, c.relativeSpread).bind(18, c.confidence);
    if (c.parent) insert.bind(19, *c.parent);
    else insert.bindNull(19);
    insert.bind(20, c.journal).bind(21, c.bottleneck).bind(22, c.intensity).bind(23, c.shape).bind(24, c.createdAt);
    insert.bind(25, c.ratio).bind(26, std::string(toString(c.label))).bind(27, c.score);
    insert.run();
    id = db_.lastInsertId();
    db_.prepare("INSERT INTO memory_text(rowid, task, operator_class, idea, journal, feedback) VALUES(?, ?, ?, ?, ?, ?)")
        .bind(1, id)
        .bind(2, c.task)
        .bind(3, c.operatorClass)
        .bind(4, c.idea)
        .bind(5, c.journal)
        .bind(6, c.feedback)
        .run();
    // The ancestors' scores move by the change below them, discounted once per generation
    // (ScoreForest::add, kept in the table).
    double change = c.score;
    for (auto up = c.parent; up && change != 0;) {
      change *= w.successors * w.gamma;
      db_.prepare("UPDATE memory_cases SET score = score + ? WHERE id = ?").bind(1, change).bind(2, *up).run();
      auto s = db_.prepare("SELECT parent_id FROM memory_cases WHERE id = ?");
      s.bind(1, *up);
      up = s.step() && !s.columnIsNull(0) ? std::optional<std::int64_t>(s.columnInt(0)) : std::nullopt;
    }
  });
  return id;
}

Case ExperienceStore::read(Statement &row, bool withCode) {
  Case c;
  c.id = row.columnInt(0);
  c.source = row.columnText(1);
  c.sourceRef = row.columnText(2);
  c.task = row.columnText(3);
  c.operatorClass = row.columnText(4);
  c.config = row.columnText(5);
  c.gpu = row.columnText(6);
  c.arch = row.columnText(7);
  c.idea = row.columnText(8);
  c.ideaKind = row.columnText(9);
  c.session = row.columnText(10);
  if (withCode) {
    auto text = [&](int column) -> std::string {
      if (row.columnIsNull(column)) return {};
      auto s = db_.prepare("SELECT text FROM sources WHERE hash = ?");
      s.bind(1, row.columnText(column));
      return s.step() ? s.columnText(0) : std::string();
    };
    c.before = text(11);
    c.after = text(12);
  }
  c.feedback = row.columnText(13);
  c.outcome = row.columnText(14);
  c.correct = row.columnInt(15) != 0;
  c.speedup = row.columnDouble(16);
  c.relativeSpread = row.columnDouble(17);
  c.confidence = row.columnDouble(18);
  if (!row.columnIsNull(19)) c.parent = row.columnInt(19);
  c.journal = row.columnText(20);
  c.bottleneck = row.columnText(21);
  c.intensity = row.columnDouble(22);
  c.shape = row.columnText(23);
  c.createdAt = row.columnText(24);
  c.ratio = row.columnDouble(25);
  c.label = labelFromString(row.columnText(26)).value_or(Label::Negative);
  c.score = row.columnDouble(27);
  return c;
}

std::optional<Case> ExperienceStore::get(std::int64_t id, bool withCode) {
  auto s = db_.prepare("SELECT " + kColumns + " FROM memory_cases WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read(s, withCode);
}

std::vector<Case> ExperienceStore::cases(const std::string &task) {
  auto s = db_.prepare("SELECT " + kColumns + " FROM memory_cases WHERE (? = '' OR task = ?) ORDER BY id");
  s.bind(1, task).bind(2, task);
  std::vector<Case> out;
  while (s.step()) out.push_back(read(s, false));
  return out;
}

std::vector<std::int64_t> ExperienceStore::children(std::int64_t id) {
  auto s = db_.prepare("SELECT id FROM memory_cases WHERE parent_id = ? ORDER BY id");
  s.bind(1, id);
  std::vector<std::int64_t> out;
  while (s.step()) out.push_back(s.columnInt(0));
  return out;
}

ScoreWeights ExperienceStore::weights() {
  ScoreWeights w;
  auto s = db_.prepare("SELECT key, value FROM memory_settings");
  while (s.step()) {
    const auto key = s.columnText(0);
    double v = 0;
    try {
      v = std::stod(s.columnText(1));
    } catch (const std::exception &) {
      continue;  // a value written by hand that is not a number: the default stays
    }
    if (key == "w_self") w.self = v;
    else if (key == "w_succ") w.successors = v;
    else if (key == "gamma") w.gamma = v;
  }
  return w;
}

void ExperienceStore::setWeights(const ScoreWeights &w) {
  db_.transaction([&] {
    auto put = db_.prepare("INSERT INTO memory_settings(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    for (const auto &[key, value] : {std::pair{"w_self", w.self}, {"w_succ", w.successors}, {"gamma", w.gamma}}) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", value);
      put.reset();
      put.bind(1, std::string(key)).bind(2, std::string(buf)).run();
    }
    recomputeScores();
  });
}

std::size_t ExperienceStore::recomputeScores() {
  std::size_t changed = 0;
  db_.transaction([&] {
    ScoreForest forest(weights());
    std::map<std::int64_t, double> stored;
    auto s = db_.prepare("SELECT id, parent_id, ratio, score FROM memory_cases ORDER BY id");
    while (s.step()) {
      const std::optional<std::int64_t> parent =
          s.columnIsNull(1) ? std::nullopt : std::optional<std::int64_t>(s.columnInt(1));
      forest.add(s.columnInt(0), parent, s.columnDouble(2));
      stored[s.columnInt(0)] = s.columnDouble(3);
    }
    forest.recompute();
    auto update = db_.prepare("UPDATE memory_cases SET score = ? WHERE id = ?");
    for (const auto &[id, node] : forest.nodes()) {
      if (std::fabs(node.score - stored[id]) <= 1e-12) continue;
      update.reset();
      update.bind(1, node.score).bind(2, id).run();
      ++changed;
    }
  });
  return changed;
}

MemoryStats ExperienceStore::stats() {
  MemoryStats st;
  {
    auto s = db_.prepare("SELECT COUNT(*), COALESCE(SUM(parent_id IS NULL), 0), COALESCE(SUM(correct), 0) FROM memory_cases");
    s.step();
    st.cases = s.columnInt(0);
    st.roots = s.columnInt(1);
    st.correct = s.columnInt(2);
  }
  {
    auto s = db_.prepare("SELECT label, COUNT(*) FROM memory_cases GROUP BY label");
    while (s.step())
      if (const auto l = labelFromString(s.columnText(0))) st.byLabel[labelRank(*l)] = s.columnInt(1);
  }
  auto counts = [&](const char *column) {
    std::vector<std::pair<std::string, std::int64_t>> out;
    auto s = db_.prepare(std::string("SELECT ") + column + ", COUNT(*) AS n FROM memory_cases GROUP BY " + column +
                         " ORDER BY n DESC, " + column);
    while (s.step()) out.emplace_back(s.columnText(0), s.columnInt(1));
    return out;
  };
  st.tasks = counts("task");
  st.gpus = counts("gpu");
  st.sources = counts("source");
  // One pass: with MAX(), SQLite takes the bare columns from the row holding the maximum (the
  // first such row met, in id order within the task). A subquery per row was quadratic (0.37 s at
  // 10k Cases).
  auto best = db_.prepare(
      "SELECT task, id, MAX(speedup) FROM (SELECT task, id, speedup FROM memory_cases WHERE correct = 1 AND speedup > 0 "
      "ORDER BY task, id) GROUP BY task ORDER BY task");
  while (best.step()) st.best.push_back({best.columnText(0), best.columnInt(1), best.columnDouble(2)});
  return st;
}

Digest ExperienceStore::digest(const DigestScope &scope, std::size_t ideas) {
  Digest d;
  std::string where = " WHERE 1";
  std::vector<std::string> binds;
  if (!scope.task.empty()) {
    where += " AND task = ?";
    binds.push_back(scope.task);
  }
  if (!scope.operatorClass.empty()) {
    where += " AND operator_class = ?";
    binds.push_back(scope.operatorClass);
  }
  if (!scope.excludeTask.empty()) {
    where += " AND task <> ?";
    binds.push_back(scope.excludeTask);
  }
  auto prepare = [&](const std::string &sql) {
    auto s = db_.prepare(sql);
    for (std::size_t i = 0; i < binds.size(); ++i) s.bind(static_cast<int>(i + 1), binds[i]);
    return s;
  };
  {
    auto s = prepare("SELECT COUNT(*), COALESCE(SUM(correct), 0), COUNT(DISTINCT task), COUNT(DISTINCT gpu) FROM memory_cases" + where);
    s.step();
    d.cases = s.columnInt(0);
    d.correct = s.columnInt(1);
    d.tasks = s.columnInt(2);
    d.gpus = s.columnInt(3);
  }
  if (d.cases == 0) return d;
  {
    auto s = prepare("SELECT label, COUNT(*) FROM memory_cases" + where + " GROUP BY label");
    while (s.step())
      if (const auto l = labelFromString(s.columnText(0))) d.byLabel[labelRank(*l)] = s.columnInt(1);
  }
  {
    auto s = prepare("SELECT id, task, idea, gpu, speedup FROM memory_cases" + where +
                     " AND correct = 1 AND speedup > 0 ORDER BY speedup DESC, id LIMIT 1");
    if (s.step()) d.best = Digest::Best{s.columnInt(0), s.columnText(1), s.columnText(2), s.columnText(3), s.columnDouble(4)};
  }
  const std::string limit = " LIMIT " + std::to_string(ideas);
  auto ideasOf = [&](const std::string &sql, std::vector<Digest::Idea> &out) {
    auto s = prepare(sql);
    while (s.step()) out.push_back({s.columnText(0), s.columnInt(1), s.columnDouble(2), s.columnText(3)});
  };
  if (ideas > 0) {
    ideasOf("SELECT idea, COUNT(*), MAX(ratio), '' FROM memory_cases" + where +
                " AND label = 'effective' AND idea <> '' GROUP BY idea ORDER BY MAX(ratio) DESC, idea" + limit,
            d.paidOff);
    ideasOf("SELECT idea, COUNT(*), MIN(ratio), '' FROM memory_cases" + where +
                " AND label = 'negative' AND correct = 1 AND idea <> '' GROUP BY idea ORDER BY MIN(ratio), idea" + limit,
            d.slowedDown);
    // With MAX(n), SQLite takes the outcome from the row holding it: the commonest outcome per idea.
    ideasOf("SELECT idea, SUM(n), 0 * MAX(n), outcome FROM (SELECT idea, outcome, COUNT(*) AS n FROM memory_cases" + where +
                " AND correct = 0 AND idea <> '' GROUP BY idea, outcome ORDER BY n DESC) GROUP BY idea "
                "ORDER BY SUM(n) DESC, idea" + limit,
            d.broke);
  }
  auto failures = prepare("SELECT outcome, COUNT(*) AS n FROM memory_cases" + where +
                          " AND correct = 0 GROUP BY outcome ORDER BY n DESC, outcome");
  while (failures.step()) d.failures.emplace_back(failures.columnText(0), failures.columnInt(1));
  return d;
}

std::vector<QueryHit> ExperienceStore::query(const MemoryQuery &q) {
  std::string sql = "SELECT " + kColumns + ", 0 FROM memory_cases WHERE 1";
  const std::string match = ftsQuery(q.text, q.anyWord);
  if (!q.text.empty() && match.empty()) return {};
  if (!match.empty()) {
    // bm25() is lower for better matches; the hit keeps -bm25 (higher is better). With few rows a
    // word found in half of them or more scores 0 (TECH-NOTES): the match is a filter first.
    sql = "SELECT " + kColumns +
          ", -bm25(memory_text) FROM memory_text JOIN memory_cases ON memory_cases.id = memory_text.rowid "
          "WHERE memory_text MATCH ?";
  }
  std::vector<std::string> binds;
  if (!match.empty()) binds.push_back(match);
  auto equal = [&](const char *column, const std::string &value) {
    if (value.empty()) return;
    sql += std::string(" AND memory_cases.") + column + " = ?";
    binds.push_back(value);
  };
  equal("task", q.task);
  equal("operator_class", q.operatorClass);
  equal("arch", q.arch);
  equal("gpu", q.gpu);
  equal("session", q.session);
  equal("source", q.source);
  if (q.label) equal("label", toString(*q.label));
  if (!q.idea.empty()) {
    sql += " AND instr(lower(memory_cases.idea), ?) > 0";
    binds.push_back(lower(q.idea));
  }
  if (q.correct) sql += *q.correct ? " AND memory_cases.correct = 1" : " AND memory_cases.correct = 0";
  auto s = db_.prepare(sql);
  for (std::size_t i = 0; i < binds.size(); ++i) s.bind(static_cast<int>(i + 1), binds[i]);
  std::vector<QueryHit> hits;
  while (s.step()) {
    QueryHit h;
    h.c = read(s, false);
    h.textScore = s.columnDouble(kExtraColumn);
    h.similarity = featureSimilarity(q, h.c);
    h.rank = h.c.score * h.c.confidence * h.similarity;
    hits.push_back(std::move(h));
  }
  // Any word: how well the words match comes first within a label (which words matched matters
  // more than how good the Case was); all words: every hit matched them all.
  const bool byText = q.anyWord && !match.empty();
  std::sort(hits.begin(), hits.end(), [byText](const QueryHit &a, const QueryHit &b) {
    if (a.c.label != b.c.label) return labelRank(a.c.label) < labelRank(b.c.label);
    if (byText && a.textScore != b.textScore) return a.textScore > b.textScore;
    if (a.rank != b.rank) return a.rank > b.rank;
    if (a.textScore != b.textScore) return a.textScore > b.textScore;
    return a.c.id > b.c.id;  // the newer first
  });
  if (q.limit && hits.size() > q.limit) hits.resize(q.limit);
  return hits;
}

void ExperienceStore::exportJsonl(std::ostream &out) {
  auto s = db_.prepare("SELECT " + kColumns + " FROM memory_cases ORDER BY id");
  while (s.step()) {
    const Case c = read(s, true);
    nlohmann::json j = {{"id", c.id},
                        {"source", c.source},
                        {"source_ref", c.sourceRef},
                        {"task", c.task},
                        {"operator_class", c.operatorClass},
                        {"config", c.config},
                        {"gpu", c.gpu},
                        {"arch", c.arch},
                        {"idea", c.idea},
                        {"idea_kind", c.ideaKind},
                        {"session", c.session},
                        {"before", c.before},
                        {"after", c.after},
                        {"feedback", c.feedback},
                        {"outcome", c.outcome},
                        {"correct", c.correct},
                        {"speedup", c.speedup},
                        {"relative_spread", c.relativeSpread},
                        {"confidence", c.confidence},
                        {"parent", c.parent ? nlohmann::json(*c.parent) : nlohmann::json(nullptr)},
                        {"journal", c.journal},
                        {"bottleneck", c.bottleneck},
                        {"intensity", c.intensity},
                        {"shape", c.shape},
                        {"created_at", c.createdAt},
                        {"ratio", c.ratio},
                        {"label", toString(c.label)},
                        {"score", c.score}};
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
}

std::string ExperienceStore::graphDot(const std::string &task) {
  auto quote = [](const std::string &text) {
    std::string out = "\"";
    for (const char ch : text) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch == '\n' ? ' ' : ch;
    }
    return out + "\"";
  };
  const auto all = cases(task);
  std::map<std::string, std::vector<const Case *>> byTask;
  for (const auto &c : all) byTask[c.task].push_back(&c);
  std::string dot = "digraph experience {\n  rankdir=LR;\n  node [shape=circle, style=filled, fontsize=9, label=\"\"];\n";
  int cluster = 0;
  for (const auto &[name, members] : byTask) {
    dot += "  subgraph cluster_" + std::to_string(cluster++) + " {\n    label=" + quote(name) + ";\n";
    for (const auto *c : members) {
      dot += "    c" + std::to_string(c->id) + " [fillcolor=" + quote(labelColour(c->label)) +
             ", width=" + fixed(nodeDiameter(c->speedup) / 72, 2) +
             ", tooltip=" + quote(c->idea.empty() ? c->outcome : c->idea) + ", xlabel=" +
             quote(c->speedup > 0 ? fixed(c->speedup, 2) + "x" : c->outcome) + "];\n";
    }
    dot += "  }\n";
  }
  std::set<std::int64_t> shown;
  for (const auto &c : all) shown.insert(c.id);
  for (const auto &c : all)
    if (c.parent && shown.count(*c.parent)) dot += "  c" + std::to_string(*c.parent) + " -> c" + std::to_string(c.id) + ";\n";
  return dot + "}\n";
}

}  // namespace kwb::memory
