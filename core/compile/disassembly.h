#pragma once
// PTX and SASS text for the Source/PTX/SASS view. There is no library call for SASS: it comes
// from the toolkit's cuobjdump (a CUBIN or a host library with embedded device code) or
// nvdisasm (a CUBIN), found where the toolkit's other programs are; PTX comes from a compile
// to the virtual architecture (NVRTC for device-only sources, nvcc -ptx for host launchers).
#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/compile/compile_outcome.h"

namespace kwb {

struct DisassemblyTools {
  std::filesystem::path cuobjdump;  // empty when not found
  std::filesystem::path nvdisasm;   // empty when not found
  bool any() const { return !cuobjdump.empty() || !nvdisasm.empty(); }
};

DisassemblyTools findDisassemblyTools();

// SASS for a compiled image (CompileResult::image): a CUBIN, or a host-launcher library
// (cuobjdump only). A clear error when neither tool is installed.
TextOutput sassText(std::string_view image, const DisassemblyTools &tools = findDisassemblyTools(),
                    std::chrono::milliseconds timeLimit = std::chrono::seconds(60));

// PTX for the request's source at its architecture's virtual architecture (sm_90 -> compute_90).
TextOutput ptxText(const CompileRequest &request, std::chrono::milliseconds timeLimit = std::chrono::seconds(120));

}  // namespace kwb
