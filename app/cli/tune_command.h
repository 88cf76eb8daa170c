#pragma once
// kwb tune TASK [CANDIDATE]: the built-in autotuner (core/tune) over the task's tunable
// parameters, on every visible GPU, with a resumable cache; compile-only without a GPU.
#include <cstdint>
#include <string>
#include <vector>

struct TuneArgs {
  std::string task;
  std::string workers;               // --workers: where the workers run (empty: this machine)
  std::string candidate;             // empty: the task's starter
  std::uint64_t budget = 0;          // 0: the tuner's default
  std::string strategy = "auto";
  std::uint64_t searchSeed = 1;
  std::vector<std::string> configs;  // empty: all
  std::vector<std::uint64_t> seeds;
  std::string arch;
  std::vector<int> gpus;
  double timeCap = 1.0;
  double timeLimit = 120.0;
  bool noGpu = false;
  bool noCompileAhead = false;
  bool noCache = false;
  bool noMemory = false;             // leave the points out of the experience memory
  bool fresh = false;
  std::string cacheFile;
};

int tuneCommand(const TuneArgs &args, bool asJson);
