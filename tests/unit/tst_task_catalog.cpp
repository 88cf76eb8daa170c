// Finding tasks on disk: the bundled suite, folders with broken manifests, and loadTask's
// handling of folder and file paths.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "core/task/manifest_parser.h"
#include "core/task/task_catalog.h"

using namespace kwb;
namespace fs = std::filesystem;

namespace {

const char *const kValidManifest = R"toml(name = "copy"
description = "Copies x into y"
sizes = ["n"]

[[configs]]
name = "small"
n = 16

[tensors.x]
dtype = "f32"
shape = ["n"]
role = "in"
init = { kind = "arange", start = 0, step = 1 }

[tensors.y]
dtype = "f32"
shape = ["n"]
role = "out"
tolerance = "exact"

[reference]
source = "reference.cu"
kernel = "copy"
grid = ["ceil_div(n, 256)"]
block = [256]
args = ["x", "y", "n"]

[cost]
flops = 0
bytes = "8 * n"
)toml";

void writeFile(const fs::path &path, const std::string &text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A valid task folder named `name` under `dir`.
fs::path makeTask(const fs::path &dir, const std::string &name) {
  const fs::path folder = dir / name;
  writeFile(folder / "task.toml", kValidManifest);
  writeFile(folder / "reference.cu", "// reference\n");
  return folder;
}

QString loadError(const fs::path &path) {
  try {
    loadTask(path);
  } catch (const ManifestError &e) {
    return QString::fromStdString(e.what());
  }
  return QStringLiteral("(loaded without error)");
}

QStringList folderNames(const std::vector<TaskEntry> &entries) {
  QStringList names;
  for (const auto &e : entries) names << QString::fromStdString(e.folder.filename().string());
  return names;
}

}  // namespace

class TestTaskCatalog : public QObject {
  Q_OBJECT

 private slots:
  void bundledTasks();
  void brokenManifestIsListed();
  void folderHoldingATask();
  void missingFolder();
  void loadTaskPaths_data();
  void loadTaskPaths();
  void loadTaskErrors();
  void unreadableManifest();
};

void TestTaskCatalog::bundledTasks() {
  const auto entries = listTasks(fs::path(KWB_SOURCE_DIR) / "kernels");
  const QStringList names = folderNames(entries);
  QVERIFY2(names.contains("softmax"), qPrintable(names.join(", ")));
  QVERIFY2(names.contains("sgemm"), qPrintable(names.join(", ")));
  QVERIFY(names.indexOf("sgemm") < names.indexOf("softmax"));  // sorted by folder name
  QStringList sorted = names;
  sorted.sort();
  QCOMPARE(names, sorted);
  for (const TaskEntry &e : entries) {
    QVERIFY2(e.task.has_value(), e.error.c_str());
    QVERIFY(e.error.empty());
    QCOMPARE(e.task->name, e.folder.filename().string());
    QVERIFY(!e.task->configs.empty());
  }
}

void TestTaskCatalog::brokenManifestIsListed() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const fs::path dir = tmp.path().toStdString();
  makeTask(dir, "good");
  writeFile(dir / "broken" / "task.toml", "name = \"broken\"\ndescription = \n");
  writeFile(dir / "invalid" / "task.toml", std::string(kValidManifest) + "color = \"red\"\n");
  writeFile(dir / "invalid" / "reference.cu", "// reference\n");
  fs::create_directories(dir / "no-manifest");
  writeFile(dir / "no-manifest" / "notes.txt", "not a task\n");
  writeFile(dir / "stray.toml", "not a folder\n");

  const auto entries = listTasks(dir);
  QCOMPARE(folderNames(entries), (QStringList{"broken", "good", "invalid"}));

  QVERIFY(!entries[0].task);
  QCOMPARE(QString::fromStdString(entries[0].error),
           QString::fromStdString((dir / "broken" / "task.toml").string()) +
               ":2: TOML syntax error: Error while parsing key-value pair: expected value, saw '\\n'");
  QVERIFY(entries[1].task);
  QVERIFY(entries[1].error.empty());
  QCOMPARE(entries[1].task->name, std::string("copy"));
  QCOMPARE(entries[1].folder, dir / "good");
  QVERIFY(!entries[2].task);
  QCOMPARE(QString::fromStdString(entries[2].error),
           QString::fromStdString((dir / "invalid" / "task.toml").string()) +
               ":31: cost.color: unknown key; expected one of: flops, bytes");
}

void TestTaskCatalog::folderHoldingATask() {
  // A folder that is itself a task is listed first, then its task subfolders.
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const fs::path dir = tmp.path().toStdString();
  writeFile(dir / "task.toml", kValidManifest);
  writeFile(dir / "reference.cu", "// reference\n");
  makeTask(dir, "b");
  makeTask(dir, "a");
  const auto entries = listTasks(dir);
  QCOMPARE(entries.size(), std::size_t{3});
  QCOMPARE(entries[0].folder, dir);
  QVERIFY2(entries[0].task, entries[0].error.c_str());
  QCOMPARE(entries[1].folder, dir / "a");
  QCOMPARE(entries[2].folder, dir / "b");
}

void TestTaskCatalog::missingFolder() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  QVERIFY(listTasks(fs::path(tmp.path().toStdString()) / "nowhere").empty());
  QVERIFY(listTasks(tmp.path().toStdString()).empty());
}

void TestTaskCatalog::loadTaskPaths_data() {
  QTest::addColumn<QString>("suffix");
  QTest::newRow("folder") << "";
  QTest::newRow("folder with trailing slash") << "/";
  QTest::newRow("manifest file") << "/task.toml";
  QTest::newRow("folder with dot segment") << "/./";
}

void TestTaskCatalog::loadTaskPaths() {
  QFETCH(QString, suffix);
  const fs::path softmax = fs::path(KWB_SOURCE_DIR) / "kernels" / "softmax";
  const Task task = loadTask(softmax.string() + suffix.toStdString());
  QCOMPARE(task.name, std::string("softmax"));
  QCOMPARE(task.folder, fs::absolute(softmax).lexically_normal());
  QCOMPARE(task.manifestPath, task.folder / "task.toml");
  QVERIFY(task.starter);
  QVERIFY(fs::exists(task.folder / *task.starter));
  QVERIFY(fs::exists(task.folder / task.reference.source));
}

void TestTaskCatalog::loadTaskErrors() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const fs::path dir = tmp.path().toStdString();
  const QString shown = QString::fromStdString(dir.string());

  QCOMPARE(loadError(dir), shown + ": no task.toml in this folder");
  QCOMPARE(loadError(dir / "missing"), shown + "/missing: no such file or folder");
  QCOMPARE(loadError(dir / "missing" / "task.toml"), shown + "/missing/task.toml: no such file or folder");

  fs::create_directories(dir / "odd" / "task.toml");
  QCOMPARE(loadError(dir / "odd"), shown + "/odd/task.toml: not a regular file; expected a task manifest");

  // Sources are checked against the folder the manifest is in.
  writeFile(dir / "nosource" / "task.toml", kValidManifest);
  QCOMPARE(loadError(dir / "nosource"),
           shown + "/nosource/task.toml:22: reference.source: 'reference.cu' does not exist in the task folder; "
                   "expected the reference source file");

  // A manifest file under another name is accepted when named directly.
  makeTask(dir, "named");
  fs::copy_file(dir / "named" / "task.toml", dir / "named" / "other.toml");
  const Task task = loadTask(dir / "named" / "other.toml");
  QCOMPARE(task.name, std::string("copy"));
  QCOMPARE(task.folder, dir / "named");
  QCOMPARE(task.manifestPath, dir / "named" / "other.toml");  // the file read, not folder / task.toml
  // Its errors name that file too.
  writeFile(dir / "named" / "broken.toml", "name = \"copy\"\n");
  QCOMPARE(
      loadError(dir / "named" / "broken.toml"),
      shown +
          "/named/broken.toml: description: missing; expected a one-line description, e.g. description = "
          "\"Row-wise softmax\"");
}

void TestTaskCatalog::unreadableManifest() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const fs::path folder = makeTask(tmp.path().toStdString(), "locked");
  fs::permissions(folder / "task.toml", fs::perms::none);
  if (std::ifstream(folder / "task.toml").good()) {
    fs::permissions(folder / "task.toml", fs::perms::owner_read | fs::perms::owner_write);
    QSKIP("running with privileges that read any file");
  }
  QCOMPARE(loadError(folder), QString::fromStdString((folder / "task.toml").string()) +
                                  ": cannot be read: Permission denied");
  const auto entries = listTasks(folder.parent_path());
  QCOMPARE(entries.size(), std::size_t{1});
  QVERIFY(!entries[0].task);
  QCOMPARE(QString::fromStdString(entries[0].error),
           QString::fromStdString((folder / "task.toml").string()) + ": cannot be read: Permission denied");
  fs::permissions(folder / "task.toml", fs::perms::owner_read | fs::perms::owner_write);
}

QTEST_APPLESS_MAIN(TestTaskCatalog)
#include "tst_task_catalog.moc"
