#include "ui/task_browser.h"

#include <QAction>
#include <QClipboard>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHeaderView>
#include <QLineEdit>
#include <QMenu>
#include <QSortFilterProxyModel>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>

#include "core/task/manifest_parser.h"
#include "core/task/task_catalog.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

namespace {

TaskItem itemFromTask(const kwb::Task &task, const QString &folder) {
  TaskItem item;
  item.name = QString::fromStdString(task.name);
  item.description = QString::fromStdString(task.description);
  item.folder = folder;
  return item;
}

TaskItem itemFromEntry(const kwb::TaskEntry &entry) {
  const QString folder = QDir::cleanPath(toQString(entry.folder));
  if (entry.task) return itemFromTask(*entry.task, folder);
  TaskItem item;
  item.folder = folder;
  item.error = QString::fromStdString(entry.error);
  return item;
}

QList<TaskItem> itemsInFolder(const QString &dir, QString *error) {
  QList<TaskItem> items;
  if (!QFileInfo(dir).isDir()) {
    *error = TaskBrowser::tr("%1: folder not found").arg(dir);
    return items;
  }
  try {
    for (const auto &entry : kwb::listTasks(toFsPath(dir))) items.append(itemFromEntry(entry));
  } catch (const std::exception &e) {
    *error = QStringLiteral("%1: %2").arg(dir, QString::fromStdString(e.what()));
  }
  return items;
}

}  // namespace

TaskBrowser::TaskBrowser(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("taskBrowser"));
  model_ = new TaskTreeModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setRecursiveFilteringEnabled(true);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setFilterRole(Qt::DisplayRole);

  filter_ = new QLineEdit(this);
  filter_->setObjectName(QStringLiteral("taskFilter"));
  filter_->setPlaceholderText(tr("Filter tasks"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString &text) {
    proxy_->setFilterFixedString(text);
    view_->expandAll();
  });

  view_ = new QTreeView(this);
  view_->setObjectName(QStringLiteral("taskTree"));
  view_->setModel(proxy_);
  view_->setHeaderHidden(true);
  view_->setUniformRowHeights(true);
  view_->setExpandsOnDoubleClick(true);
  view_->setAnimated(true);
  view_->setFrameShape(QFrame::NoFrame);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(view_, &QTreeView::activated, this, &TaskBrowser::activate);
  connect(view_, &QWidget::customContextMenuRequested, this, &TaskBrowser::showContextMenu);
  // New rows (a scan, a workspace listing) arrive expanded.
  connect(proxy_, &QAbstractItemModel::rowsInserted, this,
          [this](const QModelIndex &parent, int first, int last) {
            view_->expand(parent);
            for (int row = first; row <= last; ++row) view_->expand(proxy_->index(row, 0, parent));
          });

  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 0, 0);
  layout->setSpacing(4);
  layout->addWidget(filter_);
  layout->addWidget(view_, 1);

  for (int row = 0; row < proxy_->rowCount(); ++row) view_->expand(proxy_->index(row, 0));
}

void TaskBrowser::setSources(const TaskSources &sources) {
  sources_ = sources;
  reload();
}

void TaskBrowser::reload() {
  const quint64 generation = ++generation_;
  scanning_ = true;
  QtConcurrent::run(&TaskBrowser::scan, sources_).then(this, [this, generation](ScanResult result) {
    if (generation != generation_) return;  // a newer scan is on its way
    model_->setTasks(TaskTreeModel::Group::Bundled, result.bundled);
    model_->setTasks(TaskTreeModel::Group::Recent, result.recent);
    model_->setFolders(TaskTreeModel::Group::OpenedFolders, result.opened);
    scanning_ = false;
    emit scanFinished();
  });
}

TaskBrowser::ScanResult TaskBrowser::scan(const TaskSources &sources) {
  ScanResult result;
  if (!sources.bundledDir.isEmpty()) {
    QString error;
    result.bundled = itemsInFolder(sources.bundledDir, &error);
  }
  for (const QString &folder : sources.recent) {
    TaskItem item;
    item.folder = folder;
    try {
      item = itemFromTask(kwb::loadTask(toFsPath(folder)), folder);
    } catch (const std::exception &e) {
      item.error = QString::fromStdString(e.what());
    }
    result.recent.append(item);
  }
  for (const QString &folder : sources.openedFolders) {
    TaskFolderItem entry;
    entry.folder = folder;
    entry.tasks = itemsInFolder(folder, &entry.error);
    if (entry.error.isEmpty() && entry.tasks.isEmpty()) {
      entry.error = tr("No task.toml in this folder or its subfolders");
    }
    result.opened.append(entry);
  }
  return result;
}

void TaskBrowser::setWorkspaceTasks(const QList<TaskItem> &tasks) {
  model_->setTasks(TaskTreeModel::Group::Workspace, tasks);
}

void TaskBrowser::setCurrentTask(const QString &folder) {
  model_->setCurrentFolder(folder);
}

void TaskBrowser::activate(const QModelIndex &proxyIndex) {
  const QModelIndex index = proxy_->mapToSource(proxyIndex);
  if (index.data(TaskTreeModel::KindRole).toInt() != static_cast<int>(TaskTreeModel::Kind::Task)) return;
  const QString folder = index.data(TaskTreeModel::FolderRole).toString();
  if (!folder.isEmpty()) emit taskActivated(folder);
}

void TaskBrowser::showContextMenu(const QPoint &pos) {
  const QModelIndex proxyIndex = view_->indexAt(pos);
  const QString folder = proxyIndex.data(TaskTreeModel::FolderRole).toString();
  if (folder.isEmpty()) return;
  const bool isTask =
      proxyIndex.data(TaskTreeModel::KindRole).toInt() == static_cast<int>(TaskTreeModel::Kind::Task);
  auto *menu = new QMenu(this);
  menu->setAttribute(Qt::WA_DeleteOnClose);
  if (isTask) {
    menu->addAction(tr("Open Task"), this, [this, proxyIndex] { activate(proxyIndex); });
  }
  menu->addAction(tr("Copy Folder Path"), this,
                  [folder] { QGuiApplication::clipboard()->setText(QDir::toNativeSeparators(folder)); });
  menu->popup(view_->viewport()->mapToGlobal(pos));
}

}  // namespace kwb::ui
