#include "ui/settings/app_settings.h"

#include "core/worker/worker_launcher.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include <QCoreApplication>
#include <QDir>
#include <QRegularExpression>
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
const QString kGpuDevices = QStringLiteral("gpu/devices");
const QString kWorkers = QStringLiteral("gpu/workers");
const QString kRunTiming = QStringLiteral("run/time");
const QString kRunSanitizer = QStringLiteral("run/sanitize");
const QString kLlmBudget = QStringLiteral("llm/budgetDollars");
const QString kAgentSession = QStringLiteral("agent/sessionSettings");
const QString kAgentProvider = QStringLiteral("agent/provider");
const QString kAgentModel = QStringLiteral("agent/model");
const QString kRecent = QStringLiteral("tasks/recent");
const QString kOpenedFolders = QStringLiteral("tasks/openedFolders");
const QString kGeometry = QStringLiteral("window/geometry");
const QString kState = QStringLiteral("window/state");

void setOrRemove(const QString &key, const QString &value) {
  Store store;
  if (value.isEmpty())
    store.remove(key);
  else
    store.setValue(key, value);
}

QStringList normalizedUnique(const QStringList &paths) {
  QStringList out;
  for (const QString &path : paths) {
    const QString normal = normalizedPath(path);
    if (!normal.isEmpty() && !out.contains(normal)) out.append(normal);
  }
  return out;
}

}  // namespace

QString workspacePath() {
  Store store;
  return store.value(kWorkspacePath).toString();
}

void setWorkspacePath(const QString &path) {
  setOrRemove(kWorkspacePath, normalizedPath(path.trimmed()));
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
  setOrRemove(kKernelsDir, normalizedPath(path.trimmed()));
}

QString effectiveKernelsDir() {
  const QString custom = kernelsDirOverride();
  if (!custom.isEmpty()) return QFileInfo(custom).isDir() ? custom : QString();
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

bool parseGpuDevices(const QString &text, QList<int> *devices, QString *error) {
  QList<int> out;
  const QStringList parts = text.split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts);
  for (const QString &part : parts) {
    bool ok = false;
    const int n = part.toInt(&ok);
    if (!ok || n < 0 || n > 1024) {
      if (error) *error = QCoreApplication::translate("settings", "'%1' is not a GPU number").arg(part);
      return false;
    }
    if (!out.contains(n)) out.append(n);
  }
  std::sort(out.begin(), out.end());
  if (devices) *devices = out;
  return true;
}

QString formatGpuDevices(const QList<int> &devices) {
  QStringList parts;
  for (int d : devices) parts << QString::number(d);
  return parts.join(QStringLiteral(", "));
}

QList<int> gpuDevices() {
  Store store;
  QList<int> devices;
  if (!parseGpuDevices(store.value(kGpuDevices).toString(), &devices)) return {};
  return devices;
}

void setGpuDevices(const QList<int> &devices) {
  QList<int> clean;
  parseGpuDevices(formatGpuDevices(devices), &clean);
  setOrRemove(kGpuDevices, formatGpuDevices(clean));
}

QString workersSpec() {
  Store store;
  const QString spec = store.value(kWorkers).toString().trimmed();
  return workersSpecProblem(spec).isEmpty() ? spec : QString();
}

void setWorkersSpec(const QString &spec) {
  const QString clean = spec.trimmed();
  if (workersSpecProblem(clean).isEmpty()) setOrRemove(kWorkers, clean == QStringLiteral("local") ? QString() : clean);
}

QString workersSpecProblem(const QString &spec) {
  std::string problem;
  if (kwb::worker::parseWorkerLaunchers(spec.trimmed().toStdString(), problem)) return {};
  return QString::fromStdString(problem);
}

bool runTiming() {
  Store store;
  return store.value(kRunTiming, false).toBool();
}

void setRunTiming(bool time) {
  Store store;
  store.setValue(kRunTiming, time);
}

bool runSanitizer() {
  Store store;
  return store.value(kRunSanitizer, false).toBool();
}

void setRunSanitizer(bool sanitize) {
  Store store;
  store.setValue(kRunSanitizer, sanitize);
}

std::optional<double> llmBudgetDollars() {
  Store store;
  bool ok = false;
  const double dollars = store.value(kLlmBudget).toDouble(&ok);
  if (!ok || !(dollars > 0)) return std::nullopt;
  return dollars;
}

void setLlmBudgetDollars(std::optional<double> dollars) {
  Store store;
  if (dollars && *dollars > 0)
    store.setValue(kLlmBudget, *dollars);
  else
    store.remove(kLlmBudget);
}

std::optional<kwb::agent::SessionSettings> agentSessionSettings() {
  Store store;
  const QByteArray text = store.value(kAgentSession).toByteArray();
  if (text.isEmpty()) return std::nullopt;
  try {
    auto s = nlohmann::json::parse(text.toStdString()).get<kwb::agent::SessionSettings>();
    s.contextWindow = 0;  // the dialog does not set W: the provider's (older versions stored 32768)
    return s;
  } catch (const std::exception &) {
    return std::nullopt;  // written by another version: the defaults
  }
}

void setAgentSessionSettings(const kwb::agent::SessionSettings &settings) {
  kwb::agent::SessionSettings s = settings;
  s.taskFolder.clear();
  s.starterHash.clear();
  s.starterName.clear();
  s.provider.clear();
  s.model.clear();
  s.configs.clear();
  s.useDevice = true;
  Store store;
  store.setValue(kAgentSession, QByteArray::fromStdString(nlohmann::json(s).dump()));
}

QString agentProvider() {
  Store store;
  return store.value(kAgentProvider).toString();
}

QString agentModel() {
  Store store;
  return store.value(kAgentModel).toString();
}

namespace {

QString textSetting(const QString &key) {
  Store store;
  return store.value(key).toString();
}

void setTextSetting(const QString &key, const QVariant &value) {
  Store store;
  store.setValue(key, value);
}

}  // namespace

QString reviewerName() { return textSetting(QStringLiteral("skills/reviewer")); }

void setReviewerName(const QString &name) { setTextSetting(QStringLiteral("skills/reviewer"), name); }

QStringList importPythons() {
  Store store;
  return store.value(QStringLiteral("import/pythons")).toStringList();
}

void addImportPython(const QString &python) {
  if (python.trimmed().isEmpty()) return;
  QStringList list = importPythons();
  list.removeAll(python);
  list.prepend(python);
  while (list.size() > 6) list.removeLast();
  setTextSetting(QStringLiteral("import/pythons"), list);
}

QString importFolder() { return textSetting(QStringLiteral("import/folder")); }

void setImportFolder(const QString &folder) { setTextSetting(QStringLiteral("import/folder"), folder); }

void setAgentProvider(const QString &provider, const QString &model) {
  Store store;
  store.setValue(kAgentProvider, provider);
  store.setValue(kAgentModel, model);
}

QStringList compileOnlyArchChoices() {
  return {QStringLiteral("sm_70"),  QStringLiteral("sm_75"),  QStringLiteral("sm_80"),
          QStringLiteral("sm_86"),  QStringLiteral("sm_87"),  QStringLiteral("sm_89"),
          QStringLiteral("sm_90"),  QStringLiteral("sm_100"), QStringLiteral("sm_103"),
          QStringLiteral("sm_110"), QStringLiteral("sm_120"), QStringLiteral("sm_121")};
}

QStringList recentTasks() {
  Store store;
  QStringList list = normalizedUnique(store.value(kRecent).toStringList());
  while (list.size() > kMaxRecentTasks) list.removeLast();
  return list;
}

void setRecentTasks(const QStringList &folders) {
  QStringList list = normalizedUnique(folders);
  while (list.size() > kMaxRecentTasks) list.removeLast();
  Store store;
  if (list.isEmpty())
    store.remove(kRecent);
  else
    store.setValue(kRecent, list);
}

QStringList withRecentTask(QStringList list, const QString &folder) {
  const QString path = normalizedPath(folder);
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecentTasks) list.removeLast();
  return list;
}

void addRecentTask(const QString &folder) {
  setRecentTasks(withRecentTask(recentTasks(), folder));
}

QStringList openedFolders() {
  Store store;
  return normalizedUnique(store.value(kOpenedFolders).toStringList());
}

void setOpenedFolders(const QStringList &folders) {
  const QStringList list = normalizedUnique(folders);
  Store store;
  if (list.isEmpty())
    store.remove(kOpenedFolders);
  else
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
