#pragma once
// kwb profile TASK [CANDIDATE]: GPU metrics of a candidate through CUPTI (core/profile): a
// metric set (default: 2 passes on an H100/H200; detailed: 14) or named metrics, collected by
// the worker in replay passes of their own. Without a GPU, the metric catalogue and the pass
// count of the chosen metrics still come from CUPTI's host API (--chip, default GH100), and
// profiling says "not run: no CUDA device" (exit status 3).
//   kwb profile --list-metrics [--chip NAME] [--filter TEXT]   the chip's metric catalogue
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

struct ProfileArgs {
  std::string task;
  std::string candidate;             // empty: the task's starter
  std::string metrics;               // "a,b,c"; empty: the set
  std::string set = "default";       // default | detailed
  std::string config;                // empty: the task's first
  std::string chip;                  // empty: GH100 for host-side answers
  std::string arch;
  std::vector<std::string> tunables; // NAME=VALUE
  std::uint64_t seed = 1;
  double timeLimit = 120.0;
  bool listMetrics = false;
  std::string filter;                // with --list-metrics: names containing it
  bool noGpu = false;
};

// Adds the `profile` subcommand to `app`, its options bound to `args` and `asJson`.
CLI::App *addProfileSubcommand(CLI::App &app, ProfileArgs &args, bool &asJson);

// Exit status: 0 profiled (or the catalogue listed); 1 compile, load or runtime error, timeout,
// or not profiled (no permission, profiler busy, unsupported device, no CUPTI); 2 usage error
// (bad task, candidate, option or metric name); 3 not run (no CUDA device).
int profileCommand(const ProfileArgs &args, bool asJson);
