#include "ui/models/task_tree_model.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QFont>
#include <QHash>
#include <QStyle>

namespace kwb::ui {

struct TaskTreeModel::Node {
  Kind kind = Kind::Task;
  Group group = Group::Bundled;
  QString label;
  TaskItem task;  // for Task rows; folder also set for Folder rows
  QString error;  // Folder rows that could not be read
  Node *parent = nullptr;
  std::vector<std::unique_ptr<Node>> children;

  int row() const {
    if (!parent) return 0;
    for (std::size_t i = 0; i < parent->children.size(); ++i) {
      if (parent->children[i].get() == this) return static_cast<int>(i);
    }
    return 0;
  }
};

namespace {

constexpr TaskTreeModel::Group kGroups[] = {TaskTreeModel::Group::Bundled, TaskTreeModel::Group::Recent,
                                            TaskTreeModel::Group::OpenedFolders,
                                            TaskTreeModel::Group::Workspace};

QString folderLabel(const QString &folder) {
  const QString name = QFileInfo(folder).fileName();
  return name.isEmpty() ? folder : name;
}

QString taskToolTip(const TaskItem &item) {
  QString tip;
  if (!item.error.isEmpty()) {
    tip = QStringLiteral("<b>%1</b><br><span style='color:#b91c1c'>%2</span>")
              .arg(TaskTreeModel::tr("Manifest does not load"), item.error.toHtmlEscaped());
  } else {
    tip = QStringLiteral("<b>%1</b>").arg(item.name.toHtmlEscaped());
    if (!item.description.isEmpty()) tip += QStringLiteral("<br>") + item.description.toHtmlEscaped();
  }
  tip += QStringLiteral("<br><span style='color:#6b7280'>%1</span>")
             .arg(QDir::toNativeSeparators(item.folder).toHtmlEscaped());
  if (!item.note.isEmpty()) tip += QStringLiteral("<br>") + item.note.toHtmlEscaped();
  return tip;
}

}  // namespace

TaskTreeModel::TaskTreeModel(QObject *parent)
    : QAbstractItemModel(parent),
      root_(std::make_unique<Node>()),
      taskIcon_(QStringLiteral(":/icons/task.svg")),
      brokenIcon_(QStringLiteral(":/icons/task-broken.svg")) {
  root_->kind = Kind::Group;
  for (Group group : kGroups) {
    auto node = std::make_unique<Node>();
    node->kind = Kind::Group;
    node->group = group;
    node->label = groupName(group);
    node->parent = root_.get();
    root_->children.push_back(std::move(node));
  }
}

TaskTreeModel::~TaskTreeModel() = default;

QString TaskTreeModel::groupName(Group group) {
  switch (group) {
    case Group::Bundled:
      return tr("Bundled");
    case Group::Recent:
      return tr("Recent");
    case Group::OpenedFolders:
      return tr("Opened folders");
    case Group::Workspace:
      return tr("Workspace");
  }
  return {};
}

std::unique_ptr<TaskTreeModel::Node> TaskTreeModel::taskNode(const TaskItem &item, Node *parent,
                                                             Group group) const {
  auto node = std::make_unique<Node>();
  node->kind = Kind::Task;
  node->group = group;
  node->task = item;
  node->label = item.name.isEmpty() ? folderLabel(item.folder) : item.name;
  node->parent = parent;
  return node;
}

void TaskTreeModel::setTasks(Group group, const QList<TaskItem> &tasks) {
  Node *groupNode = root_->children[static_cast<std::size_t>(group)].get();
  std::vector<std::unique_ptr<Node>> children;
  for (const TaskItem &item : tasks) children.push_back(taskNode(item, groupNode, group));
  disambiguate(children);
  replaceChildren(groupNode, std::move(children));
}

void TaskTreeModel::disambiguate(std::vector<std::unique_ptr<Node>> &rows) {
  // Two tasks of one name (a copy of softmax next to the bundled one) get their parent folder
  // appended: "softmax (kernels)", "softmax (experiments)".
  QHash<QString, int> uses;
  for (const auto &row : rows) ++uses[row->label];
  for (auto &row : rows) {
    if (row->kind != Kind::Task || uses.value(row->label) < 2) continue;
    const QString parentName = QFileInfo(QFileInfo(row->task.folder).absolutePath()).fileName();
    if (!parentName.isEmpty()) row->label = QStringLiteral("%1 (%2)").arg(row->label, parentName);
  }
}

void TaskTreeModel::setFolders(Group group, const QList<TaskFolderItem> &folders) {
  Node *groupNode = root_->children[static_cast<std::size_t>(group)].get();
  std::vector<std::unique_ptr<Node>> children;
  for (const TaskFolderItem &folder : folders) {
    if (folder.tasks.size() == 1 && folder.error.isEmpty()) {
      children.push_back(taskNode(folder.tasks.front(), groupNode, group));
      continue;
    }
    auto node = std::make_unique<Node>();
    node->kind = Kind::Folder;
    node->group = group;
    node->label = folderLabel(folder.folder);
    node->task.folder = folder.folder;
    node->error = folder.error;
    node->parent = groupNode;
    for (const TaskItem &item : folder.tasks) node->children.push_back(taskNode(item, node.get(), group));
    disambiguate(node->children);
    children.push_back(std::move(node));
  }
  replaceChildren(groupNode, std::move(children));
}

void TaskTreeModel::replaceChildren(Node *parent, std::vector<std::unique_ptr<Node>> children) {
  const QModelIndex parentIndex = indexOf(parent);
  if (!parent->children.empty()) {
    beginRemoveRows(parentIndex, 0, static_cast<int>(parent->children.size()) - 1);
    parent->children.clear();
    endRemoveRows();
  }
  if (!children.empty()) {
    beginInsertRows(parentIndex, 0, static_cast<int>(children.size()) - 1);
    parent->children = std::move(children);
    endInsertRows();
  }
  // A group's label carries its row count.
  if (parent->kind == Kind::Group && parentIndex.isValid()) emit dataChanged(parentIndex, parentIndex);
}

template <typename Visit>
void TaskTreeModel::forEachNode(const Node *node, const Visit &visit) const {
  visit(node);
  for (const auto &child : node->children) forEachNode(child.get(), visit);
}

void TaskTreeModel::setCurrentFolder(const QString &folder) {
  const QString previous = currentFolder_;
  currentFolder_ = folder.isEmpty() ? QString() : QDir::cleanPath(folder);
  if (previous == currentFolder_) return;
  forEachNode(root_.get(), [&](const Node *node) {
    if (node->kind != Kind::Task) return;
    const QString path = QDir::cleanPath(node->task.folder);
    if (path == previous || path == currentFolder_) {
      const QModelIndex index = indexOf(node);
      emit dataChanged(index, index, {Qt::FontRole});
    }
  });
}

QModelIndex TaskTreeModel::groupIndex(Group group) const {
  return index(static_cast<int>(group), 0);
}

QModelIndex TaskTreeModel::findTask(Group group, const QString &folder) const {
  const QString wanted = QDir::cleanPath(folder);
  const Node *groupNode = root_->children[static_cast<std::size_t>(group)].get();
  std::vector<const Node *> pending{groupNode};
  while (!pending.empty()) {
    const Node *node = pending.back();
    pending.pop_back();
    if (node->kind == Kind::Task && QDir::cleanPath(node->task.folder) == wanted) return indexOf(node);
    for (auto it = node->children.rbegin(); it != node->children.rend(); ++it) pending.push_back(it->get());
  }
  return {};
}

TaskTreeModel::Node *TaskTreeModel::nodeAt(const QModelIndex &index) const {
  return index.isValid() ? static_cast<Node *>(index.internalPointer()) : root_.get();
}

QModelIndex TaskTreeModel::indexOf(const Node *node) const {
  if (!node || node == root_.get()) return {};
  return createIndex(node->row(), 0, const_cast<Node *>(node));
}

QModelIndex TaskTreeModel::index(int row, int column, const QModelIndex &parent) const {
  if (column != 0 || row < 0) return {};
  const Node *parentNode = nodeAt(parent);
  if (static_cast<std::size_t>(row) >= parentNode->children.size()) return {};
  return createIndex(row, column, parentNode->children[static_cast<std::size_t>(row)].get());
}

QModelIndex TaskTreeModel::parent(const QModelIndex &child) const {
  if (!child.isValid()) return {};
  return indexOf(nodeAt(child)->parent);
}

int TaskTreeModel::rowCount(const QModelIndex &parent) const {
  if (parent.isValid() && parent.column() != 0) return 0;
  return static_cast<int>(nodeAt(parent)->children.size());
}

int TaskTreeModel::columnCount(const QModelIndex &) const {
  return 1;
}

QVariant TaskTreeModel::data(const QModelIndex &index, int role) const {
  if (!index.isValid()) return {};
  const Node *node = nodeAt(index);
  switch (role) {
    case Qt::DisplayRole:
      if (node->kind == Kind::Group && !node->children.empty()) {
        return QStringLiteral("%1 (%2)").arg(node->label).arg(node->children.size());
      }
      return node->label;
    case Qt::ToolTipRole:
      switch (node->kind) {
        case Kind::Group:
          return {};
        case Kind::Folder:
          return node->error.isEmpty()
                     ? QDir::toNativeSeparators(node->task.folder)
                     : QDir::toNativeSeparators(node->task.folder) + QStringLiteral("\n") + node->error;
        case Kind::Task:
          return taskToolTip(node->task);
      }
      return {};
    case Qt::DecorationRole:
      switch (node->kind) {
        case Kind::Group:
        case Kind::Folder:
          if (!node->error.isEmpty()) return brokenIcon_;
          return QApplication::style()->standardIcon(QStyle::SP_DirIcon);
        case Kind::Task:
          return node->task.error.isEmpty() ? taskIcon_ : brokenIcon_;
      }
      return {};
    case Qt::FontRole:
      if (node->kind == Kind::Group ||
          (!currentFolder_.isEmpty() && QDir::cleanPath(node->task.folder) == currentFolder_ &&
           node->kind == Kind::Task)) {
        QFont font;
        font.setBold(true);
        return font;
      }
      return {};
    case FolderRole:
      return node->task.folder;
    case KindRole:
      return static_cast<int>(node->kind);
    case ErrorRole:
      return node->kind == Kind::Task ? node->task.error : node->error;
    case GroupRole:
      return static_cast<int>(node->group);
    default:
      return {};
  }
}

Qt::ItemFlags TaskTreeModel::flags(const QModelIndex &index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (nodeAt(index)->kind == Kind::Task) f |= Qt::ItemNeverHasChildren;
  return f;
}

}  // namespace kwb::ui
