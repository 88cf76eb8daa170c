#include "ui/screenshot_driver.h"

#include <cstdio>
#include <cstdlib>
#include <functional>

#include <QApplication>
#include <QDockWidget>
#include <QFileInfo>
#include <QPixmap>
#include <QTabWidget>
#include <QTimer>

#include "ui/main_window.h"
#include "ui/views/work_area.h"
#include "ui/services/memory_service.h"
#include "ui/views/experience_panel.h"
#include "ui/services/skill_library_service.h"
#include "ui/views/lineage_panel.h"
#include "ui/views/skills_panel.h"
#include "ui/views/log_panel.h"
#include "ui/views/profiler_panel.h"

namespace kwb::ui {

namespace {

const QStringList &profilerTabs() {
  static const QStringList tabs{QStringLiteral("live"), QStringLiteral("metrics"), QStringLiteral("roofline")};
  return tabs;
}

// The window as it is now, to `target` (PNG); says where, or why not.
bool grabWindow(MainWindow &window, const QString &target) {
  // Labels that changed text in the same turn have pending relayouts; apply them first.
  QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
  const QPixmap picture = window.grab();
  if (!picture.save(target, "PNG")) {
    std::fprintf(stderr, "kernel-workbench: cannot write %s\n", qPrintable(target));
    return false;
  }
  std::printf("screenshot: %s\n", qPrintable(target));
  std::fflush(stdout);
  return true;
}

}  // namespace

QStringList parseScreenshotActions(const QString &value, QString *problem) {
  static const QStringList known{QStringLiteral("run"),     QStringLiteral("time"),    QStringLiteral("tune"),
                                 QStringLiteral("profile"), QStringLiteral("listing"), QStringLiteral("show"),
                                 QStringLiteral("lineage"), QStringLiteral("skills"), QStringLiteral("build-lineage"),
                                 QStringLiteral("experience")};
  QStringList actions = value.split(QLatin1Char(','), Qt::SkipEmptyParts);
  for (auto &a : actions) a = a.trimmed();
  for (const auto &a : actions) {
    const QStringList parts = a.split(QLatin1Char(':'));
    const bool ok = known.contains(parts[0]) &&
                    (parts[0] == QLatin1String("profile")
                         ? parts.size() <= 3
                         : parts[0] == QLatin1String("show")    ? parts.size() == 2 && profilerTabs().contains(parts[1])
                         : parts[0] == QLatin1String("lineage") ? parts.size() <= 3
                         : parts[0] == QLatin1String("skills") || parts[0] == QLatin1String("experience")
                             ? parts.size() <= 2
                                                                : parts.size() == 1);
    if (!ok) {
      if (problem) *problem = QStringLiteral("cannot read '%1'; actions: %2").arg(a, QLatin1String(kScreenshotActionsHelp));
      return {};
    }
  }
  return actions;
}

int takeScreenshot(MainWindow &window, const ScreenshotPlan &plan) {
  QCoreApplication &app = *QCoreApplication::instance();
  const QString task = plan.task;
  const QString target = plan.target;
  const int timeoutSeconds = plan.timeoutSeconds;
  QStringList actions = plan.actions;
  const QStringList &tabs = profilerTabs();
  // A hard deadline: whatever has not settled by then (a folder scan on a hung mount, a workspace
  // on a stuck disk) is named, and the program ends without waiting for it. std::_Exit, because
  // a normal exit would join the very threads that are stuck; nothing is lost, as a screenshot
  // writes no settings and every workspace change is its own transaction.
  QTimer::singleShot(timeoutSeconds * 1000, &window, [&window, timeoutSeconds] {
    std::fprintf(stderr, "kernel-workbench: --screenshot gave up after %d s: still waiting for %s\n",
                 timeoutSeconds, qPrintable(window.pendingWork().join(QStringLiteral(", "))));
    window.cancelBackgroundWork();
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(1);
  });
  // Sized before it is shown, so that the default layout is made for that size; room for the
  // views the actions fill.
  window.resize(actions.isEmpty() ? QSize(1400, 850) : QSize(1600, 1000));
  window.show();
  if (task.isEmpty()) {
    std::fputs("kernel-workbench: no task to show: name a task folder\n", stderr);
    return 1;
  }
  if (!window.openTask(task)) {
    // The window shows why (the manifest at the faulty line, the log): that is the picture, and
    // the exit status still says the task did not load.
    std::fprintf(stderr, "kernel-workbench: the task in %s did not load (the picture shows why):\n%s\n", qPrintable(task),
                 qPrintable(window.log()->text()));
    QCoreApplication::processEvents();
    grabWindow(window, target);
    return 1;
  }
  auto shoot = [&window, &app, target] { app.exit(grabWindow(window, target) ? 0 : 1); };
  // Each time the window settles: the next action, or the picture once none is left.
  bool shot = false;
  std::function<void()> next = [&window, &app, &actions, &shoot, &next, &shot, &tabs, &plan] {
    if (shot || !window.isSettled()) return;  // a settled signal queued before the last action began
    if (actions.isEmpty()) {
      shot = true;
      // After actions that filled a chart or a table in a bottom dock: the dock in front gets
      // the height they need. (A tabbed dock behind another is "visible" too: it is not resized.)
      if (!plan.actions.isEmpty())
        for (QDockWidget *dock : {window.findChild<QDockWidget *>(QStringLiteral("tuningDock"))})
          if (dock->isVisible() && !dock->visibleRegion().isEmpty()) window.resizeDocks({dock}, {440}, Qt::Vertical);
      shoot();
      return;
    }
    const QString action = actions.takeFirst();
    const QStringList parts = action.split(QLatin1Char(':'));
    std::printf("then: %s\n", qPrintable(action));
    std::fflush(stdout);
    bool started = false;
    if (parts[0] == QLatin1String("run") || parts[0] == QLatin1String("time")) {
      window.actions().timeRun->setChecked(parts[0] == QLatin1String("time"));
      started = window.runCurrent();
    } else if (parts[0] == QLatin1String("tune")) {
      started = window.tuneCurrent();
    } else if (parts[0] == QLatin1String("listing")) {
      started = window.showListing();
    } else if (parts[0] == QLatin1String("build-lineage")) {
      // The Lineage view in front while the open task's lineage is built; settled once stored.
      window.workArea()->reveal(kwb::ui::WorkArea::Page::Library);
      started = window.buildLineageOfCurrentTask();
    } else if (parts[0] == QLatin1String("lineage") || parts[0] == QLatin1String("skills")) {
      // The dock in front (its library read again), then the lineage and step, or the card, shown
      // once that read is in.
      window.workArea()->reveal(kwb::ui::WorkArea::Page::Library);
      window.skillLibrary()->refresh();
      if (parts[0] == QLatin1String("lineage") && parts.size() >= 2)
        window.lineagePanel()->showLineage(parts[1], parts.size() >= 3 ? parts[2].toInt() : 0);
      if (parts[0] == QLatin1String("skills") && parts.size() >= 2) window.skillsPanel()->selectCard(parts[1]);
      started = true;
    } else if (parts[0] == QLatin1String("experience")) {
      // The Experience view in front (the memory read again), the Case given (a number, or "best":
      // the open task's fastest) selected and inspected once the graph is drawn.
      window.workArea()->reveal(kwb::ui::WorkArea::Page::Experience);
      auto *panel = window.experiencePanel();
      panel->refresh();
      if (parts.size() >= 2) {
        const QString which = parts[1];
        QObject::connect(window.memory(), &kwb::ui::MemoryService::loaded, panel, [panel, which, &window] {
          const qint64 id = which == QLatin1String("best") ? panel->bestCase(window.context()->taskName()) : which.toLongLong();
          if (id > 0) panel->selectCase(id);
        }, Qt::SingleShotConnection);
      }
      started = true;
    } else if (parts[0] == QLatin1String("show")) {
      window.workArea()->reveal(kwb::ui::WorkArea::Page::Profiler);
      window.profilerPanel()->tabs()->setCurrentIndex(static_cast<int>(tabs.indexOf(parts[1])));
      started = true;
    } else {  // profile[:CONFIG[:SET]]
      auto *panel = window.profilerPanel();
      if (parts.size() >= 2 && !parts[1].isEmpty() && !panel->selectConfiguration(parts[1])) {
        std::fprintf(stderr, "kernel-workbench: --then %s: the task has no configuration '%s'\n", qPrintable(action),
                     qPrintable(parts[1]));
        app.exit(2);
        return;
      }
      if (parts.size() >= 3 && !panel->selectMetricSet(parts[2])) {
        std::fprintf(stderr, "kernel-workbench: --then %s: no metric set '%s' (default, detailed)\n", qPrintable(action),
                     qPrintable(parts[2]));
        app.exit(2);
        return;
      }
      started = window.profileCurrent();
    }
    if (!started) {
      std::fprintf(stderr, "kernel-workbench: --then %s did not start:\n%s\n", qPrintable(action),
                   qPrintable(window.log()->text()));
      app.exit(1);
      return;
    }
    if (window.isSettled()) QMetaObject::invokeMethod(&app, next, Qt::QueuedConnection);
    // else: the settled signal below calls next() again.
  };
  QObject::connect(&window, &kwb::ui::MainWindow::settled, &app, [&next] { next(); }, Qt::QueuedConnection);
  if (window.isSettled()) QMetaObject::invokeMethod(&app, next, Qt::QueuedConnection);
  return app.exec();
}

}  // namespace kwb::ui
