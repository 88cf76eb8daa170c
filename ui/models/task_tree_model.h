#pragma once
// The Tasks panel's tree: four groups (Bundled, Recent, Opened folders, Workspace), each holding
// tasks; an opened folder that holds several tasks becomes a folder row with its tasks under it.
// A task whose manifest does not parse is still listed, with an error icon and the error as tooltip.
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
  QString error;   // why the manifest does not load; empty when it does
  QString note;    // one more tooltip line ("Last opened …")
};

struct TaskFolderItem {
  QString folder;
  QList<TaskItem> tasks;
  QString error;  // why the folder could not be read
};

class TaskTreeModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum class Group { Bundled, Recent, OpenedFolders, Workspace };
  Q_ENUM(Group)
  enum class Kind { Group, Folder, Task };
  Q_ENUM(Kind)
  enum Role {
    FolderRole = Qt::UserRole + 1,  // QString: task or folder path
    KindRole,                       // Kind as int
    ErrorRole,                      // QString: manifest error, empty when fine
    GroupRole,                      // Group as int, on every row
  };

  explicit TaskTreeModel(QObject *parent = nullptr);
  ~TaskTreeModel() override;

  static QString groupName(Group group);

  void setTasks(Group group, const QList<TaskItem> &tasks);
  // For Group::OpenedFolders: a folder with exactly one task shows as that task.
  void setFolders(Group group, const QList<TaskFolderItem> &folders);

  // Task rows for this folder are shown in bold (the task open in the editor).
  void setCurrentFolder(const QString &folder);
  const QString &currentFolder() const { return currentFolder_; }

  QModelIndex groupIndex(Group group) const;
  // The first task row for a folder under group, or an invalid index.
  QModelIndex findTask(Group group, const QString &folder) const;

  QModelIndex index(int row, int column, const QModelIndex &parent = QModelIndex()) const override;
  QModelIndex parent(const QModelIndex &child) const override;
  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex &index) const override;

 private:
  struct Node;
  Node *nodeAt(const QModelIndex &index) const;
  QModelIndex indexOf(const Node *node) const;
  void replaceChildren(Node *parent, std::vector<std::unique_ptr<Node>> children);
  std::unique_ptr<Node> taskNode(const TaskItem &item, Node *parent, Group group) const;
  static void disambiguate(std::vector<std::unique_ptr<Node>> &rows);

  template <typename Visit>
  void forEachNode(const Node *node, const Visit &visit) const;

  std::unique_ptr<Node> root_;
  QString currentFolder_;
  QIcon taskIcon_;
  QIcon brokenIcon_;
};

}  // namespace kwb::ui
