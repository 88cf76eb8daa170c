#pragma once
// `kwb import kernelbench` / `kwb import torch`: a module in KernelBench's format (class
// Model(nn.Module) with forward, get_inputs(), get_init_inputs()) turned into a workbench task
// folder whose reference is the module itself, run by PyTorch ([reference] python = "reference.py"):
//
//   DIR/NAME/task.toml    sizes, configurations (kernelbench: the problem's; small: every tensor
//                         together <= 64 MiB, for a quick check; large: the batch scaled until
//                         every tensor together holds >= 1 GiB), the tensors (forward's inputs,
//                         then the module's parameters and buffers as inputs with `state` = their
//                         state-dict key, then the outputs), [params] (Model's numeric
//                         arguments and forward's scalars), [reference], [launch], [cost], [editor]
//   DIR/NAME/reference.py a byte copy of the problem file
//   DIR/NAME/NAME.cu      the starter: a host launcher calling one naive kernel per step of forward
//                         where resources/python/kwb_starter.py can write one, else a kernel with
//                         the right parameters and an empty body
//
// The problem is read by resources/python/kwb_kernelbench.py --configs (its header and
// kwb_problem_state.py document the JSON and the rules): statically, then under PyTorch (the
// module built and forward run on the meta device at each configuration's sizes, the state's
// values read on the CPU at the small sizes to choose each one's generator). A dimension follows
// the size whose values it has at every configuration (and at a probe with the batch doubled);
// one that follows none is a size of its own (a convolution's output height). What a task cannot
// express is refused with a message "FILE:LINE: PART: why; what to do": a random output (dropout
// in training mode), a dtype the workbench lacks, an input generator the reader cannot follow.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval/torch_reference.h"

namespace kwb {

// The files of an imported task, as text.
struct ImportedTask {
  std::string name;         // the task's name (and folder name)
  std::string manifest;     // task.toml
  std::string starter;      // the CUDA starter source
  std::string starterFile;  // its file name, NAME.cu
  std::vector<std::string> warnings;  // what the user should look at (and the reader's notes)
  // The spec resources/python/kwb_starter.py writes a host-launcher starter from (its header);
  // importKernelBench runs it and, when it answers ok, uses that starter in place of `starter`,
  // whose comment header (`starterNotes`) it keeps.
  nlohmann::json starterSpec;
  std::string starterNotes;
};

// The task files for the reader's JSON (kwb_kernelbench.py's success object, its "outputs"
// filled by PyTorch). Pure: no I/O. Nullopt with `error` ("FILE:LINE: PART: why; what to do")
// when the problem cannot be expressed as a task (or `reader` is the reader's error object).
// `doubled`: the outputs with the batch size doubled (the reader's "doubled", --double-batch), when
// read: each output dimension is then the size that gives both shapes (none: refused).
std::optional<ImportedTask> taskFromKernelBench(const nlohmann::json &reader, std::string &error,
                                                const nlohmann::json *doubled = nullptr);

struct ImportOutcome {
  bool ok = false;
  std::string problem;  // the problem file, as given
  std::string message;  // why it failed (empty when ok)
  std::filesystem::path folder;  // toDir / name
  std::string name;
  std::vector<std::string> warnings;
  std::vector<std::string> configs;  // the configurations' names
  std::size_t inputs = 0, outputs = 0;  // tensor counts of the written task
};

// The interpreter an import runs when none is named: empty when $KWB_PYTHON is set (findPython
// takes it), else packaging/install-torch.sh's venv ($KWB_TORCH_VENV, else
// ~/.local/share/kernel-workbench/torch-venv) where its python exists, else empty (python3 on PATH).
std::string importPython();

// Reads `problem` with the bundled reader (in the interpreter `python` names: findPython), makes
// the task (taskFromKernelBench) and writes it to toDir / NAME, which must not hold files unless
// `force`; then loads the written task (loadTask) as a check. Throws nothing.
// `onProgress`: called (on this thread) with each step the reader and the starter writer report
// ("shapes with batch_size = 16"), as they happen.
ImportOutcome importKernelBench(const std::filesystem::path &problem, const std::filesystem::path &toDir, bool force,
                                const TorchSettings &python,
                                const std::function<void(const std::string &)> &onProgress = {});

}  // namespace kwb
