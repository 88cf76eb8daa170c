#pragma once
// Typed access to the user's settings (QSettings "KernelWorkbench"/"kernel-workbench"), so the
// key names live in one place. Every function opens its own QSettings: cheap, and thread-safe.
#include <QByteArray>
#include <QString>
#include <QStringList>

namespace kwb::ui::settings {

inline constexpr int kMaxRecentTasks = 10;

struct EditorSettings {
  int fontSize = 10;  // points
  int tabWidth = 2;   // columns; indentation always uses spaces
};

// The workspace file the user chose; empty means the default.
QString workspacePath();
void setWorkspacePath(const QString &path);
// userDataDir()/workspace.kwb
QString defaultWorkspacePath();

// A folder that replaces the bundled kernels folder; empty means none.
QString kernelsDirOverride();
void setKernelsDirOverride(const QString &path);
// The override when set, else kwb::bundledKernelsDir(); empty when neither exists.
QString effectiveKernelsDir();

EditorSettings editor();
void setEditor(const EditorSettings &editor);

// Architecture to compile for when no GPU is present ("sm_90").
QString compileOnlyArch();
void setCompileOnlyArch(const QString &arch);
QStringList compileOnlyArchChoices();
inline constexpr const char *kDefaultCompileOnlyArch = "sm_90";

// Most recent first, at most kMaxRecentTasks, absolute folders.
QStringList recentTasks();
void addRecentTask(const QString &folder);

// Folders opened with "Open Task Folder…", in the order they were first opened.
QStringList openedFolders();
void addOpenedFolder(const QString &folder);

QByteArray windowGeometry();
QByteArray windowState();
void setWindowGeometryAndState(const QByteArray &geometry, const QByteArray &state);

}  // namespace kwb::ui::settings
