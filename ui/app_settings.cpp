#include "ui/app_settings.h"

#include <algorithm>

#include <QDir>
#include <QFileInfo>
#include <QSettings>

#include "core/paths/install_paths.h"
#include "ui/filesystem_path.h"

namespace kwb::ui::settings {

namespace {

// Named explicitly rather than taken from QCoreApplication, so tests and tools that run under
// another application name read and write the same place.
class Store : public QSettings {
 public:
  Store() : QSettings(QStringLiteral("KernelWorkbench"), QStringLiteral("kernel-workbench")) {}
};

const QString kWorkspacePath = QStringLiteral("general/workspacePath");
const QString kKernelsDir = QStringLiteral("general/kernelsDirOverride");
const QString kFontSize = QStringLiteral("editor/fontSize");
const QString kTabWidth = QStringLiteral("editor/tabWidth");
const QString kArch = QStringLiteral("gpu/compileOnlyArch");
const QString kRecent = QStringLiteral("tasks/recent");
const QString kOpenedFolders = QStringLiteral("tasks/openedFolders");
const QString kGeometry = QStringLiteral("window/geometry");
const QString kState = QStringLiteral("window/state");

QString normalizedFolder(const QString &folder) {
  return QDir::cleanPath(QFileInfo(folder).absoluteFilePath());
}

}  // namespace

QString workspacePath() {
  Store store;
  return store.value(kWorkspacePath).toString();
}

void setWorkspacePath(const QString &path) {
  Store store;
  if (path.isEmpty())
    store.remove(kWorkspacePath);
  else
    store.setValue(kWorkspacePath, path);
}

QString defaultWorkspacePath() {
  try {
    return toQString(kwb::userDataDir() / "workspace.kwb");
  } catch (const std::exception &) {
    // userDataDir() creates the folder; when that fails, the workspace open reports it.
    return QDir::home().filePath(QStringLiteral(".local/share/kernel-workbench/workspace.kwb"));
  }
}

QString kernelsDirOverride() {
  Store store;
  return store.value(kKernelsDir).toString();
}

void setKernelsDirOverride(const QString &path) {
  Store store;
  if (path.isEmpty())
    store.remove(kKernelsDir);
  else
    store.setValue(kKernelsDir, path);
}

QString effectiveKernelsDir() {
  const QString custom = kernelsDirOverride();
  if (!custom.isEmpty()) return custom;
  const auto bundled = kwb::bundledKernelsDir();
  return bundled ? toQString(*bundled) : QString();
}

EditorSettings editor() {
  Store store;
  EditorSettings e;
  e.fontSize = std::clamp(store.value(kFontSize, e.fontSize).toInt(), 6, 48);
  e.tabWidth = std::clamp(store.value(kTabWidth, e.tabWidth).toInt(), 1, 16);
  return e;
}

void setEditor(const EditorSettings &editor) {
  Store store;
  store.setValue(kFontSize, editor.fontSize);
  store.setValue(kTabWidth, editor.tabWidth);
}

QString compileOnlyArch() {
  Store store;
  const QString arch = store.value(kArch, QLatin1String(kDefaultCompileOnlyArch)).toString();
  return compileOnlyArchChoices().contains(arch) ? arch : QLatin1String(kDefaultCompileOnlyArch);
}

void setCompileOnlyArch(const QString &arch) {
  Store store;
  store.setValue(kArch, arch);
}

QStringList compileOnlyArchChoices() {
  return {QStringLiteral("sm_70"),  QStringLiteral("sm_75"),  QStringLiteral("sm_80"),
          QStringLiteral("sm_86"),  QStringLiteral("sm_87"),  QStringLiteral("sm_89"),
          QStringLiteral("sm_90"),  QStringLiteral("sm_100"), QStringLiteral("sm_103"),
          QStringLiteral("sm_110"), QStringLiteral("sm_120"), QStringLiteral("sm_121")};
}

QStringList recentTasks() {
  Store store;
  return store.value(kRecent).toStringList();
}

void addRecentTask(const QString &folder) {
  const QString path = normalizedFolder(folder);
  QStringList list = recentTasks();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecentTasks) list.removeLast();
  Store store;
  store.setValue(kRecent, list);
}

QStringList openedFolders() {
  Store store;
  return store.value(kOpenedFolders).toStringList();
}

void addOpenedFolder(const QString &folder) {
  const QString path = normalizedFolder(folder);
  QStringList list = openedFolders();
  if (list.contains(path)) return;
  list.append(path);
  Store store;
  store.setValue(kOpenedFolders, list);
}

QByteArray windowGeometry() {
  Store store;
  return store.value(kGeometry).toByteArray();
}

QByteArray windowState() {
  Store store;
  return store.value(kState).toByteArray();
}

void setWindowGeometryAndState(const QByteArray &geometry, const QByteArray &state) {
  Store store;
  store.setValue(kGeometry, geometry);
  store.setValue(kState, state);
}

}  // namespace kwb::ui::settings
