#pragma once
// A candidate file that is a step of its task's lineage, or the task's reference source, runs as
// it does on the command line (core/lineage/step_resolution.h): for the services' background jobs.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <QString>

#include "core/lineage/step_resolution.h"
#include "ui/filesystem_path.h"

namespace kwb::ui {

// The step `sourceName` (a path) is, or nullopt; a lineage.toml that does not read leaves the
// candidate to run as the task's.
inline std::optional<kwb::ResolvedStep> resolvedStep(const kwb::Task &task, const QString &sourceName) {
  if (sourceName.isEmpty()) return std::nullopt;
  try {
    return kwb::resolveLineageStep(task, toFsPath(sourceName));
  } catch (const std::exception &) {
    return std::nullopt;
  }
}

// The task as the candidate file `sourceName` runs, as on the command line: a lineage step with
// its launch (its tunables into `stepTunables`), the task's reference source with the
// reference's launch (core/lineage/step_resolution.h runAsReference), anything else as given.
inline void runAsCandidateFile(kwb::Task &task, const QString &sourceName,
                               std::map<std::string, std::int64_t> &stepTunables) {
  if (auto step = resolvedStep(task, sourceName)) {
    task = std::move(step->task);
    stepTunables = step->step.tunables;
  }
  if (!sourceName.isEmpty()) kwb::runAsReference(task, toFsPath(sourceName));
}

}  // namespace kwb::ui
