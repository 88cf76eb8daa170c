#pragma once
// --workers (issue 22): where the GPU workers of eval, lineage, tune, optimize, suite and devices
// run: local (this machine), ssh://[USER@]HOST[:PORT][/PATH/TO/kwb-worker], several of those
// (ssh://a,ssh://b: every host's GPUs in one pool, issue 49), or
// slurm:partition=P,gpus=N,time=HH:MM:SS[,jobid=N][,worker=PATH].
#include <string>

#include <CLI/CLI.hpp>

#include "core/eval/evaluator.h"

void addWorkersOption(CLI::App *command, std::string &spec);

// The launcher `spec` names, set in `settings`; false after saying on stderr what is wrong.
bool applyWorkers(const std::string &spec, kwb::EvaluatorSettings &settings);

// kwb devices --workers REMOTE: a worker started there, and what its hello says (host, version,
// devices, driver, sandbox); with several hosts, each in turn (JSON: an array). Exit status 0 when
// every one started, 1 when not.
int remoteDevicesCommand(const kwb::EvaluatorSettings &settings, bool asJson);
