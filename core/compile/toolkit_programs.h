#pragma once
// Finding the CUDA toolkit's programs (nvcc, cuobjdump, nvdisasm) and headers, the same places
// the toolkit's libraries are looked for: $CUDA_HOME, $CUDA_PATH, the toolkit found at build
// time, /usr/local/cuda; programs also on $PATH.
#include <filesystem>
#include <string>
#include <vector>

namespace kwb {

// Where packaging/install-deps.sh installs toolkit utilities a trimmed toolkit lacks (nvdisasm).
inline constexpr const char *kKwbCudaToolsDir = "/usr/local/lib/kernel-workbench/cuda-tools/bin";

// Toolkit folders that exist, in the order they are searched (duplicates removed).
std::vector<std::filesystem::path> cudaHomeCandidates();

// <home>/bin/<name> for the first home that has it as an executable file, then kKwbCudaToolsDir,
// then $PATH.
// Empty when none has it.
std::filesystem::path findToolkitProgram(const std::string &name);

// "looked in /usr/local/cuda/bin and $PATH": for messages when findToolkitProgram fails.
std::string toolkitProgramSearchPlaces();

}  // namespace kwb
