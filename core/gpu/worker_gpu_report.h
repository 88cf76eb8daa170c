#pragma once
// What `kwb-worker --devices --json` and `kwb-worker --stats --json` print, read back into the
// core's structs. The GUI never starts CUDA in its own process: it runs the worker for these,
// and this is the one reader of their answers.
#include <string>
#include <string_view>
#include <variant>

#include "core/gpu/device_info.h"
#include "core/gpu/device_stats.h"

namespace kwb {

// The inventory, or why the text is not one ("not JSON (...)", "no \"devices\" and
// \"libraries\" lists", a field of the wrong type).
std::variant<GpuInventory, std::string> parseGpuInventory(std::string_view text);
std::variant<GpuStatsReport, std::string> parseGpuStats(std::string_view text);

}  // namespace kwb
