// kwb memory as a user runs it: a real workspace file with runs, a real library file, real
// processes; the graph rendered by Graphviz's dot where it is installed.
#include <QtTest>

#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <sstream>

#include <nlohmann/json.hpp>

#include "core/store/workspace.h"
#include "helpers/memory_fixtures.h"

using nlohmann::json;

namespace {

struct Run {
  int exitCode = -1;
  std::string out, err;
};

}  // namespace

class TestMemoryCli : public QObject {
  Q_OBJECT

  QString kwb_;
  QTemporaryDir dir_;
  QString workspace_;

  Run run(const QString &program, const QStringList &args, const QByteArray &input = {}) {
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("KWB_LIBRARY", dir_.filePath("library.sqlite"));
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!input.isEmpty()) p.write(input);
    p.closeWriteChannel();
    if (!p.waitForFinished(60000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput().toStdString(),
            p.readAllStandardError().toStdString()};
  }
  Run kwb(const QStringList &args) { return run(kwb_, args); }

 private slots:
  void initTestCase() {
    kwb_ = qEnvironmentVariable("KWB_CLI");
    QVERIFY2(!kwb_.isEmpty(), "run through ctest: KWB_CLI names kwb");
    QVERIFY(dir_.isValid());
    workspace_ = dir_.filePath("ws.kwb");
    auto ws = kwb::Workspace::open(workspace_.toStdString());
    const auto task = ws->recordTaskOpened("softmax", KWB_SOURCE_DIR "/kernels/softmax", "hash");
    kwb::test::addMemoryRun(*ws, task.id, "// naive\n", kwb::test::memoryRunResult(true, {1.0, 1.0, 1.0}), "naive.cu");
    kwb::test::addMemoryRun(*ws, task.id, "// warp shuffle\n", kwb::test::memoryRunResult(true, {2.5, 2.5, 2.5}), "warp.cu");
    kwb::test::addMemoryRun(*ws, task.id, "// broken\n", kwb::test::memoryRunResult(false, {}), "broken.cu");
  }

  // The history is recorded once; stats, query, export and graph read it.
  void importThenRead() {
    auto r = kwb({"memory", "import", workspace_, "--json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QCOMPARE(json::parse(r.out)["added"].get<int>(), 3);
    r = kwb({"memory", "import", workspace_, "--json"});
    QCOMPARE(json::parse(r.out)["added"].get<int>(), 0);
    QCOMPARE(json::parse(r.out)["known"].get<int>(), 3);

    r = kwb({"memory", "stats", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    const auto stats = json::parse(r.out);
    QCOMPARE(stats["cases"].get<int>(), 3);
    QCOMPARE(stats["roots"].get<int>(), 1);
    QCOMPARE(stats["labels"]["effective"].get<int>(), 1);
    QCOMPARE(stats["labels"]["negative"].get<int>(), 1);
    QCOMPARE(stats["best"][0]["speedup"].get<double>(), 2.5);
    r = kwb({"memory", "stats"});
    QVERIFY2(r.out.find("3 Cases (2 correct) in 1 trees") != std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find("2.50x") != std::string::npos, r.out.c_str());

    r = kwb({"memory", "query", "warp", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    auto hits = json::parse(r.out);
    QCOMPARE(hits.size(), std::size_t{1});
    QCOMPARE(hits[0]["label"].get<std::string>(), std::string("effective"));
    QCOMPARE(hits[0]["ratio"].get<double>(), 2.5);
    r = kwb({"memory", "query", "--task", "softmax", "--json"});
    hits = json::parse(r.out);
    QCOMPARE(hits.size(), std::size_t{3});
    QCOMPARE(hits[0]["label"].get<std::string>(), std::string("effective"));
    QCOMPARE(hits[2]["label"].get<std::string>(), std::string("negative"));
    r = kwb({"memory", "query", "--label", "great"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("one of effective, partial, ineffective, negative") != std::string::npos, r.err.c_str());

    r = kwb({"memory", "export", "--format", "jsonl"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    std::istringstream lines(r.out);
    std::string line;
    std::vector<json> rows;
    while (std::getline(lines, line)) rows.push_back(json::parse(line));
    QCOMPARE(rows.size(), std::size_t{3});
    QCOMPARE(rows[1]["after"].get<std::string>(), std::string("// warp shuffle\n"));
    QCOMPARE(rows[1]["before"].get<std::string>(), std::string("// naive\n"));
    QCOMPARE(kwb({"memory", "export", "--format", "csv"}).exitCode, 2);

    r = kwb({"memory", "graph", "--dot"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QVERIFY(r.out.rfind("digraph experience {", 0) == 0);
    QCOMPARE(kwb({"memory", "graph"}).exitCode, 2);
    const QString dot = QStandardPaths::findExecutable("dot");
    if (dot.isEmpty()) QSKIP("Graphviz's dot is not installed: the graph text is not rendered");
    const auto svg = run(dot, {"-Tsvg"}, QByteArray::fromStdString(r.out));
    QVERIFY2(svg.exitCode == 0, svg.err.c_str());
    QVERIFY(svg.out.find("<svg") != std::string::npos);
    QVERIFY(svg.out.find("softmax") != std::string::npos);
  }

  void missingWorkspaceIsNamed() {
    const auto r = kwb({"memory", "import", dir_.filePath("nowhere.kwb")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("nowhere.kwb") != std::string::npos, r.err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestMemoryCli)
#include "tst_memory_cli.moc"
