#pragma once
#include <nlohmann/json.hpp>

#include "core/task/task.h"

namespace kwb {
// The task as JSON for `kwb task show --json` and scripts. Expressions appear as their text;
// each size configuration also carries its evaluated shapes, FLOPs and bytes.
nlohmann::json taskToJson(const Task &task);
}
