// KOPE's experience memory (core/memory): the label and ratio tables, downstream scores by hand,
// incremental scores equal to a full recomputation on random forests (in memory and in a real
// SQLite file), retrieval order (label, then d x confidence x similarity) with filters and FTS5 on
// a small corpus, stats, the JSON lines export and the Graphviz text, and a version-1 library
// migrated with its cards kept.
#include <QtTest>

#include <cmath>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/lineage/skill_library.h"
#include "core/memory/case_sources.h"
#include "core/memory/context_assembly.h"
#include "core/store/workspace.h"
#include "core/task/manifest_parser.h"
#include "core/text/content_hash.h"
#include "helpers/measured_lineage.h"
#include "helpers/memory_fixtures.h"
#include "core/memory/experience_store.h"
#include "core/store/database.h"
#include "core/store/library_schema.h"
#include "core/store/migrations.h"
#include "core/text/printable.h"

using namespace kwb;
using namespace kwb::memory;

namespace {

Case makeCase(const std::string &task, bool correct, double speedup, std::optional<std::int64_t> parent = {},
              const std::string &idea = {}) {
  Case c;
  c.source = "editor";
  c.task = task;
  c.operatorClass = task == "sgemm" || task == "gemm-bf16" ? "gemm" : task;
  c.gpu = "NVIDIA H200";
  c.arch = "sm_90";
  c.correct = correct;
  c.outcome = correct ? "correct" : "incorrect";
  c.speedup = correct ? speedup : 0;
  c.relativeSpread = 0.01;
  c.parent = parent;
  c.idea = idea;
  return c;
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

}  // namespace

class TstExperienceMemory : public QObject {
  Q_OBJECT

 private slots:
  void labels_data() {
    QTest::addColumn<double>("ratio");
    QTest::addColumn<QString>("label");
    QTest::newRow("2x") << 2.0 << "effective";
    QTest::newRow("1.05") << 1.05 << "effective";
    QTest::newRow("1.0499") << 1.0499 << "partial";
    QTest::newRow("1") << 1.0 << "partial";
    QTest::newRow("0.9999") << 0.9999 << "ineffective";
    QTest::newRow("0.85") << 0.85 << "ineffective";
    QTest::newRow("0.8499") << 0.8499 << "negative";
    QTest::newRow("incorrect (0)") << 0.0 << "negative";
  }
  void labels() {
    QFETCH(double, ratio);
    QFETCH(QString, label);
    QCOMPARE(QString(toString(labelOf(ratio))), label);
    QVERIFY(labelFromString(label.toStdString()) == labelOf(ratio));
  }

  void ratios_data() {
    QTest::addColumn<bool>("correct");
    QTest::addColumn<double>("speedup");
    QTest::addColumn<double>("baseline");  // < 0: none (a root)
    QTest::addColumn<double>("ratio");
    QTest::newRow("root") << true << 3.0 << -1.0 << 1.0;
    QTest::newRow("twice the parent") << true << 4.0 << 2.0 << 2.0;
    QTest::newRow("slower than the parent") << true << 1.5 << 2.0 << 0.75;
    QTest::newRow("incorrect") << false << 4.0 << 2.0 << 0.0;
    QTest::newRow("correct, not timed") << true << 0.0 << 2.0 << 0.0;
  }
  void ratios() {
    QFETCH(bool, correct);
    QFETCH(double, speedup);
    QFETCH(double, baseline);
    QFETCH(double, ratio);
    QCOMPARE(stepRatio(correct, speedup, baseline < 0 ? std::nullopt : std::optional<double>(baseline)), ratio);
  }

  void confidence() {
    QCOMPARE(confidenceOf(true, 2.0, 0.0), 1.0);
    QCOMPARE(confidenceOf(true, 2.0, 0.1), 0.5);
    QCOMPARE(confidenceOf(false, 2.0, 0.0), 0.0);
    QVERIFY(confidenceOf(true, 2.0, 0.02) > confidenceOf(true, 2.0, 0.05));
  }

  // d(v) = 0.5 r + 0.5 * 0.7 * sum d(children), by hand.
  void scoresByHand() {
    ScoreForest f;
    f.add(1, std::nullopt, 1.0);
    f.add(2, 1, 2.0);
    f.add(3, 2, 1.5);
    f.add(4, 1, 0.0);  // an incorrect attempt beside: adds nothing
    QVERIFY(near(f.score(3), 0.75));
    QVERIFY(near(f.score(2), 0.5 * 2 + 0.35 * 0.75));
    QVERIFY(near(f.score(1), 0.5 + 0.35 * (1.2625 + 0)));
    QVERIFY(near(f.score(4), 0));
    f.setWeights({1.0, 1.0, 0.5});
    QVERIFY(near(f.score(3), 1.5));
    QVERIFY(near(f.score(2), 2 + 0.5 * 1.5));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, f.add(5, 99, 1.0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, f.add(3, 1, 1.0));
  }

  // Property: adding leaves one by one, updating only ancestors, gives the scores a full
  // recomputation gives, on random forests (wide, deep, mixed) and random weights.
  void incrementalEqualsFullOnRandomForests() {
    for (unsigned seed = 1; seed <= 200; ++seed) {
      std::mt19937 rng(seed);
      std::uniform_real_distribution<double> ratio(0.0, 2.5), weight(0.05, 1.0);
      const ScoreWeights w{weight(rng), weight(rng), weight(rng)};
      ScoreForest incremental(w);
      const int n = 1 + static_cast<int>(rng() % 300);
      const double deep = (seed % 3) / 2.0;  // 0: wide, 0.5: mixed, 1: chains
      for (int id = 1; id <= n; ++id) {
        std::optional<std::int64_t> parent;
        if (id > 1 && rng() % 10 != 0)
          parent = std::uniform_real_distribution<double>(0, 1)(rng) < deep ? id - 1 : 1 + static_cast<int>(rng() % (id - 1));
        incremental.add(id, parent, rng() % 5 == 0 ? 0.0 : ratio(rng));
      }
      ScoreForest full = incremental;
      full.recompute();
      for (const auto &[id, node] : full.nodes())
        QVERIFY2(near(incremental.score(id), node.score),
                 qPrintable(QStringLiteral("seed %1, Case %2: incremental %3, full %4")
                                .arg(seed).arg(id).arg(incremental.score(id), 0, 'g', 17).arg(node.score, 0, 'g', 17)));
    }
  }

  // The same property through the store, in a real SQLite file: ratios against the nearest correct
  // ancestor, scores kept by record() equal to a recomputation, which then changes nothing.
  void storeKeepsScoresAsCasesArrive() {
    QTemporaryDir dir;
    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    for (unsigned seed = 1; seed <= 4; ++seed) {
      std::mt19937 rng(seed);
      std::vector<std::int64_t> ids;
      std::map<std::int64_t, double> speedups;
      for (int k = 0; k < 80; ++k) {
        std::optional<std::int64_t> parent;
        if (!ids.empty() && rng() % 8 != 0) parent = ids[rng() % ids.size()];
        const bool correct = rng() % 4 != 0;
        const double speedup = 0.5 + (rng() % 300) / 100.0;
        ids.push_back(store->record(makeCase("task" + std::to_string(seed), correct, speedup, parent)));
      }
      ScoreForest forest(store->weights());
      for (const auto &c : store->cases("task" + std::to_string(seed))) {
        // The ratio is against the nearest correct ancestor's speedup.
        std::optional<double> baseline;
        for (auto up = c.parent; up;) {
          const auto p = store->get(*up);
          QVERIFY(p);
          if (p->correct) {
            baseline = p->speedup;
            break;
          }
          up = p->parent;
        }
        QCOMPARE(c.ratio, stepRatio(c.correct, c.speedup, baseline));
        QCOMPARE(c.label, labelOf(c.ratio));
        forest.add(c.id, c.parent, c.ratio);
      }
      forest.recompute();
      for (const auto &c : store->cases("task" + std::to_string(seed)))
        QVERIFY2(near(c.score, forest.score(c.id)), qPrintable(QStringLiteral("Case %1").arg(c.id)));
    }
    QCOMPARE(store->recomputeScores(), std::size_t{0});

    // New weights: stored, and every score recomputed with them.
    const ScoreWeights w{0.8, 0.3, 0.9};
    store->setWeights(w);
    QVERIFY(store->weights() == w);
    ScoreForest forest(w);
    for (const auto &c : store->cases()) forest.add(c.id, c.parent, c.ratio);
    forest.recompute();
    for (const auto &c : store->cases()) QVERIFY(near(c.score, forest.score(c.id)));
    // A Case that arrives afterwards uses them too.
    const auto root = store->cases().front().id;
    const auto id = store->record(makeCase("task1", true, 100.0, root));
    forest.add(id, root, store->get(id)->ratio);
    forest.recompute();
    for (const auto &c : store->cases()) QVERIFY(near(c.score, forest.score(c.id)));
  }

  void recordingTheSameEvaluationTwiceIsOneCase() {
    QTemporaryDir dir;
    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    auto c = makeCase("softmax", true, 2.0);
    c.sourceRef = "workspace.sqlite#run-7";
    c.before = "__global__ void k() {}\n";
    c.after = "__global__ void k() { /* faster */ }\n";
    const auto first = store->record(c);
    QCOMPARE(store->record(c), first);
    QCOMPARE(store->cases().size(), std::size_t{1});
    QCOMPARE(store->find("editor", "workspace.sqlite#run-7"), std::optional<std::int64_t>(first));
    QVERIFY(!store->find("editor", "workspace.sqlite#run-8"));
    QVERIFY(!store->find("session", "workspace.sqlite#run-7"));
    const auto back = store->get(first, true);
    QCOMPARE(back->after, c.after);
    QCOMPARE(back->before, c.before);
    QCOMPARE(back->confidence, confidenceOf(true, 2.0, 0.01));
    // An unknown parent is refused, and nothing is half-recorded.
    QVERIFY_THROWS_EXCEPTION(StoreError, store->record(makeCase("softmax", true, 2.0, 999)));
    QCOMPARE(store->cases().size(), std::size_t{1});
  }

  // Retrieval: effective before partial before ineffective before negative; within a label by
  // d x confidence x feature similarity; text words all required, found even when they are in
  // every row (BM25 scores them 0 on a small corpus); filters exact.
  void retrievalOrder() {
    QTemporaryDir dir;
    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    const auto root = store->record(makeCase("softmax", true, 1.0, std::nullopt, "naive softmax, one thread per row"));
    auto warp = makeCase("softmax", true, 3.0, root, "warp shuffle reduction of the row maximum");
    warp.bottleneck = "memory";
    warp.intensity = 2;
    warp.journal = "Replaced the shared-memory tree with __shfl_xor_sync; dram__throughput up.";
    const auto warpId = store->record(warp);
    auto vec = makeCase("softmax", true, 2.5, root, "float4 vector loads");
    vec.bottleneck = "compute";
    vec.intensity = 200;
    const auto vecId = store->record(vec);
    const auto tiny = store->record(makeCase("softmax", true, 1.02, root, "loop unrolling of the row loop"));
    const auto slower = store->record(makeCase("softmax", true, 0.9, root, "shared memory staging"));
    const auto broken = store->record(makeCase("softmax", false, 0, root, "warp shuffle without a mask"));
    store->record(makeCase("sgemm", true, 1.0, std::nullopt, "warp tiling"));

    MemoryQuery all;
    all.task = "softmax";
    auto hits = store->query(all);
    QCOMPARE(hits.size(), std::size_t{6});
    std::vector<int> ranks;
    for (const auto &h : hits) ranks.push_back(labelRank(h.c.label));
    QVERIFY(std::is_sorted(ranks.begin(), ranks.end()));
    QCOMPARE(hits.front().c.id, warpId);  // effective, and the largest d x confidence
    QCOMPARE(hits.back().c.id, broken);

    // Features alike move a Case up within its label: a compute-bound, high-intensity kernel
    // ranks the float4 Case above the warp-shuffle one.
    MemoryQuery alike = all;
    alike.bottleneck = "compute";
    alike.intensity = 150;
    hits = store->query(alike);
    QCOMPARE(hits.front().c.id, vecId);
    QVERIFY(hits.front().similarity > hits[1].similarity);

    // The architecture and GPU the work runs on (issue 47, 5): not filters, but another
    // architecture weighs less than another GPU of the same one, which weighs less than the same.
    Case c = makeCase("softmax", true, 1.0);
    MemoryQuery near;
    QCOMPARE(featureSimilarity(near, c), 1.0);
    near.nearArch = "sm_90";
    near.nearGpu = "NVIDIA H200";
    QCOMPARE(featureSimilarity(near, c), 1.0);
    near.nearGpu = "NVIDIA H100 80GB HBM3";
    QCOMPARE(featureSimilarity(near, c), 0.9);
    near.nearArch = "sm_80";
    QCOMPARE(featureSimilarity(near, c), 0.7);

    // Text: every word required; quoted, so '__' and punctuation are not syntax.
    MemoryQuery text;
    text.text = "warp shuffle";
    hits = store->query(text);
    QCOMPARE(hits.size(), std::size_t{2});  // the effective one and the broken one; not sgemm's "warp tiling"
    QCOMPARE(hits[0].c.id, warpId);
    QCOMPARE(hits[1].c.id, broken);
    text.text = "dram__throughput";
    QCOMPARE(store->query(text).size(), std::size_t{1});
    text.text = "\"unbalanced (quote";
    QVERIFY(store->query(text).empty());
    text.text = "softmax";  // in six of seven rows: BM25 gives it ~0, the filter still finds them
    QCOMPARE(store->query(text).size(), std::size_t{6});
    text.text = "---";
    QVERIFY(store->query(text).empty());
    // Any word, for other operators: words that say nothing about a kernel are left out.
    QCOMPARE(ftsQuery("Softmax over the last dimension of a row", true),
             std::string("\"Softmax\" OR \"last\" OR \"dimension\" OR \"row\""));
    QCOMPARE(ftsQuery("Softmax over the last dimension"), std::string("\"Softmax\" \"over\" \"the\" \"last\" \"dimension\""));

    MemoryQuery filtered;
    filtered.label = Label::Partial;
    filtered.task = "softmax";
    hits = store->query(filtered);
    QCOMPARE(hits.size(), std::size_t{2});  // the root (r = 1) first: its d counts its successors
    QCOMPARE(hits[0].c.id, root);
    QCOMPARE(hits[1].c.id, tiny);
    filtered = {};
    filtered.label = Label::Ineffective;
    QCOMPARE(store->query(filtered).at(0).c.id, slower);
    filtered = {};
    filtered.idea = "SHUFFLE";
    QCOMPARE(store->query(filtered).size(), std::size_t{2});
    filtered.correct = true;
    QCOMPARE(store->query(filtered).size(), std::size_t{1});
    filtered = {};
    filtered.operatorClass = "gemm";
    QCOMPARE(store->query(filtered).size(), std::size_t{1});
    filtered.limit = 0;  // no limit
    filtered.operatorClass.clear();
    QCOMPARE(store->query(filtered).size(), std::size_t{7});
  }

  void statsExportAndGraph() {
    QTemporaryDir dir;
    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    const auto a = store->record(makeCase("softmax", true, 1.0));
    const auto b = store->record(makeCase("softmax", true, 2.0, a, "two rows per block"));
    store->record(makeCase("softmax", false, 0, b, "line with \"quotes\"\nand a newline"));
    store->record(makeCase("sgemm", true, 1.0));
    const auto st = store->stats();
    QCOMPARE(st.cases, std::int64_t{4});
    QCOMPARE(st.roots, std::int64_t{2});
    QCOMPARE(st.correct, std::int64_t{3});
    QCOMPARE(st.byLabel[labelRank(Label::Effective)], std::int64_t{1});
    QCOMPARE(st.byLabel[labelRank(Label::Partial)], std::int64_t{2});
    QCOMPARE(st.byLabel[labelRank(Label::Negative)], std::int64_t{1});
    QCOMPARE(st.tasks.front().first, std::string("softmax"));
    QCOMPARE(st.tasks.front().second, std::int64_t{3});
    QCOMPARE(st.best.size(), std::size_t{2});
    QCOMPARE(st.best[1].task, std::string("softmax"));
    QCOMPARE(st.best[1].caseId, b);

    std::ostringstream jsonl;
    store->exportJsonl(jsonl);
    std::istringstream lines(jsonl.str());
    std::string line;
    std::vector<nlohmann::json> rows;
    while (std::getline(lines, line)) rows.push_back(nlohmann::json::parse(line));
    QCOMPARE(rows.size(), std::size_t{4});
    QCOMPARE(rows[1]["parent"].get<std::int64_t>(), a);
    QCOMPARE(rows[1]["label"].get<std::string>(), std::string("effective"));
    QCOMPARE(rows[2]["idea"].get<std::string>(), std::string("line with \"quotes\"\nand a newline"));
    QVERIFY(rows[0]["parent"].is_null());

    const auto dot = store->graphDot();
    QVERIFY(dot.find("label=\"softmax\"") != std::string::npos);
    QVERIFY(dot.find("label=\"sgemm\"") != std::string::npos);
    QVERIFY(dot.find("c" + std::to_string(a) + " -> c" + std::to_string(b)) != std::string::npos);
    QVERIFY(dot.find("line with \\\"quotes\\\" and a newline") != std::string::npos);
    QVERIFY(store->graphDot("sgemm").find("softmax") == std::string::npos);
  }

  // A workspace's history becomes Cases once: editor runs chained in order, a session's candidates
  // under the incumbent they started from (and a repair under its first turn), with their stated
  // intent and cards; a second sync adds nothing, and a new run is added after.
  void workspaceHistoryBecomesCases() {
    QTemporaryDir dir;
    auto ws = Workspace::open(dir.filePath("ws.sqlite").toStdString());
    const std::string folder = std::string(KWB_SOURCE_DIR) + "/kernels/softmax";
    const auto task = ws->recordTaskOpened("softmax", folder, "hash");
    const auto first = kwb::test::addMemoryRun(*ws, task.id, "// v1\n", kwb::test::memoryRunResult(true, {1.0, 1.0, 1.0}), "/x/softmax.cu");
    const auto second = kwb::test::addMemoryRun(*ws, task.id, "// v2\n", kwb::test::memoryRunResult(true, {2.0, 2.0, 2.0}), "/x/softmax.cu");
    const auto broken = kwb::test::addMemoryRun(*ws, task.id, "// v3\n", kwb::test::memoryRunResult(false, {0, 0, 0}));
    // A session started from v2: its first turn (v4, faster) and a repair of a failed line (v5).
    const auto turn1 = kwb::test::addMemoryRun(*ws, task.id, "// v4\n", kwb::test::memoryRunResult(true, {4.0, 4.0, 4.0}));
    const auto repair = kwb::test::addMemoryRun(*ws, task.id, "// v5\n", kwb::test::memoryRunResult(false, {0, 0, 0}));
    auto &db = ws->database();
    db.exec("INSERT INTO agent_sessions(id, task_id, task_name, provider, model, settings_json, state, created_at, updated_at) "
            "VALUES('s1', " + std::to_string(task.id) + ", 'softmax', 'local', 'm', '{}', 'done', 'now', 'now')");
    db.exec("INSERT INTO agent_groups(id, session_id, ordinal, goal, incumbent_hash, state, created_at) VALUES(1, 's1', 1, "
            "'faster', '" + contentHash("// v2\n") + "', 'done', 'now')");
    db.exec("INSERT INTO agent_attempts(id, group_id, line, turn, state, messages_json, response_text, answer_outcome, "
            "evaluation_id, cards_json, created_at) VALUES(1, 1, 1, 1, 'evaluated', '[]', "
            "'## Plan: two rows per warp with shuffles\n```cuda\n// v4\n```', 'code', " + std::to_string(turn1) +
            ", '[\"warp-shuffle-reduction\"]', 'now')");
    db.exec("INSERT INTO agent_attempts(id, group_id, line, turn, parent_id, state, messages_json, response_text, "
            "answer_outcome, evaluation_id, created_at) VALUES(2, 1, 1, 2, 1, 'evaluated', '[]', '```cuda\n// v5\n```', "
            "'code', " + std::to_string(repair) + ", 'now')");

    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    auto report = syncWorkspace(*store, *ws);
    QCOMPARE(report.added, std::size_t{5});
    QVERIFY(report.problems.empty());
    const auto cases = store->cases("softmax");
    QCOMPARE(cases.size(), std::size_t{5});
    std::map<std::int64_t, Case> byRun;
    std::string key;
    {
      auto id = ws->database().prepare("SELECT value FROM settings WHERE key = 'workspace_id'");
      QVERIFY(id.step());
      key = "workspace:" + id.columnText(0);
      QCOMPARE(key.size(), std::string("workspace:").size() + 32);
    }
    for (const auto run : {first, second, broken, turn1, repair}) {
      auto id = store->find("editor", key + "#evaluation-" + std::to_string(run));
      if (!id) id = store->find("session", key + "#evaluation-" + std::to_string(run));
      QVERIFY2(id, qPrintable(QStringLiteral("run %1 has no Case").arg(run)));
      byRun[run] = *store->get(*id, true);
    }
    QCOMPARE(byRun[first].source, std::string("editor"));
    QVERIFY(!byRun[first].parent);
    QCOMPARE(byRun[second].parent, std::optional<std::int64_t>(byRun[first].id));
    QCOMPARE(byRun[second].before, std::string("// v1\n"));
    QCOMPARE(byRun[second].speedup, 2.0);
    QCOMPARE(byRun[second].ratio, 2.0);
    QCOMPARE(byRun[second].label, Label::Effective);
    QCOMPARE(byRun[second].relativeSpread, 0.03);  // the widest configuration's
    QVERIFY(!byRun[second].shape.empty());
    QVERIFY(byRun[second].intensity > 0);
    QCOMPARE(byRun[second].idea, std::string("run of softmax.cu"));
    QCOMPARE(byRun[broken].parent, std::optional<std::int64_t>(byRun[second].id));
    QVERIFY(!byRun[broken].correct);
    QVERIFY(byRun[broken].feedback.find("12 elements differ") != std::string::npos);
    QCOMPARE(byRun[turn1].source, std::string("session"));
    QCOMPARE(byRun[turn1].session, std::string("s1"));
    QCOMPARE(byRun[turn1].parent, std::optional<std::int64_t>(byRun[second].id));  // the incumbent's Case
    QCOMPARE(byRun[turn1].idea, std::string("Plan: two rows per warp with shuffles (cards: warp-shuffle-reduction)"));
    QCOMPARE(byRun[turn1].ratio, 2.0);
    QCOMPARE(byRun[turn1].before, std::string("// v2\n"));
    QCOMPARE(byRun[repair].parent, std::optional<std::int64_t>(byRun[turn1].id));
    QVERIFY(byRun[repair].idea.empty());

    report = syncWorkspace(*store, *ws);
    QCOMPARE(report.added, std::size_t{0});
    QCOMPARE(report.known, std::size_t{5});
    const auto later = kwb::test::addMemoryRun(*ws, task.id, "// v6\n", kwb::test::memoryRunResult(true, {3.0, 3.0, 3.0}));
    auto compiledOnly = kwb::test::memoryRunResult(true, {});
    compiledOnly.outcome = Outcome::NotRun;
    kwb::test::addMemoryRun(*ws, task.id, "// v7\n", compiledOnly);
    report = syncWorkspace(*store, *ws);
    QCOMPARE(report.added, std::size_t{1});
    QCOMPARE(report.notRun, std::size_t{1});
    const auto sixth = store->get(*store->find("editor", key + "#evaluation-" + std::to_string(later)));
    QCOMPARE(sixth->parent, std::optional<std::int64_t>(byRun[broken].id));  // the previous editor run
    QCOMPARE(sixth->ratio, 1.5);  // against the nearest correct ancestor (v2, 2x)

    // The file deleted and made again at the same path: its run ids start again, and its runs
    // are new Cases, not taken for the old ones.
    const auto path = ws->path();
    ws.reset();
    std::filesystem::remove(path);
    auto again = Workspace::open(path);
    const auto t = again->recordTaskOpened("softmax", folder, "hash");
    kwb::test::addMemoryRun(*again, t.id, "// new v1\n", kwb::test::memoryRunResult(true, {1.0, 1.0, 1.0}));
    report = syncWorkspace(*store, *again);
    QCOMPARE(report.added, std::size_t{1});
    QCOMPARE(report.known, std::size_t{0});
    QVERIFY(!store->get(store->cases("softmax").back().id)->parent);  // a root, not under the old chain
  }

  // A lineage's steps become Cases: each under the previous accepted step (a rejected step is a
  // negative leaf beside the chain), the title as the idea, recorded once per build.
  void lineageStepsBecomeCases() {
    QTemporaryDir dir;
    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    auto l = kwb::test::measuredLineage("softmax", 3);
    l.record.builtAt = "2026-12-04T00:00:00.000Z";
    QCOMPARE(recordLineageCases(*store, l.record, l.task), l.record.steps.size());
    QCOMPARE(recordLineageCases(*store, l.record, l.task), std::size_t{0});
    const auto cases = store->cases("softmax");
    QCOMPARE(cases.size(), l.record.steps.size());
    QVERIFY(!cases[0].parent);
    QCOMPARE(cases[0].idea, l.record.steps[0].title);
    QCOMPARE(cases[0].source, std::string("lineage"));
    QCOMPARE(cases[1].parent, std::optional<std::int64_t>(cases[0].id));
    QCOMPARE(cases[1].before, std::string());  // cases() reads no code
    QCOMPARE(store->get(cases[1].id, true)->before, l.record.steps[0].source);
    QVERIFY(!cases[2].correct);  // step 3, rejected
    QCOMPARE(cases[2].label, Label::Negative);
    QCOMPARE(cases[2].parent, std::optional<std::int64_t>(cases[1].id));
    QCOMPARE(cases[3].parent, std::optional<std::int64_t>(cases[1].id));  // step 4 follows the last accepted, step 2
    QVERIFY(cases[3].ratio > 1);
    QVERIFY(cases[1].journal.find("Adds: ") != std::string::npos);
    QVERIFY(!cases[1].shape.empty());
  }

  // A tuning's measured points become Cases under the tuned kernel's Case: the parameters as the
  // idea and as #defines before the code; a point compiled only is left out; once per point.
  void tuningPointsBecomeCases() {
    QTemporaryDir dir;
    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    auto l = kwb::test::measuredLineage("softmax", 0);
    const std::string source = "#ifndef BX\n#define BX 16\n#endif\n__global__ void softmax() {}\n";
    Case editor;
    editor.source = "editor";
    editor.sourceRef = "w#evaluation-1";
    editor.task = l.task.name;
    editor.after = source;
    editor.outcome = "correct";
    editor.correct = true;
    editor.speedup = 1.2;
    const auto parent = store->record(editor);
    kwb::tune::TuneReport report;
    report.arch = "sm_90";
    auto point = [](std::int64_t bx, kwb::Outcome outcome, double speedup, const std::string &message) {
      kwb::tune::TunedPoint p;
      p.point = {{"BX", bx}};
      p.label = "BX=" + std::to_string(bx);
      p.result.outcome = outcome;
      p.result.speedup = speedup;
      p.result.relativeSpread = 0.02;
      p.result.message = message;
      p.result.device = "NVIDIA H200";
      if (speedup > 0) p.result.objectiveMs = 0.1;
      return p;
    };
    report.points = {point(32, kwb::Outcome::Correct, 1.5, ""), point(64, kwb::Outcome::Incorrect, 0, "mismatch at y[3]"),
                     point(128, kwb::Outcome::NotRun, 0, "")};
    // As the tuner gives them: the first point timed the reference (0.3 ms, 0.6 ms), the next not
    // (its speedup from the first's reference times: 0.3/0.1 and 0.6/0.3 -> sqrt(6)); one timed
    // against nothing (no configuration in common) is left out.
    auto second = point(16, kwb::Outcome::Correct, 0, "");
    report.points[0].result.referenceMs = {{"small", 0.3}, {"large", 0.6}};
    second.result.configMs = {{"small", 0.1}, {"large", 0.3}};
    auto stray = point(8, kwb::Outcome::Correct, 0, "");
    stray.result.configMs = {{"huge", 1.0}};
    report.points.push_back(second);
    report.points.push_back(stray);
    QCOMPARE(recordTuningCases(*store, report, l.task, source), std::size_t{3});
    QCOMPARE(recordTuningCases(*store, report, l.task, source), std::size_t{0});
    const auto cases = store->cases(l.task.name);
    QCOMPARE(cases.size(), std::size_t{4});
    QCOMPARE(cases[3].idea, std::string("BX=16"));
    QVERIFY(std::abs(cases[3].speedup - std::sqrt(6.0)) < 1e-9);
    QVERIFY(cases[3].correct);
    const auto fast = *store->get(cases[1].id, true);
    QCOMPARE(fast.source, std::string("tune"));
    QCOMPARE(fast.idea, std::string("BX=32"));
    QCOMPARE(fast.ideaKind, std::string("tuning"));
    QCOMPARE(fast.after, "// kwb tune: BX=32\n#define BX 32\n" + source);
    QCOMPARE(fast.before, source);
    QCOMPARE(fast.parent, std::optional<std::int64_t>(parent));
    QCOMPARE(fast.gpu, std::string("NVIDIA H200"));
    QVERIFY(std::abs(fast.ratio - 1.25) < 1e-9);  // 1.5 over the tuned kernel's 1.2
    QCOMPARE(fast.label, Label::Effective);
    QVERIFY(fast.journal.find("1.50x over the reference") != std::string::npos);
    QVERIFY(!cases[2].correct);
    QCOMPARE(cases[2].feedback, std::string("mismatch at y[3]"));
    // A source the memory has no Case of: the points are roots.
    QCOMPARE(recordTuningCases(*store, report, l.task, source + "// changed\n"), std::size_t{3});
    QVERIFY(!store->cases(l.task.name).back().parent);
  }

  // The profiler's bottleneck class from a step's metrics; a lineage step's Case carries it.
  void bottleneckFromProfiles() {
    auto metric = [](const std::string &name, double value) { return kwb::profile::MetricValue{name, name, "%", value}; };
    const std::string dram = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
    const std::string sm = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
    QCOMPARE(bottleneckOf({metric(dram, 85), metric(sm, 30)}), std::string("memory"));
    QCOMPARE(bottleneckOf({metric(dram, 20), metric(sm, 75)}), std::string("compute"));
    QCOMPARE(bottleneckOf({metric(dram, 10), metric(sm, 12)}), std::string("latency"));
    QCOMPARE(bottleneckOf({}), std::string());
    QTemporaryDir dir;
    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    auto l = kwb::test::measuredLineage("softmax", 0);
    l.record.builtAt = "2026-12-04T00:00:00.000Z";
    l.record.steps[1].profile = {metric(dram, 88), metric(sm, 40)};
    recordLineageCases(*store, l.record, l.task);
    const auto cases = store->cases("softmax");
    QCOMPARE(cases[0].bottleneck, std::string());
    QCOMPARE(cases[1].bottleneck, std::string("memory"));
  }

  void statedIntents() {
    QCOMPARE(statedIntent("Use float4 loads.\n```cuda\ncode\n```"), std::string("Use float4 loads."));
    QCOMPARE(statedIntent("\n\n### **Idea**: tile in shared memory\n"), std::string("Idea: tile in shared memory"));
    QCOMPARE(statedIntent("```cuda\n__global__ void k() {}\n```\nThen explained."), std::string());
    QCOMPARE(statedIntent(std::string(300, 'x')).size(), std::size_t{203});
    // Cut at a character boundary: "×" is two bytes, and the cut never splits it.
    std::string times;
    for (int i = 0; i < 150; ++i) times += "\xc3\x97";
    const auto clipped = statedIntent(times);
    QVERIFY(clipped.size() <= 203);
    QCOMPARE(clipped.substr(clipped.size() - 5), std::string("\xc3\x97..."));
    QCOMPARE(clippedLine("a\nb\tc", 10), std::string("a b c"));
  }

  void budgetAndEstimates() {
    QCOMPARE((ContextBudget{32768, 1000, 8192, 2000}.budget()), std::size_t{21576});
    QCOMPARE((ContextBudget{8192, 1000, 8192, 0}.budget()), std::size_t{0});  // max(0, ...)
    TokenEstimator e;
    QCOMPARE(e.estimate(std::string(400, 'x')), std::size_t{100});
    e.calibrate(3000, 1000);  // the first report replaces the guess
    QCOMPARE(e.charsPerToken(), 3.0);
    e.calibrate(6000, 1000);  // later ones move it a third of the way
    QCOMPARE(e.charsPerToken(), 4.0);
    e.calibrate(100, 1000);  // 0.1 characters a token: a wrong count, ignored
    QCOMPARE(e.charsPerToken(), 4.0);
    QCOMPARE(e.observations(), std::size_t{2});
  }

  // Property: over random tiers, budgets, caps and estimators, the hot tier is always all there,
  // the total never exceeds B unless the hot tier alone does (then nothing else goes in), each
  // tier keeps its cap and share and its order, and every offered item is included or left.
  void contextNeverExceedsTheBudget() {
    std::mt19937 rng(19);
    auto items = [&](Tier tier, std::size_t n) {
      std::vector<ContextItem> out;
      for (std::size_t i = 0; i < n; ++i)
        out.push_back({tier, "x", std::string(rng() % 6000, 'a'), "", static_cast<std::int64_t>(i + 1)});
      return out;
    };
    for (int round = 0; round < 2000; ++round) {
      const auto hot = items(Tier::Hot, rng() % 5), warm = items(Tier::Warm, rng() % 12), cold = items(Tier::Cold, rng() % 12);
      ContextBudget b{rng() % 40000, rng() % 3000, rng() % 9000, rng() % 3000};
      TierCaps caps;
      caps.warmItems = rng() % 8;
      caps.coldItems = rng() % 8;
      caps.warmShare = (rng() % 101) / 100.0;
      caps.coldShare = (rng() % 101) / 100.0;
      TokenEstimator e;
      if (rng() % 2) e.calibrate(1000 + rng() % 9000, 1000);
      const auto a = assembleContext(hot, warm, cold, b, caps, e);
      QCOMPARE(a.budget, b.budget());
      std::size_t nHot = 0, nWarm = 0, nCold = 0;
      for (const auto &i : a.included) (i.tier == Tier::Hot ? nHot : i.tier == Tier::Warm ? nWarm : nCold)++;
      // What is sent (headings and line ends too) costs no more than what was counted.
      QVERIFY2(e.estimate(a.text()) <= a.tokens, qPrintable(QStringLiteral("round %1").arg(round)));
      QCOMPARE(nHot, hot.size());
      for (std::size_t i = 0; i < hot.size(); ++i) QCOMPARE(a.included[i].caseId, hot[i].caseId);
      if (a.hotOverBudget) {
        QCOMPARE(a.tokens, a.hotTokens);
        QVERIFY(a.hotTokens > a.budget);
      } else {
        QVERIFY2(a.tokens <= a.budget, qPrintable(QStringLiteral("round %1: %2 > %3").arg(round).arg(a.tokens).arg(a.budget)));
      }
      QVERIFY(nWarm <= caps.warmItems);
      QVERIFY(nCold <= caps.coldItems);
      QCOMPARE(a.included.size() + a.left.size(), hot.size() + warm.size() + cold.size());
      // Tiers in order: hot, then warm, then cold, each in the order offered.
      int lastTier = 0;
      std::int64_t lastId = 0;
      for (const auto &i : a.included) {
        const int t = static_cast<int>(i.tier);
        QVERIFY(t >= lastTier);
        if (t == lastTier && t != 0) QVERIFY(i.caseId > lastId);
        if (t != lastTier) lastId = 0;
        lastTier = t;
        lastId = i.caseId;
      }
      const auto record = a.record();
      QCOMPARE(record["included"].size(), a.included.size());
      QCOMPARE(record["left"].size(), a.left.size());
    }
  }

  // What the memory offers a turn: this task's Cases best first, the operator's others, and other
  // operators' Cases that share the task's words; the assembled text heads each tier.
  void experienceForATurn() {
    QTemporaryDir dir;
    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    const auto root = store->record(makeCase("softmax", true, 1.0, std::nullopt, "naive rows"));
    const auto good = store->record(makeCase("softmax", true, 2.0, root, "warp shuffle reductions"));
    auto wrong = makeCase("softmax", false, 0, root, "float4 without a tail");
    wrong.feedback = "odd: 3 elements differ at the row's end";
    const auto bad = store->record(wrong);
    auto ln = makeCase("layernorm", true, 1.5, std::nullopt, "Welford in one pass over the row");
    const auto other = store->record(ln);
    store->record(makeCase("sgemm", true, 3.0, std::nullopt, "register tiles"));

    MemoryQuery q;
    q.task = "softmax";
    q.operatorClass = "softmax";
    q.text = "row exponentials";
    const auto items = experienceFor(*store, q);
    QCOMPARE(items.warm.size(), std::size_t{3});
    QCOMPARE(items.warm[0].caseId, good);
    QCOMPARE(items.warm[2].caseId, bad);
    QVERIFY2(items.warm[2].text.find("3 elements differ") != std::string::npos, items.warm[2].text.c_str());
    QVERIFY(items.warm[0].text.find("[effective, x2.00 over where it started") != std::string::npos);
    QCOMPARE(items.cold.size(), std::size_t{1});  // layernorm shares "row"; sgemm shares nothing
    QCOMPARE(items.cold[0].caseId, other);

    const std::vector<ContextItem> hot = {{Tier::Hot, "task", "# softmax\n", "always", 0}};
    const auto a = assembleContext(hot, items.warm, items.cold, {32768, 500, 8192, 0});
    const auto text = a.text();
    QVERIFY(text.find("## Experience with this kernel") != std::string::npos);
    QVERIFY(text.find("## Further experience") != std::string::npos);
    QVERIFY(text.find("warp shuffle reductions") < text.find("Welford"));
    // A window too small for anything but the hot tier.
    const auto tight = assembleContext(hot, items.warm, items.cold, {600, 500, 90, 0});
    QCOMPARE(tight.included.size(), std::size_t{1});
    QCOMPARE(tight.left.size(), items.warm.size() + items.cold.size());
  }

  // Digests: many Cases summed up exactly (counts by label, best, ideas that paid off, slowed the
  // kernel down or broke it, failures by outcome), offered in the cold tier only where the warm tier
  // leaves Cases out.
  void digestsSumUpWhatTheWarmTierLeavesOut() {
    QTemporaryDir dir;
    auto store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    const auto root = store->record(makeCase("softmax", true, 1.0, std::nullopt, "naive rows"));
    const auto warp = store->record(makeCase("softmax", true, 2.0, root, "warp shuffle reductions"));
    store->record(makeCase("softmax", true, 2.4, warp, "float4 loads"));              // x1.20
    store->record(makeCase("softmax", true, 2.2, warp, "float4 loads"));              // x1.10, a second try
    store->record(makeCase("softmax", true, 1.02, root, "two passes over global"));   // partial
    store->record(makeCase("softmax", true, 0.9, root, "one thread per row"));        // ineffective (x0.90)
    store->record(makeCase("softmax", true, 1.2, warp, "shared staging"));            // negative (x0.60)
    store->record(makeCase("softmax", true, 1.5, warp, "atomics for the max"));       // negative (x0.75)
    auto broken = makeCase("softmax", false, 0, warp, "skip the max subtraction");
    store->record(broken);
    store->record(broken);  // no sourceRef: a second Case
    auto compile = makeCase("softmax", false, 0, warp, "inline PTX shuffles");
    compile.outcome = "compile-error";
    store->record(compile);
    store->record(makeCase("online-softmax", true, 1.0, std::nullopt, "online max and sum"));
    auto other = makeCase("online-softmax", true, 3.0, std::nullopt, "one pass with a running max");
    other.gpu = "NVIDIA A100";
    store->record(other);

    const Digest d = store->digest({"softmax", {}, {}});
    QCOMPARE(d.cases, std::int64_t{11});
    QCOMPARE(d.correct, std::int64_t{8});
    QCOMPARE(d.tasks, std::int64_t{1});
    QCOMPARE(d.gpus, std::int64_t{1});
    QCOMPARE(d.byLabel[labelRank(Label::Effective)], std::int64_t{3});  // warp and both float4
    QCOMPARE(d.byLabel[labelRank(Label::Partial)], std::int64_t{2});    // the root (x1.00) and two passes
    QCOMPARE(d.byLabel[labelRank(Label::Ineffective)], std::int64_t{1});
    QCOMPARE(d.byLabel[labelRank(Label::Negative)], std::int64_t{5});  // two slower, three that failed
    QVERIFY(d.best && near(d.best->speedup, 2.4) && d.best->idea == "float4 loads");
    QCOMPARE(d.paidOff.size(), std::size_t{2});
    QCOMPARE(d.paidOff[0].idea, std::string("warp shuffle reductions"));
    QVERIFY(near(d.paidOff[0].ratio, 2.0));
    QCOMPARE(d.paidOff[1].idea, std::string("float4 loads"));
    QCOMPARE(d.paidOff[1].tries, std::int64_t{2});
    QVERIFY(near(d.paidOff[1].ratio, 1.2));
    QCOMPARE(d.slowedDown.size(), std::size_t{2});
    QCOMPARE(d.slowedDown[0].idea, std::string("shared staging"));
    QVERIFY(near(d.slowedDown[0].ratio, 0.6));
    QCOMPARE(d.broke.size(), std::size_t{2});
    QCOMPARE(d.broke[0].idea, std::string("skip the max subtraction"));
    QCOMPARE(d.broke[0].tries, std::int64_t{2});
    QCOMPARE(d.broke[0].outcome, std::string("incorrect"));
    QCOMPARE(d.broke[1].outcome, std::string("compile-error"));
    QCOMPARE(d.failures.size(), std::size_t{2});
    QCOMPARE(d.failures[0], (std::pair<std::string, std::int64_t>{"incorrect", 2}));
    QCOMPARE(store->digest({"softmax", {}, {}}, 1).paidOff.size(), std::size_t{1});
    QCOMPARE(store->digest({"no-such-task", {}, {}}).cases, std::int64_t{0});
    QCOMPARE(digestText(store->digest({"no-such-task", {}, {}}), "x"), std::string());

    const std::string text = digestText(d, "softmax");
    QVERIFY2(text.find("- digest of softmax: 11 attempts, 8 correct (3 effective, 2 partial, 1 ineffective, 5 negative); "
                       "best 2.40x the reference (float4 loads)\n") == 0,
             text.c_str());
    QVERIFY2(text.find("  paid off: warp shuffle reductions (x2.00); float4 loads (x1.20, 2 tries)\n") !=
                 std::string::npos,
             text.c_str());
    QVERIFY(text.find("  slowed it down: shared staging (x0.60); atomics for the max (x0.75)\n") != std::string::npos);
    QVERIFY(text.find("  broke it: skip the max subtraction (incorrect, 2 tries); inline PTX shuffles (compile-error)\n") !=
            std::string::npos);
    QVERIFY(text.find("  failures: 2 incorrect, 1 compile-error\n") != std::string::npos);

    // The operator class's other tasks: online-softmax, on two GPUs.
    const Digest others = store->digest({{}, "softmax", "softmax"});
    QCOMPARE(others.cases, std::int64_t{0});  // makeCase gives each task its own class
    MemoryQuery q;
    q.task = "softmax";
    q.operatorClass = "softmax";
    // Four warm items of eleven: the task's digest leads the cold tier.
    auto items = experienceFor(*store, q, 4, 6);
    QCOMPARE(items.warm.size(), std::size_t{4});
    QCOMPARE(items.cold.size(), std::size_t{1});
    QCOMPARE(items.cold[0].kind, std::string("digest"));
    QCOMPARE(items.cold[0].why, std::string("this task's attempts summed up: 11 Cases, 4 shown one by one"));
    QCOMPARE(items.cold[0].text, text);
    // Every Case shown one by one: no digest.
    items = experienceFor(*store, q, 20, 6);
    QCOMPARE(items.warm.size(), std::size_t{11});
    QVERIFY(items.cold.empty());
    // No room in the cold tier: none either.
    QVERIFY(experienceFor(*store, q, 4, 0).cold.empty());

    // online-softmax made the operator class's: the digest of the other tasks, two GPUs.
    store = nullptr;
    {
      Database db(dir.filePath("library.sqlite").toStdString());
      db.exec("UPDATE memory_cases SET operator_class = 'softmax' WHERE task = 'online-softmax'");
    }
    store = ExperienceStore::open(dir.filePath("library.sqlite").toStdString());
    const Digest op = store->digest({{}, "softmax", "softmax"});
    QCOMPARE(op.cases, std::int64_t{2});
    QCOMPARE(op.gpus, std::int64_t{2});
    QCOMPARE(op.tasks, std::int64_t{1});
    items = experienceFor(*store, q, 4, 6);  // the operator's Cases rank below the task's four
    QCOMPARE(items.cold.size(), std::size_t{2});
    QCOMPARE(items.cold[1].why, std::string("the same operator's other tasks summed up: 2 Cases, 0 shown one by one"));
    QVERIFY2(items.cold[1].text.find("- digest of the operator's other tasks (softmax): 2 attempts on 2 GPUs, 2 correct") == 0,
             items.cold[1].text.c_str());
    QVERIFY(items.cold[1].text.find("best 3.00x the reference (one pass with a running max)") != std::string::npos);
    const std::vector<ContextItem> hot = {{Tier::Hot, "task", "# softmax\n", "always", 0}};
    const auto a = assembleContext(hot, items.warm, items.cold, {32768, 500, 8192, 0});
    QVERIFY(a.text().find("- digest of softmax: 11 attempts") != std::string::npos);
    QVERIFY(a.record().dump().find("\"kind\":\"digest\"") != std::string::npos);
  }

  // A library made before the memory (version 1) opens as version 2 with its cards and lineages
  // kept; the skill library and the memory share the file.
  void versionOneLibraryMigrates() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("library.sqlite").toStdString();
    {
      Database db(path);
      migrateForward(db, {libraryMigrations().front()});
      db.exec("INSERT INTO skill_cards(id, status, card_json, created_at, updated_at) VALUES('kept', 'proposed', "
              "'{\"skill_id\":\"kept\"}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')");
      QCOMPARE(readSchemaVersion(db), 1);
    }
    auto store = ExperienceStore::open(path);
    store->record(makeCase("softmax", true, 1.0));
    auto library = SkillLibrary::open(path);
    QVERIFY(library->card("kept"));
    Database db(path);
    QCOMPARE(readSchemaVersion(db), SkillLibrary::kSchemaVersion);
    QCOMPARE(store->cases().size(), std::size_t{1});
  }
};

QTEST_GUILESS_MAIN(TstExperienceMemory)
#include "tst_experience_memory.moc"
