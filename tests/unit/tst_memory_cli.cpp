// kwb memory as a user runs it: a real workspace file with runs, a real library file, real
// processes; the graph rendered by Graphviz's dot where it is installed.
#include <QtTest>

#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <sys/stat.h>
#include <unistd.h>

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

  Run run(const QString &program, const QStringList &args, const QByteArray &input = {}, const QString &library = {}) {
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("KWB_LIBRARY", library.isEmpty() ? dir_.filePath("library.sqlite") : library);
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!input.isEmpty()) p.write(input);
    p.closeWriteChannel();
    if (!p.waitForFinished(60000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput().toStdString(),
            p.readAllStandardError().toStdString()};
  }
  Run kwb(const QStringList &args) { return run(kwb_, args); }
  // kwb with $KWB_LIBRARY naming `library`.
  Run kwbWith(const QString &library, const QStringList &args) { return run(kwb_, args, {}, library); }

  static QByteArray bytesOf(const QString &file) {
    QFile in(file);
    return in.open(QIODevice::ReadOnly) ? in.readAll() : QByteArray();
  }
  static bool hasSideFiles(const QString &file) {
    return QFile::exists(file + "-wal") || QFile::exists(file + "-shm") || QFile::exists(file + "-journal");
  }
  static std::int64_t markOf(const QString &file) {
    kwb::Database db(file.toStdString(), kwb::Database::Mode::ReadOnly);
    auto query = db.prepare("PRAGMA application_id");
    return query.step() ? query.columnInt(0) : -1;
  }

  // A library with the fixture's two cards and the workspace's three Cases.
  bool makeLibrary(const QString &library) {
    const auto cards = kwbWith(library, {"skills", "import", QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/skills/published-like")});
    const auto cases = kwbWith(library, {"memory", "import", workspace_});
    if (cards.exitCode == 0 && cases.exitCode == 0) return true;
    qWarning("%s%s", cards.err.c_str(), cases.err.c_str());
    return false;
  }
  // Every card and Case of makeLibrary() is still read from it.
  void checkLibraryReads(const QString &library) {
    auto r = kwbWith(library, {"skills", "list", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QCOMPARE(json::parse(r.out)["cards"].size(), std::size_t{2});
    r = kwbWith(library, {"memory", "stats", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.c_str());
    QCOMPARE(json::parse(r.out)["cases"].get<int>(), 3);
  }

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

  // Issue 45, 1: each of these commands, given the skill library where a workspace belongs,
  // migrated it as a workspace and then failed; from then on every library command said it was
  // written by a newer version. Each refuses it now, naming both kinds, and leaves it byte for byte.
  void libraryGivenAsWorkspaceIsLeftAlone() {
    QVERIFY(QDir().mkpath(dir_.filePath("kinds")));
    const QString library = dir_.filePath("kinds/library.sqlite");
    QVERIFY(makeLibrary(library));
    const QByteArray before = bytesOf(library);
    QVERIFY(!before.isEmpty());
    QVERIFY(!hasSideFiles(library));
    const QString refusal =
        library + " is a Kernel Workbench skill library, not a Kernel Workbench workspace, and was left as it is";
    const QList<QStringList> commands = {
        {"memory", "import", library},
        {"sessions", "--workspace", library},
        {"trajectories", "export", "s1", "--workspace", library},
        {"export", "run:1", "--task", KWB_SOURCE_DIR "/kernels/softmax", "--to", dir_.filePath("kinds/out"), "--workspace",
         library},
    };
    for (const QStringList &command : commands) {
      const auto r = kwbWith(library, command);
      QVERIFY2(r.exitCode > 0, qPrintable(command.join(' ')));
      QVERIFY2(QString::fromStdString(r.err).contains(refusal), (command.join(' ').toStdString() + ": " + r.err).c_str());
      QCOMPARE(bytesOf(library), before);
      QVERIFY(!hasSideFiles(library));
    }
    checkLibraryReads(library);

    // The reverse: a workspace given as the library.
    const QByteArray workspaceBefore = bytesOf(workspace_);
    for (const QStringList &command : QList<QStringList>{{"skills", "list"}, {"memory", "stats"}}) {
      const auto r = kwbWith(workspace_, command);
      QVERIFY2(r.exitCode > 0, qPrintable(command.join(' ')));
      QVERIFY2(QString::fromStdString(r.err).contains(workspace_ +
                                                      " is a Kernel Workbench workspace, not a Kernel Workbench skill "
                                                      "library, and was left as it is"),
               r.err.c_str());
      QCOMPARE(bytesOf(workspace_), workspaceBefore);
    }
  }

  // A library made before files were marked is recognised by its tables: refused as a workspace,
  // unchanged; opened as a library, it reads and gets its mark.
  void unmarkedLibraryIsKnown() {
    QVERIFY(QDir().mkpath(dir_.filePath("unmarked")));
    const QString library = dir_.filePath("unmarked/library.sqlite");
    QVERIFY(makeLibrary(library));
    kwb::Database(library.toStdString(), kwb::Database::Mode::OpenExisting).exec("PRAGMA application_id = 0");
    QCOMPARE(markOf(library), std::int64_t{0});
    const QByteArray before = bytesOf(library);
    const auto r = kwbWith(library, {"sessions", "--workspace", library});
    QVERIFY(r.exitCode > 0);
    QVERIFY2(QString::fromStdString(r.err).contains(library + " is a Kernel Workbench skill library (made before files "
                                                              "were marked), not a Kernel Workbench workspace"),
             r.err.c_str());
    QCOMPARE(bytesOf(library), before);
    checkLibraryReads(library);
    QCOMPARE(markOf(library), std::int64_t{0x4B57424C});
  }

  // Issue 45, 8: a library this user may not write (or in a folder it may not write) could not
  // even be listed. It is read now; a change is refused, naming the file. As root every file may
  // be written whatever its mode: there the readers run in a mount namespace of their own where
  // the library's folder is bound read-only (running them as another user would need the build
  // folder to be open to that user, which a clone under /root is not).
  void readOnlyLibraryIsListed() {
    QTemporaryDir home;
    QVERIFY(home.isValid());
    const QString library = home.filePath("library.sqlite");
    QVERIFY(makeLibrary(library));
    const bool root = ::geteuid() == 0;
    QVERIFY(::chmod(home.path().toLocal8Bit().constData(), root ? 0755 : 0555) == 0);
    QVERIFY(::chmod(library.toLocal8Bit().constData(), root ? 0644 : 0444) == 0);
    const QString workspace = home.filePath("ws.kwb");  // one the reader may read
    QVERIFY(QFile::copy(workspace_, workspace));
    {
      // With a run the library does not have yet: importing it is a change.
      auto ws = kwb::Workspace::open(workspace.toStdString());
      const auto task = ws->recordTaskOpened("softmax", KWB_SOURCE_DIR "/kernels/softmax", "hash");
      kwb::test::addMemoryRun(*ws, task.id, "// new\n", kwb::test::memoryRunResult(true, {1.5, 1.5, 1.5}), "new.cu");
    }
    QVERIFY(::chmod(workspace.toLocal8Bit().constData(), 0644) == 0);
    const QByteArray before = bytesOf(library);
    const auto asReader = [&](const QStringList &args) {
      return root ? run(QStringLiteral("unshare"),
                        QStringList{"--mount", "--propagation", "private", "sh", "-c",
                                    R"(mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@")", home.path(),
                                    kwb_} +
                            args,
                        {}, library)
                  : kwbWith(library, args);
    };
    const auto listed = asReader({"skills", "list", "--json"});
    const auto shown = asReader({"skills", "show", "warp-specialized-producer"});
    const auto stats = asReader({"memory", "stats", "--json"});
    const auto query = asReader({"memory", "query", "warp", "--json"});
    const auto approve = asReader({"skills", "approve", "warp-specialized-producer"});
    const auto import = asReader({"memory", "import", workspace});
    QVERIFY(::chmod(home.path().toLocal8Bit().constData(), 0700) == 0);
    QVERIFY(::chmod(library.toLocal8Bit().constData(), 0600) == 0);
    QVERIFY2(listed.exitCode == 0, listed.err.c_str());
    QCOMPARE(json::parse(listed.out)["cards"].size(), std::size_t{2});
    QVERIFY2(shown.exitCode == 0 && shown.out.find("warp-specialized-producer") != std::string::npos, shown.err.c_str());
    QVERIFY2(stats.exitCode == 0, stats.err.c_str());
    QCOMPARE(json::parse(stats.out)["cases"].get<int>(), 3);
    QVERIFY2(query.exitCode == 0, query.err.c_str());
    QCOMPARE(json::parse(query.out).size(), std::size_t{1});
    const QString readOnly = library + ": cannot change it: it is open read-only";
    for (const Run *change : {&approve, &import}) {
      QVERIFY2(change->exitCode > 0, (change->out + change->err).c_str());
      QVERIFY2(QString::fromStdString(change->err).contains(readOnly), change->err.c_str());
    }
    QCOMPARE(bytesOf(library), before);
  }

  void missingWorkspaceIsNamed() {
    const auto r = kwb({"memory", "import", dir_.filePath("nowhere.kwb")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.find("nowhere.kwb") != std::string::npos, r.err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestMemoryCli)
#include "tst_memory_cli.moc"
