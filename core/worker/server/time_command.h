#pragma once
// The worker's `time` command (PROTOCOL.md "time"): GPU time of a candidate kernel and of the
// task's reference on one size configuration, measured in the same worker session and
// interleaved (candidate, reference, candidate, ...), with the L2 cache flushed before every
// sample, a warm-up, an adaptive sample count, a re-check of timed outputs, and a roofline
// floor: a median below the least time this device's measured ceilings allow (with slack,
// core/eval/timing_statistics.h) is a failed verdict, "below-roofline".
#include <optional>

namespace kwb::worker {

class WorkerServer;

// Registers `time`; it uses CUDA device `device` (0 when none is given). The context (the
// device's primary one, shared with `evaluate`) is made on the first request.
void addTimeCommand(WorkerServer &server, std::optional<int> device);

}  // namespace kwb::worker
