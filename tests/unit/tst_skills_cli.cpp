// kwb skills and kwb lineage build as a user runs them: real processes, a real library file.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/store/database.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Run {
  int exitCode = -1;
  std::string out, err;
};

const QString kFixtures = QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/skills/published-like");

}  // namespace

class TestSkillsCli : public QObject {
  Q_OBJECT

  QString kwb_;
  QTemporaryDir dir_;

  Run kwb(const QStringList &args) {
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("KWB_LIBRARY", dir_.filePath("library.sqlite"));
    p.setProcessEnvironment(env);
    p.start(kwb_, args);
    if (!p.waitForFinished(120000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput().toStdString(),
            p.readAllStandardError().toStdString()};
  }

  json cardsJson() {
    const auto r = kwb({"skills", "list", "--json"});
    if (r.exitCode != 0) return json();
    return json::parse(r.out)["cards"];
  }

 private slots:
  void initTestCase() {
    kwb_ = qEnvironmentVariable("KWB_CLI");
    QVERIFY2(!kwb_.isEmpty(), "run through ctest: KWB_CLI names kwb");
    QVERIFY(dir_.isValid());
  }

  void init() { fs::remove(dir_.filePath("library.sqlite").toStdString()); }

  // A folder with one malformed card imports nothing, and says where each problem is.
  void importNeverHalfApplies() {
    const fs::path folder = dir_.filePath("mixed").toStdString();
    fs::create_directories(folder);
    fs::copy(kFixtures.toStdString(), folder, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    fs::create_directories(folder / "broken");
    std::ofstream(folder / "broken" / "SKILL.md") << "---\nskill_id: broken\nintent: x\npreconditions: [a\n---\n";
    const auto r = kwb({"skills", "import", QString::fromStdString(folder.string())});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find((folder / "broken" / "SKILL.md").string() + ":4: YAML") != std::string::npos, r.err.c_str());
    QVERIFY2(r.err.find("nothing imported") != std::string::npos, r.err.c_str());
    QCOMPARE(cardsJson().size(), std::size_t{0});

    // Two files with one id: both named, nothing imported.
    fs::remove_all(folder / "broken");
    fs::create_directories(folder / "again");
    fs::copy_file(folder / "warp-specialized-producer-20260413T080000Z-b71e09" / "SKILL.md", folder / "again" / "SKILL.md");
    const auto twice = kwb({"skills", "import", QString::fromStdString(folder.string())});
    QCOMPARE(twice.exitCode, 2);
    QVERIFY2(twice.err.find("skill_id 'warp-specialized-producer' is also the id of") != std::string::npos, twice.err.c_str());
    QCOMPARE(cardsJson().size(), std::size_t{0});
  }

  void reviewExportAndImportAgain() {
    auto r = kwb({"skills", "import", kFixtures});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QCOMPARE(cardsJson().size(), std::size_t{2});

    r = kwb({"skills", "reject", "warp-specialized-producer"});
    QCOMPARE(r.exitCode, 2);  // a rejection needs its reason
    QVERIFY2(r.err.find("--why") != std::string::npos, r.err.c_str());
    r = kwb({"skills", "reject", "warp-specialized-producer", "--by", "ada", "--why", "needs setmaxnreg"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    r = kwb({"skills", "approve", "tma-multicast-loads", "--by", "grace", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QCOMPARE(json::parse(r.out)["status"].get<std::string>(), std::string("approved"));  // a reviewer's word
    r = kwb({"skills", "approve", "no-such-card"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("no skill card 'no-such-card'") != std::string::npos, r.err.c_str());

    r = kwb({"skills", "show", "warp-specialized-producer", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const auto shown = json::parse(r.out);
    QCOMPARE(shown["status"].get<std::string>(), std::string("rejected"));
    const auto &audit = shown["audit"];
    QCOMPARE(audit.size(), std::size_t{2});
    QCOMPARE(audit[1]["who"].get<std::string>(), std::string("reviewer:ada"));
    QCOMPARE(audit[1]["action"].get<std::string>(), std::string("rejected"));
    QVERIFY(audit[1]["detail"].get<std::string>().find("needs setmaxnreg") != std::string::npos);

    QCOMPARE(kwb({"skills", "list", "--status", "approved", "--json"}).exitCode, 0);
    QCOMPARE(json::parse(kwb({"skills", "list", "--status", "approved", "--json"}).out)["cards"].size(), std::size_t{1});
    QCOMPARE(json::parse(kwb({"skills", "list", "--status", "admitted", "--json"}).out)["cards"].size(), std::size_t{0});
    QCOMPARE(json::parse(kwb({"skills", "list", "--case", "flash-attention", "--json"}).out)["cards"].size(), std::size_t{2});
    QCOMPARE(kwb({"skills", "list", "--status", "maybe"}).exitCode, 2);

    // Export, then import into a new library: the same cards, but each enters as proposed, with
    // its log of another library's reviews left out, and the import says so with the lines.
    const QString exported = dir_.filePath("exported");
    r = kwb({"skills", "export", exported});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const fs::path written = fs::path(exported.toStdString()) / "tma-multicast-loads" / "SKILL.md";
    QVERIFY(fs::exists(written));
    const auto before = json::parse(kwb({"skills", "show", "tma-multicast-loads", "--json"}).out);
    fs::remove(dir_.filePath("library.sqlite").toStdString());
    r = kwb({"skills", "import", exported});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    for (const std::string claim : {":27: status 'approved' is not taken from the file: the card is proposed",
                                    ":28: verification (1 entry) is not taken from the file: the card keeps its log of 0 entries"})
      QVERIFY2(r.err.find(written.string() + claim) != std::string::npos, r.err.c_str());
    auto after = json::parse(kwb({"skills", "show", "tma-multicast-loads", "--json"}).out);
    auto strip = [](json j) {
      for (const char *key : {"audit", "status", "verification"}) j.erase(key);
      return j;
    };
    QCOMPARE(strip(after).dump(), strip(before).dump());
    QCOMPARE(after["status"].get<std::string>(), std::string("proposed"));
    QCOMPARE(after["verification"].size(), std::size_t{0});
    QCOMPARE(after["audit"].size(), std::size_t{1});
    QCOMPARE(after["audit"][0]["action"].get<std::string>(), std::string("imported"));
  }

  // Issue 45, 3: a SKILL.md saying "status: admitted" does not admit a card, even over a
  // reviewer's rejection; an id the library holds is refused without --replace, and merged with
  // it (the file's text; the status, the evidence and the log kept); the output says which.
  void importNeverSetsTheRecord() {
    const fs::path folder = dir_.filePath("claims").toStdString();
    fs::remove_all(folder);
    fs::create_directories(folder / "tiles");
    const auto card = [&](const std::string &intent) {
      std::ofstream(folder / "tiles" / "SKILL.md")
          << "---\nskill_id: tiles\nintent: " << intent
          << "\npreconditions: ['Data types: f32']\nscope: {cases: [gemm], languages: [cuda], platforms: ['*']}\n"
             "status: admitted\nevidence:\n- kind: application\n  speedup: 50.0\n---\n# Overview\n\nTiles.\n";
    };
    card("Tile in shared memory");
    const std::string file = fs::absolute(folder / "tiles" / "SKILL.md").string();
    auto r = kwb({"skills", "import", QString::fromStdString(folder.string())});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QVERIFY2(r.err.find(file + ":6: status 'admitted' is not taken from the file: the card is proposed") != std::string::npos,
             r.err.c_str());
    QVERIFY2(r.err.find(file + ":7: evidence (1 measurement) is not taken from the file") != std::string::npos, r.err.c_str());
    QVERIFY2(r.out.find("1 new (proposed), 0 merged") != std::string::npos, r.out.c_str());
    auto cards = cardsJson();
    QCOMPARE(cards[0]["status"].get<std::string>(), std::string("proposed"));
    QCOMPARE(cards[0]["evidence"].get<int>(), 0);

    // A reviewer rejects it; a measurement is recorded (as the gate would: raw SQL here, no GPU).
    r = kwb({"skills", "reject", "tiles", "--by", "ada", "--why", "no gain"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    {
      kwb::Database db(dir_.filePath("library.sqlite").toStdString());
      db.exec("UPDATE skill_cards SET card_json = json_set(card_json, '$.evidence', "
              "json('[{\"kind\":\"application\",\"speedup\":0.9,\"success\":false}]')) WHERE id = 'tiles'");
    }

    // The same file again: refused, and it says how to merge.
    card("Tile in shared memory, revised");
    r = kwb({"skills", "import", QString::fromStdString(folder.string())});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find(folder.string() + "/tiles/SKILL.md: the library holds a card 'tiles' already") != std::string::npos,
             r.err.c_str());
    QVERIFY2(r.err.find("nothing imported: 1 of the cards are in the library already; --replace gives them the files' "
                        "text and keeps their status, evidence and verification log") != std::string::npos,
             r.err.c_str());
    auto shown = json::parse(kwb({"skills", "show", "tiles", "--json"}).out);
    QCOMPARE(shown["intent"].get<std::string>(), std::string("Tile in shared memory"));

    // With --replace: merged; still rejected, the measurement kept.
    r = kwb({"skills", "import", "--replace", QString::fromStdString(folder.string())});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QVERIFY2(r.out.find("0 new (proposed), 1 merged (the file's text; status, evidence and verification log kept)") !=
                 std::string::npos,
             r.out.c_str());
    QVERIFY2(r.out.find("  tiles  merged  rejected") != std::string::npos, r.out.c_str());
    QVERIFY2(r.err.find(file + ":6: status 'admitted' is not taken from the file: the card is rejected") != std::string::npos,
             r.err.c_str());
    QVERIFY2(r.err.find(file + ":7: evidence (1 measurement) is not taken from the file: the card keeps its 1 measurement") !=
                 std::string::npos,
             r.err.c_str());
    shown = json::parse(kwb({"skills", "show", "tiles", "--json"}).out);
    QCOMPARE(shown["intent"].get<std::string>(), std::string("Tile in shared memory, revised"));
    QCOMPARE(shown["status"].get<std::string>(), std::string("rejected"));
    QCOMPARE(shown["evidence"].size(), std::size_t{1});
    QCOMPARE(shown["evidence"][0]["speedup"].get<double>(), 0.9);
    const auto &audit = shown["audit"];
    QCOMPARE(audit.size(), std::size_t{3});
    QCOMPARE(audit[2]["action"].get<std::string>(), std::string("merged"));
    QCOMPARE(audit[2]["detail"].get<std::string>(), "from " + file + ": its text; status, evidence and verification log kept");
  }

  // Issue 45, 4: export writes no file through a planted link (the link is replaced by the file
  // or folder; SKILL.md.tmp is not used), and refuses ids from the library that are not plain
  // names, writing nothing.
  void exportWritesNoFileThroughALink() {
    QVERIFY(kwb({"skills", "import", kFixtures}).exitCode == 0);
    const fs::path out = dir_.filePath("safe-export").toStdString();
    const fs::path victims = dir_.filePath("victims").toStdString();
    fs::remove_all(out);
    fs::remove_all(victims);
    fs::create_directories(out / "tma-multicast-loads");
    fs::create_directories(victims / "folder");
    for (const char *name : {"skill-md", "skill-md-tmp"}) std::ofstream(victims / name) << "precious\n";
    fs::create_symlink(victims / "skill-md", out / "tma-multicast-loads" / "SKILL.md");
    fs::create_symlink(victims / "skill-md-tmp", out / "tma-multicast-loads" / "SKILL.md.tmp");
    fs::create_symlink(victims / "folder", out / "warp-specialized-producer");
    auto r = kwb({"skills", "export", QString::fromStdString(out.string())});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    for (const char *name : {"skill-md", "skill-md-tmp"}) {
      std::ifstream in(victims / name);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      QCOMPARE(text, std::string("precious\n"));
    }
    QVERIFY(fs::is_empty(victims / "folder"));
    QVERIFY(!fs::is_symlink(out / "tma-multicast-loads" / "SKILL.md"));
    QVERIFY(fs::is_regular_file(out / "tma-multicast-loads" / "SKILL.md"));
    QVERIFY(!fs::is_symlink(out / "warp-specialized-producer"));
    QVERIFY(fs::is_regular_file(out / "warp-specialized-producer" / "SKILL.md"));

    // Ids from the library are checked on the way out: an absolute path, a parent.
    const fs::path outside = dir_.filePath("outside").toStdString();
    fs::remove_all(outside);
    {
      kwb::Database db(dir_.filePath("library.sqlite").toStdString());
      for (const std::string &id : {outside.string() + "/abs", std::string("../escaped")}) {
        auto q = db.prepare("INSERT INTO skill_cards(id, status, card_json, created_at, updated_at) "
                            "SELECT ?, status, json_set(card_json, '$.skill_id', ?), created_at, updated_at "
                            "FROM skill_cards WHERE id = 'tma-multicast-loads'");
        q.bind(1, id).bind(2, id).run();
      }
    }
    const fs::path second = dir_.filePath("second-export").toStdString();
    fs::remove_all(second);
    r = kwb({"skills", "export", QString::fromStdString(second.string())});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.find("a card's skill_id '" + outside.string() + "/abs' is not usable: it does not start with a letter or digit") !=
                 std::string::npos,
             r.err.c_str());
    QVERIFY2(r.err.find("a card's skill_id '../escaped' is not usable") != std::string::npos, r.err.c_str());
    QVERIFY2(r.err.find("nothing exported: the library holds 2 cards") != std::string::npos, r.err.c_str());
    QVERIFY(!fs::exists(outside));
    QVERIFY(!fs::exists(second.parent_path() / "escaped"));
    QVERIFY(!fs::exists(second));
  }

  // Issue 45, 4: a SKILL.md in the folder that leads by a link to a file outside it is not read.
  void importFollowsNoLinkOutOfItsFolder() {
    const fs::path folder = dir_.filePath("linked").toStdString();
    const fs::path elsewhere = dir_.filePath("elsewhere").toStdString();
    fs::remove_all(folder);
    fs::remove_all(elsewhere);
    fs::create_directories(folder);
    fs::copy(kFixtures.toStdString(), elsewhere, fs::copy_options::recursive);
    const fs::path tma = elsewhere / "tma-multicast-loads-20260412T101500Z-3fa2c1";
    fs::create_symlink(tma / "SKILL.md", folder / "SKILL.md");
    fs::create_symlink(elsewhere / "warp-specialized-producer-20260413T080000Z-b71e09", folder / "producer");
    auto r = kwb({"skills", "import", QString::fromStdString(folder.string())});
    QCOMPARE(r.exitCode, 2);
    const std::string canonicalTma = fs::canonical(tma / "SKILL.md").string();
    QVERIFY2(r.err.find((folder / "SKILL.md").string() + ": leads through a symbolic link to " + canonicalTma + ", outside " +
                        folder.string() + ": not followed (copy the card into the folder)") != std::string::npos,
             r.err.c_str());
    QVERIFY2(r.err.find((folder / "producer" / "SKILL.md").string() + ": leads through a symbolic link to ") != std::string::npos,
             r.err.c_str());
    QVERIFY2(r.err.find("nothing imported (2 problems in 2 files)") != std::string::npos, r.err.c_str());
    QCOMPARE(cardsJson().size(), std::size_t{0});
    // A link that stays inside the folder is read.
    fs::remove(folder / "SKILL.md");
    fs::remove(folder / "producer");
    fs::copy_file(tma / "SKILL.md", folder / "card.md");
    fs::create_directories(folder / "tma");
    fs::create_symlink(fs::path("..") / "card.md", folder / "tma" / "SKILL.md");
    r = kwb({"skills", "import", QString::fromStdString(folder.string())});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QCOMPARE(cardsJson().size(), std::size_t{1});
  }

  // Issue 45, 8: a card's text and file names reach the terminal with their control characters
  // escaped; a body that is not UTF-8 is named by its line.
  void untrustedTextIsEscaped() {
    const fs::path folder = dir_.filePath("escapes").toStdString();
    fs::remove_all(folder);
    fs::create_directories(folder / "card");
    std::ofstream(folder / "card" / "SKILL.md")
        << "---\nskill_id: esc\nintent: \"Clear \\e[2J\\e]0;title\\a done\"\npreconditions: []\n"
           "scope: {cases: ['*'], languages: ['*'], platforms: ['*']}\n---\n# Overview\nBody \x1b[2J\x1b]0;body\x07 text\n";
    auto r = kwb({"skills", "import", QString::fromStdString(folder.string())});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    r = kwb({"skills", "list"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.find("Clear \\x1b[2J\\x1b]0;title\\x07 done") != std::string::npos, r.out.c_str());
    QVERIFY(r.out.find('\x1b') == std::string::npos);
    QVERIFY(r.out.find('\x07') == std::string::npos);
    // skills show: the body's text too (the front matter is escaped by YAML).
    r = kwb({"skills", "show", "esc"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.find("# Overview\nBody \\x1b[2J\\x1b]0;body\\x07 text\n") != std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find("intent: \"Clear \\e[2J\\e]0;title\\a done\"") != std::string::npos, r.out.c_str());
    QVERIFY(r.out.find('\x1b') == std::string::npos);
    QVERIFY(r.out.find('\x07') == std::string::npos);

    // A file name with an escape sequence, in an import's problems.
    const fs::path named = folder / "bad\x1b[2Jname\x1b]0;t\x07";
    fs::create_directories(named);
    std::ofstream(named / "SKILL.md") << "---\nskill_id: x\n";
    r = kwb({"skills", "import", QString::fromStdString(folder.string())});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("bad\\x1b[2Jname\\x1b]0;t\\x07/SKILL.md:1: the front matter") != std::string::npos, r.err.c_str());
    QVERIFY(r.err.find('\x1b') == std::string::npos);
    QVERIFY(r.err.find('\x07') == std::string::npos);
    fs::remove_all(named);

    // A body that is not UTF-8: its line and column, not the JSON library's error.
    std::ofstream(folder / "card" / "SKILL.md", std::ios::app) << "\nLatin-1 caf\xe9\n";
    r = kwb({"skills", "import", "--replace", QString::fromStdString(folder.string())});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find((folder / "card" / "SKILL.md").string() + ":10: column 12: the byte 0xe9 is not UTF-8") !=
                 std::string::npos,
             r.err.c_str());
    QVERIFY2(r.err.find("json") == std::string::npos, r.err.c_str());
  }

  void buildNeedsAGpuAndAWellFormedFolder() {
    // No GPU 99 anywhere: the steps compile, nothing is stored.
    auto r = kwb({"lineage", "build", KWB_SOURCE_DIR "/kernels/softmax", "--gpu", "99"});
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.err.find("nothing stored") != std::string::npos, r.err.c_str());
    r = kwb({"skills", "list", "--json"});
    QCOMPARE(json::parse(r.out)["cards"].size(), std::size_t{0});

    const fs::path one = dir_.filePath("one-version").toStdString();
    fs::create_directories(one);
    std::ofstream(one / "01-only.cu") << "extern \"C\" __global__ void softmax() {}\n";
    r = kwb({"lineage", "build", KWB_SOURCE_DIR "/kernels/softmax", "--from-versions", QString::fromStdString(one.string())});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("at least two versions") != std::string::npos, r.err.c_str());

    r = kwb({"lineage"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("TASK is required") != std::string::npos, r.err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSkillsCli)
#include "tst_skills_cli.moc"
