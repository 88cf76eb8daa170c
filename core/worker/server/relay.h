#pragma once
// kwb-worker --relay: the far side of a remote worker (core/worker/worker_launcher.h). Started by
// ssh or srun on the GPU's host, it starts the sandboxed worker there as a local client would
// (the sandbox made and probed from that host), sends a hello of its own (the worker's, with a
// "relay" object: the host, the sandbox as verified there), then passes requests from its stdin
// to the worker and the worker's events and replies back, with the client's ids. Its stdin
// closing (the connection dropped, the client killed it) stops the worker; the worker ending
// (a crash, a lost context) ends the relay after the replies saying so.
#include <optional>

namespace kwb::worker {

int runRelay(std::optional<int> device);

}  // namespace kwb::worker
