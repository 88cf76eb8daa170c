// kwb skills and kwb lineage build as a user runs them: real processes, a real library file.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

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
    QCOMPARE(json::parse(r.out)["status"].get<std::string>(), std::string("admitted"));
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

    QCOMPARE(kwb({"skills", "list", "--status", "admitted", "--json"}).exitCode, 0);
    QCOMPARE(json::parse(kwb({"skills", "list", "--status", "admitted", "--json"}).out)["cards"].size(), std::size_t{1});
    QCOMPARE(json::parse(kwb({"skills", "list", "--case", "flash-attention", "--json"}).out)["cards"].size(), std::size_t{2});
    QCOMPARE(kwb({"skills", "list", "--status", "maybe"}).exitCode, 2);

    // Export, then import into a new library: the same cards, statuses included.
    const QString exported = dir_.filePath("exported");
    r = kwb({"skills", "export", exported});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QVERIFY(fs::exists(fs::path(exported.toStdString()) / "tma-multicast-loads" / "SKILL.md"));
    const auto before = json::parse(kwb({"skills", "show", "tma-multicast-loads", "--json"}).out);
    fs::remove(dir_.filePath("library.sqlite").toStdString());
    r = kwb({"skills", "import", exported});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    auto after = json::parse(kwb({"skills", "show", "tma-multicast-loads", "--json"}).out);
    auto strip = [](json j) {
      j.erase("audit");
      return j;
    };
    QCOMPARE(strip(after).dump(), strip(before).dump());
    QCOMPARE(after["status"].get<std::string>(), std::string("admitted"));
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
