#pragma once
#include <string>

#include "core/gpu/device_info.h"

namespace kwb {
// The human-readable device listing shared by `kwb devices` and `kwb-worker --devices`.
std::string formatInventory(const GpuInventory &inventory);
}
