#include "ui/window/workbench_actions.h"

#include <QAction>
#include <QIcon>
#include <QKeySequence>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QStyle>
#include <QToolBar>

namespace kwb::ui {

namespace {

struct Spec {
  const char *name;
  QString text;
  QKeySequence shortcut;
  QString tip;
  const char *theme = nullptr;     // the icon theme's name
  const char *resource = nullptr;  // the compiled-in icon when the theme has none
};

QAction *make(QMainWindow *window, const Spec &s) {
  auto *a = new QAction(s.text, window);
  a->setObjectName(QLatin1String(s.name));
  if (!s.shortcut.isEmpty()) a->setShortcut(s.shortcut);
  if (!s.tip.isEmpty()) a->setToolTip(s.tip);
  if (s.theme)
    a->setIcon(QIcon::fromTheme(QLatin1String(s.theme), s.resource ? QIcon(QLatin1String(s.resource)) : QIcon()));
  return a;
}

}  // namespace

WorkbenchActions WorkbenchActions::create(QMainWindow *window, bool timing, bool sanitizing) {
  const auto tr = [](const char *text) { return QMainWindow::tr(text); };
  WorkbenchActions a;
  a.open = make(window, {"actionOpenTaskFolder", tr("&Open Task Folder…"), QKeySequence(Qt::CTRL | Qt::Key_O),
                         tr("Open a task folder, or a folder of tasks (Ctrl+O)"), "document-open-folder",
                         ":/icons/folder-open.svg"});
  a.save = make(window, {"actionSave", tr("&Save"), QKeySequence(Qt::CTRL | Qt::Key_S), tr("Save the current file (Ctrl+S)"),
                         "document-save", ":/icons/save.svg"});
  a.closeTab = make(window, {"actionCloseTab", tr("&Close Tab"), QKeySequence(Qt::CTRL | Qt::Key_W), {}});
  a.reload = make(window, {"actionReloadTasks", tr("&Reload Tasks"), QKeySequence(Qt::Key_F5),
                           tr("Scan the task folders again (F5)"), "view-refresh", ":/icons/reload.svg"});
  a.settings = make(window, {"actionSettings", tr("Se&ttings…"), QKeySequence(Qt::CTRL | Qt::Key_Comma), {},
                             "preferences-system", ":/icons/settings.svg"});
  a.settings->setMenuRole(QAction::PreferencesRole);
  a.quit = make(window, {"actionQuit", tr("&Quit"), QKeySequence(Qt::CTRL | Qt::Key_Q), {}});
  a.quit->setMenuRole(QAction::QuitRole);
  a.find = make(window, {"actionFind", tr("&Find…"), QKeySequence(Qt::CTRL | Qt::Key_F),
                         tr("Find text in the current file (Ctrl+F)")});
  a.findNext = make(window, {"actionFindNext", tr("Find &Next"), QKeySequence(Qt::Key_F3), {}});
  a.findPrevious = make(window, {"actionFindPrevious", tr("Find &Previous"), QKeySequence(Qt::SHIFT | Qt::Key_F3), {}});
  a.clearRecent = make(window, {"actionClearRecent", tr("&Clear Recent"), {}, {}});
  a.focusTasks = make(window, {"actionFocusTasks", tr("Focus &Tasks"), QKeySequence(Qt::ALT | Qt::Key_1), {}});
  a.focusLog = make(window, {"actionFocusLog", tr("Focus &Log"), QKeySequence(Qt::ALT | Qt::Key_2), {}});
  a.nextTab = make(window, {"actionNextTab", tr("&Next Tab"), QKeySequence(Qt::CTRL | Qt::Key_PageDown), {}});
  a.previousTab = make(window, {"actionPreviousTab", tr("&Previous Tab"), QKeySequence(Qt::CTRL | Qt::Key_PageUp), {}});
  a.run = make(window, {"actionRun", tr("&Run"), QKeySequence(Qt::CTRL | Qt::Key_R),
                        tr("Compile the kernel in the editor and check it against the task's reference (Ctrl+R)"),
                        "media-playback-start"});
  if (a.run->icon().isNull()) a.run->setIcon(window->style()->standardIcon(QStyle::SP_MediaPlay));
  a.cancelRun = make(window, {"actionCancelRun", tr("&Cancel Run"), {}, tr("Stop the run in progress"), "process-stop"});
  if (a.cancelRun->icon().isNull()) a.cancelRun->setIcon(window->style()->standardIcon(QStyle::SP_MediaStop));
  a.exportKernel = make(window, {"actionExport", tr("&Export Kernel…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E), {},
                                 "document-export"});
  a.exportKernel->setStatusTip(tr("Write the selected run's kernel (or the editor's) out as a CUDA package, a PyTorch "
                                  "extension or a report"));
  a.importModules = make(window, {"actionImportKernelBench", tr("&Import PyTorch Modules or KernelBench Problems…"), {}, {},
                                  "document-import"});
  a.importModules->setStatusTip(tr("Make tasks from PyTorch modules in KernelBench's shape (class Model, get_inputs, "
                                   "get_init_inputs): each becomes the task's PyTorch reference, its weights the "
                                   "kernel's inputs, with a starter to improve"));
  a.tune = make(window, {"actionTune", tr("T&une"), QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_T),
                         tr("Search the task's tunable parameters for the fastest correct configuration of the kernel "
                            "in the editor: the built-in autotuner (Ctrl+Alt+T)"),
                         "system-run"});
  a.optimize = make(window, {"actionOptimize", tr("&Optimize"), {},
                             tr("Make the kernel in the editor faster. With no LLM configured this runs the built-in "
                                "autotuner")});
  a.profile = make(window, {"actionProfile", tr("&Profile"), QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_P),
                            tr("Read the GPU's counters for the kernel in the editor: DRAM throughput, occupancy, "
                               "cache hit rates (CUPTI, a pass of its own; Ctrl+Alt+P)")});
  a.showListing = make(window, {"actionShowListing", tr("Show &PTX/SASS"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A),
                                tr("The kernel in the editor beside its SASS or PTX, line by line (Ctrl+Shift+A)")});
  a.timeRun = make(window, {"actionTimeRun", tr("&Time After Checking"), {},
                            tr("Once the kernel is correct on every configuration, time it against the reference")});
  a.timeRun->setCheckable(true);
  a.timeRun->setChecked(timing);
  a.sanitizeRun = make(window, {"actionSanitizeRun", tr("&Sanitize After Checking"), {},
                                tr("Then run the kernel once more under compute-sanitizer's memcheck, racecheck, "
                                   "initcheck and synccheck at the smallest configuration; findings go to Results and "
                                   "the editor's lines (tens of seconds)")});
  a.sanitizeRun->setCheckable(true);
  a.sanitizeRun->setChecked(sanitizing);
  a.userGuide = make(window, {"actionUserGuide", tr("&User Guide"), QKeySequence(QKeySequence::HelpContents), {},
                              "help-contents"});
  a.userGuide->setStatusTip(tr("The workbench's guide: tasks, the judge, sessions, skill cards, memory, profiling; searchable"));
  a.about = make(window, {"actionAbout", tr("&About Kernel Workbench"), {}, {}});
  a.about->setMenuRole(QAction::AboutRole);
  a.aboutQt = make(window, {"actionAboutQt", tr("About &Qt"), {}, {}});
  a.aboutQt->setMenuRole(QAction::AboutQtRole);
  // The gated actions' own tooltips; the window adds the GPU gate's words to them.
  for (QAction *gated : {a.run, a.tune, a.optimize, a.profile}) gated->setProperty("kwbTip", gated->toolTip());
  return a;
}

void WorkbenchActions::addMenus(QMainWindow *window, const QList<QAction *> &pages) {
  const auto tr = [](const char *text) { return QMainWindow::tr(text); };
  QMenuBar *bar = window->menuBar();
  QMenu *file = bar->addMenu(tr("&File"));
  file->addAction(open);
  recentMenu = file->addMenu(tr("Recent &Tasks"));
  recentMenu->setObjectName(QStringLiteral("recentTasksMenu"));
  file->addSeparator();
  file->addActions({save, closeTab});
  file->addSeparator();
  file->addActions({importModules, exportKernel});
  file->addSeparator();
  file->addAction(reload);
  file->addSeparator();
  file->addAction(settings);
  file->addSeparator();
  file->addAction(quit);

  QMenu *edit = bar->addMenu(tr("&Edit"));
  edit->addActions({find, findNext, findPrevious});

  QMenu *runMenu = bar->addMenu(tr("&Run"));
  runMenu->addActions({run, cancelRun});
  runMenu->addSeparator();
  runMenu->addActions({optimize, tune, profile});
  runMenu->addSeparator();
  runMenu->addActions({timeRun, sanitizeRun});

  viewMenu = bar->addMenu(tr("&View"));
  viewMenu->addActions(pages);
  viewMenu->addSeparator();
  viewMenu->addActions({focusTasks, focusLog});
  viewMenu->addSeparator();
  viewMenu->addActions({nextTab, previousTab});
  viewMenu->addSeparator();

  QMenu *help = bar->addMenu(tr("&Help"));
  help->addAction(userGuide);
  help->addSeparator();
  help->addActions({about, aboutQt});

  QToolBar *tools = window->addToolBar(tr("Main Toolbar"));
  tools->setObjectName(QStringLiteral("mainToolBar"));
  tools->setMovable(false);
  tools->setIconSize(QSize(20, 20));
  tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  tools->addActions({open, save});
  tools->addSeparator();
  tools->addActions({run, cancelRun, timeRun, optimize, tune, profile});
  tools->addSeparator();
  tools->addActions({reload, settings});
}

void WorkbenchActions::bind(QObject *receiver, std::initializer_list<std::pair<QAction *, Handler>> handlers) {
  for (const auto &[action, handler] : handlers) QObject::connect(action, &QAction::triggered, receiver, handler);
}

void WorkbenchActions::bindToggle(QObject *receiver, QAction *action, std::function<void(bool)> handler) {
  QObject::connect(action, &QAction::toggled, receiver, std::move(handler));
}

}  // namespace kwb::ui
