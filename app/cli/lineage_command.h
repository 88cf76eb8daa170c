#pragma once
// kwb lineage TASK: every step of a task's lineage compiled, checked and (with --time) timed,
// spread over the GPUs, with each step's speedup over its predecessor.
#include <cstdint>
#include <string>
#include <vector>

struct LineageArgs {
  std::string task;
  std::vector<int> steps;           // 1-based; empty: all
  std::vector<std::string> configs; // empty: all
  std::vector<std::uint64_t> seeds;
  std::string arch;
  bool time = false;
  double timeCap = 3.0;
  double timeLimit = 120.0;
  bool noGpu = false;
  std::vector<int> gpus;            // empty: every visible GPU
};

int lineageCommand(const LineageArgs &args, bool asJson);
