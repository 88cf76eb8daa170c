// The line diff behind the session view's "Diff Against Parent" (core/text/line_diff.h): by hand
// for the hunk headers, and against GNU diff --minimal over the bundled lineages' consecutive
// steps (the same number of lines removed and added: a longest common subsequence is unique in
// length), each edit list replaying the old text into the new.
#include <QtTest>
#include <QProcess>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/text/line_diff.h"

using namespace kwb;

namespace {

std::string readAll(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::pair<int, int> countChanges(const std::string &diff) {
  int removed = 0, added = 0;
  std::istringstream in(diff);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("--- ", 0) == 0 || line.rfind("+++ ", 0) == 0) continue;
    if (!line.empty() && line[0] == '-') ++removed;
    if (!line.empty() && line[0] == '+') ++added;
  }
  return {removed, added};
}

}  // namespace

class TestLineDiff : public QObject {
  Q_OBJECT

 private slots:
  void hunksByHand() {
    QCOMPARE(unifiedDiff("a\nb\n", "a\nb\n", "x", "y"), std::string());
    QCOMPARE(unifiedDiff("a\nb\nc\n", "a\nB\nc\n", "old.cu", "new.cu"),
             std::string("--- old.cu\n+++ new.cu\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"));
    // Into an empty file, and out of one.
    QCOMPARE(unifiedDiff("", "x\n", "o", "n"), std::string("--- o\n+++ n\n@@ -0,0 +1 @@\n+x\n"));
    QCOMPARE(unifiedDiff("x\ny\n", "", "o", "n"), std::string("--- o\n+++ n\n@@ -1,2 +0,0 @@\n-x\n-y\n"));
    // Two changes 10 lines apart with context 1: two hunks.
    std::string a, b;
    for (int i = 1; i <= 12; ++i) {
      a += std::to_string(i) + "\n";
      b += (i == 2 || i == 11 ? "X" : std::to_string(i)) + "\n";
    }
    QCOMPARE(unifiedDiff(a, b, "o", "n", 1),
             std::string("--- o\n+++ n\n@@ -1,3 +1,3 @@\n 1\n-2\n+X\n 3\n@@ -10,3 +10,3 @@\n 10\n-11\n+X\n 12\n"));
  }

  void agreesWithGnuDiffOnLineages() {
    const std::filesystem::path kernels = KWB_SOURCE_DIR "/kernels";
    int pairs = 0;
    for (const auto &task : {"softmax", "sgemm", "gemm-bf16", "blur"}) {
      std::vector<std::filesystem::path> steps;
      for (const auto &e : std::filesystem::directory_iterator(kernels / task / "lineage"))
        if (e.path().extension() == ".cu") steps.push_back(e.path());
      std::sort(steps.begin(), steps.end());
      for (std::size_t i = 0; i + 1 < steps.size(); ++i) {
        const std::string a = readAll(steps[i]), b = readAll(steps[i + 1]);
        QProcess diff;
        diff.start(QStringLiteral("diff"), {QStringLiteral("--minimal"), QStringLiteral("-U3"),
                                            QString::fromStdString(steps[i].string()),
                                            QString::fromStdString(steps[i + 1].string())});
        QVERIFY(diff.waitForFinished(30000));
        QCOMPARE(diff.exitCode(), 1);  // they differ
        const auto theirs = countChanges(diff.readAllStandardOutput().toStdString());
        const auto ours = countChanges(unifiedDiff(a, b, "a", "b"));
        QCOMPARE(ours, theirs);
        // The edits replay a into b.
        std::string rebuilt, old;
        for (const auto &e : lineDiff(a, b)) {
          if (e.kind != LineEdit::Kind::Added) old += e.text + "\n";
          if (e.kind != LineEdit::Kind::Removed) rebuilt += e.text + "\n";
        }
        QCOMPARE(old, a);
        QCOMPARE(rebuilt, b);
        ++pairs;
      }
    }
    QVERIFY(pairs >= 20);
  }

  // Side by side: changed lines paired, with the part that differs; the columns rebuild both texts.
  void sideBySideRows() {
    const auto rows = sideBySide("a\nfloat x = 1;\nc\nd\n", "a\nfloat4 x = 2;\nnew\nc\n");
    QCOMPARE(rows.size(), std::size_t{5});
    QVERIFY(rows[0].kind == SideBySideRow::Kind::Same);
    QVERIFY(rows[1].kind == SideBySideRow::Kind::Changed);
    QCOMPARE(rows[1].oldText.substr(rows[1].oldFrom, rows[1].oldTo - rows[1].oldFrom), std::string(" x = 1"));
    QCOMPARE(rows[1].newText.substr(rows[1].newFrom, rows[1].newTo - rows[1].newFrom), std::string("4 x = 2"));
    QVERIFY(rows[2].kind == SideBySideRow::Kind::Added);
    QCOMPARE(rows[2].oldLine, std::size_t{0});
    QCOMPARE(rows[2].newLine, std::size_t{3});
    QVERIFY(rows[3].kind == SideBySideRow::Kind::Same);
    QVERIFY(rows[4].kind == SideBySideRow::Kind::Removed);
    QCOMPARE(rows[4].oldText, std::string("d"));
    // A line that only grew: the marked part is what was added.
    const auto grew = sideBySide("abc\n", "abXc\n");
    QCOMPARE(grew[0].oldFrom, grew[0].oldTo);
    QCOMPARE(grew[0].newText.substr(grew[0].newFrom, grew[0].newTo - grew[0].newFrom), std::string("X"));
    // Every lineage step against its parent: the columns are the two files, line for line.
    for (const auto &task : std::filesystem::directory_iterator(std::filesystem::path(KWB_SOURCE_DIR) / "kernels")) {
      std::vector<std::filesystem::path> files;
      if (!std::filesystem::is_directory(task.path() / "lineage")) continue;
      for (const auto &f : std::filesystem::directory_iterator(task.path() / "lineage"))
        if (f.path().extension() == ".cu") files.push_back(f.path());
      std::sort(files.begin(), files.end());
      for (std::size_t i = 1; i < files.size(); ++i) {
        const auto a = readAll(files[i - 1]), b = readAll(files[i]);
        std::string left, right;
        for (const auto &r : sideBySide(a, b)) {
          if (r.oldLine) left += r.oldText + "\n";
          if (r.newLine) right += r.newText + "\n";
        }
        QCOMPARE(left, a);
        QCOMPARE(right, b);
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestLineDiff)
#include "tst_line_diff.moc"
