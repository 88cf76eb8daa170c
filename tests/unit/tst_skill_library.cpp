// KLineage without an LLM (core/lineage): kernel features read from the bundled lineages, the
// carrier of a step, a lineage recorded from its steps' evaluations and the cards lifted from it,
// and the skill library in a real SQLite file: lineages replaced with their evidence, cards
// proposed and merged, reviewed with an audit trail, filtered by scope wildcards.
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "core/lineage/kernel_features.h"
#include "core/lineage/lineage.h"
#include "core/lineage/lineage_build.h"
#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_library.h"
#include "core/lineage/skill_markdown.h"
#include "core/store/library_schema.h"
#include "core/store/migrations.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"
#include "helpers/measured_lineage.h"

namespace fs = std::filesystem;
using namespace kwb;

namespace {

fs::path kernelsDir() { return fs::path(KWB_SOURCE_DIR) / "kernels"; }

std::string readStep(const LineageStep &s) {
  SourceReadOptions o;
  return readSourceFile(s.file, o);
}

std::string joined(const std::set<std::string> &s) {
  std::string out;
  for (const auto &x : s) out += (out.empty() ? "" : ",") + x;
  return out;
}

using test::MeasuredLineage;

MeasuredLineage build(const std::string &name, int rejected = 0) { return test::measuredLineage(name, rejected); }

}  // namespace

class TestSkillLibrary : public QObject {
  Q_OBJECT

  fs::path dir_;

 private slots:
  void init() {
    dir_ = fs::path(KWB_TEST_OUTPUT_DIR) / "skill-library" / QTest::currentTestFunction();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  // Each bundled step's features, and what each step adds, from the code alone.
  void featuresOfTheBundledLineages_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<int>("step");
    QTest::addColumn<QString>("adds");  // features the step has and its parent lacks, comma-separated
    QTest::newRow("sgemm smem") << "sgemm" << 3 << "shared-memory-tiles";
    QTest::newRow("sgemm vectorized") << "sgemm" << 6 << "vectorized-access";
    QTest::newRow("gemm wmma") << "gemm-bf16" << 2 << "wmma";
    QTest::newRow("gemm cp.async") << "gemm-bf16" << 5 << "cp-async";
  }

  void featuresOfTheBundledLineages() {
    QFETCH(QString, task);
    QFETCH(int, step);
    QFETCH(QString, adds);
    const auto t = loadTask((kernelsDir() / task.toStdString()).string());
    const auto steps = loadLineage(t).steps;
    QVERIFY(step >= 2 && step <= static_cast<int>(steps.size()));
    const auto before = detectFeatures(readStep(steps[step - 2])), after = detectFeatures(readStep(steps[step - 1]));
    std::set<std::string> added;
    for (const auto &f : after)
      if (!before.count(f)) added.insert(f);
    for (const auto &want : adds.split(','))
      QVERIFY2(added.count(want.toStdString()), ("step " + std::to_string(step) + " adds {" + joined(added) + "}, has {" +
                                                 joined(after) + "}")
                                                    .c_str());
  }

  // A de-optimized lineage's "Relies on: cp-async, tma" names features by name, as whole words.
  void featuresNamedByName() {
    const std::set<std::string> among = {"tma", "cp-async", "warp-shuffle", "vectorized-access"};
    QCOMPARE(featuresNamedIn("Relies on: cp-async, vectorized-access", among),
             (std::set<std::string>{"cp-async", "vectorized-access"}));
    QCOMPARE(featuresNamedIn("uses stmatrix stores", {"tma"}), std::set<std::string>{});
    QCOMPARE(featuresNamedIn("Relies on: TMA", {"tma"}), std::set<std::string>{"tma"});
  }

  void featuresIgnoreComments() {
    const std::string text =
        "// no __shared__ here, nor cp.async\n/* float4 */\n"
        "__global__ void k(float *x) { const char *s = \"__shfl_xor_sync\"; x[0] = 1; }\n";
    QVERIFY2(detectFeatures(text).empty(), joined(detectFeatures(text)).c_str());
    const std::string ptx = "asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"(d), \"l\"(s));\n";
    QVERIFY(detectFeatures(ptx).count("cp-async"));
    QCOMPARE(minimumArchitecture({"cp-async", "wmma"}), std::string("sm_80"));
    QCOMPARE(minimumArchitecture({"wgmma", "cp-async"}), std::string("sm_90a"));
    QCOMPARE(featuresNamedIn("Relies on: the shared-memory tiles of step 3", {"shared-memory-tiles", "atomics"}),
             (std::set<std::string>{"shared-memory-tiles"}));
  }

  void carrierShowsTheChangeWithContext() {
    const std::string before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
    const std::string after = "a\nb\nc\nD\ne\nf\ng\nh\ni\nJ\nk\n";
    const auto c = carrierOf(before, after, 1);
    QCOMPARE(c.before, std::string("c\nd\ne\n// ...\ni\nj\n"));
    QCOMPARE(c.after, std::string("c\nD\ne\n// ...\ni\nJ\nk\n"));
    QCOMPARE(c.firstChangedLine, 4);
    QCOMPARE(c.lastChangedLine, 11);
    const auto capped = carrierOf("", std::string(200, '\n'), 0, 10);
    QVERIFY(capped.after.find("(190 more lines)") != std::string::npos);
  }

  void recordedLineageHasSpeedupsAndDeltas() {
    const auto b = build("sgemm", 5);
    const auto &steps = b.record.steps;
    QCOMPARE(steps.size(), b.steps.size());
    QCOMPARE(b.record.acceptedSteps(), static_cast<int>(steps.size()) - 1);
    QVERIFY(!steps[4].accepted);
    QVERIFY2(steps[4].reason.find("incorrect") != std::string::npos, steps[4].reason.c_str());
    // Step 2 is twice as fast as step 1; step 6 four times step 4 (step 5 was rejected).
    QCOMPARE(steps[1].figures.front().speedupVsPrevious, 2.0);
    QCOMPARE(steps[5].figures.front().speedupVsPrevious, 4.0);
    QCOMPARE(steps[0].figures.front().speedupVsPrevious, 0.0);
    bool registers = false;
    for (const auto &d : steps[5].deltas) registers = registers || (d.metric == "registers" && d.before == 36 && d.after == 38);
    QVERIFY(registers);
    QVERIFY(steps[2].figures.front().gflops > 0);
  }

  // The profiler's metrics go with each step; their deltas are against the previous accepted
  // step at the same configuration (a rejected step between is passed over, a step profiled
  // elsewhere or not at all gives none), and the library keeps them.
  void profiledStepsHaveMetricDeltas() {
    auto b = build("softmax", 3);
    QVERIFY(b.record.steps.size() >= 4);
    auto metric = [](const std::string &name, const std::string &label, double value) {
      profile::MetricValue m;
      m.name = name;
      m.label = label;
      m.unit = "%";
      m.value = value;
      return m;
    };
    std::vector<profile::ProfileResult> profiles(b.record.steps.size());
    const double dram[] = {20, 40, 99, 80};
    for (std::size_t i = 0; i < profiles.size(); ++i) {
      profiles[i].config = "small";
      profiles[i].outcome = Outcome::Profiled;
      profiles[i].metrics = {metric("dram__throughput", "DRAM throughput", i < 4 ? dram[i] : 90),
                             metric("sm__throughput", "SM throughput", 10.0 * static_cast<double>(i + 1))};
    }
    profiles[2].outcome = Outcome::NotRun;  // the rejected step was not profiled
    profiles[2].message = "not accepted by the gate";
    if (profiles.size() > 4) {
      profiles[4].outcome = Outcome::NotProfiled;
      profiles[4].reason = "insufficient-privileges";
      profiles[4].message = "run with profiling allowed";
    }
    recordProfiles(b.record, profiles);
    auto delta = [](const LineageStepRecord &s, const std::string &metricName) -> const MetricDelta * {
      for (const auto &d : s.deltas)
        if (d.metric == metricName) return &d;
      return nullptr;
    };
    const auto &steps = b.record.steps;
    QVERIFY(!delta(steps[0], "profile small: DRAM throughput (%)"));  // nothing before the first
    const auto *second = delta(steps[1], "profile small: DRAM throughput (%)");
    QVERIFY(second);
    QCOMPARE(second->before, 20.0);
    QCOMPARE(second->after, 40.0);
    QVERIFY(!steps[2].accepted);
    QVERIFY(steps[2].profile.empty());
    QVERIFY2(steps[2].profileNote.find("not accepted") != std::string::npos, steps[2].profileNote.c_str());
    const auto *fourth = delta(steps[3], "profile small: SM throughput (%)");
    QVERIFY(fourth);
    QCOMPARE(fourth->before, 20.0);  // step 2's, as step 3 was rejected
    QCOMPARE(fourth->after, 40.0);
    if (steps.size() > 4) {
      QVERIFY(steps[4].profile.empty());
      QVERIFY2(steps[4].profileNote.find("insufficient-privileges") != std::string::npos, steps[4].profileNote.c_str());
      QVERIFY(!delta(steps[4], "profile small: SM throughput (%)"));
    }
    // Stored and read back whole.
    auto library = SkillLibrary::open(dir_ / "library.sqlite");
    library->putLineage(b.record);
    const auto back = library->lineage(b.record.name);
    QVERIFY(back);
    QCOMPARE(back->steps[1].profile.size(), std::size_t{2});
    QCOMPARE(back->steps[1].profile[0].value, 40.0);
    QCOMPARE(back->steps[1].profileConfig, std::string("small"));
    QCOMPARE(back->steps[2].profileNote, steps[2].profileNote);
    QVERIFY(delta(back->steps[3], "profile small: SM throughput (%)"));
  }

  // A card is named by the feature its step adds, unless all it adds is incidental (an unroll
  // pragma, a fast intrinsic) and the step does not speak of it: then by the step's title.
  void cardIdsNameTheStep_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("file");  // the step the card was lifted from
    QTest::addColumn<QString>("id");
    QTest::newRow("welford uses __fdividef") << "layernorm" << "02-welford.cu" << "fused-single-pass-welford-statistics";
    QTest::newRow("per-warp bins unroll") << "histogram" << "04-per-warp-bins.cu" << "per-warp-sub-histograms";
    QTest::newRow("unrolled last warp says so") << "reduce-sum" << "04-unroll-last-warp.cu" << "loop-unrolling";
    QTest::newRow("cp.async") << "gemm-bf16" << "05-cp-async-double-buffer.cu" << "cp-async";
  }

  void cardIdsNameTheStep() {
    QFETCH(QString, task);
    QFETCH(QString, file);
    QFETCH(QString, id);
    const auto b = build(task.toStdString());
    std::string ids;
    for (const auto &c : liftCards(b.record, b.task)) {
      ids += c.id + " (" + c.anchor + ")\n";
      if (c.anchor.find(file.toStdString()) != std::string::npos) {
        QCOMPARE(QString::fromStdString(c.id), id);
        return;
      }
    }
    QFAIL(("no card from " + file.toStdString() + ":\n" + ids).c_str());
  }

  void cardsLiftedFromALineage() {
    const auto b = build("gemm-bf16", 7);
    const auto cards = liftCards(b.record, b.task);
    QVERIFY(cards.size() >= 5);
    const auto it = std::find_if(cards.begin(), cards.end(), [](const SkillCard &c) { return c.id == "cp-async"; });
    QVERIFY2(it != cards.end(), cards.front().id.c_str());
    const auto &c = *it;
    QVERIFY(c.missingCategories().empty());
    QCOMPARE(c.scope.cases, (std::vector<std::string>{"gemm"}));
    QCOMPARE(c.scope.platforms, (std::vector<std::string>{"sm_90"}));
    QVERIFY(std::find(c.providedFeatures.begin(), c.providedFeatures.end(), "cp-async") != c.providedFeatures.end());
    QVERIFY2(c.preconditions[4].find("sm_80") != std::string::npos, c.preconditions[4].c_str());
    QVERIFY2(c.preconditions[0].find("bf16") != std::string::npos, c.preconditions[0].c_str());
    QVERIFY(c.afterCode().find("cp.async") != std::string::npos || c.afterCode().find("cp_async") != std::string::npos);
    QVERIFY(!c.beforeCode().empty());
    QVERIFY2(c.anchor.find("05-cp-async-double-buffer.cu") != std::string::npos, c.anchor.c_str());
    // One measurement per configuration, step 4 -> 5: twice as fast.
    QCOMPARE(c.evidence.size(), b.task.configs.size());
    QCOMPARE(c.measuredSpeedup(), 2.0);
    // The card after which step 7 was rejected carries it as risk.
    const auto withRisk = std::find_if(cards.begin(), cards.end(), [](const SkillCard &k) {
      return std::any_of(k.evidence.begin(), k.evidence.end(), [](const CardEvidence &e) { return e.kind == "rejected-step"; });
    });
    QVERIFY(withRisk != cards.end());
    QVERIFY2(withRisk->section("Risk").find("was rejected: incorrect") != std::string::npos, withRisk->section("Risk").c_str());
    // A lifted card is a valid SKILL.md and comes back the same.
    for (const auto &card : cards) {
      const auto again = readSkillMarkdown(writeSkillMarkdown(card), card.id);
      QVERIFY2(again.card && *again.card == card, card.id.c_str());
    }
  }

  // The cards every bundled lineage gives (printed for the reader; each is a valid card).
  void cardsOfEveryBundledLineage() {
    for (const auto &entry : fs::directory_iterator(kernelsDir())) {
      if (!fs::exists(entry.path() / "lineage" / "lineage.toml")) continue;
      const auto b = build(entry.path().filename().string());
      const auto cards = liftCards(b.record, b.task);
      QVERIFY2(!cards.empty(), entry.path().c_str());
      std::string ids;
      for (const auto &c : cards) {
        ids += " " + c.id;
        QVERIFY2(validSkillId(c.id), c.id.c_str());
        QVERIFY2(c.missingCategories().empty(), c.id.c_str());
        // For the reader: the cards as SKILL.md under the test output folder.
        fs::create_directories(dir_ / b.task.name / c.id);
        std::ofstream(dir_ / b.task.name / c.id / "SKILL.md") << writeSkillMarkdown(c);
      }
      qInfo("%s:%s", entry.path().filename().c_str(), ids.c_str());
    }
  }

  void libraryStoresLineagesAndCards() {
    auto lib = SkillLibrary::open(dir_ / "library.sqlite");
    auto b = build("gemm-bf16");
    b.record.id = lib->putLineage(b.record);
    for (const auto &c : liftCards(b.record, b.task)) lib->proposeCard(c, "test", "gemm-bf16");
    const auto stored = lib->lineage("gemm-bf16", true);
    QVERIFY(stored);
    QCOMPARE(stored->steps.size(), b.record.steps.size());
    QCOMPARE(stored->steps[3].source, b.sources[3]);
    QCOMPARE(stored->steps[3].figures, b.record.steps[3].figures);
    QCOMPARE(lib->lineages().size(), std::size_t{1});
    QCOMPARE(lib->lineages().front().acceptedSteps(), b.record.acceptedSteps());
    const auto card = lib->card("cp-async");
    QVERIFY(card);
    QVERIFY(card->status == CardStatus::Proposed);
    const auto evidenceBefore = card->evidence.size();

    // The same lineage built again replaces its evidence instead of adding to it.
    b.record.builtAt = "2026-12-04T00:00:00.000Z";
    lib->putLineage(b.record);
    for (const auto &c : liftCards(b.record, b.task)) lib->proposeCard(c, "test", "again");
    QCOMPARE(lib->card("cp-async")->evidence.size(), evidenceBefore);
    QCOMPARE(lib->lineages().size(), std::size_t{1});

    // Another lineage with the same transition merges into the card: evidence from both.
    auto other = b.record;
    other.name = "gemm-bf16@copy";
    lib->putLineage(other);
    for (const auto &c : liftCards(other, b.task)) lib->proposeCard(c, "test", "copy");
    QCOMPARE(lib->card("cp-async")->evidence.size(), 2 * evidenceBefore);
    const auto audit = lib->audit("cp-async");
    QCOMPARE(audit.size(), std::size_t{3});
    QCOMPARE(audit[0].action, std::string("proposed"));
    QCOMPARE(audit[2].action, std::string("merged"));

    // Review: who, what, when.
    // Review: who, what, when. A reviewer approves; the gate admits: two statuses, two actions.
    lib->setStatus("cp-async", CardStatus::Approved, "reviewer:ada", "checked the carrier");
    lib->setStatus("wmma", CardStatus::Rejected, "gate", "did not reproduce");
    QVERIFY(lib->card("cp-async")->status == CardStatus::Approved);
    QCOMPARE(lib->audit("cp-async").back().who, std::string("reviewer:ada"));
    QCOMPARE(lib->audit("cp-async").back().action, std::string("approved"));
    QCOMPARE(lib->audit("cp-async").back().detail, std::string("proposed -> approved: checked the carrier"));
    QVERIFY(lib->card("cp-async")->verification.back().find("approved by reviewer:ada") != std::string::npos);
    QVERIFY_THROWS_EXCEPTION(StoreError, lib->setStatus("no-such-card", CardStatus::Admitted, "x", ""));

    // Filters.
    QCOMPARE(lib->cards(CardFilter{CardStatus::Approved, "", ""}).size(), std::size_t{1});
    QCOMPARE(lib->cards(CardFilter{CardStatus::Admitted, "", ""}).size(), std::size_t{0});
    QCOMPARE(lib->cards(CardFilter{std::nullopt, "softmax", ""}).size(), std::size_t{0});
    // gemm-bf16's 12 steps give 11 cards (one per step after the first), each scoped to gemm.
    QCOMPARE(lib->cards().size(), std::size_t{11});
    QCOMPARE(lib->cards(CardFilter{std::nullopt, "gemm", ""}).size(), std::size_t{11});
    QCOMPARE(lib->cards(CardFilter{std::nullopt, "", "4-STAGE"}).size(), std::size_t{1});

    // A gated application adds evidence, success or failure.
    CardEvidence applied;
    applied.kind = "application";
    applied.task = "sgemm";
    applied.success = false;
    applied.note = "incorrect";
    lib->addEvidence("cp-async", applied, "gate");
    QCOMPARE(lib->card("cp-async")->evidence.back(), applied);
    QCOMPARE(lib->audit("cp-async").back().action, std::string("evidence"));

    // Reopened from another connection: everything is on disk.
    lib.reset();
    auto again = SkillLibrary::open(dir_ / "library.sqlite");
    QVERIFY(again->card("cp-async")->status == CardStatus::Approved);
    QCOMPARE(again->lineage("gemm-bf16@copy")->steps.size(), b.record.steps.size());
  }

  void importIsAllOrNothing() {
    auto lib = SkillLibrary::open(dir_ / "library.sqlite");
    SkillCard good;
    good.id = "good";
    SkillCard bad;
    bad.id = "Bad Id";
    QVERIFY_THROWS_EXCEPTION(StoreError,
                             lib->importCards({{good, "a.md"}, {bad, "b.md"}}, SkillLibrary::KnownCards::Merge, "test"));
    QVERIFY(!lib->card("good"));
  }

  // A file never sets a card's record (issue 45, 3): a new card enters as proposed with no
  // evidence or log whatever its file says; a known id is refused (nothing stored) or merged (the
  // file's text; the status, evidence and log kept), each with its audit row; an edit keeps the
  // record too. Only review and the gate change a status.
  void importAndEditKeepTheRecord() {
    auto lib = SkillLibrary::open(dir_ / "library.sqlite");
    const std::string file =
        "---\nskill_id: tiles\nintent: Tile in shared memory\npreconditions: ['Data types: f32']\n"
        "scope: {cases: [gemm], languages: [cuda], platforms: ['*']}\nstatus: admitted\n"
        "evidence:\n- kind: application\n  speedup: 50.0\nverification: ['admitted by nobody']\n---\n# Overview\n\nFirst.\n";
    const auto read = readSkillMarkdown(file, "cards/tiles/SKILL.md");
    QVERIFY(read.card);
    QVERIFY(read.card->status == CardStatus::Admitted);  // what the file says
    auto result = lib->importCards({{*read.card, "cards/tiles/SKILL.md"}}, SkillLibrary::KnownCards::Refuse, "test");
    QCOMPARE(result.added, std::vector<std::string>{"tiles"});
    auto stored = lib->card("tiles");
    QVERIFY(stored->status == CardStatus::Proposed);
    QVERIFY(stored->evidence.empty());
    QVERIFY(stored->verification.empty());
    QCOMPARE(stored->intent, std::string("Tile in shared memory"));
    QCOMPARE(lib->audit("tiles").back().action, std::string("imported"));
    QCOMPARE(lib->audit("tiles").back().detail, std::string("from cards/tiles/SKILL.md"));
    // What the file claimed and the card did not take, at the keys' lines.
    const auto claims = recordClaims(read, "cards/tiles/SKILL.md", *stored);
    QCOMPARE(claims.size(), std::size_t{3});
    QCOMPARE(claims[0].text(),
             std::string("cards/tiles/SKILL.md:6: status 'admitted' is not taken from the file: the card is proposed (a "
                         "status changes only by review: kwb skills approve or reject, or the Skills view; or by the "
                         "gate: kwb skills apply)"));
    QCOMPARE(claims[1].text(), std::string("cards/tiles/SKILL.md:7: evidence (1 measurement) is not taken from the file: "
                                           "the card keeps its 0 measurements (evidence comes only from measurements "
                                           "this library made)"));
    QCOMPARE(claims[2].line, 10);

    // Its record grows by review and measurement only.
    lib->setStatus("tiles", CardStatus::Rejected, "reviewer:ada", "no gain on sm_90");
    CardEvidence measured;
    measured.kind = "application";
    measured.speedup = 1.1;
    lib->addEvidence("tiles", measured, "gate");
    const auto record = *lib->card("tiles");
    QCOMPARE(record.verification.size(), std::size_t{1});

    // The same id again: refused, and nothing else of that import is stored either.
    SkillCard fresh;
    fresh.id = "fresh";
    auto again = *read.card;
    again.intent = "Tile in shared memory, twice";
    result = lib->importCards({{fresh, "f.md"}, {again, "cards/tiles/SKILL.md"}}, SkillLibrary::KnownCards::Refuse, "test");
    QCOMPARE(result.known, std::vector<std::string>{"tiles"});
    QVERIFY(result.added.empty());
    QVERIFY(!lib->card("fresh"));
    QCOMPARE(lib->card("tiles")->intent, std::string("Tile in shared memory"));
    QCOMPARE(lib->audit("tiles").size(), std::size_t{3});  // imported, rejected, evidence

    // Merged: the file's text; the status, evidence and log kept.
    result = lib->importCards({{fresh, "f.md"}, {again, "cards/tiles/SKILL.md"}}, SkillLibrary::KnownCards::Merge, "test");
    QCOMPARE(result.added, std::vector<std::string>{"fresh"});
    QCOMPARE(result.merged, std::vector<std::string>{"tiles"});
    stored = lib->card("tiles");
    QCOMPARE(stored->intent, std::string("Tile in shared memory, twice"));
    QVERIFY(stored->status == CardStatus::Rejected);
    QCOMPARE(stored->evidence, record.evidence);
    QCOMPARE(stored->verification, record.verification);
    QCOMPARE(lib->audit("tiles").back().action, std::string("merged"));
    QCOMPARE(lib->audit("tiles").back().detail,
             std::string("from cards/tiles/SKILL.md: its text; status, evidence and verification log kept"));

    // An edit: its text; the record as stored, whatever the edited card holds.
    auto edited = *stored;
    edited.setSection("Risk", "Bank conflicts without padding.\n");
    edited.status = CardStatus::Admitted;
    edited.evidence.clear();
    edited.verification = {"forged"};
    lib->editCard(edited, "reviewer:ada", "in a test");
    stored = lib->card("tiles");
    QCOMPARE(stored->section("Risk"), std::string("Bank conflicts without padding.\n"));
    QVERIFY(stored->status == CardStatus::Rejected);
    QCOMPARE(stored->evidence, record.evidence);
    QCOMPARE(stored->verification, record.verification);
    QCOMPARE(lib->audit("tiles").back().action, std::string("edited"));
    SkillCard unknown;
    unknown.id = "unknown";
    QVERIFY_THROWS_EXCEPTION(StoreError, lib->editCard(unknown, "x", ""));

    // A lifted card proposed with another status still enters as proposed.
    SkillCard lifted;
    lifted.id = "lifted";
    lifted.status = CardStatus::Admitted;
    lib->proposeCard(lifted, "test", "a lineage");
    QVERIFY(lib->card("lifted")->status == CardStatus::Proposed);
  }

  // Issue 47, 3 and 4: read forward, every step pays. A step correct everywhere but slower than
  // its parent at the largest configuration is rejected with both times, becomes risk evidence of
  // its parent's card (not a card), and what it added is proposed as a conflict for review.
  // De-optimization risks written into lineage.toml become the card's risk entries.
  void aStepThatDoesNotPayIsRejected() {
    auto b = build("sgemm");
    std::vector<EvaluationResult> results;
    const std::vector<double> factors = {1, 2, 4, 3, 8, 16, 32, 64, 128, 256, 512, 1024};  // step 4 slower than step 3
    for (std::size_t i = 0; i < b.steps.size(); ++i) {
      const auto t = taskForStep(b.task, b.steps[i]);
      results.push_back(test::measuredStep(b.task, t.launch ? t.launch->kernel : "k", 8.0, factors.at(i), 32));
    }
    b.steps[2].risks = {"de-optimization request 5 took out tiles and was rejected: incorrect"};
    const auto record = recordLineage(b.task, b.steps, b.sources, results, "sgemm-pays", "bundled");
    const auto &slow = record.steps.at(3);
    QVERIFY(!slow.accepted);
    QVERIFY2(slow.reason.rfind("does not pay: ", 0) == 0 && slow.reason.find("of step 3, its parent") != std::string::npos,
             slow.reason.c_str());
    QVERIFY(record.steps.at(4).accepted);  // the next one pays against step 3
    const auto cards = liftCards(record, b.task);
    const SkillCard *parent = nullptr;
    for (const auto &c : cards)
      for (const auto &e : c.evidence)
        if (e.kind == "lineage-step" && e.step == 3) parent = &c;
    QVERIFY(parent);
    QVERIFY2(parent->section("Risk").find("was rejected: does not pay") != std::string::npos, parent->section("Risk").c_str());
    QVERIFY2(parent->section("Risk").find("de-optimization request 5") != std::string::npos, parent->section("Risk").c_str());
    bool rejectedEvidence = false;
    for (const auto &e : parent->evidence) rejectedEvidence = rejectedEvidence || (e.kind == "rejected-step" && e.step == 4);
    QVERIFY(rejectedEvidence);
    const auto added = detectFeatures(b.sources[3]);
    const auto had = detectFeatures(b.sources[2]);
    const bool adds = std::any_of(added.begin(), added.end(), [&](const std::string &f) { return !had.count(f); });
    QCOMPARE(parent->extra.contains("proposed_conflicts"), adds);
    for (const auto &c : cards)
      for (const auto &e : c.evidence) QVERIFY(!(e.kind == "lineage-step" && e.step == 4));  // not a card
  }

  // Schema 3: a library where a reviewer's approval was stored as "admitted" reads it as
  // "approved"; the gate's admission stays "admitted", its audit action renamed.
  void reviewerAdmissionsBecomeApprovals() {
    const auto path = dir_ / "v2.sqlite";
    {
      Database db(path);
      migrateForward(db, {libraryMigrations().at(0), libraryMigrations().at(1)});
      for (const char *id : {"read", "gated", "reopened"})
        db.exec(std::string("INSERT INTO skill_cards(id, status, card_json, created_at, updated_at) VALUES('") + id +
                "', 'admitted', '{\"skill_id\":\"" + id + "\",\"status\":\"admitted\"}', 'x', 'x')");
      db.exec("INSERT INTO card_audit(card_id, at, who, action, detail) VALUES"
              "('read', 'a', 'reviewer:ada', 'approved', 'proposed -> admitted'),"
              "('gated', 'a', 'gate', 'approved', 'proposed -> admitted'),"
              "('reopened', 'a', 'gate', 'approved', 'proposed -> admitted'),"
              "('reopened', 'b', 'reviewer:bo', 'approved', 'admitted -> admitted')");
      QCOMPARE(readSchemaVersion(db), 2);
    }
    auto lib = SkillLibrary::open(path);
    QCOMPARE(toString(lib->card("read")->status), std::string("approved"));
    QCOMPARE(toString(lib->card("gated")->status), std::string("admitted"));
    QCOMPARE(toString(lib->card("reopened")->status), std::string("admitted"));  // the gate's proof stands after a reviewer's word
    QCOMPARE(lib->audit("gated").back().action, std::string("admitted"));
    QCOMPARE(lib->audit("read").back().action, std::string("approved"));
    QCOMPARE(lib->cards(CardFilter{CardStatus::Approved, "", ""}).size(), std::size_t{1});
  }

  void wildcards() {
    QVERIFY(wildcardMatch("*", "gemm"));
    QVERIFY(wildcardMatch("*attention*", "flash-attention-fwd"));
    QVERIFY(wildcardMatch("GEMM", "gemm"));
    QVERIFY(wildcardMatch("g*m", "gemm"));
    QVERIFY(!wildcardMatch("g*x", "gemm"));
    QVERIFY(!wildcardMatch("gemm", "gemm2"));
    QVERIFY(anyWildcardMatches({}, "x"));
    QVERIFY(!anyWildcardMatches({"softmax"}, "gemm"));
  }
};

QTEST_GUILESS_MAIN(TestSkillLibrary)
#include "tst_skill_library.moc"
