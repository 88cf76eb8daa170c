#pragma once
// Exporting an optimized kernel (issue 20 item 1): a candidate, with its task and, when it was
// run, its measurements, written out for use elsewhere: a CUDA source package (the kernel with its
// tunables baked in, a typed C++ launcher, a CMake library and a test against the task's
// reference), a PyTorch extension, or a report. Every export carries its provenance. No Qt; no
// GPU needed to write one.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/eval/evaluation_result.h"
#include "core/task/task.h"

namespace kwb::exporting {

class ExportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where the exported kernel came from.
struct Provenance {
  std::string what;       // "run 42", "session s-1's best (turn 3)", "lineage softmax step 5", "file x.cu"
  std::string workspace;  // the workspace file, when it came from one
  std::string session;    // the agent session, when there was one
  std::int64_t run = 0;   // the workspace run (0: none)
  std::string sourceName; // the file it was made from ("softmax.cu")
  std::string candidateHash;  // contentHash of the code as written (set by the export)
  std::string exportedAt;     // UTC, ISO 8601 (set by the export)
  std::string workbench;      // the workbench's version (set by the export)
};

struct ExportInput {
  Task task;                 // as the candidate runs (a lineage step: with the step's launch)
  std::string code;          // the candidate's source
  std::map<std::string, std::int64_t> tunables;  // the values to bake in (the task's first values for the rest)
  std::optional<EvaluationResult> result;         // its evaluation, when it was run
  Provenance provenance;
  std::string arch;                  // the GPU architecture to build for ("sm_90"); empty: the result's, else
                                     // the building machine's GPU
  std::string model;                 // the session's provider and model, when an agent wrote it
  std::vector<std::string> notes;    // what the user should know about how it was resolved
};

enum class ExportFormat { Cuda, Torch, Report };
const char *toString(ExportFormat format);
std::optional<ExportFormat> exportFormatFromString(const std::string &text);

struct ExportedPackage {
  std::filesystem::path dir;
  std::vector<std::string> files;  // relative to dir, in the order written
  std::vector<std::string> notes;  // what the user should know ("sizes not derivable from shapes: ...")
};

// A C identifier made from a task's name ("gemm-bf16" -> "gemm_bf16"; one starting with a digit
// gets "k_" before it).
std::string identifierOf(const std::string &name);

// An expression of the manifest's language as C++ over variables of the same names: ceil_div, min
// and max as the package's own kwb_ceil_div, kwb_min, kwb_max; each tunable's name replaced by its
// value.
std::string cppExpression(const Expression &e, const std::map<std::string, std::int64_t> &tunables);

// The C++ type of a tensor's elements ("float", "__nv_bfloat16", "std::int64_t", "bool").
std::string cppType(DType dtype);

// Writes the CUDA source package into `dir` (made if missing; an existing non-empty folder is
// refused unless `overwrite`). Throws ExportError with what to fix.
ExportedPackage exportCudaPackage(const ExportInput &input, const std::filesystem::path &dir, bool overwrite = false);

// Writes the PyTorch extension into `dir`: setup.py (torch.utils.cpp_extension), a binding that takes
// the task's input tensors (dtype, rank, shape and device checked; sizes read from the shapes; the
// current stream) and returns its outputs, the launcher and kernel as in the CUDA package, and a
// test against the task's reference timed beside the task's [export] torch operation. Throws
// ExportError with what to fix.
ExportedPackage exportTorchPackage(const ExportInput &input, const std::filesystem::path &dir, bool overwrite = false);

// The provenance as JSON (written into every export as provenance.json).
std::string provenanceJson(const ExportInput &input);

// The text of the package's test helpers (core/export/templates/kwb_check.cuh).
const std::string &checkHeaderText();

}  // namespace kwb::exporting
