// SKILL.md (core/lineage/skill_markdown.h): cards shaped like the published KLineage ones read
// with every field and section; a card written and read back is the same card, and its text is
// stable; malformed files name their line and the problem.
#include <QtTest>

#include <QElapsedTimer>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/lineage/skill_card.h"
#include "helpers/test_files.h"
#include "core/lineage/skill_markdown.h"

namespace fs = std::filesystem;
using namespace kwb;

namespace {


fs::path fixtures() { return fs::path(KWB_SOURCE_DIR) / "tests/fixtures/skills/published-like"; }

std::string problemsOf(const SkillFileRead &r) {
  std::string out;
  for (const auto &p : r.problems) out += p.text() + "\n";
  return out;
}

std::vector<std::string> headings(const SkillCard &c) {
  std::vector<std::string> out;
  for (const auto &s : c.body)
    if (s.level > 0) out.push_back(std::string(static_cast<std::size_t>(s.level), '#') + " " + s.heading);
  return out;
}

// A card as this workbench makes them: every field used, and text that YAML would misread.
SkillCard madeCard() {
  SkillCard c;
  c.id = "cp-async-double-buffer";
  c.intent = "Overlap the next tile's global loads with this tile's math: 'double' buffering";
  c.anchor = "gemm_bf16_mma: the K loop (lines 41-77 of 05-cp-async-double-buffer.cu)";
  c.preconditions = {"Data types: bf16 A and B, f32 C", "Layout: K % 8 == 0\nand 16-byte aligned rows",
                     "Storage: 2 x 16 KiB of shared memory", "Pipeline: true", "Hardware: sm_80 or later (cp.async)"};
  c.scope = CardScope{{"gemm", "*"}, {"cuda"}, {"sm_80", "sm_90"}};
  c.requiredFeatures = {"shared-memory-tiles"};
  c.providedFeatures = {"cp-async", "double-buffer"};
  c.conflictingFeatures = {"123"};
  c.status = CardStatus::Admitted;
  CardEvidence e;
  e.kind = "lineage-step";
  e.lineage = "gemm-bf16";
  e.step = 5;
  e.task = "gemm-bf16";
  e.config = "large";
  e.device = "NVIDIA H200";
  e.arch = "sm_90";
  e.beforeMs = 1.2345678901234567;
  e.afterMs = 0.1;
  e.speedup = 12.345678901234567;
  e.at = "2026-12-03T14:00:00.000Z";
  c.evidence = {e};
  e.kind = "application";
  e.success = false;
  e.note = "null";
  c.evidence.push_back(e);
  c.verification = {"2026-12-03T14:00:00.000Z: lifted from gemm-bf16 step 5", "true"};
  c.setSection("After", fencedCode("cp_async(smem[next], gmem + k * BK);\n// ``` inside code\n"));
  c.setSection("Overview", "Loads of tile k+1 are in flight while tile k is multiplied.\n\n");
  c.setSection("Before", fencedCode("load(smem, gmem + k * BK);\n__syncthreads();\n") + "\n");
  c.setSection("Risk", "Without a second buffer the loads race with the reads: wrong results.\n");
  c.extra["origin"] = nlohmann::json{{"tool", "kernel-workbench"}, {"count", 3}, {"ratio", 0.5}, {"ok", true}};
  return c;
}

}  // namespace

class TestSkillMarkdown : public QObject {
  Q_OBJECT

 private slots:
  void publishedLikeCardReadsEveryField() {
    const auto path = fixtures() / "tma-multicast-loads-20260412T101500Z-3fa2c1/SKILL.md";
    const auto r = readSkillMarkdown(test::readFile(path), path.string());
    QVERIFY2(r.card, problemsOf(r).c_str());
    const auto &c = *r.card;
    QCOMPARE(c.id, std::string("tma-multicast-loads"));
    // The intent wrapped onto a second line reads as one line.
    QCOMPARE(c.intent, std::string("Load each shared operand tile once per cluster with a TMA multicast instead of "
                                   "once per CTA"));
    QCOMPARE(c.preconditions.size(), std::size_t{5});
    QVERIFY2(c.missingCategories().empty(), c.preconditions.front().c_str());
    // '' inside a single-quoted item is one quote.
    QVERIFY2(c.preconditions[2].find("needs 'BM x BK + BN x BK' elements") != std::string::npos, c.preconditions[2].c_str());
    QVERIFY(c.preconditions[1].find("tile's inner box") != std::string::npos);
    QCOMPARE(c.scope.cases, (std::vector<std::string>{"gemm", "*attention*"}));
    QCOMPARE(c.scope.platforms, (std::vector<std::string>{"sm_90a"}));
    QVERIFY(c.status == CardStatus::Proposed);
    QCOMPARE(headings(c), (std::vector<std::string>{"# Overview", "## Example configuration", "# Precondition",
                                                     "## Ownership", "# Scope", "# Code Change Snippet", "## Before",
                                                     "## After", "## Replay notes"}));
    QVERIFY(c.section("Example configuration").find("| 8192 | 8192 | 8192 |") != std::string::npos);
    QVERIFY(c.beforeCode().rfind("if (threadIdx.x == 0) {\n", 0) == 0);
    QVERIFY(c.afterCode().find("tma_load_2d_multicast") != std::string::npos);
    // Several code blocks in one section, and a very long line, kept as they were.
    QVERIFY(c.section("After").find("must survive unchanged\n```\n") != std::string::npos);
    QVERIFY(c.section("Ownership").find("cluster_ctarank == 0") != std::string::npos);
  }

  void cardsRoundTrip_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("published tma") << "tma-multicast-loads-20260412T101500Z-3fa2c1";
    QTest::newRow("published producer") << "warp-specialized-producer-20260413T080000Z-b71e09";
    QTest::newRow("made here") << "";
  }

  void cardsRoundTrip() {
    QFETCH(QString, name);
    SkillCard card;
    if (name.isEmpty()) {
      card = madeCard();
    } else {
      const auto path = fixtures() / name.toStdString() / "SKILL.md";
      const auto r = readSkillMarkdown(test::readFile(path), path.string());
      QVERIFY2(r.card, problemsOf(r).c_str());
      card = *r.card;
    }
    const std::string text = writeSkillMarkdown(card);
    const auto again = readSkillMarkdown(text, "written.md");
    QVERIFY2(again.card, (problemsOf(again) + text).c_str());
    QVERIFY2(*again.card == card, text.c_str());
    QCOMPARE(writeSkillMarkdown(*again.card), text);  // stable
    if (name.isEmpty()) {
      // Text that looks like a number or a boolean stays text; numbers stay exact.
      QCOMPARE(again.card->conflictingFeatures, (std::vector<std::string>{"123"}));
      QCOMPARE(again.card->evidence[0].beforeMs, 1.2345678901234567);
      QCOMPARE(again.card->extra["origin"]["count"].get<int>(), 3);
      QVERIFY(again.card->afterCode().find("// ``` inside code") != std::string::npos);
    } else {
      // A published card keeps its body byte for byte.
      const auto original = test::readFile(fixtures() / name.toStdString() / "SKILL.md");
      const auto bodyAt = original.find("\n---\n") + 5;
      QVERIFY(text.size() > original.size() - bodyAt);
      QCOMPARE(text.substr(text.find("\n---\n") + 5), original.substr(bodyAt));
    }
  }

  void headingsInsideCodeAreCode() {
    const std::string text =
        "---\nskill_id: a\nintent: b\npreconditions: []\nscope: {cases: ['*'], languages: [cuda], platforms: ['*']}\n---\n"
        "# Code Change Snippet\n\n## Before\n\n```cuda\n# define X 1\n#pragma unroll\n```\n\n## After\n\n~~~\n# not a heading\n~~~\n";
    const auto r = readSkillMarkdown(text, "x.md");
    QVERIFY2(r.card, problemsOf(r).c_str());
    QCOMPARE(headings(*r.card), (std::vector<std::string>{"# Code Change Snippet", "## Before", "## After"}));
    QCOMPARE(r.card->beforeCode(), std::string("# define X 1\n#pragma unroll\n"));
    QCOMPARE(r.card->afterCode(), std::string("# not a heading\n"));
  }

  void malformedFilesNameLineAndProblem_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("line");
    QTest::addColumn<QString>("message");
    const QString scope = "scope:\n  cases: [gemm]\n  languages: [cuda]\n  platforms: [sm_90]\n";
    const QString head = "---\nskill_id: good-id\nintent: x\npreconditions: ['Data types: f32']\n";
    QTest::newRow("no front matter") << "# Overview\n" << 1 << "starts with a '---' line";
    QTest::newRow("never closed") << "---\nskill_id: a\n" << 1 << "never closed";
    QTest::newRow("yaml syntax") << head + "scope: [unclosed\n---\n" << 5 << "YAML";
    QTest::newRow("no skill_id") << "---\nintent: x\npreconditions: []\n" + scope + "---\n" << 2 << "no skill_id";
    QTest::newRow("bad skill_id") << "---\nskill_id: Not Good\nintent: x\npreconditions: []\n" + scope + "---\n" << 2
                                  << "skill_id 'Not Good' is not usable";
    QTest::newRow("preconditions mapping") << "---\nskill_id: a\nintent: x\npreconditions:\n  a: b\n" + scope + "---\n" << 5
                                           << "preconditions must be a list of text";
    QTest::newRow("case not text") << head + "scope:\n  cases:\n  - [gemm]\n  languages: [cuda]\n  platforms: ['*']\n---\n"
                                   << 7 << "each item of scope.cases must be text";
    QTest::newRow("unknown scope key") << head + "scope:\n  cases: [a]\n  ops: [b]\n---\n" << 7 << "scope has 'ops'";
    QTest::newRow("bad status") << head + scope + "status: maybe\n---\n" << 9 << "status 'maybe' is not one of";
    QTest::newRow("duplicate key") << head + scope + "intent: again\n---\n" << 9 << "'intent' appears twice";
    QTest::newRow("evidence type") << head + scope + "evidence:\n- kind: lineage-step\n  speedup: fast\n---\n" << 10
                                   << "an evidence item cannot be read";
    QTest::newRow("nul byte") << head + scope + "---\n# Overview\nab" + QChar(0) + "\n" << 11 << "a NUL byte";
    // Aliases that would expand to 10^9 values.
    QString laughs = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n";
    for (char c = 'b'; c <= 'j'; ++c)
      laughs += QString("%1: &%1 [*%2, *%2, *%2, *%2, *%2, *%2, *%2, *%2, *%2, *%2]\n").arg(c).arg(QChar(c - 1));
    QTest::newRow("billion laughs") << laughs + "---\n" << 2 << "expands to more than";
  }

  void malformedFilesNameLineAndProblem() {
    QFETCH(QString, text);
    QFETCH(int, line);
    QFETCH(QString, message);
    const std::string bytes(text.toUtf8().constData(), static_cast<std::size_t>(text.toUtf8().size()));
    const auto r = readSkillMarkdown(bytes, "cards/x/SKILL.md");
    QVERIFY(!r.card);
    QVERIFY(!r.problems.empty());
    bool found = false;
    for (const auto &p : r.problems) found = found || (p.line == line && p.message.find(message.toStdString()) != std::string::npos);
    QVERIFY2(found, problemsOf(r).c_str());
    QVERIFY2(r.problems.front().text().rfind("cards/x/SKILL.md:", 0) == 0, problemsOf(r).c_str());
  }

  // Nesting is measured before libyaml loads the tree (its time grows with the square of the
  // depth: 100,000 '[' took 36 s): a bomb is refused with the place where it passes the limit (the
  // '[', '{' or "- " that opens the 65th level, the root mapping being the first), 63 levels of '['
  // are read, 64 are refused. The time taken is printed (qInfo), not asserted: this suite runs
  // beside others. Before the check the refusal came from the tree after the parse, without a
  // column, and only after the parser's minutes.
  void nestingBombsAreRefusedBeforeTheParser_data() {
    QTest::addColumn<QByteArray>("front");  // the front matter's last line(s)
    QTest::addColumn<int>("line");
    QTest::addColumn<QString>("message");  // empty: the card reads
    const QByteArray head = "---\nskill_id: deep\nintent: x\npreconditions: []\nscope: {cases: ['*'], languages: ['*'], platforms: ['*']}\n";
    const auto nested = [](int depth, char open, char close) {
      return QByteArray(depth, open) + "x" + QByteArray(depth, close);
    };
    QTest::newRow("100,000 [") << head + "deep: " + QByteArray(100000, '[') + "\n" << 6
                               << "column 70: the front matter nests deeper than 64 levels";
    // 2 million '[' in a file under the 4 MiB limit.
    QTest::newRow("2 million [") << head + "deep: " + QByteArray(2000000, '[') + "\n" << 6
                                 << "column 70: the front matter nests deeper than 64 levels";
    QTest::newRow("2 million {") << head + "deep: " + QByteArray(2000000, '{') + "\n" << 6
                                 << "column 70: the front matter nests deeper than 64 levels";
    QTest::newRow("1 million '- '") << head + "deep:\n" + QByteArray("- ").repeated(1000000) + "x\n" << 7
                                    << "column 127: the front matter nests deeper than 64 levels";
    QByteArray stairs = head + "deep:\n";
    for (int i = 1; i <= 100; ++i) stairs += QByteArray(i, ' ') + "k:\n";
    QTest::newRow("indented keys") << stairs << 70 << "column 65: the front matter nests deeper than 64 levels";
    QTest::newRow("63 levels") << head + "deep: " + nested(63, '[', ']') + "\n" << 0 << "";
    QTest::newRow("64 levels") << head + "deep: " + nested(64, '[', ']') + "\n" << 6
                               << "column 70: the front matter nests deeper than 64 levels";
    // Ways around the former scan of the text (each took 7 s for 60,000 '['): an anchor or a tag
    // before the '[', a quote the scan read as a quote and YAML as plain text (on a plain text's
    // next line), a directive's '--- ' line. The depth is now counted on libyaml's own events.
    QTest::newRow("&a [") << head + "deep: &a " + QByteArray(60000, '[') + "\n" << 6
                          << "column 73: the front matter nests deeper than 64 levels";
    QTest::newRow("!t [") << head + "deep: !t " + QByteArray(60000, '[') + "\n" << 6
                          << "column 73: the front matter nests deeper than 64 levels";
    QTest::newRow("!!seq [") << head + "deep: !!seq " + QByteArray(60000, '[') + "\n" << 6
                             << "column 76: the front matter nests deeper than 64 levels";
    QTest::newRow("!<tag> [") << head + "deep: !<tag:x.org,2024:t> " + QByteArray(60000, '[') + "\n" << 6
                              << "column 90: the front matter nests deeper than 64 levels";
    QTest::newRow("- &a [") << head + "deep:\n- &a " + QByteArray(60000, '[') + "\n" << 7
                            << "column 68: the front matter nests deeper than 64 levels";
    QTest::newRow("? !t {") << head + "deep:\n  ? !t " + QByteArray(60000, '{') + "\n" << 7
                            << "column 70: the front matter nests deeper than 64 levels";
    QTest::newRow("!!seq [[...]] 100 deep") << head + "deep: !!seq " + nested(100, '[', ']') + "\n" << 6
                                            << "column 76: the front matter nests deeper than 64 levels";
    QTest::newRow("[{a: [{a: ...") << head + "deep: " + QByteArray("[{a: ").repeated(30000) + "\n" << 6
                                   << "column 163: the front matter nests deeper than 64 levels";
    QTest::newRow("' on a plain text's next line") << head + "d0: a\n  '\ndeep: " + QByteArray(60000, '[') + "\n"
                                                   << 8 << "column 70: the front matter nests deeper than 64 levels";
    QTest::newRow("CRLF, tabs") << QByteArray(head).replace("\n", "\r\n") + "deep:\t" + QByteArray(60000, '[') + "\r\n"
                                << 6 << "column 70: the front matter nests deeper than 64 levels";
    QTest::newRow("[ over lines") << head + "deep:\n" + QByteArray("  [\n").repeated(60000) << 70
                                  << "column 3: the front matter nests deeper than 64 levels";
    QTest::newRow("- - - after a long line") << head + "long: " + QByteArray(1000000, 'x') + "\ndeep:\n" +
                                                    QByteArray("- ").repeated(100) + "x\n"
                                             << 8 << "column 127: the front matter nests deeper than 64 levels";
    QTest::newRow("--- [ (a directive's document)") << "---\n%YAML 1.1\n--- " + QByteArray(60000, '[') + "\n" << 3
                                                   << "column 69: the front matter nests deeper than 64 levels";
    // Brackets inside quotes, comments, block scalars and plain text are text.
    QTest::newRow("brackets as text") << head + "deep: '" + QByteArray(100, '[') + "'\nd2: \"" + QByteArray(100, '{') +
                                             "\"\n# " + QByteArray(100, '[') + "\nd3: |\n  " + QByteArray(100, '[') +
                                             "\nd4: a" + QByteArray(100, '[') + "\nd5: &a !!str '" + QByteArray(100, '[') +
                                             "'\nd6: [!t \"" + QByteArray(100, '{') + "\", *a]\n"
                                      << 0 << "";
  }

  void nestingBombsAreRefusedBeforeTheParser() {
    QFETCH(QByteArray, front);
    QFETCH(int, line);
    QFETCH(QString, message);
    const std::string text = front.toStdString() + "---\n# Overview\n";
    QVERIFY(text.size() < kMaxSkillFileBytes);
    QElapsedTimer clock;
    clock.start();
    const auto r = readSkillMarkdown(text, "cards/deep/SKILL.md");
    qInfo("%s: %lld ms for %zu bytes", QTest::currentDataTag(), static_cast<long long>(clock.elapsed()), text.size());
    if (message.isEmpty()) {
      QVERIFY2(r.card, problemsOf(r).c_str());
      return;
    }
    QVERIFY(!r.card);
    QCOMPARE(r.problems.size(), std::size_t{1});
    QCOMPARE(r.problems[0].line, line);
    QVERIFY2(r.problems[0].message.rfind(message.toStdString(), 0) == 0, problemsOf(r).c_str());
  }

  // A byte that is not UTF-8 is named by its line and column, before it reaches the library's
  // JSON (which threw "[json.exception.type_error.316] invalid UTF-8 byte at index 3: 0xFF").
  void badUtf8IsNamedByLineAndColumn_data() {
    QTest::addColumn<QByteArray>("bad");
    QTest::addColumn<QString>("byte");
    QTest::newRow("0xff") << QByteArray("ab\xff") << "0xff";
    QTest::newRow("cut sequence") << QByteArray("ab\xe2\x82") << "0xe2";
    QTest::newRow("overlong '/'") << QByteArray("ab\xc0\xaf") << "0xc0";
    QTest::newRow("surrogate") << QByteArray("ab\xed\xa0\x80") << "0xed";
    QTest::newRow("past U+10FFFF") << QByteArray("ab\xf4\x90\x80\x80") << "0xf4";
  }

  void badUtf8IsNamedByLineAndColumn() {
    QFETCH(QByteArray, bad);
    QFETCH(QString, byte);
    const std::string text = "---\nskill_id: a\nintent: b\npreconditions: []\nscope: {cases: ['*']}\n---\n"
                             "# Overview\n\nText \u00e9 fine.\n" +
                             bad.toStdString() + "\n";
    const auto r = readSkillMarkdown(text, "cards/a/SKILL.md");
    QVERIFY(!r.card);
    QCOMPARE(r.problems.size(), std::size_t{1});
    QCOMPARE(r.problems[0].text(),
             "cards/a/SKILL.md:10: column 3: the byte " + byte.toStdString() + " is not UTF-8: SKILL.md is UTF-8 text (save the file as UTF-8)");
  }

  // The keys of a card's record a file holds, with their lines: the library keeps its own.
  void recordKeysAreNamed() {
    const std::string text = "---\nskill_id: a\nintent: b\npreconditions: []\nscope: {cases: ['*']}\nstatus: admitted\n"
                             "evidence:\n- kind: application\n  speedup: 9.0\nverification: ['approved by nobody']\n---\n";
    const auto r = readSkillMarkdown(text, "a.md");
    QVERIFY2(r.card, problemsOf(r).c_str());
    QCOMPARE(r.recordKeys.size(), std::size_t{3});
    QCOMPARE(r.recordKeys[0].key, std::string("status"));
    QCOMPARE(r.recordKeys[0].line, 6);
    QCOMPARE(r.recordKeys[1].key, std::string("evidence"));
    QCOMPARE(r.recordKeys[1].line, 7);
    QCOMPARE(r.recordKeys[2].key, std::string("verification"));
    QCOMPARE(r.recordKeys[2].line, 10);
    // Written without its record (the Skills view's Edit): no status, evidence or log.
    const std::string text2 = writeSkillMarkdown(*r.card, false);
    for (const char *key : {"status:", "evidence:", "verification:"})
      QVERIFY2(text2.find(key) == std::string::npos, text2.c_str());
    QVERIFY(readSkillMarkdown(text2, "b.md").recordKeys.empty());
  }

  void setSectionKeepsThePublishedOrder() {
    SkillCard c;
    c.setSection("After", "a\n");
    c.setSection("Overview", "o\n");
    c.setSection("Scope", "s\n");
    c.setSection("Before", "b\n");
    c.body.push_back(CardSection{2, "Notes", "n\n"});
    c.setSection("Risk", "r\n");
    c.setSection("Overview", "o2\n");
    QCOMPARE(headings(c), (std::vector<std::string>{"# Overview", "# Scope", "## Before", "## After", "## Notes", "# Risk"}));
    QCOMPARE(c.section("Overview"), std::string("o2\n"));
  }

  void skillIds() {
    QCOMPARE(skillIdFrom("cp.async double-buffer (2 stages)"), std::string("cp-async-double-buffer-2-stages"));
    QCOMPARE(skillIdFrom("!!!"), std::string("skill"));
    std::string why;
    QVERIFY(validSkillId("tma-multicast-loads"));
    QVERIFY(!validSkillId("-x", &why));
    QVERIFY(!validSkillId("../etc", &why));
    QVERIFY(!validSkillId("a/b", &why));
    QVERIFY2(why.find("'/'") != std::string::npos, why.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSkillMarkdown)
#include "tst_skill_markdown.moc"
