#pragma once
// `kernel-workbench --screenshot FILE [--then ACTIONS]`: open a task in the window, wait until
// everything in the background has settled (GPU probe, workspace, task scans), do the actions in
// turn (each once the last has finished), and save a PNG of the window. How the GPU machine
// photographs the profiler with real data, and how the README's pictures are made.
#include <QString>
#include <QStringList>

namespace kwb::ui {

class MainWindow;

// The actions --then accepts: run, time (a run with timing), tune, listing,
// profile[:CONFIG[:SET]], show:live|metrics|roofline, lineage[:NAME[:STEP]] (the Lineage view of the
// skill library), skills[:ID] (the Skills view, a card selected), build-lineage (the open task's
// lineage built on the GPU, as Build lineage does), experience[:CASE|best] (the Experience view,
// the graph drawn, a Case or the open task's fastest selected and inspected).
inline constexpr const char *kScreenshotActionsHelp =
    "run, time, tune, listing, profile[:CONFIG[:SET]], show:live|metrics|roofline, lineage[:NAME[:STEP]], skills[:ID], build-lineage, "
    "experience[:CASE|best]";

// The comma-separated --then value as a list of actions; an action it cannot read is named in
// *problem (the list is then empty).
QStringList parseScreenshotActions(const QString &value, QString *problem);

struct ScreenshotPlan {
  QString task;         // the folder to open
  QString target;       // the PNG to write
  QStringList actions;  // from parseScreenshotActions
  int timeoutSeconds = 60;
};

// Runs the plan in `window` (shown here) and the application's event loop; returns the exit
// status: 0 with the picture saved, 1 when the task did not load, an action did not start, the
// picture could not be written or the window did not settle in time, 2 for an action the task
// cannot take (an unknown configuration or metric set).
int takeScreenshot(MainWindow &window, const ScreenshotPlan &plan);

}  // namespace kwb::ui
