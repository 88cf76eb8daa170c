#pragma once
// A candidate file that is a step of its task's lineage runs as that step does, in the GUI as on
// the command line (core/lineage/step_resolution.h): for the services' background jobs.
#include <optional>

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

}  // namespace kwb::ui
