#include "ui/views/task_browser.h"

#include <QAction>
#include <QClipboard>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLineEdit>
#include <QMenu>
#include <QSortFilterProxyModel>
#include <QThreadPool>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <exception>
#include <functional>

#include "core/task/manifest_parser.h"
#include "core/task/task_catalog.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

namespace {

constexpr TaskTreeModel::Group kAllGroups[] = {TaskTreeModel::Group::Bundled, TaskTreeModel::Group::Recent,
                                               TaskTreeModel::Group::OpenedFolders,
                                               TaskTreeModel::Group::Workspace};

// Scans run here rather than on the global pool: QCoreApplication's destructor waits for every
// task of the global pool, so a scan stuck on a hung mount would hang the exit. This pool is
// never destroyed, and nothing waits for it; a scan still running at exit simply ends with the
// process. (Its results go to a QFutureWatcher, which drops them if the browser is gone.)
QThreadPool *scanPool() {
  static QThreadPool *pool = [] {
    auto *p = new QThreadPool;
    p->setObjectName(QStringLiteral("kwb-task-scan"));
    p->setMaxThreadCount(2);
    return p;
  }();
  return pool;
}

QString native(const QString &path) {
  return QDir::toNativeSeparators(path);
}

TaskItem itemFromTask(const kwb::Task &task, const QString &folder) {
  TaskItem item;
  item.name = QString::fromStdString(task.name);
  item.description = QString::fromStdString(task.description);
  item.folder = folder;
  return item;
}

TaskItem itemFromEntry(const kwb::TaskEntry &entry) {
  const QString folder = normalizedPath(toQString(entry.folder));
  if (entry.task) return itemFromTask(*entry.task, folder);
  TaskItem item;
  item.folder = folder;
  item.error = QString::fromStdString(entry.error);
  return item;
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
  connect(view_, &QTreeView::collapsed, this, [this](const QModelIndex &index) {
    if (filter_->text().isEmpty()) collapsed_.insert(index.data(TaskTreeModel::KeyRole).toString());
  });
  connect(view_, &QTreeView::expanded, this,
          [this](const QModelIndex &index) { collapsed_.remove(index.data(TaskTreeModel::KeyRole).toString()); });
  // New rows (a scan, a workspace listing, a filter) arrive expanded, unless the user collapsed them.
  connect(proxy_, &QAbstractItemModel::rowsInserted, this,
          [this](const QModelIndex &parent, int first, int last) {
            if (parent.isValid()) applyExpansion(parent);
            for (int row = first; row <= last; ++row) applyExpansion(proxy_->index(row, 0, parent));
          });
  connect(filter_, &QLineEdit::textChanged, this, [this](const QString &text) {
    proxy_->setFilterFixedString(text);
    // While filtering every match shows; without a filter the user's collapsed rows stay closed.
    if (!text.isEmpty()) {
      view_->expandAll();
      return;
    }
    std::function<void(const QModelIndex &)> restore = [&](const QModelIndex &parent) {
      for (int row = 0; row < proxy_->rowCount(parent); ++row) {
        const QModelIndex index = proxy_->index(row, 0, parent);
        applyExpansion(index);
        restore(index);
      }
    };
    restore(QModelIndex());
  });

  connect(&watcher_, &QFutureWatcher<ScanResult>::finished, this, &TaskBrowser::onScanDone);

  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 0, 0);
  layout->setSpacing(4);
  layout->addWidget(filter_);
  layout->addWidget(view_, 1);

  for (int row = 0; row < proxy_->rowCount(); ++row) view_->expand(proxy_->index(row, 0));
}

// The watcher member disconnects on destruction: a scan still running finishes unobserved.
TaskBrowser::~TaskBrowser() = default;

void TaskBrowser::applyExpansion(const QModelIndex &proxyIndex) {
  if (!proxyIndex.isValid()) return;
  const auto kind = static_cast<TaskTreeModel::Kind>(proxyIndex.data(TaskTreeModel::KindRole).toInt());
  if (kind == TaskTreeModel::Kind::Task || kind == TaskTreeModel::Kind::Message) return;  // leaves
  const bool collapsed =
      filter_->text().isEmpty() && collapsed_.contains(proxyIndex.data(TaskTreeModel::KeyRole).toString());
  view_->setExpanded(proxyIndex, !collapsed);
}

void TaskBrowser::setBundledDir(const QString &dir, bool chosenInSettings) {
  sources_.bundledDir = dir;
  sources_.bundledChosenInSettings = chosenInSettings;
  schedule(bit(Group::Bundled));
}

void TaskBrowser::setRecent(const QStringList &folders) {
  sources_.recent = folders;
  schedule(bit(Group::Recent));
}

void TaskBrowser::setOpenedFolders(const QStringList &folders) {
  sources_.openedFolders = folders;
  schedule(bit(Group::OpenedFolders));
}

void TaskBrowser::setWorkspaceTasks(const QList<TaskItem> &tasks) {
  sources_.workspace = tasks;
  if (!tasks.isEmpty()) {
    schedule(bit(Group::Workspace));
    return;
  }
  // Nothing to check: clear now, and make sure no older result lands afterwards.
  ++generation_[static_cast<std::size_t>(Group::Workspace)];
  pending_ &= ~bit(Group::Workspace);
  model_->setTasks(Group::Workspace, {});
}

void TaskBrowser::rescanAll() {
  int all = 0;
  for (Group group : kAllGroups) all |= bit(group);
  schedule(all);
}

void TaskBrowser::schedule(int groups) {
  for (Group group : kAllGroups) {
    if (groups & bit(group)) ++generation_[static_cast<std::size_t>(group)];
  }
  pending_ |= groups;
  if (running_ == 0) startScan();
}

void TaskBrowser::startScan() {
  running_ = pending_;
  pending_ = 0;
  scanGeneration_ = generation_;
  watcher_.setFuture(QtConcurrent::run(scanPool(), &TaskBrowser::scan, sources_, running_));
}

void TaskBrowser::onScanDone() {
  const ScanResult result = watcher_.result();
  const QString selected = view_->currentIndex().data(TaskTreeModel::KeyRole).toString();
  auto current = [&](Group group) {
    const auto at = static_cast<std::size_t>(group);
    return (running_ & bit(group)) && scanGeneration_[at] == generation_[at];
  };

  QString newProblem;
  const bool openedScanned = current(Group::OpenedFolders);
  if (current(Group::Bundled)) {
    model_->setTasks(Group::Bundled, result.bundled, result.bundledProblem);
    if (!result.bundledProblem.isEmpty() && result.bundledProblem != bundledProblem_)
      newProblem = result.bundledProblem;
    bundledProblem_ = result.bundledProblem;
  }
  if (current(Group::Recent)) model_->setTasks(Group::Recent, result.recent);
  if (openedScanned) model_->setFolders(Group::OpenedFolders, result.opened);
  if (current(Group::Workspace)) model_->setTasks(Group::Workspace, result.workspace);
  restoreSelection(selected);

  running_ = 0;
  if (pending_ != 0) startScan();

  if (!newProblem.isEmpty()) emit problemFound(newProblem);
  if (openedScanned) emit openedFoldersScanned(result.opened);
  emit scanFinished();
}

void TaskBrowser::restoreSelection(const QString &key) {
  if (key.isEmpty() || view_->currentIndex().data(TaskTreeModel::KeyRole).toString() == key) return;
  const QModelIndex index = proxy_->mapFromSource(model_->indexForKey(key));
  if (index.isValid()) view_->setCurrentIndex(index);
}

QString TaskBrowser::noTaskMessage() {
  return tr("no %1 in this folder or in its immediate subfolders").arg(QLatin1String(kwb::kManifestFileName));
}

TaskFolderItem TaskBrowser::scanFolder(const QString &folder) {
  TaskFolderItem entry;
  entry.folder = folder;
  if (!QFileInfo(folder).isDir()) {
    entry.error = tr("%1: folder not found").arg(native(folder));
    entry.missing = true;
    return entry;
  }
  try {
    for (const auto &task : kwb::listTasks(toFsPath(folder))) entry.tasks.append(itemFromEntry(task));
  } catch (const std::exception &e) {
    entry.error = QStringLiteral("%1: %2").arg(native(folder), QString::fromStdString(e.what()));
    return entry;
  }
  if (entry.tasks.isEmpty()) entry.error = QStringLiteral("%1: %2").arg(native(folder), noTaskMessage());
  return entry;
}

TaskBrowser::ScanResult TaskBrowser::scan(const Sources &sources, int groups) {
  ScanResult result;
  if (groups & bit(Group::Bundled)) {
    if (sources.bundledDir.isEmpty()) {
      result.bundledProblem = tr("No bundled tasks: the kernels folder installed with Kernel Workbench "
                                 "was not found. Choose a kernels folder in Settings ▸ General.");
    } else {
      const TaskFolderItem folder = scanFolder(sources.bundledDir);
      result.bundled = folder.tasks;
      if (!folder.error.isEmpty()) {
        result.bundledProblem =
            sources.bundledChosenInSettings
                ? tr("%1 (the kernels folder chosen in Settings ▸ General)").arg(folder.error)
                : folder.error;
      }
    }
  }
  if (groups & bit(Group::Recent)) {
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
  }
  if (groups & bit(Group::OpenedFolders)) {
    for (const QString &folder : sources.openedFolders) result.opened.append(scanFolder(folder));
  }
  if (groups & bit(Group::Workspace)) {
    for (TaskItem item : sources.workspace) {
      if (!QFileInfo(item.folder).isDir()) item.error = tr("%1: folder not found").arg(native(item.folder));
      result.workspace.append(item);
    }
  }
  return result;
}

void TaskBrowser::setCurrentTask(const QString &folder) {
  model_->setCurrentFolder(folder);
}

void TaskBrowser::activate(const QModelIndex &proxyIndex) {
  if (proxyIndex.data(TaskTreeModel::KindRole).toInt() != static_cast<int>(TaskTreeModel::Kind::Task)) return;
  const QString folder = proxyIndex.data(TaskTreeModel::FolderRole).toString();
  if (!folder.isEmpty()) emit taskActivated(folder);
}

void TaskBrowser::showContextMenu(const QPoint &pos) {
  const QModelIndex proxyIndex = view_->indexAt(pos);
  if (!proxyIndex.isValid()) return;
  // Everything the actions need is copied now: the index itself may be gone (a rescan, a filter)
  // by the time one is chosen.
  const QString folder = proxyIndex.data(TaskTreeModel::FolderRole).toString();
  const auto kind = static_cast<TaskTreeModel::Kind>(proxyIndex.data(TaskTreeModel::KindRole).toInt());
  const auto group = static_cast<Group>(proxyIndex.data(TaskTreeModel::GroupRole).toInt());
  const bool topLevel = proxyIndex.parent().isValid() && !proxyIndex.parent().parent().isValid();

  auto *menu = new QMenu(this);
  menu->setObjectName(QStringLiteral("taskContextMenu"));
  menu->setAttribute(Qt::WA_DeleteOnClose);
  if (kind == TaskTreeModel::Kind::Task) {
    menu->addAction(tr("Open Task"), this, [this, folder] { emit taskActivated(folder); });
  }
  if (!folder.isEmpty()) {
    menu->addAction(tr("Copy Folder Path"), this,
                    [folder] { QGuiApplication::clipboard()->setText(QDir::toNativeSeparators(folder)); });
  }
  // Only the window's own lists can be edited: Recent, and the folders it was asked to open.
  const bool listed = topLevel && !folder.isEmpty() &&
                      (group == Group::Recent || group == Group::OpenedFolders);
  if (listed) {
    menu->addSeparator();
    menu->addAction(tr("Remove from List"), this,
                    [this, group, folder] { emit removeFromListRequested(group, folder); });
  }
  if (group == Group::Recent && model_->rowCount(model_->groupIndex(Group::Recent)) > 0) {
    if (!listed) menu->addSeparator();
    menu->addAction(tr("Clear Recent"), this, [this] { emit clearRecentRequested(); });
  }
  if (menu->actions().isEmpty()) {
    delete menu;
    return;
  }
  menu->popup(view_->viewport()->mapToGlobal(pos));
}

}  // namespace kwb::ui
