#pragma once
// The worker's `time` command (PROTOCOL.md "time"): GPU time of a candidate kernel and of the
// task's reference on one size configuration, measured in the same worker session and
// interleaved (candidate, reference, candidate, ...), with the L2 cache flushed before every
// sample, a warm-up, an adaptive sample count and a roofline sanity check.
//
// This is the first slice: the timer is CUDA events around one launch ("timer":
// "cuda-events"). CUPTI activity records (all kernels the candidate launched, on any stream),
// per-sample NVML SM clocks and throttling flags, and the correctness re-check of outputs
// produced during timing come later.
#include <optional>

namespace kwb::worker {

class WorkerServer;

// Registers `time`; it uses CUDA device `device` (0 when none is given). The context (the
// device's primary one, shared with `evaluate`) is made on the first request.
void addTimeCommand(WorkerServer &server, std::optional<int> device);

}  // namespace kwb::worker
