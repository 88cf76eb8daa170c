// TaskTreeModel alone: the four groups, tasks under them, a folder of several tasks as a branch
// and of one task as that task, a problem as a message row, and the open task in bold.
#include <QAbstractItemModelTester>
#include <QFont>
#include <QtTest>

#include "ui/models/task_tree_model.h"

using kwb::ui::TaskFolderItem;
using kwb::ui::TaskItem;
using kwb::ui::TaskTreeModel;

namespace {

TaskItem task(const QString &name, const QString &folder, const QString &error = QString()) {
  TaskItem t;
  t.name = name;
  t.description = name + QStringLiteral(" of a matrix");
  t.folder = folder;
  t.error = error;
  return t;
}

}  // namespace

class TestTaskTreeModel : public QObject {
  Q_OBJECT

 private slots:
  void groupsTasksFoldersAndMessages() {
    TaskTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const QModelIndex bundled = model.groupIndex(TaskTreeModel::Group::Bundled);
    QVERIFY(bundled.isValid());
    QCOMPARE(bundled.data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Group));

    model.setTasks(TaskTreeModel::Group::Bundled,
                   {task(QStringLiteral("softmax"), QStringLiteral("/k/softmax")),
                    task(QString(), QStringLiteral("/k/broken"), QStringLiteral("task.toml:3: name: missing"))});
    QCOMPARE(model.rowCount(bundled), 2);
    const QModelIndex softmax = model.index(0, 0, bundled);
    QCOMPARE(softmax.data(TaskTreeModel::FolderRole).toString(), QStringLiteral("/k/softmax"));
    QCOMPARE(softmax.data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Task));
    QCOMPARE(model.index(1, 0, bundled).data(TaskTreeModel::ErrorRole).toString(),
             QStringLiteral("task.toml:3: name: missing"));

    // A problem reads as a message row before the tasks.
    model.setTasks(TaskTreeModel::Group::Workspace, {}, QStringLiteral("the workspace is not open"));
    const QModelIndex workspace = model.groupIndex(TaskTreeModel::Group::Workspace);
    QCOMPARE(model.rowCount(workspace), 1);
    QCOMPARE(model.index(0, 0, workspace).data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Message));

    // Opened folders: several tasks make a branch, a single task stands for its folder.
    TaskFolderItem many;
    many.folder = QStringLiteral("/mine");
    many.tasks = {task(QStringLiteral("a"), QStringLiteral("/mine/a")), task(QStringLiteral("b"), QStringLiteral("/mine/b"))};
    TaskFolderItem one;
    one.folder = QStringLiteral("/single");
    one.tasks = {task(QStringLiteral("c"), QStringLiteral("/single"))};
    model.setFolders(TaskTreeModel::Group::OpenedFolders, {many, one});
    const QModelIndex opened = model.groupIndex(TaskTreeModel::Group::OpenedFolders);
    QCOMPARE(model.rowCount(opened), 2);
    const QModelIndex branch = model.index(0, 0, opened);
    QCOMPARE(branch.data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Folder));
    QCOMPARE(model.rowCount(branch), 2);
    QCOMPARE(model.index(1, 0, opened).data(TaskTreeModel::KindRole).toInt(), int(TaskTreeModel::Kind::Task));

    // The open task's rows are bold, wherever they are listed.
    model.setCurrentFolder(QStringLiteral("/k/softmax"));
    QVERIFY(model.index(0, 0, bundled).data(Qt::FontRole).value<QFont>().bold());
    QVERIFY(!model.index(1, 0, bundled).data(Qt::FontRole).value<QFont>().bold());
    // Rows are found again by their key across updates.
    const QString key = softmax.data(TaskTreeModel::KeyRole).toString();
    model.setTasks(TaskTreeModel::Group::Bundled, {task(QStringLiteral("softmax"), QStringLiteral("/k/softmax"))});
    QCOMPARE(model.indexForKey(key).data(TaskTreeModel::FolderRole).toString(), QStringLiteral("/k/softmax"));
  }
};

QTEST_MAIN(TestTaskTreeModel)
#include "tst_task_tree_model.moc"
