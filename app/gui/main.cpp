// kernel-workbench: the desktop GUI. Everything lives in kwbui; this only reads the command line.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string_view>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QPixmap>
#include <QTabWidget>
#include <QTimer>

#include "kwb/version.h"
#include "ui/app_settings.h"
#include "ui/log_panel.h"
#include "ui/main_window.h"
#include "ui/profiler_panel.h"

namespace {

// Without a display, Qt aborts; the offscreen platform still renders (screenshots, CI).
void fallBackToOffscreenWithoutDisplay(int argc, char *argv[]) {
  if (!qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) return;
  if (!qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) return;
  qputenv("QT_QPA_PLATFORM", "offscreen");
  for (int i = 1; i < argc; ++i) {  // --help and --version need no word about displays
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "--version" || arg == "-v") return;
  }
  std::fputs(
      "kernel-workbench: no display (DISPLAY and WAYLAND_DISPLAY are unset); using the "
      "offscreen platform, so no window appears. Set QT_QPA_PLATFORM to choose another.\n",
      stderr);
}

QString defaultTask() {
  const QString kernels = kwb::ui::settings::effectiveKernelsDir();
  if (kernels.isEmpty()) return {};
  const QString softmax = QDir(kernels).filePath(QStringLiteral("softmax"));
  return QFileInfo(QDir(softmax).filePath(QStringLiteral("task.toml"))).isFile() ? softmax : QString();
}

}  // namespace

int main(int argc, char *argv[]) {
  fallBackToOffscreenWithoutDisplay(argc, argv);
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("KernelWorkbench"));
  QApplication::setApplicationName(QStringLiteral("kernel-workbench"));
  QApplication::setApplicationDisplayName(QLatin1String(kwb::kProjectName));
  QApplication::setApplicationVersion(QLatin1String(kwb::kVersion));
  QApplication::setDesktopFileName(QStringLiteral("kernel-workbench"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Take a CUDA kernel from correct to fast."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("task-folder"),
                               QStringLiteral("Task to open (default: the bundled softmax task)."),
                               QStringLiteral("[task-folder]"));
  const QCommandLineOption workspaceOption(
      QStringLiteral("workspace"), QStringLiteral("Use this workspace file."), QStringLiteral("FILE"));
  const QCommandLineOption screenshotOption(
      QStringLiteral("screenshot"),
      QStringLiteral("Open the task, wait for the GPU probe, the workspace and the task scans, save "
                     "a PNG of the window to FILE and exit. Writes no settings."),
      QStringLiteral("FILE"));
  const QCommandLineOption screenshotTimeoutOption(
      QStringLiteral("screenshot-timeout"),
      QStringLiteral("With --screenshot: give up (exit status 1) when the window has not settled "
                     "after SECONDS (default 60)."),
      QStringLiteral("SECONDS"), QStringLiteral("60"));
  const QCommandLineOption thenOption(
      QStringLiteral("then"),
      QStringLiteral("With --screenshot: once settled, do ACTIONS in turn, each after the last has "
                     "finished, then take the picture. Comma-separated: run, time (run with timing), tune, listing, "
                     "profile[:CONFIG[:SET]] (the profiler on that size configuration and metric "
                     "set), show:live|metrics|roofline (that tab of the profiler)."),
      QStringLiteral("ACTIONS"));
  parser.addOption(workspaceOption);
  parser.addOption(screenshotOption);
  parser.addOption(screenshotTimeoutOption);
  parser.addOption(thenOption);
  parser.process(app);

  const QStringList positional = parser.positionalArguments();
  if (positional.size() > 1) {
    std::fprintf(stderr, "kernel-workbench: one task folder at most, got %lld\n",
                 static_cast<long long>(positional.size()));
    return 2;
  }
  const QString task = positional.isEmpty() ? defaultTask() : positional.front();
  const bool screenshot = parser.isSet(screenshotOption);
  bool timeoutOk = false;
  const int timeoutSeconds = parser.value(screenshotTimeoutOption).toInt(&timeoutOk);
  if (screenshot && (!timeoutOk || timeoutSeconds < 1 || timeoutSeconds > 86400)) {
    std::fprintf(stderr, "kernel-workbench: --screenshot-timeout wants seconds from 1 to 86400, got '%s'\n",
                 qPrintable(parser.value(screenshotTimeoutOption)));
    return 2;
  }

  const QStringList knownActions{QStringLiteral("run"), QStringLiteral("time"), QStringLiteral("tune"), QStringLiteral("profile"),
                                 QStringLiteral("listing"), QStringLiteral("show")};
  const QStringList profilerTabs{QStringLiteral("live"), QStringLiteral("metrics"), QStringLiteral("roofline")};
  QStringList actions = parser.value(thenOption).split(QLatin1Char(','), Qt::SkipEmptyParts);
  for (auto &a : actions) a = a.trimmed();
  for (const auto &a : actions) {
    const QStringList parts = a.split(QLatin1Char(':'));
    const bool known = knownActions.contains(parts[0]) &&
                       (parts[0] == QLatin1String("profile")
                            ? parts.size() <= 3
                            : parts[0] == QLatin1String("show") ? parts.size() == 2 && profilerTabs.contains(parts[1])
                                                                : parts.size() == 1);
    if (!known) {
      std::fprintf(stderr,
                   "kernel-workbench: --then: cannot read '%s'; actions: run, time, tune, listing, "
                   "profile[:CONFIG[:SET]], show:live|metrics|roofline\n",
                   qPrintable(a));
      return 2;
    }
  }
  if (!actions.isEmpty() && !screenshot) {
    std::fputs("kernel-workbench: --then goes with --screenshot\n", stderr);
    return 2;
  }

  // A screenshot reads the user's settings but leaves them as they were.
  kwb::ui::MainWindow window(parser.value(workspaceOption), screenshot
                                                                ? kwb::ui::MainWindow::SettingsMode::ReadOnly
                                                                : kwb::ui::MainWindow::SettingsMode::ReadWrite);

  if (!screenshot) {
    window.show();
    if (!task.isEmpty()) window.openTask(task);
    return app.exec();
  }

  const QString target = QFileInfo(parser.value(screenshotOption)).absoluteFilePath();
  // A hard deadline: whatever has not settled by then (a folder scan on a hung mount, a workspace
  // on a stuck disk) is named, and the program ends without waiting for it. std::_Exit, because
  // a normal exit would join the very threads that are stuck; nothing is lost, as a screenshot
  // writes no settings and every workspace change is its own transaction.
  QTimer::singleShot(timeoutSeconds * 1000, &app, [&window, timeoutSeconds] {
    std::fprintf(stderr, "kernel-workbench: --screenshot gave up after %d s: still waiting for %s\n",
                 timeoutSeconds, qPrintable(window.pendingWork().join(QStringLiteral(", "))));
    window.cancelBackgroundWork();
    std::fflush(stderr);
    std::fflush(stdout);
    std::_Exit(1);
  });
  window.resize(1400, 850);
  window.show();
  if (task.isEmpty()) {
    std::fputs("kernel-workbench: no task to show: name a task folder\n", stderr);
    return 1;
  }
  if (!window.openTask(task)) {
    std::fprintf(stderr, "kernel-workbench: the task in %s did not load:\n%s\n", qPrintable(task),
                 qPrintable(window.log()->text()));
    return 1;
  }
  auto shoot = [&window, &app, target] {
    // Labels that changed text in the same turn have pending relayouts; apply them first.
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    const QPixmap picture = window.grab();
    if (!picture.save(target, "PNG")) {
      std::fprintf(stderr, "kernel-workbench: cannot write %s\n", qPrintable(target));
      app.exit(1);
      return;
    }
    std::printf("screenshot: %s\n", qPrintable(target));
    std::fflush(stdout);
    app.exit(0);
  };
  // Each time the window settles: the next action, or the picture once none is left.
  if (!actions.isEmpty()) window.resize(1600, 1000);  // room for the dock the actions fill
  bool shot = false;
  std::function<void()> next = [&window, &app, &actions, &shoot, &next, &shot, &profilerTabs] {
    if (shot || !window.isSettled()) return;  // a settled signal queued before the last action began
    if (actions.isEmpty()) {
      shot = true;
      // The bottom docks' area gets the height the charts and tables need.
      for (QDockWidget *dock : {window.profilerDock(), window.tuningDock()})
        if (dock->isVisible()) window.resizeDocks({dock}, {440}, Qt::Vertical);
      shoot();
      return;
    }
    const QString action = actions.takeFirst();
    const QStringList parts = action.split(QLatin1Char(':'));
    std::printf("then: %s\n", qPrintable(action));
    std::fflush(stdout);
    bool started = false;
    if (parts[0] == QLatin1String("run") || parts[0] == QLatin1String("time")) {
      window.timeRunAction()->setChecked(parts[0] == QLatin1String("time"));
      started = window.runCurrent();
    } else if (parts[0] == QLatin1String("tune")) {
      started = window.tuneCurrent();
    } else if (parts[0] == QLatin1String("listing")) {
      started = window.showListing();
    } else if (parts[0] == QLatin1String("show")) {
      window.profilerDock()->show();
      window.profilerDock()->raise();
      window.profilerPanel()->tabs()->setCurrentIndex(static_cast<int>(profilerTabs.indexOf(parts[1])));
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
