#pragma once
#include <string>

#include "core/task/task.h"

namespace kwb {
// The text shown by `kwb task show`: what a user needs to know before editing a candidate.
std::string formatTask(const Task &task);
}
