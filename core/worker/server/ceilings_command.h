#pragma once
// The worker's `ceilings` command (PROTOCOL.md "ceilings"): the device's measured roofline —
// device-to-device copy bandwidth, an FMA-bound kernel's f32 rate and, when the client sends it,
// a tensor-core (mma.sync bf16) kernel's rate. The kernels come compiled from the client.
#include <optional>

namespace kwb::worker {

class WorkerServer;

void addCeilingsCommand(WorkerServer &server, std::optional<int> device);

}  // namespace kwb::worker
