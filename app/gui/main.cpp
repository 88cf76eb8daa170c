// kernel-workbench: the desktop GUI. Everything lives in kwbui; this only reads the command line.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>

#include "kwb/version.h"
#include "ui/main_window.h"
#include "ui/screenshot_driver.h"
#include "ui/settings/app_settings.h"

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
                     "set), show:live|metrics|roofline (that tab of the profiler), lineage[:NAME[:STEP]], "
                     "skills[:ID], build-lineage, experience[:CASE|best] (the experience graph, a Case inspected)."),
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

  QString actionProblem;
  const QStringList actions = kwb::ui::parseScreenshotActions(parser.value(thenOption), &actionProblem);
  if (!actionProblem.isEmpty()) {
    std::fprintf(stderr, "kernel-workbench: --then: %s\n", qPrintable(actionProblem));
    return 2;
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

  kwb::ui::ScreenshotPlan plan;
  plan.task = task;
  plan.target = QFileInfo(parser.value(screenshotOption)).absoluteFilePath();
  plan.actions = actions;
  plan.timeoutSeconds = timeoutSeconds;
  return kwb::ui::takeScreenshot(window, plan);
}
