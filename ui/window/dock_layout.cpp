#include "ui/window/dock_layout.h"

#include <QAction>
#include <QDockWidget>
#include <QGuiApplication>
#include <QMainWindow>
#include <QMenu>
#include <QMetaObject>
#include <QScreen>
#include <QToolBar>

#include <algorithm>
#include <utility>

#include "ui/settings/app_settings.h"

namespace kwb::ui {

namespace {

constexpr int kStateVersion = 2;  // 2: the big views left the docks for the centre (issue 48)

}  // namespace

DockLayout::DockLayout(QMainWindow *window, const Views &views, QMenu *viewMenu, QAction *showListing)
    : QObject(window), window_(window) {
  const auto dock = [window](const QString &title, const char *name, QWidget *view, Qt::DockWidgetArea area) {
    auto *d = new QDockWidget(title, window);
    d->setObjectName(QLatin1String(name));
    d->setWidget(view);
    window->addDockWidget(area, d);
    return d;
  };
  tasks = dock(tr("Tasks"), "tasksDock", views.tasks, Qt::LeftDockWidgetArea);
  tasks->setAllowedAreas(Qt::LeftDockWidgetArea | Qt::RightDockWidgetArea);
  log = dock(tr("Log"), "logDock", views.log, Qt::BottomDockWidgetArea);
  log->setAllowedAreas(Qt::BottomDockWidgetArea | Qt::TopDockWidgetArea | Qt::RightDockWidgetArea);
  results = dock(tr("Results"), "resultsDock", views.results, Qt::RightDockWidgetArea);
  history = dock(tr("History"), "historyDock", views.history, Qt::BottomDockWidgetArea);
  gpus = dock(tr("GPUs"), "gpusDock", views.gpus, Qt::BottomDockWidgetArea);
  tuning = dock(tr("Tuning"), "tuningDock", views.tuning, Qt::BottomDockWidgetArea);
  sourceView = dock(tr("Source/PTX/SASS"), "sourceViewDock", views.sourceView, Qt::BottomDockWidgetArea);
  window->tabifyDockWidget(log, history);
  window->tabifyDockWidget(history, gpus);
  window->tabifyDockWidget(gpus, tuning);
  window->tabifyDockWidget(tuning, sourceView);
  // The bottom strip is for short output: its views may be squeezed to a few lines (a tabbed
  // view's minimum would be the whole strip's).
  for (QDockWidget *d : {log, history, gpus, tuning, sourceView}) d->widget()->setMinimumSize(200, 60);
  log->raise();

  const std::pair<QDockWidget *, const char *> toggles[] = {
      {tasks, "actionToggleTasks"}, {log, "actionToggleLog"},     {results, "actionToggleResults"},
      {history, "actionToggleHistory"}, {gpus, "actionToggleGpus"}, {tuning, "actionToggleTuning"},
      {sourceView, "actionToggleSourceView"}};
  for (const auto &[d, name] : toggles) {
    QAction *toggle = d->toggleViewAction();
    toggle->setObjectName(QLatin1String(name));
    viewMenu->addAction(toggle);
  }
  viewMenu->addAction(showListing);
  if (auto *tools = window->findChild<QToolBar *>(QStringLiteral("mainToolBar"))) {
    QAction *toggleTools = tools->toggleViewAction();
    toggleTools->setText(tr("Toolbar"));
    viewMenu->addAction(toggleTools);
  }
}

void DockLayout::restore(bool saved, bool fixed) {
  const QByteArray geometry = saved ? settings::windowGeometry() : QByteArray();
  if (geometry.isEmpty() || !window_->restoreGeometry(geometry)) {
    // The first time: the screen's room (less the panels and task bars it keeps).
    const QScreen *where = window_->screen() ? window_->screen() : QGuiApplication::primaryScreen();
    if (where && !fixed) window_->setGeometry(where->availableGeometry());
    else window_->resize(1400, 880);
  }
  const QByteArray state = saved ? settings::windowState() : QByteArray();
  // No saved layout: the default one, once the window has its size (docks sized before the
  // window is shown keep their size hints, and the Log took a third of the height).
  defaultPending_ = state.isEmpty() || !window_->restoreState(state, kStateVersion);
}

void DockLayout::save() { settings::setWindowGeometryAndState(window_->saveGeometry(), window_->saveState(kStateVersion)); }

void DockLayout::shown() {
  if (!defaultPending_) return;
  defaultPending_ = false;
  // After the first layout pass, which the show has only scheduled.
  QMetaObject::invokeMethod(this, &DockLayout::applyDefault, Qt::QueuedConnection);
}

void DockLayout::applyDefault() {
  // The centre gets the room: the bottom docks (the Log in front) a few lines, Results a
  // quarter of the width.
  const int w = window_->width(), h = window_->height();
  window_->resizeDocks({tasks, results}, {std::min(260, w / 6), w / 4}, Qt::Horizontal);
  window_->resizeDocks({log}, {std::max(110, h / 8)}, Qt::Vertical);
}

void DockLayout::reveal(QDockWidget *dock) {
  // The strip is kept short for output; a listing or a tuning table asked for gets room to be read.
  dock->show();
  dock->raise();
  if (dock->height() < window_->height() / 3) window_->resizeDocks({dock}, {window_->height() * 2 / 5}, Qt::Vertical);
}

}  // namespace kwb::ui
