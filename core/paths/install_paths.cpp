#include "core/paths/install_paths.h"

#include <unistd.h>

#include <cstdlib>
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

}  // namespace kwb
