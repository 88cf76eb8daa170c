#pragma once
// What can be exported (issue 20): a candidate file, a run of the workspace's history, an agent
// session's best, a Case of the experience memory; each made into an ExportInput with its code,
// its tunables, its evaluation when there is one, and its provenance. No Qt.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/export/kernel_export.h"
#include "core/memory/experience_store.h"
#include "core/store/workspace.h"

namespace kwb::exporting {

// A candidate's code as a file: with the workspace's newest run of the same code for the task,
// when there is one (its result and run in the provenance).
ExportInput exportInputFromFile(const Task &task, const std::filesystem::path &file, const std::string &code,
                                Workspace *workspace, const std::map<std::string, std::int64_t> &tunables = {});

// Run `runId` of the workspace (its code, result and tunables as run). Throws ExportError when the
// run is missing or belongs to another task.
ExportInput exportInputFromRun(const Task &task, Workspace &workspace, std::int64_t runId);

// The best candidate of an agent session (the fastest correct attempt; its run). Throws
// ExportError when the session is unknown, of another task, or has no correct attempt yet.
ExportInput exportInputFromSessionBest(const Task &task, Workspace &workspace, const std::string &sessionId);

// Case `caseId` of the experience memory (its code; a tuning point's parameters as tunables; a run
// of `workspace` when the Case was made from one, with its result). Throws ExportError when the
// Case is missing, of another task, or has no code.
ExportInput exportInputFromCase(const Task &task, memory::ExperienceStore &store, std::int64_t caseId,
                                Workspace *workspace);

// What `kwb export` accepts: "run:N" (or N), "session:ID", "case:N", else a file's path.
struct SourceSpec {
  enum class Kind { File, Run, Session, Case };
  Kind kind = Kind::File;
  std::string text;     // the file's path, or the session's id
  std::int64_t id = 0;  // the run's or the Case's
};
// Throws ExportError for "run:" or "case:" without a number.
SourceSpec parseSourceSpec(const std::string &text);

}  // namespace kwb::exporting
