#pragma once
// `kwb import kernelbench`: a KernelBench-format problem file (class Model(nn.Module) with forward,
// get_inputs(), get_init_inputs()) turned into a workbench task folder whose reference is the
// problem itself, run as a PyTorch module ([reference] python = "reference.py"):
//
//   DIR/NAME/task.toml    sizes, two configurations (kernelbench: the problem's; large: the batch
//                         scaled until every tensor together holds >= 1 GiB), the tensors,
//                         [params] from get_init_inputs(), [launch], [cost], [editor]
//   DIR/NAME/reference.py a byte copy of the problem file
//   DIR/NAME/NAME.cu      a starter kernel with the right parameters and an empty body
//
// The problem is read by resources/python/kwb_kernelbench.py (its header documents the JSON it
// prints); output shapes and dtypes need PyTorch (forward on the meta device), read a second
// time in the same run with the batch size doubled (--double-batch), so that each output
// dimension is matched to the size it follows, not to one that happens to hold the same value. What a task cannot
// express yet is refused with a message "FILE:LINE: PART: why; what to do": scalar arguments of
// forward, tuple/str/None constructor arguments, learned weights (nn.Linear, nn.LayerNorm, ...),
// outputs of a dtype the workbench lacks.
#include <filesystem>
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
};

// The task files for the reader's JSON (kwb_kernelbench.py's success object, its "outputs"
// filled by PyTorch). Pure: no I/O. Nullopt with `error` ("FILE:LINE: PART: why; what to do")
// when the problem cannot be expressed as a task (or `reader` is the reader's error object).
// `doubled`: the outputs with the batch size doubled (the reader's "doubled", --double-batch), when
// read: each output dimension is then the size that gives both shapes (none: refused).
std::optional<ImportedTask> taskFromKernelBench(const nlohmann::json &reader, std::string &error,
                                                const nlohmann::json *doubled = nullptr);

// Why a problem file's Model holds learned weights (nn.Linear, nn.Conv*, nn.LayerNorm,
// nn.BatchNorm*, nn.GroupNorm, nn.InstanceNorm*, nn.Embedding, nn.Parameter called in its code,
// outside comments), which a task cannot express yet: "Model holds learned weights (nn.LayerNorm
// at line 10): ...; ...". Nullopt when none is found. Pure.
std::optional<std::string> learnedWeightsProblem(const std::string &problemText);

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

// Reads `problem` with the bundled reader (in the interpreter `python` names: findPython), makes
// the task (taskFromKernelBench) and writes it to toDir / NAME, which must not hold files unless
// `force`; then loads the written task (loadTask) as a check. Throws nothing.
ImportOutcome importKernelBench(const std::filesystem::path &problem, const std::filesystem::path &toDir, bool force,
                                const TorchSettings &python);

}  // namespace kwb
