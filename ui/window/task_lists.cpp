#include "ui/window/task_lists.h"

#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QMenu>

#include <algorithm>
#include <utility>

#include "core/paths/install_paths.h"
#include "ui/filesystem_path.h"
#include "ui/settings/app_settings.h"
#include "ui/views/log_panel.h"
#include "ui/views/task_browser.h"

namespace kwb::ui {

namespace {

// A menu entry's text shows '&' as is rather than as a mnemonic marker.
QString menuText(const QString &text) {
  QString escaped = text;
  return escaped.replace(QLatin1Char('&'), QLatin1String("&&"));
}

}  // namespace

TaskLists::TaskLists(const TaskListParts &parts, bool writeSettings, QObject *parent)
    : QObject(parent), p_(parts), write_(writeSettings) {
  connect(p_.browser, &TaskBrowser::openedFoldersScanned, this, &TaskLists::onScanned);
  connect(p_.browser, &TaskBrowser::removeFromListRequested, this, &TaskLists::remove);
  connect(p_.browser, &TaskBrowser::clearRecentRequested, this, &TaskLists::clearRecent);
  // Filled each time it opens: rebuilding it from an entry's own triggered() (opening a task adds
  // to Recent) would delete the action whose signal is being delivered.
  connect(p_.recentMenu, &QMenu::aboutToShow, this, &TaskLists::rebuildRecentMenu);
  updateBundled(true);
  setRecent(settings::recentTasks());
  setFolders(settings::openedFolders());
}

void TaskLists::updateBundled(bool force) {
  const QString chosen = settings::kernelsDirOverride();
  QString dir = chosen;
  if (chosen.isEmpty()) {
    const auto bundled = kwb::bundledKernelsDir();
    dir = bundled ? normalizedPath(toQString(*bundled)) : QString();
  }
  if (!force && dir == bundledDir_ && bundledChosen_ == !chosen.isEmpty()) return;
  bundledDir_ = dir;
  bundledChosen_ = !chosen.isEmpty();
  p_.browser->setBundledDir(dir, bundledChosen_);
}

void TaskLists::addRecent(const QString &taskFolder) { setRecent(settings::withRecentTask(recent_, taskFolder)); }

void TaskLists::clearRecent() { setRecent({}); }

void TaskLists::setRecent(const QStringList &recent) {
  recent_ = recent;
  if (write_) settings::setRecentTasks(recent_);
  p_.browser->setRecent(recent_);
  p_.recentMenu->setEnabled(!recent_.isEmpty());
  p_.clearRecent->setEnabled(!recent_.isEmpty());
}

void TaskLists::setFolders(const QStringList &folders) {
  folders_ = folders;
  if (write_) settings::setOpenedFolders(folders_);
  p_.browser->setOpenedFolders(folders_);  // scans them; onScanned() goes on
}

void TaskLists::addFolder(const QString &folder) {
  const QString dir = normalizedPath(folder);
  if (folders_.contains(dir)) return;
  setFolders(folders_ + QStringList{dir});
}

void TaskLists::remove(TaskTreeModel::Group group, const QString &folder) {
  QStringList list = group == TaskTreeModel::Group::Recent ? recent_ : folders_;
  list.removeAll(folder);
  if (group == TaskTreeModel::Group::Recent) setRecent(list);
  else if (group == TaskTreeModel::Group::OpenedFolders) setFolders(list);
}

void TaskLists::rebuildRecentMenu() {
  p_.recentMenu->clear();
  for (const QString &folder : recent_) {
    QAction *action = p_.recentMenu->addAction(menuText(QDir::toNativeSeparators(folder)));
    connect(action, &QAction::triggered, this, [this, folder] { emit openTaskRequested(folder); });
  }
  p_.recentMenu->addSeparator();
  p_.recentMenu->addAction(p_.clearRecent);
}

void TaskLists::openFolder(const QString &path) {
  const QString folder = normalizedPath(path);
  if (!waiting_.contains(folder)) waiting_.append(folder);
  QStringList folders = folders_;
  if (!folders.contains(folder)) folders.append(folder);
  setFolders(folders);
}

void TaskLists::onScanned(const QList<TaskFolderItem> &folders) {
  const QStringList waiting = std::exchange(waiting_, QStringList());
  for (const QString &folder : waiting) {
    const auto entry = std::find_if(folders.begin(), folders.end(), [&](const TaskFolderItem &f) { return f.folder == folder; });
    if (entry == folders.end()) continue;  // removed from the list before its scan ended
    if (entry->missing) {
      p_.log->error(tr("%1: not a folder").arg(QDir::toNativeSeparators(folder)));
      QStringList remaining = folders_;
      remaining.removeAll(folder);
      setFolders(remaining);
    } else if (entry->tasks.isEmpty()) {
      p_.log->warning(entry->error);
    } else {
      const auto self = std::find_if(entry->tasks.begin(), entry->tasks.end(), [&](const TaskItem &t) { return t.folder == folder; });
      if (self != entry->tasks.end()) {
        emit openTaskRequested(folder);
      } else if (entry->tasks.size() == 1) {
        emit openTaskRequested(entry->tasks.front().folder);
      } else {
        p_.log->info(tr("%1 holds %2 tasks; double-click one under \"Opened folders\" to open it")
                         .arg(QDir::toNativeSeparators(folder))
                         .arg(entry->tasks.size()));
        p_.dock->show();
        p_.dock->raise();
      }
    }
    emit folderOpened(folder, static_cast<int>(entry->tasks.size()));
  }
}

}  // namespace kwb::ui
