#pragma once
// Typed access to the user's settings (QSettings "KernelWorkbench"/"kernel-workbench"), so the
// key names live in one place. Every function opens its own QSettings: cheap, and thread-safe.
#include <optional>

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

#include "core/agent/session_store.h"

namespace kwb::ui::settings {

inline constexpr int kMaxRecentTasks = 10;

struct EditorSettings {
  int fontSize = 10;  // points
  int tabWidth = 2;   // columns; indentation always uses spaces
};

// The workspace file the user chose; empty means the default. Stored absolute (a relative path
// is taken against the current directory when it is set).
QString workspacePath();
void setWorkspacePath(const QString &path);
// userDataDir()/workspace.kwb
QString defaultWorkspacePath();

// A folder that replaces the bundled kernels folder; empty means none. Stored absolute.
QString kernelsDirOverride();
void setKernelsDirOverride(const QString &path);
// The override when it is set and is a folder, else kwb::bundledKernelsDir() when there is no
// override; empty when the override is missing (it replaces the bundled suite, so nothing is shown
// in its place: the task tree says why) or when no bundled suite is installed.
QString effectiveKernelsDir();

EditorSettings editor();
void setEditor(const EditorSettings &editor);

// Architecture to compile for when no GPU is present ("sm_90").
QString compileOnlyArch();
void setCompileOnlyArch(const QString &arch);
QStringList compileOnlyArchChoices();
inline constexpr const char *kDefaultCompileOnlyArch = "sm_90";

// The CUDA ordinals (as CUDA_VISIBLE_DEVICES leaves them) the evaluation pool starts a worker
// for; empty means every visible GPU. Sorted, without duplicates.
QList<int> gpuDevices();
void setGpuDevices(const QList<int> &devices);
// "0, 2" -> {0, 2}; "" -> {} (all); false, with *error set, for anything else.
bool parseGpuDevices(const QString &text, QList<int> *devices, QString *error = nullptr);
QString formatGpuDevices(const QList<int> &devices);  // "0, 2"; "" for all

// Where the GPU workers run (--workers): "local" or empty (this machine), "ssh://[USER@]HOST[:PORT][/PATH]"
// or "slurm:..." (core/worker/worker_launcher.h). Stored as given when it parses.
QString workersSpec();
void setWorkersSpec(const QString &spec);
// Empty when `spec` parses; else what is wrong with it.
QString workersSpecProblem(const QString &spec);

// Whether Run also times a candidate once it is correct (EvaluationOptions::time).
bool runTiming();
void setRunTiming(bool time);
// Whether Run also runs compute-sanitizer's tools at the smallest configuration
// (EvaluationOptions::sanitize).
bool runSanitizer();
void setRunSanitizer(bool sanitize);

// The dollars an optimization session may spend on LLM requests; nullopt: no limit. Only
// positive amounts are stored; anything else removes the limit.
std::optional<double> llmBudgetDollars();
void setLlmBudgetDollars(std::optional<double> dollars);

// What the Optimize dialog was last accepted with: the session's choices (task, starter and
// device left out; nullopt when never accepted or unreadable), the provider and the model.
std::optional<kwb::agent::SessionSettings> agentSessionSettings();
void setAgentSessionSettings(const kwb::agent::SessionSettings &settings);
QString agentProvider();
QString agentModel();
void setAgentProvider(const QString &provider, const QString &model);
// The name the Skills view's review records ("reviewer:NAME"); empty when never given.
QString reviewerName();
void setReviewerName(const QString &name);

// The interpreters the import dialog was last given (most recent first, at most 6) and the folder
// it last imported into.
QStringList importPythons();
void addImportPython(const QString &python);
QString importFolder();
void setImportFolder(const QString &folder);

// Most recent first, at most kMaxRecentTasks, absolute folders.
QStringList recentTasks();
void setRecentTasks(const QStringList &folders);
// The list with folder moved (or added) to the front, cut to kMaxRecentTasks.
QStringList withRecentTask(QStringList list, const QString &folder);
void addRecentTask(const QString &folder);

// Folders opened with "Open Task Folder…", in the order they were first opened.
QStringList openedFolders();
void setOpenedFolders(const QStringList &folders);

QByteArray windowGeometry();
QByteArray windowState();
void setWindowGeometryAndState(const QByteArray &geometry, const QByteArray &state);

}  // namespace kwb::ui::settings
