#pragma once
// Finding tasks on disk: the bundled suite and any folder a user points at.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/task/task.h"

namespace kwb {

struct TaskEntry {
  std::filesystem::path folder;
  std::optional<Task> task;  // set when the manifest parsed
  std::string error;         // the parse error otherwise
};

// Every immediate subfolder of dir holding a task.toml (and dir itself if it holds one),
// sorted by folder name. Manifests that fail to parse are listed with their error.
std::vector<TaskEntry> listTasks(const std::filesystem::path &dir);

}  // namespace kwb
