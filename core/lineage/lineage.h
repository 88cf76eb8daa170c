#pragma once
// A task's lineage: an ordered series of versions from naive to expert, each adding exactly one
// optimization (kernels/<task>/lineage/). lineage/lineage.toml lists the steps:
//
//   [[step]]
//   file = "03-smem-tiling.cu"     # in the lineage folder
//   title = "shared-memory tiling" # the optimization this step adds, in a few words
//   [step.launch]                  # optional, as the task's [launch]; default: the task's
//   kernel = "sgemm_smem"
//   grid = ["ceil_div(N, 32)", "ceil_div(M, 32)"]
//   block = [32, 32]
//   args = ["A", "B", "C", "M", "N", "K"]
//   [step.tunables]                # optional: values of tunables the task declares
//   TILE = 32
//
// Each file opens with a comment saying what it adds and what it relies on:
//   // Step 3 of 7 — shared-memory tiling
//   // Adds: ...
//   // Relies on: ...
// ("Adds:" may run over several comment lines; "Relies on:" continues over indented ones.)
// KLineage learns from these; `kwb lineage TASK` evaluates every step.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/task/task.h"

namespace kwb {

inline constexpr const char *kLineageFolderName = "lineage";
inline constexpr const char *kLineageFileName = "lineage.toml";

struct LineageStep {
  int index = 0;                      // 1-based, in order
  std::filesystem::path file;         // absolute: the lineage folder / file
  std::string title;
  std::optional<Launch> launch;       // absent: the task's [launch]
  std::map<std::string, std::int64_t> tunables;
  std::string adds;                   // the header comment's "Adds:" text
  std::string reliesOn;               // the header comment's "Relies on:" text
  // What is known to break around this step (a de-optimization's rejected answers from the
  // kernel this step produces): risk entries of the step's card.
  std::vector<std::string> risks;
  bool hostLauncher = false;          // the file defines kwb_launch (its launch table is not used)
  int line = 0;                       // the [[step]] line in lineage.toml
};

struct Lineage {
  std::filesystem::path folder;       // <task>/lineage
  std::filesystem::path manifestPath; // <task>/lineage/lineage.toml
  std::vector<LineageStep> steps;
};

// Whether the task folder has lineage/lineage.toml.
bool hasLineage(const Task &task);

// Reads <task folder>/lineage/lineage.toml against the task (sizes, tensors and tunables), and
// each step's header comment. Throws ManifestError (file, line, field) on anything malformed:
// a missing file, a launch that breaks the task's limits, a tunable the task does not declare or
// a value it does not list, a source without its "Adds:" or "Relies on:" line.
Lineage loadLineage(const Task &task);

// The same for a lineage.toml in another folder (a folder of versions, kwb lineage build
// --from-versions): its steps' files are in that folder.
Lineage loadLineageFrom(const Task &task, const std::filesystem::path &folder);

// Reads a step file's "Adds:" and "Relies on:" header into `step`; when `required`, throws
// ManifestError for a missing one.
void readStepHeader(const std::string &source, LineageStep &step, bool required);

// Parses lineage.toml's text against the task; `folder` is the lineage folder (step files are
// checked to exist there). Headers are not read: loadLineage() does that.
Lineage parseLineageManifest(const std::string &text, const std::string &displayPath,
                             const std::filesystem::path &folder, const Task &task);

// The task as a step is evaluated: its launch in place of the task's [launch].
Task taskForStep(const Task &task, const LineageStep &step);

}  // namespace kwb
