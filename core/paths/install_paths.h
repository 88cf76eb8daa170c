#pragma once
#include <filesystem>
#include <optional>

namespace kwb {
// Where the bundled kernels/ live: $KWB_KERNELS_DIR, then next to an installed binary
// (<prefix>/share/kernel-workbench/kernels) or a bundle (<dir>/kernels beside <dir>/bin), then,
// for programs run from the build tree, the source tree they were built from.
std::optional<std::filesystem::path> bundledKernelsDir();
// The running executable's folder (from /proc/self/exe).
std::filesystem::path executableDir();
// $XDG_DATA_HOME/kernel-workbench (or ~/.local/share/kernel-workbench); created if missing.
std::filesystem::path userDataDir();
}
