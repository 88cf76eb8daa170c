// Lineage manifests (core/lineage/lineage.h): a valid lineage reads with each step's launch,
// tunables and header; each kind of mistake is an error naming the file, line and field.
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "core/lineage/lineage.h"
#include "core/lineage/step_resolution.h"
#include "core/task/manifest_parser.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;

namespace {

const char *kHeader = "// Step 1 of 2 - naive\n// Adds: one thread per output,\n//   coalesced,\n// and simple.\n// Relies on: nothing\n// Measured: a note that stays apart.\n";
const char *kKernel = "extern \"C\" __global__ void k(const float *x, float *y, long long rows, long long cols) {}\n";

void write(const fs::path &p, const std::string &text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

class TestLineage : public QObject {
  Q_OBJECT

  fs::path dir_;
  kwb::Task task_;

  // A copy of the softmax task with the given lineage.toml and two step files.
  kwb::Task taskWith(const std::string &lineageToml, const std::string &secondHeader = kHeader) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char *f : {"task.toml", "reference.cu", "reference.py", "softmax.cu"}) fs::copy_file(kwb::test::kernelsDir() / "softmax" / f, dir_ / f);
    write(dir_ / "lineage" / "01-naive.cu", std::string(kHeader) + kKernel);
    write(dir_ / "lineage" / "02-warp.cu", secondHeader + std::string(kKernel));
    write(dir_ / "lineage" / "lineage.toml", lineageToml);
    return kwb::loadTask(dir_);
  }

  // The error loading the lineage gives, or "" when it loads.
  std::string errorOf(const std::string &lineageToml, const std::string &secondHeader = kHeader) {
    try {
      kwb::loadLineage(taskWith(lineageToml, secondHeader));
    } catch (const kwb::ManifestError &e) {
      return e.what();
    }
    return "";
  }

  static constexpr const char *kValid =
      "[[step]]\nfile = \"01-naive.cu\"\ntitle = \"naive\"\n"
      "[step.launch]\nkernel = \"k\"\ngrid = [\"rows\"]\nblock = [128]\nargs = [\"x\", \"y\", \"rows\", \"cols\"]\n"
      "[[step]]\nfile = \"02-warp.cu\"\ntitle = \"warp shuffles\"\n[step.tunables]\nBLOCK = 512\n";

 private slots:
  void init() { dir_ = fs::path(KWB_TEST_OUTPUT_DIR) / "lineage-task"; }
  void cleanupTestCase() { fs::remove_all(dir_); }

  void readsSteps() {
    const auto task = taskWith(kValid);
    QVERIFY(kwb::hasLineage(task));
    const auto lineage = kwb::loadLineage(task);
    QCOMPARE(lineage.steps.size(), std::size_t(2));
    const auto &a = lineage.steps[0];
    QCOMPARE(a.index, 1);
    QCOMPARE(a.title, std::string("naive"));
    QCOMPARE(a.adds, std::string("one thread per output, coalesced, and simple."));
    QCOMPARE(a.reliesOn, std::string("nothing"));
    QVERIFY(a.launch);
    QCOMPARE(a.launch->kernel, std::string("k"));
    QCOMPARE(a.launch->block[0].text(), std::string("128"));
    QVERIFY(!a.hostLauncher);
    const auto &b = lineage.steps[1];
    QVERIFY(!b.launch);
    QCOMPARE(b.tunables.at("BLOCK"), std::int64_t(512));
    QCOMPARE(kwb::taskForStep(task, a).launch->kernel, std::string("k"));
    QCOMPARE(kwb::taskForStep(task, b).launch->kernel, std::string("softmax"));
  }

  void mistakesAreNamed_data() {
    QTest::addColumn<QString>("toml");
    QTest::addColumn<QString>("header");
    QTest::addColumn<QString>("expected");
    const QString ok = kValid;
    const QString header = kHeader;
    QTest::newRow("no steps") << "" << header << "lineage.toml: step: missing";
    QTest::newRow("unknown key") << "[[step]]\nfile = \"01-naive.cu\"\ntitle = \"a\"\nspeed = 3\n" << header
                                 << "lineage.toml:4: step[1].speed: unknown key; expected one of: file, title, launch, tunables";
    QTest::newRow("missing file") << "[[step]]\nfile = \"09-x.cu\"\ntitle = \"x\"\n" << header
                                  << "lineage.toml:2: step[1].file: '09-x.cu' does not exist";
    QTest::newRow("listed twice") << "[[step]]\nfile = \"01-naive.cu\"\ntitle = \"a\"\n[[step]]\nfile = \"01-naive.cu\"\ntitle = \"b\"\n"
                                  << header << "lineage.toml:5: step[2].file: '01-naive.cu' is listed twice";
    QTest::newRow("no title") << "[[step]]\nfile = \"01-naive.cu\"\n" << header << "lineage.toml:1: step[1].title: missing";
    QTest::newRow("undeclared tunable") << "[[step]]\nfile = \"01-naive.cu\"\ntitle = \"a\"\n[step.tunables]\nTILE = 4\n"
                                        << header << "lineage.toml:5: step[1].tunables.TILE: the task declares no tunable 'TILE'; expected one of: BLOCK";
    QTest::newRow("unlisted tunable value") << "[[step]]\nfile = \"01-naive.cu\"\ntitle = \"a\"\n[step.tunables]\nBLOCK = 96\n"
                                           << header << "lineage.toml:5: step[1].tunables.BLOCK: 96 is not one of the task's values; expected one of: 128, 256, 512, 1024";
    QTest::newRow("unknown size in launch")
        << "[[step]]\nfile = \"01-naive.cu\"\ntitle = \"a\"\n[step.launch]\nkernel = \"k\"\ngrid = [\"rowz\"]\nblock = [1]\nargs = [\"x\", \"y\"]\n"
        << header << "lineage.toml:6: step[1].launch.grid: unknown name 'rowz'";
    QTest::newRow("block too large")
        << "[[step]]\nfile = \"01-naive.cu\"\ntitle = \"a\"\n[step.launch]\nkernel = \"k\"\ngrid = [\"rows\"]\nblock = [2048]\nargs = [\"x\", \"y\"]\n"
        << header << "lineage.toml:7: step[1].launch.block: found 2048; expected block x <= 1024";
    QTest::newRow("no Adds line") << ok << "// Step 2 - warp\n// Relies on: step 1\n" << "02-warp.cu:1: header: no \"Adds:\" line";
    QTest::newRow("no Relies line") << ok << "// Adds: warp shuffles\n" << "02-warp.cu:1: header: no \"Relies on:\" line";
  }

  void mistakesAreNamed() {
    QFETCH(QString, toml);
    QFETCH(QString, header);
    QFETCH(QString, expected);
    const std::string error = errorOf(toml.toStdString(), header.toStdString());
    QVERIFY2(error.find(expected.toStdString()) != std::string::npos, ("got: " + error).c_str());
  }

  // The reference source as a candidate (a task without an [editor] starter evaluates it by
  // default) runs with the reference's launch, whatever [launch] names; other files keep it.
  void theReferenceSourceRunsWithTheReferenceLaunch() {
    auto task = kwb::loadTask(kwb::test::kernelsDir() / "softmax");
    QVERIFY(task.launch.has_value());
    QVERIFY(task.launch->kernel != task.reference.launch.kernel);
    auto other = task;
    QVERIFY(!kwb::runAsReference(other, task.folder / task.starterSource()));
    QCOMPARE(other.launch->kernel, task.launch->kernel);
    QVERIFY(kwb::runAsReference(task, task.folder / "." / task.reference.source));
    QCOMPARE(task.launch->kernel, task.reference.launch.kernel);
    QCOMPARE(task.launch->args, task.reference.launch.args);
  }

  void noLineageIsAnError() {
    auto task = taskWith(kValid);
    fs::remove_all(dir_ / "lineage");
    QVERIFY(!kwb::hasLineage(task));
    try {
      kwb::loadLineage(task);
      QFAIL("no error");
    } catch (const kwb::ManifestError &e) {
      QVERIFY2(std::string(e.what()).find("no lineage: expected lineage/lineage.toml") != std::string::npos, e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestLineage)
#include "tst_lineage.moc"
