#pragma once
// The worker's `profile` command (core/worker/PROTOCOL.md "profile"): GPU metrics of one
// candidate launch on one size configuration, collected by CUPTI's Range Profiler in a pass of
// its own (never during timing), one replay of the launch per pass with the inputs restored
// and the outputs re-poisoned before each, then evaluated by the Profiler Host API. Profiling
// problems (no CUPTI, no permission to read counters, another profiler attached, a device
// CUPTI cannot profile) end in a reply that says so ("verdict": "not-profiled" with a reason);
// they never end the worker, and `evaluate` and `time` keep working after them.
#include <optional>

namespace kwb::worker {

class WorkerServer;

// Registers `profile`; it uses CUDA device `device` (0 when none is given), in the device's
// primary context like `evaluate` and `time`.
void addProfileCommand(WorkerServer &server, std::optional<int> device);

}  // namespace kwb::worker
