#include "ui/models/task_tree_model.h"

#include <algorithm>

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
  QString error;  // Folder rows that could not be read; the text of Message rows
  Node *parent = nullptr;
  Nodes children;

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
              .arg(TaskTreeModel::tr("Task does not load"), item.error.toHtmlEscaped());
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

TaskTreeModel::Node *TaskTreeModel::groupNode(Group group) const {
  return root_->children[static_cast<std::size_t>(group)].get();
}

std::unique_ptr<TaskTreeModel::Node> TaskTreeModel::taskNode(const TaskItem &item, Group group) const {
  auto node = std::make_unique<Node>();
  node->kind = Kind::Task;
  node->group = group;
  node->task = item;
  node->label = item.name.isEmpty() ? folderLabel(item.folder) : item.name;
  return node;
}

void TaskTreeModel::setTasks(Group group, const QList<TaskItem> &tasks, const QString &problem) {
  Nodes children;
  if (!problem.isEmpty()) {
    auto message = std::make_unique<Node>();
    message->kind = Kind::Message;
    message->group = group;
    message->label = problem.section(QLatin1Char('\n'), 0, 0);
    message->error = problem;
    children.push_back(std::move(message));
  }
  for (const TaskItem &item : tasks) children.push_back(taskNode(item, group));
  disambiguate(children);
  updateChildren(groupNode(group), std::move(children));
}

void TaskTreeModel::disambiguate(Nodes &rows) {
  // Two rows of one name (a copy of softmax next to the bundled one, two folders called
  // "kernels") get their parent folder appended: "softmax (kernels)", "softmax (experiments)".
  QHash<QString, int> uses;
  for (const auto &row : rows) ++uses[row->label];
  for (auto &row : rows) {
    if (row->kind == Kind::Message || uses.value(row->label) < 2) continue;
    const QString parentName = QFileInfo(QFileInfo(row->task.folder).absolutePath()).fileName();
    if (!parentName.isEmpty()) row->label = QStringLiteral("%1 (%2)").arg(row->label, parentName);
  }
}

void TaskTreeModel::setFolders(Group group, const QList<TaskFolderItem> &folders) {
  Nodes children;
  for (const TaskFolderItem &folder : folders) {
    if (folder.tasks.size() == 1 && folder.error.isEmpty()) {
      children.push_back(taskNode(folder.tasks.front(), group));
      continue;
    }
    auto node = std::make_unique<Node>();
    node->kind = Kind::Folder;
    node->group = group;
    node->label = folderLabel(folder.folder);
    node->task.folder = folder.folder;
    node->error = folder.error;
    for (const TaskItem &item : folder.tasks) {
      node->children.push_back(taskNode(item, group));
      node->children.back()->parent = node.get();
    }
    disambiguate(node->children);
    children.push_back(std::move(node));
  }
  disambiguate(children);
  updateChildren(groupNode(group), std::move(children));
}

QString TaskTreeModel::keyOf(const Node *node) {
  return QStringLiteral("%1|%2|%3").arg(static_cast<int>(node->group)).arg(static_cast<int>(node->kind))
      .arg(node->kind == Kind::Group ? QString() : node->task.folder);
}

void TaskTreeModel::updateChildren(Node *parent, Nodes children) {
  const QModelIndex parentIndex = indexOf(parent);
  Nodes &current = parent->children;
  const bool sameRows =
      current.size() == children.size() &&
      std::equal(current.begin(), current.end(), children.begin(),
                 [](const auto &a, const auto &b) { return keyOf(a.get()) == keyOf(b.get()); });
  if (sameRows) {
    for (std::size_t i = 0; i < current.size(); ++i) {
      Node *now = current[i].get();
      Node *next = children[i].get();
      if (now->label != next->label || !(now->task == next->task) || now->error != next->error) {
        now->label = next->label;
        now->task = next->task;
        now->error = next->error;
        const QModelIndex index = indexOf(now);
        emit dataChanged(index, index);
      }
      for (auto &child : next->children) child->parent = now;
      updateChildren(now, std::move(next->children));
    }
    return;
  }
  if (!current.empty()) {
    beginRemoveRows(parentIndex, 0, static_cast<int>(current.size()) - 1);
    current.clear();
    endRemoveRows();
  }
  if (!children.empty()) {
    beginInsertRows(parentIndex, 0, static_cast<int>(children.size()) - 1);
    for (auto &child : children) child->parent = parent;
    current = std::move(children);
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
  currentFolder_ = folder;
  if (previous == currentFolder_) return;
  forEachNode(root_.get(), [&](const Node *node) {
    if (node->kind != Kind::Task) return;
    if (node->task.folder == previous || node->task.folder == currentFolder_) {
      const QModelIndex index = indexOf(node);
      emit dataChanged(index, index, {Qt::FontRole});
    }
  });
}

QModelIndex TaskTreeModel::groupIndex(Group group) const {
  return index(static_cast<int>(group), 0);
}

QModelIndex TaskTreeModel::indexForKey(const QString &key) const {
  const Node *found = nullptr;
  forEachNode(root_.get(), [&](const Node *node) {
    if (!found && node != root_.get() && keyOf(node) == key) found = node;
  });
  return found ? indexOf(found) : QModelIndex();
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
      if (node->kind == Kind::Group) {
        const auto rows = std::count_if(node->children.begin(), node->children.end(),
                                        [](const auto &child) { return child->kind != Kind::Message; });
        if (rows > 0) return QStringLiteral("%1 (%2)").arg(node->label).arg(rows);
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
        case Kind::Message:
          return node->error;
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
        case Kind::Message:
          return brokenIcon_;
      }
      return {};
    case Qt::FontRole:
      if (node->kind == Kind::Group ||
          (node->kind == Kind::Task && !currentFolder_.isEmpty() && node->task.folder == currentFolder_)) {
        QFont font;
        font.setBold(true);
        return font;
      }
      if (node->kind == Kind::Message) {
        QFont font;
        font.setItalic(true);
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
    case KeyRole:
      return keyOf(node);
    default:
      return {};
  }
}

Qt::ItemFlags TaskTreeModel::flags(const QModelIndex &index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  const Kind kind = nodeAt(index)->kind;
  if (kind == Kind::Task || kind == Kind::Message) f |= Qt::ItemNeverHasChildren;
  return f;
}

}  // namespace kwb::ui
