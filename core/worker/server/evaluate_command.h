#pragma once
// The worker's `evaluate` command (PROTOCOL.md "evaluate"): correctness of one candidate on one
// size configuration of a task, for several seeds, on this worker's GPU. Inputs are generated
// on the host (core/eval/input_generator.h), reference outputs are computed once per
// (task, configuration, seed, reference module) and kept for the worker's life, outputs are
// poisoned before every run, inputs are checked unmodified, and the candidate runs twice for
// the race check.
//
// A sticky CUDA error (illegal address, ...) leaves the context unusable: the reply says so
// ("context_lost": true) and the worker then exits with kContextLostExitStatus, so the client
// starts a fresh one.
#include <optional>

namespace kwb::worker {

class WorkerServer;

inline constexpr int kContextLostExitStatus = 3;

// Registers `evaluate`; it uses CUDA device `device` (0 when none is given). The context is
// made on the first request.
void addEvaluateCommand(WorkerServer &server, std::optional<int> device);

}  // namespace kwb::worker
