#include "core/paths/install_paths.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>

namespace kwb {

namespace fs = std::filesystem;

fs::path executableDir() {
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

std::optional<fs::path> bundledKernelsDir() {
  std::error_code ec;
  auto isTaskDir = [&](const fs::path &p) { return !p.empty() && fs::is_directory(p, ec); };
  if (const char *env = std::getenv("KWB_KERNELS_DIR"); env && *env && isTaskDir(env))
    return fs::path(env);
  auto installed = executableDir().parent_path() / KWB_INSTALL_DATADIR / "kernel-workbench" / "kernels";
  if (isTaskDir(installed)) return installed;
  // A bundle made by gpu-bundle.sh keeps the kernels next to bin/.
  if (auto beside = executableDir().parent_path() / "kernels"; isTaskDir(beside)) return beside;
  // Programs run from the build tree use the source tree's kernels; installed ones never do.
  const std::string exe = executableDir().string(), buildTree = KWB_BUILD_TREE;
  if (exe.compare(0, buildTree.size(), buildTree) == 0)
    if (fs::path source = KWB_SOURCE_KERNELS_DIR; isTaskDir(source)) return source;
  return std::nullopt;
}

namespace {

// A folder the workbench ships: $ENV, then <prefix>/share/kernel-workbench/NAME, then NAME beside
// a bundle's bin/, then (programs run from the build tree) the source tree's.
std::optional<fs::path> shippedDir(const char *env, const char *name, const fs::path &sourceTree) {
  std::error_code ec;
  auto isDir = [&](const fs::path &p) { return !p.empty() && fs::is_directory(p, ec); };
  if (const char *value = std::getenv(env); value && *value && isDir(value)) return fs::path(value);
  if (auto installed = executableDir().parent_path() / KWB_INSTALL_DATADIR / "kernel-workbench" / name; isDir(installed))
    return installed;
  if (auto beside = executableDir().parent_path() / name; isDir(beside)) return beside;
  const std::string exe = executableDir().string(), buildTree = KWB_BUILD_TREE;
  if (exe.compare(0, buildTree.size(), buildTree) == 0 && isDir(sourceTree)) return sourceTree;
  return std::nullopt;
}

}  // namespace

std::optional<fs::path> bundledPromptsDir() { return shippedDir("KWB_PROMPTS_DIR", "prompts", KWB_SOURCE_PROMPTS_DIR); }

std::optional<fs::path> bundledPythonDir() {
  return shippedDir("KWB_PYTHON_DIR", "python", fs::path(KWB_SOURCE_PROMPTS_DIR).parent_path() / "python");
}

fs::path userConfigDir() {
  if (const char *xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg && fs::path(xdg).is_absolute())
    return fs::path(xdg) / "kernel-workbench";
  if (const char *home = std::getenv("HOME"); home && *home) return fs::path(home) / ".config" / "kernel-workbench";
  return fs::temp_directory_path() / "kernel-workbench-config";
}

std::optional<fs::path> workerExecutable() {
  constexpr const char *kName = "kwb-worker";
  auto runnable = [](const fs::path &p) {
    std::error_code ec;
    return !p.empty() && fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (const char *env = std::getenv("KWB_WORKER"); env && *env && runnable(env)) return fs::path(env);
  const fs::path exeDir = executableDir();
  if (auto beside = exeDir / kName; runnable(beside)) return beside;
  // A build tree: the GUI is <build>/app/gui/kernel-workbench, the worker <build>/app/worker/
  // (looked up beside the GUI, so a moved build tree still works), and any other program built
  // there (tests) uses the worker built with it.
  if (exeDir.filename() == "gui" && exeDir.parent_path().filename() == "app")
    if (auto sibling = exeDir.parent_path() / "worker" / kName; runnable(sibling)) return sibling;
  const std::string exe = exeDir.string(), buildTree = KWB_BUILD_TREE;
  if (exe.compare(0, buildTree.size(), buildTree) == 0)
    if (auto built = fs::path(buildTree) / "app" / "worker" / kName; runnable(built)) return built;
  if (const char *path = std::getenv("PATH"); path && *path) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string_view dir = rest.substr(0, colon);
      if (!dir.empty())
        if (auto candidate = fs::path(dir) / kName; runnable(candidate)) return candidate;
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  return std::nullopt;
}

fs::path userDataDir() {
  fs::path base;
  if (const char *xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
    base = xdg;
  } else if (const char *home = std::getenv("HOME"); home && *home) {
    base = fs::path(home) / ".local" / "share";
  } else {
    base = fs::temp_directory_path();
  }
  auto dir = base / "kernel-workbench";
  std::error_code ec;
  fs::create_directories(dir, ec);
  return dir;
}

fs::path userCacheDir() {
  fs::path base;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && fs::path(xdg).is_absolute()) {
    base = xdg;
  } else if (const char *home = std::getenv("HOME"); home && *home) {
    base = fs::path(home) / ".cache";
  } else {
    std::error_code ec;
    base = fs::temp_directory_path(ec);
  }
  return base / "kernel-workbench";
}

}  // namespace kwb
