#pragma once
// The Tasks panel's tree: four groups (Bundled, Recent, Opened folders, Workspace), each holding
// tasks; an opened folder that holds several tasks becomes a folder row with its tasks under it.
// A task whose manifest does not parse is still listed, with an error icon and the error as tooltip;
// a group whose source could not be read (a missing kernels folder) shows a message row saying so.
// Updates keep rows in place when the same tasks come back, so views keep selection and expansion.
#include <memory>
#include <vector>

#include <QAbstractItemModel>
#include <QIcon>
#include <QList>
#include <QString>

namespace kwb::ui {

struct TaskItem {
  QString name;  // the manifest's name; empty when the manifest is broken
  QString description;
  QString folder;  // absolute
  QString error;   // why the manifest does not load (or the folder is gone); empty when fine
  QString note;    // one more tooltip line ("Last opened …")
  bool operator==(const TaskItem &) const = default;
};

struct TaskFolderItem {
  QString folder;
  QList<TaskItem> tasks;
  QString error;         // why the folder could not be read, or that it holds no task
  bool missing = false;  // there is no folder at that path
  bool operator==(const TaskFolderItem &) const = default;
};

class TaskTreeModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum class Group { Bundled, Recent, OpenedFolders, Workspace };
  Q_ENUM(Group)
  // Message: a row that only says something (why a group is empty); it has no folder.
  enum class Kind { Group, Folder, Task, Message };
  Q_ENUM(Kind)
  enum Role {
    FolderRole = Qt::UserRole + 1,  // QString: task or folder path
    KindRole,                       // Kind as int
    ErrorRole,                      // QString: manifest or folder error, empty when fine
    GroupRole,                      // Group as int, on every row
    KeyRole,                        // QString naming the row across updates (group, kind, folder)
  };

  explicit TaskTreeModel(QObject *parent = nullptr);
  ~TaskTreeModel() override;

  static QString groupName(Group group);

  // problem: shown as a message row before the tasks (empty: none).
  void setTasks(Group group, const QList<TaskItem> &tasks, const QString &problem = QString());
  // For Group::OpenedFolders: a folder with exactly one task shows as that task.
  void setFolders(Group group, const QList<TaskFolderItem> &folders);

  // Task rows for this folder are shown in bold (the task open in the editor).
  void setCurrentFolder(const QString &folder);
  const QString &currentFolder() const { return currentFolder_; }

  QModelIndex groupIndex(Group group) const;
  // The row whose KeyRole is key, or an invalid index.
  QModelIndex indexForKey(const QString &key) const;

  QModelIndex index(int row, int column, const QModelIndex &parent = QModelIndex()) const override;
  QModelIndex parent(const QModelIndex &child) const override;
  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex &index) const override;

 private:
  struct Node;
  using Nodes = std::vector<std::unique_ptr<Node>>;
  Node *nodeAt(const QModelIndex &index) const;
  QModelIndex indexOf(const Node *node) const;
  Node *groupNode(Group group) const;
  // Puts children under parent: in place (dataChanged only) when they name the same rows in the
  // same order, else by removing the old rows and inserting the new.
  void updateChildren(Node *parent, Nodes children);
  std::unique_ptr<Node> taskNode(const TaskItem &item, Group group) const;
  static void disambiguate(Nodes &rows);
  static QString keyOf(const Node *node);

  template <typename Visit>
  void forEachNode(const Node *node, const Visit &visit) const;

  std::unique_ptr<Node> root_;
  QString currentFolder_;
  QIcon taskIcon_;
  QIcon brokenIcon_;
};

}  // namespace kwb::ui
