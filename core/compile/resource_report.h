#pragma once
// Per-kernel figures from ptxas's resource report (-v), as NVRTC and nvcc print it:
//   ptxas info    : Compiling entry function 'softmax' for 'sm_90'
//   ptxas info    : Function properties for softmax
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 18 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
// (nvcc prints the stack line without the "ptxas ." prefix; CUDA 13 no longer prints cmem).
#include <string>
#include <string_view>
#include <vector>

#include "core/compile/compile_types.h"
#include "core/compile/elf_symbols.h"

namespace kwb {

// Kernels in the order ptxas compiled them. With `arch` ("sm_90") set, entries compiled for
// another architecture (extra -gencode targets) are left out.
std::vector<KernelResources> parseResourceReport(std::string_view log, std::string_view arch = {});

// Completes `kernels` from a CUBIN: every kernel it defines gets an entry (those ptxas did not
// report keep zeros), and constant bank 0 (parameters and driver constants) is taken from the
// .nv.constant0.<kernel> section where the report gave none.
void addCubinFigures(std::vector<KernelResources> &kernels, const ElfContents &cubin);

}  // namespace kwb
