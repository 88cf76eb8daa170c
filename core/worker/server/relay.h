#pragma once
// kwb-worker --relay: the far side of a remote worker (core/worker/worker_launcher.h). Started by
// ssh or srun on the GPU's host, it starts the sandboxed worker there as a local client would
// (the sandbox made and probed from that host), sends a hello of its own (the worker's, with a
// "relay" object: the host, the sandbox as verified there), then passes requests from its stdin
// to the worker and the worker's events and replies back, with the client's ids. Its stdin
// closing (the connection dropped, the client killed it) stops the worker; the worker ending
// (a crash, a lost context) ends the relay after the replies saying so.
//
// With a tool (`--sanitize memcheck`: kwb eval --sanitize on a remote worker) the worker there runs
// under that host's compute-sanitizer, as Evaluator::sanitize runs a local one (exact allocations,
// the tool's folders open behind a host launcher's fence); the hello's relay names the tool's
// program ("tool"), or the relay ends with kRelayExitNoTool and says why. The tool's report comes
// back on stderr, line by line. Its input closing then ends the worker gently (the tool writes its
// summary), and the relay's last line is a "worker-exit" event: how the worker (the tool) ended.
#include <optional>
#include <string>

namespace kwb::worker {

int runRelay(std::optional<int> device, const std::string &tool = {});

}  // namespace kwb::worker
