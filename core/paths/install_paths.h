#pragma once
#include <filesystem>
#include <optional>

namespace kwb {
// Where the bundled kernels/ live: $KWB_KERNELS_DIR, then next to an installed binary
// (<prefix>/share/kernel-workbench/kernels) or a bundle (<dir>/kernels beside <dir>/bin), then,
// for programs run from the build tree, the source tree they were built from.
std::optional<std::filesystem::path> bundledKernelsDir();
// Where the bundled prompt templates live (resources/prompts/ in the source tree): $KWB_PROMPTS_DIR,
// then <prefix>/share/kernel-workbench/prompts, then <dir>/prompts beside <dir>/bin, then, for
// programs run from the build tree, the source tree's.
std::optional<std::filesystem::path> bundledPromptsDir();
// Where the bundled Python helpers live (resources/python/ in the source tree: the PyTorch
// reference process, the KernelBench reader): $KWB_PYTHON_DIR, then the places above.
std::optional<std::filesystem::path> bundledPythonDir();
// $XDG_CONFIG_HOME/kernel-workbench (or ~/.config/kernel-workbench): the user's copies of what
// the workbench ships (prompts/). Not created.
std::filesystem::path userConfigDir();
// The running executable's folder (from /proc/self/exe).
std::filesystem::path executableDir();
// $XDG_DATA_HOME/kernel-workbench (or ~/.local/share/kernel-workbench); created if missing.
std::filesystem::path userDataDir();
// $XDG_CACHE_HOME/kernel-workbench when absolute, else ~/.cache/kernel-workbench (the temporary
// folder without a HOME). Not created: each cache makes its own folder or file there.
std::filesystem::path userCacheDir();
// The kwb-worker program: $KWB_WORKER, then beside the running executable (installed, bundle),
// then, for programs run from the build tree, <build>/app/worker/kwb-worker (found from a GUI at
// <build>/app/gui/ and from tests alike), then $PATH. Each candidate must be an executable file;
// nullopt when none is.
std::optional<std::filesystem::path> workerExecutable();
}
