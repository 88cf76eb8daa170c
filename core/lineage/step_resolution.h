#pragma once
// Which lineage step a candidate file is, so the GUI and the command line run a lineage file as
// its step does (its launch and tunables from lineage.toml) and show its parent as the baseline.
#include <filesystem>
#include <optional>
#include <string>

#include "core/lineage/lineage.h"
#include "core/task/task.h"

namespace kwb {

// A candidate resolved against its task's lineage.
struct ResolvedStep {
  LineageStep step;
  Task task;  // the task as the step runs: taskForStep(task, step)
};

// The step of the task's lineage whose file is `candidate` (compared after resolving links and
// "..": the same file under another spelling matches), or nullopt when the task has no lineage
// or the file is none of its steps. Throws what loadLineage() throws for a broken lineage.toml.
std::optional<ResolvedStep> resolveLineageStep(const Task &task, const std::filesystem::path &candidate);

// The task's reference source itself (what a task without an [editor] starter evaluates by
// default) runs with the reference's launch: [launch] names the candidate's kernel, which the
// reference source need not define. True, with `task` changed, when `candidate` is that file
// (compared as resolveLineageStep compares).
bool runAsReference(Task &task, const std::filesystem::path &candidate);

// The step number a lineage file's name carries ("03-smem-tiling.cu" in a folder named
// "lineage": 3), read from the path alone; nullopt for any other file.
std::optional<int> lineageStepNumber(const std::filesystem::path &file);

// A line for the user: "03-smem.cu is step 3 of the lineage (shared-memory tiling): run with its
// launch from lineage.toml; its tunables TILE=32 unless set otherwise".
std::string describeResolvedStep(const ResolvedStep &resolved, const std::filesystem::path &candidate);

}  // namespace kwb
