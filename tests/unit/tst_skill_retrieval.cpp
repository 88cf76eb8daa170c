// Skill retrieval (core/lineage/skill_retrieval.h): which cards a session hands its agent. Scope
// wildcards and platforms; the lineage walk over the cards lifted from the bundled sgemm and
// gemm-bf16 lineages (stored in a real library), with the bundled lineage sources as the current
// kernel; text and shape similarity; the ranking order; the prompt section and its budget.
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>

#include "core/lineage/kernel_features.h"
#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_library.h"
#include "core/lineage/skill_markdown.h"
#include "core/lineage/skill_retrieval.h"
#include "core/task/manifest_parser.h"
#include "helpers/measured_lineage.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;
using namespace kwb;

namespace {

fs::path publishedLike() { return fs::path(KWB_SOURCE_DIR) / "tests/fixtures/skills/published-like"; }

std::string lineageSource(const std::string &task, const std::string &file) {
  const auto path = test::kernelsDir() / task / "lineage" / file;
  const std::string text = test::readFile(path);
  if (text.empty()) qFatal("cannot read %s", path.string().c_str());
  return text;
}

SkillCard publishedCard(const std::string &folder) {
  const auto path = publishedLike() / folder / "SKILL.md";
  auto r = readSkillMarkdown(test::readFile(path), path.string());
  if (!r.card) qFatal("cannot read %s", path.string().c_str());
  return *r.card;
}

std::vector<std::string> split(const QString &list) {
  std::vector<std::string> out;
  for (const auto &s : list.split(',', Qt::SkipEmptyParts)) out.push_back(s.trimmed().toStdString());
  return out;
}

// "M=512,N=512" -> sizes.
ShapeSizes sizes(const QString &text) {
  ShapeSizes out;
  for (const auto &part : split(text)) {
    const auto eq = part.find('=');
    out[part.substr(0, eq)] = std::stoll(part.substr(eq + 1));
  }
  return out;
}

CardEvidence measurement(const std::string &lineage, int step, const std::string &task, const std::string &config,
                         double speedup) {
  CardEvidence e;
  e.kind = lineage.empty() ? "application" : "lineage-step";
  e.lineage = lineage;
  e.step = step;
  e.task = task;
  e.config = config;
  e.beforeMs = speedup;
  e.afterMs = 1;
  e.speedup = speedup;
  return e;
}

// A card as a reviewer might write one: the fields retrieval reads, with a carrier.
SkillCard card(const std::string &id, const std::string &intent, std::vector<std::string> provides = {},
               std::vector<std::string> requires_ = {}, std::vector<std::string> conflicts = {}) {
  SkillCard c;
  c.id = id;
  c.intent = intent;
  c.scope = {{"gemm"}, {"cuda"}, {"sm_90"}};
  c.providedFeatures = std::move(provides);
  c.requiredFeatures = std::move(requires_);
  c.conflictingFeatures = std::move(conflicts);
  c.preconditions = {"Data types: f32", "Layout: row-major", "Storage: 16 KiB shared", "Pipeline: none",
                     "Hardware: any"};
  c.status = CardStatus::Admitted;  // a proven card: the only kind retrieval takes by default
  c.setSection("Overview", "\n" + intent + "\n\n");
  c.setSection("Before", "\n" + fencedCode("float x = a[i]; // " + id + " before\n") + "\n");
  c.setSection("After", "\n" + fencedCode("float4 x = a4[i]; // " + id + " after\n") + "\n");
  return c;
}

std::string ids(const std::vector<RetrievedCard> &cards) {
  std::string out;
  for (const auto &c : cards) out += (out.empty() ? "" : ",") + c.card.id;
  return out;
}

std::string describe(const Retrieval &r) {
  std::string out = "features {";
  for (const auto &f : r.kernelFeatures) out += f + " ";
  out += "}\nchosen: " + ids(r.chosen) + "\n";
  for (const auto &c : r.chosen) out += "  + " + c.card.id + ": " + c.why + "\n";
  for (const auto &s : r.skipped) out += "  - " + s.id + ": " + s.reason + "\n";
  return out;
}

const RetrievedCard *chosen(const Retrieval &r, const std::string &id) {
  for (const auto &c : r.chosen)
    if (c.card.id == id) return &c;
  return nullptr;
}

std::string skipReason(const Retrieval &r, const std::string &id) {
  for (const auto &s : r.skipped)
    if (s.id == id) return s.reason;
  return {};
}

// Each line that opens or closes a fence, in order: an even count means none is cut.
int fenceLines(const std::string &text) {
  int n = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (codeFenceOf(text.substr(pos, end - pos))) ++n;
    pos = end + 1;
  }
  return n;
}

}  // namespace

class TestSkillRetrieval : public QObject {
  Q_OBJECT

  // The cards lifted from the bundled sgemm and gemm-bf16 lineages, merged in a real library.
  std::vector<SkillCard> bundled_;
  ConfigShapes shapes_;
  std::string sgemmText_, gemmText_;

  RetrievalQuery gemmQuery(const std::string &kernel) const {
    RetrievalQuery q;
    q.operatorClass = "gemm";
    q.platform = "sm_90";
    q.problemText = sgemmText_;
    q.shape = shapes_.at("sgemm").at("h200");
    q.kernelSource = kernel;
    q.configShapes = shapes_;
    q.limit = 0;
    return q;
  }

 private slots:
  void initTestCase() {
    const auto dir = test::outputDir() / "skill-retrieval";
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto library = SkillLibrary::open(dir / "library.sqlite");
    std::vector<Task> tasks;
    for (const char *name : {"sgemm", "gemm-bf16"}) {
      const auto m = test::measuredLineage(name);
      library->putLineage(m.record);
      for (const auto &c : liftCards(m.record, m.task)) library->proposeCard(c, "test", "lifted");
      tasks.push_back(m.task);
    }
    bundled_ = library->cards();
    QVERIFY(bundled_.size() >= 10);
    // Lifted cards are proposed; the gate would admit them (the stages under test come after it).
    for (auto &c : bundled_) {
      QVERIFY(c.status == CardStatus::Proposed);
      c.status = CardStatus::Admitted;
    }
    shapes_ = configShapesOf(tasks);
    sgemmText_ = tasks[0].name + " " + tasks[0].description;
    gemmText_ = tasks[1].name + " " + tasks[1].description;
  }

  void terms() {
    QCOMPARE(similarityTerms("The Shared-Memory tiles, of a 128x128 block!"),
             (std::vector<std::string>{"shared", "memory", "tile", "128x128", "block"}));
    QCOMPARE(similarityTerms("class bias ms 4s"), (std::vector<std::string>{"class", "bia", "ms", "4s"}));
    const auto c = card("x", "Stage the tiles of A and B in shared memory");
    QCOMPARE(textSimilarity("shared memory tiles", c), textSimilarity("Shared-memory TILE", c));
    QVERIFY(textSimilarity("shared memory tiles", c) > 0.3);
    QCOMPARE(textSimilarity("warp shuffle reduction", c), 0.0);
    QCOMPARE(textSimilarity("", c), 0.0);
    // The card's problem (its Scope section) counts: the sgemm cards are closer to sgemm's text.
    const auto sgemmCard = std::find_if(bundled_.begin(), bundled_.end(), [](const SkillCard &k) {
      return k.section("Scope").find("sgemm") != std::string::npos && k.section("Scope").find("gemm-bf16") == std::string::npos;
    });
    const auto bf16Card = std::find_if(bundled_.begin(), bundled_.end(), [](const SkillCard &k) {
      return k.section("Scope").find("gemm-bf16") != std::string::npos;
    });
    QVERIFY(sgemmCard != bundled_.end() && bf16Card != bundled_.end());
    QVERIFY2(textSimilarity(sgemmText_, *sgemmCard) > textSimilarity(sgemmText_, *bf16Card),
             (sgemmCard->id + " vs " + bf16Card->id).c_str());
    QVERIFY(textSimilarity(gemmText_, *bf16Card) > textSimilarity(gemmText_, *sgemmCard));
  }

  void platforms_data() {
    QTest::addColumn<QString>("card");
    QTest::addColumn<QString>("arch");
    QTest::addColumn<bool>("matches");
    QTest::newRow("same") << "sm_90" << "sm_90" << true;
    QTest::newRow("a on card") << "sm_90a" << "sm_90" << true;
    QTest::newRow("a on device") << "sm_90" << "sm_90a" << true;
    QTest::newRow("other arch") << "sm_90" << "sm_80" << false;
    QTest::newRow("family") << "hopper" << "sm_90" << true;
    QTest::newRow("family, a") << "Hopper" << "sm_90a" << true;
    QTest::newRow("other family") << "ampere" << "sm_90" << false;
    QTest::newRow("ampere 86") << "ampere" << "sm_86" << true;
    QTest::newRow("wildcard") << "sm_8*" << "sm_86" << true;
    QTest::newRow("wildcard, other") << "sm_8*" << "sm_90" << false;
    QTest::newRow("star") << "*" << "sm_120" << true;
    QTest::newRow("upper case") << "SM_90" << "sm_90" << true;
  }

  void platforms() {
    QFETCH(QString, card);
    QFETCH(QString, arch);
    QFETCH(bool, matches);
    QCOMPARE(platformMatches(card.toStdString(), arch.toStdString()), matches);
  }

  // Scope: the card's cases, languages and platforms (wildcards) against the query's.
  void scopeWildcards_data() {
    QTest::addColumn<QString>("cases");
    QTest::addColumn<QString>("languages");
    QTest::addColumn<QString>("platforms");
    QTest::addColumn<QString>("operatorClass");
    QTest::addColumn<QString>("language");
    QTest::addColumn<QString>("platform");
    QTest::addColumn<QString>("skipped");  // the reason's start; "" when chosen
    QTest::newRow("exact") << "gemm" << "cuda" << "sm_90" << "gemm" << "cuda" << "sm_90" << "";
    QTest::newRow("star everywhere") << "*" << "*" << "*" << "softmax" << "cuda" << "sm_80" << "";
    QTest::newRow("empty lists") << "" << "" << "" << "softmax" << "cuda" << "sm_80" << "";
    QTest::newRow("infix wildcard") << "gemm,*attention*" << "cuda" << "sm_90" << "flash-attention" << "cuda"
                                    << "sm_90" << "";
    QTest::newRow("prefix wildcard") << "conv*" << "cuda" << "*" << "conv2d" << "cuda" << "sm_90" << "";
    QTest::newRow("case") << "GEMM" << "CUDA" << "sm_90" << "gemm" << "cuda" << "sm_90" << "";
    QTest::newRow("other case") << "gemm" << "cuda" << "sm_90" << "softmax" << "cuda" << "sm_90"
                                << "scope: cases {gemm} do not match softmax";
    QTest::newRow("wildcard, other case") << "conv*" << "cuda" << "*" << "gemm" << "cuda" << "sm_90"
                                          << "scope: cases {conv*} do not match gemm";
    QTest::newRow("language") << "gemm" << "triton" << "sm_90" << "gemm" << "cuda" << "sm_90"
                              << "scope: languages {triton} do not include cuda";
    QTest::newRow("platform") << "gemm" << "cuda" << "sm_90a" << "gemm" << "cuda" << "sm_80"
                              << "scope: platforms {sm_90a} do not include sm_80";
    QTest::newRow("platform a") << "gemm" << "cuda" << "sm_90a" << "gemm" << "cuda" << "sm_90" << "";
    QTest::newRow("family") << "gemm" << "cuda" << "ampere,hopper" << "gemm" << "cuda" << "sm_90" << "";
    QTest::newRow("any platform asked") << "gemm" << "cuda" << "sm_90" << "gemm" << "cuda" << "" << "";
    QTest::newRow("any class asked") << "gemm" << "cuda" << "sm_90" << "" << "cuda" << "sm_90" << "";
  }

  void scopeWildcards() {
    QFETCH(QString, cases);
    QFETCH(QString, languages);
    QFETCH(QString, platforms);
    QFETCH(QString, operatorClass);
    QFETCH(QString, language);
    QFETCH(QString, platform);
    QFETCH(QString, skipped);
    auto c = card("scoped", "A card");
    c.scope = {split(cases), split(languages), split(platforms)};
    RetrievalQuery q;
    q.operatorClass = operatorClass.toStdString();
    q.language = language.toStdString();
    q.platform = platform.toStdString();
    const auto r = retrieveCards({c}, q);
    if (skipped.isEmpty()) {
      QVERIFY2(r.skipped.empty() && r.chosen.size() == 1, describe(r).c_str());
    } else {
      QVERIFY2(r.chosen.empty() && r.skipped.size() == 1, describe(r).c_str());
      QCOMPARE(r.skipped[0].reason, skipped.toStdString());
    }
  }

  // The published-like cards: gemm and '*attention*' on sm_90a.
  void scopeOfPublishedCards() {
    const auto tma = publishedCard("tma-multicast-loads-20260412T101500Z-3fa2c1");
    RetrievalQuery q;
    q.includeProposed = true;  // a file's card enters as proposed
    q.operatorClass = "attention";
    q.platform = "sm_90";
    QCOMPARE(ids(retrieveCards({tma}, q).chosen), std::string("tma-multicast-loads"));
    q.operatorClass = "softmax";
    const auto r = retrieveCards({tma}, q);
    QVERIFY(r.chosen.empty());
    QCOMPARE(r.skipped.at(0).reason, std::string("scope: cases {gemm, *attention*} do not match softmax"));
  }

  void statusRules() {
    auto admitted = card("admitted", "shared memory tiles"), proposed = card("proposed", "shared memory tiles"),
         rejected = card("rejected", "shared memory tiles");
    admitted.status = CardStatus::Admitted;
    rejected.status = CardStatus::Rejected;
    // The rejected card is the best match on every score, and still never chosen.
    rejected.evidence.push_back(measurement("", 0, "t", "M=4096,N=4096,K=4096", 9.0));
    RetrievalQuery q;
    q.problemText = "shared memory tiles";
    q.shape = {{"M", 4096}, {"N", 4096}, {"K", 4096}};
    proposed.status = CardStatus::Proposed;
    auto approved = card("approved", "shared memory tiles");
    approved.status = CardStatus::Approved;
    // By default: proven cards only, the gate's before a reviewer's.
    auto r = retrieveCards({rejected, proposed, approved, admitted}, q);
    QCOMPARE(ids(r.chosen), std::string("admitted,approved"));
    QCOMPARE(skipReason(r, "proposed"),
             std::string("proposed: not admitted by the gate nor approved by a reviewer (proven cards only)"));
    QCOMPARE(skipReason(r, "rejected"), std::string("rejected"));
    // Asked for: proposed cards too, after the proven ones; rejected never.
    q.includeProposed = true;
    r = retrieveCards({rejected, proposed, approved, admitted}, q);
    QCOMPARE(ids(r.chosen), std::string("admitted,approved,proposed"));
    QCOMPARE(r.skipped, (std::vector<SkippedCard>{{"rejected", "rejected"}}));
  }

  // Alone: provides all present, a conflict present, a requirement missing, a feature the
  // platform lacks. The kernel is sgemm's step 3 (shared-memory tiles, nothing more).
  void judgedAlone_data() {
    QTest::addColumn<QString>("provides");
    QTest::addColumn<QString>("required");
    QTest::addColumn<QString>("conflicts");
    QTest::addColumn<QString>("platform");
    QTest::addColumn<QString>("skipped");  // "" when chosen
    QTest::newRow("open") << "register-tiles" << "shared-memory-tiles" << "wmma" << "sm_90" << "";
    QTest::newRow("nothing declared") << "" << "" << "" << "sm_90" << "";
    QTest::newRow("already has") << "shared-memory-tiles" << "" << "" << "sm_90"
                                 << "already has shared-memory-tiles";
    QTest::newRow("has only part") << "shared-memory-tiles,register-tiles" << "" << "" << "sm_90" << "";
    QTest::newRow("conflicts") << "register-tiles" << "" << "atomics,shared-memory-tiles" << "sm_90"
                               << "conflicts with shared-memory-tiles the kernel has";
    QTest::newRow("requires") << "register-tiles" << "shared-memory-tiles,vectorized-access,warp-shuffle" << ""
                              << "sm_90" << "requires vectorized-access, warp-shuffle the kernel lacks";
    QTest::newRow("too new") << "cp-async" << "" << "" << "sm_75"
                             << "needs sm_80 or newer for cp-async; the platform is sm_75";
    QTest::newRow("arch-specific") << "wgmma,tma" << "" << "" << "sm_100"
                                   << "needs sm_90a (those GPUs only) for wgmma; the platform is sm_100";
    QTest::newRow("arch-specific here") << "wgmma,tma" << "" << "" << "sm_90" << "";
  }

  void judgedAlone() {
    QFETCH(QString, provides);
    QFETCH(QString, required);
    QFETCH(QString, conflicts);
    QFETCH(QString, platform);
    QFETCH(QString, skipped);
    const std::string kernel = lineageSource("sgemm", "03-smem-tiling.cu");
    const auto features = detectFeatures(kernel);
    QVERIFY(features.count("shared-memory-tiles") && !features.count("register-tiles") &&
            !features.count("vectorized-access") && !features.count("warp-shuffle"));
    auto c = card("alone", "A card", split(provides), split(required), split(conflicts));
    c.scope.platforms = {"*"};
    RetrievalQuery q;
    q.operatorClass = "gemm";
    q.platform = platform.toStdString();
    q.kernelSource = kernel;
    const auto r = retrieveCards({c}, q);
    if (skipped.isEmpty()) {
      QVERIFY2(r.chosen.size() == 1, describe(r).c_str());
      QCOMPARE(r.chosen[0].why.substr(0, 14), std::string("on no lineage "));
    } else {
      QVERIFY2(r.chosen.empty(), describe(r).c_str());
      QCOMPARE(skipReason(r, "alone"), skipped.toStdString());
    }
  }

  // A path of five cards on one lineage, walked from the kernel's position: sgemm step 3 has
  // shared-memory tiles, so step 2 (nothing the code shows) is passed and step 3 is had; step 4
  // is open; step 5 lacks a requirement and stops the walk, so step 6, open on its own, is not
  // reached, unless another lineage reaches it.
  void walkStopsOnAPath() {
    const std::string kernel = lineageSource("sgemm", "03-smem-tiling.cu");
    auto coalesce = card("coalesce", "coalesced mapping");
    auto tiles = card("tiles", "shared memory tiles", {"shared-memory-tiles"});
    auto regs = card("regs", "register tiles", {"register-tiles"}, {"shared-memory-tiles"});
    auto vec = card("vec", "vectorized loads", {"vectorized-access"}, {"register-tiles"});
    auto dbuf = card("dbuf", "double buffer", {"double-buffer"});
    auto flat = card("flat", "no lineage at all", {"warp-shuffle"});
    int step = 2;
    for (auto *c : {&coalesce, &tiles, &regs, &vec, &dbuf})
      c->evidence.push_back(measurement("path", step++, "sgemm", "small", 2.0));
    RetrievalQuery q;
    q.operatorClass = "gemm";
    q.kernelSource = kernel;
    q.limit = 0;
    const std::vector<SkillCard> cards = {coalesce, tiles, regs, vec, dbuf, flat};
    auto r = retrieveCards(cards, q);
    QVERIFY2(detectFeatures(kernel).count("double-buffer") == 0, describe(r).c_str());
    std::vector<std::string> got;
    for (const auto &c : r.chosen) got.push_back(c.card.id);
    std::sort(got.begin(), got.end());
    QCOMPARE(got, (std::vector<std::string>{"flat", "regs"}));
    QCOMPARE(skipReason(r, "coalesce"),
             std::string("passed: the kernel is at step 3 of lineage path or beyond (it has what tiles provides)"));
    QCOMPARE(skipReason(r, "tiles"), std::string("already has shared-memory-tiles"));
    QCOMPARE(skipReason(r, "vec"), std::string("requires register-tiles the kernel lacks"));
    QCOMPARE(skipReason(r, "dbuf"), std::string("beyond vec (step 5 of lineage path), where the walk stops: requires "
                                                  "register-tiles the kernel lacks"));
    QVERIFY2(chosen(r, "regs")->why.find("step 4 of lineage path, after step 3") == 0, chosen(r, "regs")->why.c_str());
    QCOMPARE(r.skipped.size(), std::size_t(4));

    // On a second lineage the same card comes first: that path takes it.
    auto reached = cards;
    reached[4].evidence.push_back(measurement("other", 1, "sgemm", "small", 2.0));
    r = retrieveCards(reached, q);
    QVERIFY2(chosen(r, "dbuf") && skipReason(r, "dbuf").empty(), describe(r).c_str());

    // With a kernel that has no shared memory (sgemm step 2) the walk starts at the beginning:
    // coalesce is open, tiles is open, regs lacks shared-memory-tiles and stops the walk.
    q.kernelSource = lineageSource("sgemm", "02-coalesced.cu");
    r = retrieveCards(cards, q);
    got.clear();
    for (const auto &c : r.chosen) got.push_back(c.card.id);
    std::sort(got.begin(), got.end());
    QCOMPARE(got, (std::vector<std::string>{"coalesce", "flat", "tiles"}));
    QCOMPARE(skipReason(r, "regs"), std::string("requires shared-memory-tiles the kernel lacks"));
    QVERIFY2(skipReason(r, "vec").rfind("beyond regs (step 4 of lineage path)", 0) == 0, describe(r).c_str());
  }

  // The cards lifted from the bundled lineages, with a bundled step as the kernel.
  void walkBundledLineages_data() {
    QTest::addColumn<QString>("task");
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("chosenIds");   // all of these are chosen
    QTest::addColumn<QString>("skippedIds");  // id:reason start, ';'-separated
    // The cards (liftCards): sgemm 2 global-memory-coalescing (provides nothing), 3 shared-memory-tiles,
    // 4 1d-register-blocking (requires shared-memory-tiles, provides nothing), 5 register-tiles,
    // 6 vectorized-access (requires register-tiles; also gemm-bf16 step 3, merged), 7 warp-tiling
    // (requires vectorized-access), 8 double-buffer (also gemm-bf16 step 10); gemm-bf16 2 wmma,
    // 4 mma-sync (replaces wmma: not a conflict), 5 cp-async (requires ldmatrix, mma-sync, swizzle),
    // 6 4-stage-cp-async-pipeline (requires cp-async), 7..9 (nothing new in the code), 11 wgmma
    // (replaces what step 10 had), 12 producer-consumer-warp-specialization (requires wgmma...).
    //
    // The naive kernel: the sgemm path opens with coalescing and shared-memory tiles, and stops at
    // 1d-register-blocking, which needs the tiles.
    QTest::newRow("sgemm 1") << "sgemm" << "01-naive.cu" << "global-memory-coalescing,shared-memory-tiles"
                             << "1d-register-blocking:requires shared-memory-tiles the kernel lacks;"
                                "register-tiles:beyond 1d-register-blocking (step 4 of lineage sgemm), where the walk stops;"
                                "warp-tiling:beyond 1d-register-blocking (step 4 of lineage sgemm)";
    // Shared-memory tiles: the kernel is at step 3; coalescing is behind it; register blocking next.
    QTest::newRow("sgemm 3") << "sgemm" << "03-smem-tiling.cu" << "1d-register-blocking,register-tiles"
                             << "shared-memory-tiles:already has loop-unrolling, shared-memory-tiles;"
                                "global-memory-coalescing:passed: the kernel is at step 3 of lineage sgemm;"
                                "vectorized-access:requires register-tiles the kernel lacks;"
                                "warp-tiling:beyond vectorized-access (step 6 of lineage sgemm)";
    QTest::newRow("sgemm 5") << "sgemm" << "05-blocktile-2d.cu" << "vectorized-access"
                             << "register-tiles:already has register-tiles;"
                                "1d-register-blocking:passed: the kernel is at step 5 of lineage sgemm;"
                                "warp-tiling:requires vectorized-access the kernel lacks";
    // The expert sgemm: every sgemm card is had or passed.
    QTest::newRow("sgemm 8") << "sgemm" << "08-double-buffer.cu" << ""
                             << "double-buffer:already has double-buffer;"
                                "vectorized-access:already has vectorized-access;"
                                "warp-tiling:passed: the kernel is at step 8 of lineage sgemm;"
                                "global-memory-coalescing:passed: the kernel is at step 8 of lineage sgemm";
    // WMMA from shared memory: mma.sync's card replaces wmma, which is how this kernel moves on;
    // the walk stops at cp-async, which needs what mma.sync brings.
    QTest::newRow("gemm-bf16 3") << "gemm-bf16" << "03-smem-tiles.cu" << "mma-sync"
                                 << "wmma:already has launch-bounds, loop-unrolling, shared-memory-tiles, wmma;"
                                    "cp-async:requires ldmatrix, mma-sync, swizzle the kernel lacks";
    QTest::newRow("gemm-bf16 4") << "gemm-bf16" << "04-mma-ldmatrix.cu" << "cp-async"
                                 << "mma-sync:already has ldmatrix, mma-sync, register-tiles, swizzle;"
                                    "4-stage-cp-async-pipeline:requires cp-async the kernel lacks;"
                                    "64-wide-k-tiles:beyond 4-stage-cp-async-pipeline (step 6 of lineage gemm-bf16)";
    // The mma.sync expert: the Hopper step that replaces its pipeline is next.
    QTest::newRow("gemm-bf16 10") << "gemm-bf16" << "10-fragment-double-buffer.cu" << "wgmma"
                                  << "cp-async:already has cp-async, multi-stage-pipeline;"
                                     "4-stage-cp-async-pipeline:passed: the kernel is at step 10 of lineage gemm-bf16;"
                                     "producer-consumer-warp-specialization:requires";
    QTest::newRow("gemm-bf16 12") << "gemm-bf16" << "12-warp-specialized.cu" << ""
                                  << "wgmma:already has mbarrier, tma, wgmma;"
                                     "64-wide-k-tiles:passed: the kernel is at step 11 of lineage gemm-bf16;"
                                     "cp-async:requires ldmatrix, mma-sync, swizzle the kernel lacks";
  }

  void walkBundledLineages() {
    QFETCH(QString, task);
    QFETCH(QString, file);
    QFETCH(QString, chosenIds);
    QFETCH(QString, skippedIds);
    const auto r = retrieveCards(bundled_, gemmQuery(lineageSource(task.toStdString(), file.toStdString())));
    const std::string text = describe(r);
    for (const auto &id : split(chosenIds)) QVERIFY2(chosen(r, id), (id + " not chosen:\n" + text).c_str());
    for (const auto &item : skippedIds.split(';', Qt::SkipEmptyParts)) {
      const auto colon = item.indexOf(':');
      const std::string id = item.left(colon).trimmed().toStdString(), reason = item.mid(colon + 1).trimmed().toStdString();
      QVERIFY2(skipReason(r, id).rfind(reason, 0) == 0, (id + " should be skipped as '" + reason + "':\n" + text).c_str());
    }
  }

  // Shape similarity, from each source of sizes a card has.
  void shapeSimilarity_data() {
    QTest::addColumn<QString>("query");
    QTest::addColumn<QString>("source");  // "evidence:TASK/CONFIG", "written:SIZES", "published:FOLDER", "failed:SIZES"
    QTest::addColumn<double>("expected");
    QTest::newRow("config, same") << "M=512,N=512,K=512" << "evidence:sgemm/small" << 1.0;
    QTest::newRow("config, twice") << "M=1024,N=1024,K=1024" << "evidence:sgemm/small" << 0.5;
    QTest::newRow("best config") << "M=4096,N=4096,K=4096" << "evidence:sgemm/small,sgemm/h200" << 1.0;
    QTest::newRow("lower-case names") << "m=4096,n=4096,k=4096" << "evidence:sgemm/h200" << 1.0;
    QTest::newRow("unknown config") << "M=512,N=512,K=512" << "evidence:sgemm/huge" << 0.0;
    QTest::newRow("written") << "M=4096,N=4096,K=4096" << "written:M=8192,N=8192,K=8192" << 0.5;
    QTest::newRow("written, 8x") << "M=512,N=512,K=512" << "written:M=4096,N=4096,K=4096" << 0.25;
    QTest::newRow("one name in common") << "M=4096,N=4096,K=4096" << "written:N=4096" << 1.0 / 3;
    QTest::newRow("other names") << "M=4096,N=4096,K=4096" << "written:rows=4096,cols=4096" << 0.0;
    QTest::newRow("mixed") << "M=4096,N=2048" << "written:M=4096,N=4096" << (1.0 + 0.5) / 2;
    QTest::newRow("failed application") << "M=4096,N=4096,K=4096" << "failed:M=4096,N=4096,K=4096" << 0.0;
    QTest::newRow("published table") << "M=8192,N=8192,K=8192" << "published:tma-multicast-loads-20260412T101500Z-3fa2c1"
                                     << 1.0;
    QTest::newRow("published table, 8x") << "M=1024,N=1024,K=1024"
                                         << "published:tma-multicast-loads-20260412T101500Z-3fa2c1" << 0.25;
    QTest::newRow("published, no table") << "M=1024,N=1024,K=1024"
                                         << "published:warp-specialized-producer-20260413T080000Z-b71e09" << 0.0;
    QTest::newRow("no query sizes") << "" << "written:M=4096,N=4096,K=4096" << 0.0;
  }

  void shapeSimilarity() {
    QFETCH(QString, query);
    QFETCH(QString, source);
    QFETCH(double, expected);
    const auto colon = source.indexOf(':');
    const QString kind = source.left(colon), what = source.mid(colon + 1);
    SkillCard c = card("shaped", "A card");
    if (kind == "evidence") {
      for (const auto &tc : split(what)) {
        const auto slash = tc.find('/');
        c.evidence.push_back(measurement("", 0, tc.substr(0, slash), tc.substr(slash + 1), 2.0));
      }
    } else if (kind == "written" || kind == "failed") {
      c.evidence.push_back(measurement("", 0, "elsewhere", what.toStdString(), 2.0));
      c.evidence.back().success = kind == "written";
    } else {
      c = publishedCard(what.toStdString());
    }
    const double got = kwb::shapeSimilarity(query.isEmpty() ? ShapeSizes{} : sizes(query), c, shapes_);
    QVERIFY2(std::abs(got - expected) < 1e-9, (std::to_string(got) + " != " + std::to_string(expected)).c_str());
  }

  // Two cards A and B (given B first); which is ranked first, and why.
  void rankingOrder_data() {
    QTest::addColumn<QString>("intentA");
    QTest::addColumn<QString>("sizesA");
    QTest::addColumn<double>("gainA");
    QTest::addColumn<bool>("admittedA");
    QTest::addColumn<QString>("intentB");
    QTest::addColumn<QString>("sizesB");
    QTest::addColumn<double>("gainB");
    QTest::addColumn<bool>("admittedB");
    QTest::addColumn<QString>("first");
    const QString tiles = "shared memory tiles for the matrix multiply";
    const QString exact = "M=4096,N=4096,K=4096", far = "M=64,N=64,K=64";
    QTest::newRow("text before shape and gain")
        << tiles << far << 1.1 << false << "warp shuffle reduction of a row" << exact << 5.0 << true << "card-a";
    QTest::newRow("text, other way") << "warp shuffle reduction of a row" << exact << 5.0 << true << tiles << far << 1.1
                                     << false << "card-b";
    QTest::newRow("shape before gain") << tiles << "M=512,N=512,K=512" << 4.0 << true << tiles << exact << 1.5 << false
                                       << "card-b";
    QTest::newRow("shape, other way") << tiles << exact << 1.5 << false << tiles << "M=512,N=512,K=512" << 4.0 << true
                                      << "card-a";
    QTest::newRow("gain") << tiles << exact << 1.5 << true << tiles << exact << 3.0 << false << "card-b";
    QTest::newRow("gain, other way") << tiles << exact << 3.0 << false << tiles << exact << 1.5 << true << "card-a";
    QTest::newRow("gain differences under 0.01 tie") << tiles << exact << 2.001 << false << tiles << exact << 2.0 << true
                                                     << "card-b";
    QTest::newRow("admitted before proposed") << tiles << exact << 2.0 << false << tiles << exact << 2.0 << true
                                              << "card-b";
    QTest::newRow("then the id") << tiles << exact << 2.0 << true << tiles << exact << 2.0 << true << "card-a";
  }

  void rankingOrder() {
    QFETCH(QString, intentA);
    QFETCH(QString, sizesA);
    QFETCH(double, gainA);
    QFETCH(bool, admittedA);
    QFETCH(QString, intentB);
    QFETCH(QString, sizesB);
    QFETCH(double, gainB);
    QFETCH(bool, admittedB);
    QFETCH(QString, first);
    auto a = card("card-a", intentA.toStdString()), b = card("card-b", intentB.toStdString());
    a.evidence.push_back(measurement("", 0, "t", sizesA.toStdString(), gainA));
    b.evidence.push_back(measurement("", 0, "t", sizesB.toStdString(), gainB));
    a.status = admittedA ? CardStatus::Admitted : CardStatus::Proposed;
    b.status = admittedB ? CardStatus::Admitted : CardStatus::Proposed;
    RetrievalQuery q;
    q.includeProposed = true;
    q.operatorClass = "gemm";
    q.problemText = "Tile the matrix multiply in shared memory";
    q.shape = sizes("M=4096,N=4096,K=4096");
    const auto r = retrieveCards({b, a}, q);
    QCOMPARE(r.chosen.size(), std::size_t(2));
    QVERIFY2(r.chosen[0].card.id == first.toStdString(), describe(r).c_str());
    QCOMPARE(r.chosen[0].gain, r.chosen[0].card.id == "card-a" ? gainA : gainB);
  }

  // The bundled cards ranked: for sgemm's text the sgemm cards come first (their Scope names
  // sgemm), the gemm-bf16 cards after; for gemm-bf16's text the other way round.
  void bundledRanking() {
    auto q = gemmQuery(lineageSource("sgemm", "03-smem-tiling.cu"));
    q.limit = 3;
    auto r = retrieveCards(bundled_, q);
    QVERIFY2(ids(r.chosen) == "1d-register-blocking,register-tiles,wmma", describe(r).c_str());
    QVERIFY(r.chosen[0].textScore > r.chosen[1].textScore + 0.05 && r.chosen[1].textScore > r.chosen[2].textScore);
    QCOMPARE(r.chosen[0].shapeScore, 1.0);  // sgemm's own h200 configuration
    QCOMPARE(r.chosen[2].shapeScore, 0.5);  // gemm-bf16's 8192^3 against 4096^3
    QCOMPARE(r.chosen[2].gain, 2.0);

    q = gemmQuery(lineageSource("gemm-bf16", "04-mma-ldmatrix.cu"));
    q.problemText = gemmText_;
    q.shape = shapes_.at("gemm-bf16").at("h200");
    r = retrieveCards(bundled_, q);
    auto rank = [&](const std::string &id) {
      for (std::size_t i = 0; i < r.chosen.size(); ++i)
        if (r.chosen[i].card.id == id) return static_cast<int>(i);
      return -1;
    };
    QVERIFY2(rank("cp-async") >= 0 && rank("wmma") >= 0 && rank("warp-tiling") >= 0, describe(r).c_str());
    QVERIFY2(rank("cp-async") < rank("warp-tiling") && rank("wmma") < rank("warp-tiling"), describe(r).c_str());
    for (std::size_t i = 1; i < r.chosen.size(); ++i)
      QVERIFY2(std::llround(r.chosen[i - 1].textScore / 0.05) >= std::llround(r.chosen[i].textScore / 0.05),
               describe(r).c_str());
  }

  void limitSkipsTheRest() {
    std::vector<SkillCard> cards;
    for (int i = 0; i < 4; ++i) {
      cards.push_back(card("card-" + std::to_string(i), "shared memory tiles"));
      cards.back().evidence.push_back(measurement("", 0, "t", "M=4096", 1.0 + i));
    }
    RetrievalQuery q;
    q.problemText = "shared memory tiles";
    q.limit = 2;
    const auto r = retrieveCards(cards, q);
    QCOMPARE(ids(r.chosen), std::string("card-3,card-2"));
    QCOMPARE(r.skipped.size(), std::size_t(2));
    QCOMPARE(r.skipped[0].id, std::string("card-0"));  // in the order given
    QVERIFY2(r.skipped[0].reason.rfind("ranked 4th; the limit is 2 (text ", 0) == 0 &&
                 r.skipped[0].reason.find("shape 0.00, gain 1.00x)") != std::string::npos,
             r.skipped[0].reason.c_str());
    QVERIFY2(r.skipped[1].reason.rfind("ranked 3rd; the limit is 2", 0) == 0, r.skipped[1].reason.c_str());
  }

  // The section: every card with its id, intent, gain, preconditions and carrier; never longer
  // than the budget, whole cards only, so every fence is closed.
  void promptSection() {
    const auto r = retrieveCards(bundled_, gemmQuery(lineageSource("sgemm", "03-smem-tiling.cu")));
    QVERIFY2(r.chosen.size() >= 2, describe(r).c_str());
    std::vector<std::string> shown;
    const std::string full = formatCardsForPrompt(r.chosen, std::numeric_limits<std::size_t>::max(), &shown);
    QCOMPARE(shown.size(), r.chosen.size());
    QCOMPARE(fenceLines(full), 4 * static_cast<int>(r.chosen.size()));
    std::size_t at = 0;
    for (std::size_t i = 0; i < r.chosen.size(); ++i) {
      const auto &c = r.chosen[i].card;
      const auto heading = full.find("### " + std::to_string(i + 1) + ". " + c.id + " (" + toString(c.status) + ")\n");
      QVERIFY2(heading != std::string::npos && heading >= at, c.id.c_str());  // in rank order
      at = heading;
      QVERIFY(!c.beforeCode().empty() && !c.afterCode().empty());
      for (const auto &needle : {c.beforeCode(), c.afterCode(), std::string("Measured gain: 2.00x (median of ")})
        QVERIFY2(full.find(needle, heading) != std::string::npos, (c.id + ": " + needle).c_str());
      QVERIFY2(full.find("Intent: " + c.intent.substr(0, 30), heading) != std::string::npos, c.id.c_str());
      for (const char *category : kPreconditionCategories)
        QVERIFY2(full.find(std::string("- ") + category + ": ", heading) != std::string::npos, category);
    }
    // Every budget: at most that long, fences closed, cards whole and in order.
    for (std::size_t budget = 0; budget <= full.size() + 10; budget += 37) {
      std::vector<std::string> in;
      const std::string text = formatCardsForPrompt(r.chosen, budget, &in);
      QVERIFY2(text.size() <= budget, std::to_string(budget).c_str());
      QCOMPARE(fenceLines(text), 4 * static_cast<int>(in.size()));
      QCOMPARE(text.empty(), in.empty());
      for (std::size_t i = 0; i < in.size(); ++i) {
        const auto &c = *std::find_if(r.chosen.begin(), r.chosen.end(), [&](const auto &x) { return x.card.id == in[i]; });
        QVERIFY(text.find("### " + std::to_string(i + 1) + ". " + in[i]) != std::string::npos);
        QVERIFY(text.find(c.card.afterCode()) != std::string::npos);
      }
    }
    QCOMPARE(formatCardsForPrompt(r.chosen, full.size()), full);
    std::vector<std::string> in;
    QVERIFY(formatCardsForPrompt(r.chosen, full.size() - 1, &in).size() < full.size() - 1);
    QCOMPARE(in.size() + 1, r.chosen.size());
    QCOMPARE(formatCardsForPrompt(r.chosen, 10), std::string());
    QCOMPARE(formatCardsForPrompt({}, 100000), std::string());
  }

  // A card too long for the budget is left out, and a shorter one after it still goes in.
  void promptSkipsALongCard() {
    auto longCard = card("long", "a long carrier");
    longCard.setSection("After", "\n" + fencedCode(std::string(5000, 'x') + "\n") + "\n");
    const auto shortCard = card("short", "a short carrier");
    std::vector<RetrievedCard> cards(2);
    cards[0].card = longCard;
    cards[1].card = shortCard;
    std::vector<std::string> in;
    const std::string text = formatCardsForPrompt(cards, 3000, &in);
    QCOMPARE(in, (std::vector<std::string>{"short"}));
    QVERIFY(text.find("### 1. short (admitted)") != std::string::npos);
    QVERIFY(text.find("long") == std::string::npos);
    QVERIFY(text.find("Measured gain: not measured yet") != std::string::npos);
    QVERIFY(text.find("float4 x = a4[i]; // short after") != std::string::npos);
    QCOMPARE(fenceLines(text), 4);
  }
};

QTEST_GUILESS_MAIN(TestSkillRetrieval)
#include "tst_skill_retrieval.moc"
