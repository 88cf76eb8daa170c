#include "core/compile/disassembly.h"

#include "core/compile/compile_service.h"
#include "core/compile/elf_symbols.h"
#include "core/compile/nvcc_compiler.h"
#include "core/compile/nvrtc_compiler.h"
#include "core/compile/temporary_directory.h"
#include "core/compile/toolkit_programs.h"
#include "core/process/child_process.h"

namespace kwb {

DisassemblyTools findDisassemblyTools() {
  return DisassemblyTools{.cuobjdump = findToolkitProgram("cuobjdump"), .nvdisasm = findToolkitProgram("nvdisasm")};
}

TextOutput sassText(std::string_view image, const DisassemblyTools &tools, std::chrono::milliseconds timeLimit) {
  TextOutput out;
  if (!tools.any()) {
    out.error = "SASS needs the CUDA toolkit's cuobjdump or nvdisasm, and neither was found (" +
                toolkitProgramSearchPlaces() + "); install the toolkit's binary utilities (cuda-cuobjdump, cuda-nvdisasm)";
    return out;
  }
  const auto elf = readElf(image);
  if (!elf) {
    out.error = "the image is not an ELF file (a CUBIN or a host-launcher library)";
    return out;
  }
  constexpr std::uint16_t kMachineCuda = 190;  // EM_CUDA
  const bool cubin = elf->machine == kMachineCuda;
  if (!cubin && tools.cuobjdump.empty()) {
    out.error = "SASS of a host-launcher library needs cuobjdump, which was not found (" +
                toolkitProgramSearchPlaces() + "); nvdisasm reads CUBINs only";
    return out;
  }
  TemporaryDirectory dir("kwb-sass-");
  if (!dir.valid()) {
    out.error = dir.error();
    return out;
  }
  const auto file = dir.path() / (cubin ? "image.cubin" : "image.so");
  if (!writeWholeFile(file, image)) {
    out.error = "cannot write " + file.string();
    return out;
  }
  // nvdisasm reads CUBINs and prints line information ("//## File ..., line N") where the CUBIN
  // has it (-lineinfo): prefer it there. cuobjdump also reads host libraries, without lines.
  std::vector<std::string> argv = cubin && !tools.nvdisasm.empty()
                                      ? std::vector<std::string>{tools.nvdisasm.string(), "--print-line-info",
                                                                 "--print-code", file.string()}
                                      : std::vector<std::string>{tools.cuobjdump.string(), "--dump-sass", file.string()};
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  const auto run = runChildProcess(ChildProcessRequest{.argv = std::move(argv),
                                                       .workingDirectory = dir.path(),
                                                       .environment = {{"LC_ALL", "C"}},
                                                       .timeout = timeLimit,
                                                       .outputLimit = 64u << 20});
  out.log = run.output;
  if (!run.started) {
    out.error = run.startError;
  } else if (run.timedOut) {
    out.error = program + " timed out after " + formatLimit(timeLimit);
  } else if (!run.succeeded()) {
    out.error = program + " failed (exit status " + std::to_string(run.exitCode) + "): " + run.output;
  } else {
    out.ok = true;
    out.text = run.output;
  }
  return out;
}

TextOutput ptxText(const CompileRequest &request, std::chrono::milliseconds timeLimit) {
  if (request.form == SourceForm::HostLauncher) {
    static const NvccCompiler nvcc;
    return nvcc.ptx(request, timeLimit);
  }
  return CompileService::shared().ptx(request, timeLimit);
}

}  // namespace kwb
