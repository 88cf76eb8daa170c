// Writing without following links (core/paths/safe_write.h, issue 45 item 4), on real folders
// and links: a link at a file's name or a subfolder's is replaced and what it leads to untouched;
// a folder that is itself a link is refused; a folder swapped for a link after it was opened is not
// followed (the folder is held open); names are one path component; nothing temporary is left.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/paths/safe_write.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;
using kwb::SafeFolder;
using kwb::SafeWriteError;

namespace {

void writeText(const fs::path &path, const std::string &text) { std::ofstream(path, std::ios::binary) << text; }

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const SafeWriteError &e) {
    return e.what();
  }
  return "(no error)";
}

// The names in `dir`, sorted, one level.
std::vector<std::string> namesIn(const fs::path &dir) {
  std::vector<std::string> out;
  for (const auto &e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

class TestSafeWrite : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  fs::path root_;
  int case_ = 0;
  fs::path folder_, outside_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    root_ = tmp_.path().toStdString();
  }

  void init() {
    ++case_;
    folder_ = root_ / ("folder" + std::to_string(case_));
    outside_ = root_ / ("outside" + std::to_string(case_));
    fs::create_directories(folder_);
    fs::create_directories(outside_);
    writeText(outside_ / "victim", "keep me\n");
  }

  void writesAndReplaces() {
    const SafeFolder f = SafeFolder::open(folder_ / "made" / "deep");  // made with its parents
    f.write("a.txt", "one");
    f.write("a.txt", "two, longer");
    f.write("run.sh", "#!/bin/sh\n", 0755);
    QCOMPARE(kwb::test::readFile(folder_ / "made" / "deep" / "a.txt"), std::string("two, longer"));
    QVERIFY((fs::status(folder_ / "made" / "deep" / "run.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
    QCOMPARE(namesIn(folder_ / "made" / "deep"), (std::vector<std::string>{"a.txt", "run.sh"}));
  }

  void aLinkAtTheNameIsReplaced() {
    fs::create_symlink(outside_ / "victim", folder_ / "a.txt");
    SafeFolder::open(folder_).write("a.txt", "mine");
    QCOMPARE(kwb::test::readFile(outside_ / "victim"), std::string("keep me\n"));
    QVERIFY(!fs::is_symlink(folder_ / "a.txt"));
    QCOMPARE(kwb::test::readFile(folder_ / "a.txt"), std::string("mine"));
    // A dangling link too (O_CREAT through it would make the file it names).
    fs::create_symlink(outside_ / "new", folder_ / "b.txt");
    SafeFolder::open(folder_).write("b.txt", "mine");
    QVERIFY(!fs::exists(outside_ / "new"));
    QCOMPARE(kwb::test::readFile(folder_ / "b.txt"), std::string("mine"));
  }

  void aLinkedSubfolderIsReplaced() {
    fs::create_symlink(outside_, folder_ / "include");
    SafeFolder::open(folder_).writeRelative("include/x.h", "// x\n");
    QCOMPARE(namesIn(outside_), (std::vector<std::string>{"victim"}));
    QVERIFY(!fs::is_symlink(folder_ / "include") && fs::is_directory(folder_ / "include"));
    QCOMPARE(kwb::test::readFile(folder_ / "include" / "x.h"), std::string("// x\n"));
  }

  void aFolderThatIsALinkIsRefused() {
    const fs::path link = root_ / ("link" + std::to_string(case_));
    fs::create_symlink(outside_, link);
    QCOMPARE(errorOf([&] { SafeFolder::open(link); }),
             link.string() + ": is a symbolic link (to " + outside_.string() +
                 "); files are not written through links: name the folder it leads to");
    QCOMPARE(namesIn(outside_), (std::vector<std::string>{"victim"}));
  }

  // Opened, then swapped for a link (renamed away, a link put at its path): writes go to the
  // folder that was opened.
  void aFolderSwappedAfterOpeningIsNotFollowed() {
    const SafeFolder f = SafeFolder::open(folder_);
    const fs::path moved = root_ / ("moved" + std::to_string(case_));
    fs::rename(folder_, moved);
    fs::create_symlink(outside_, folder_);
    f.write("a.txt", "mine");
    f.writeRelative("sub/b.txt", "mine");
    QCOMPARE(namesIn(outside_), (std::vector<std::string>{"victim"}));
    QCOMPARE(kwb::test::readFile(moved / "a.txt"), std::string("mine"));
    QCOMPARE(kwb::test::readFile(moved / "sub" / "b.txt"), std::string("mine"));
  }

  void namesAreOneComponent() {
    const SafeFolder f = SafeFolder::open(folder_);
    const std::string tail = "; a file or folder written here is named by one path component";
    QCOMPARE(errorOf([&] { f.write("", "x"); }), "the file name '' is empty" + tail);
    QCOMPARE(errorOf([&] { f.write("..", "x"); }), "the file name '..' names the folder itself or its parent" + tail);
    QCOMPARE(errorOf([&] { f.write(".", "x"); }), "the file name '.' names the folder itself or its parent" + tail);
    QCOMPARE(errorOf([&] { f.write("a/b", "x"); }), "the file name 'a/b' holds '/'" + tail);
    QCOMPARE(errorOf([&] { f.subfolder(".."); }), "the folder name '..' names the folder itself or its parent" + tail);
    QCOMPARE(errorOf([&] { f.writeRelative("../victim", "x"); }), "the folder name '..' names the folder itself or its parent" + tail);
    QCOMPARE(errorOf([&] { f.writeRelative("/etc/x", "x"); }), "'/etc/x': not a path relative to " + folder_.string());
    QCOMPARE(errorOf([&] { kwb::checkPathComponent(std::string("a\0b", 3), "the task's name"); }),
             "the task's name 'a\\x00b' holds a NUL byte" + tail);
    QVERIFY(namesIn(folder_).empty());
  }

  void aFolderWhereAFileGoesIsRefused() {
    fs::create_directories(folder_ / "d");
    fs::create_directories(folder_ / "e");
    writeText(folder_ / "f", "a file\n");
    const SafeFolder f = SafeFolder::open(folder_);
    QCOMPARE(errorOf([&] { f.write("d", "x"); }), (folder_ / "d").string() + ": is a folder, where a file goes; remove it or write elsewhere");
    QCOMPARE(errorOf([&] { f.subfolder("f"); }), (folder_ / "f").string() + ": is a file, where a folder goes; remove it or write elsewhere");
    QCOMPARE(namesIn(folder_), (std::vector<std::string>{"d", "e", "f"}));  // no temporary file left
    QCOMPARE(errorOf([&] { SafeFolder::open(folder_ / "f"); }), (folder_ / "f").string() + ": is not a folder; name a folder to write into");
  }
};

QTEST_GUILESS_MAIN(TestSafeWrite)
#include "tst_safe_write.moc"
