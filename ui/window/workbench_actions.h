#pragma once
// The main window's actions, made in one place: each with its object name (what tests and the
// screenshot driver find it by), text, shortcut and tooltip; put into the menus and the tool bar.
// What an action does is not decided here: the window hands a handler per action (bind()), so the
// actions and their menus carry no knowledge of services or views.
#include <functional>
#include <initializer_list>
#include <utility>

#include <QList>

class QAction;
class QMainWindow;
class QMenu;
class QObject;

namespace kwb::ui {

struct WorkbenchActions {
  QAction *open = nullptr, *save = nullptr, *closeTab = nullptr, *reload = nullptr, *settings = nullptr,
          *quit = nullptr;
  QAction *find = nullptr, *findNext = nullptr, *findPrevious = nullptr, *clearRecent = nullptr;
  QAction *focusTasks = nullptr, *focusLog = nullptr, *nextTab = nullptr, *previousTab = nullptr;
  QAction *run = nullptr, *cancelRun = nullptr, *timeRun = nullptr, *sanitizeRun = nullptr;
  QAction *optimize = nullptr, *tune = nullptr, *profile = nullptr, *showListing = nullptr;
  QAction *exportKernel = nullptr, *importModules = nullptr;
  QAction *userGuide = nullptr, *about = nullptr, *aboutQt = nullptr;
  QMenu *recentMenu = nullptr;  // filled by the window when it opens
  QMenu *viewMenu = nullptr;    // the work area's pages first; the window adds its docks

  // Every action, owned by `window`; Time/Sanitize After Checking start as `timing`/`sanitizing`.
  static WorkbenchActions create(QMainWindow *window, bool timing, bool sanitizing);
  // File, Edit, Run, View (with `pages` first) and Help, and the tool bar.
  void addMenus(QMainWindow *window, const QList<QAction *> &pages);
  // Each action's handler, called when it is triggered (checkable ones: when toggled, with the state).
  using Handler = std::function<void()>;
  static void bind(QObject *receiver, std::initializer_list<std::pair<QAction *, Handler>> handlers);
  static void bindToggle(QObject *receiver, QAction *action, std::function<void(bool)> handler);
};

}  // namespace kwb::ui
