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
  std::string workers;              // --workers: where the workers run (empty: this machine)
};

int lineageCommand(const LineageArgs &args, bool asJson);

// kwb lineage build TASK [--from-versions DIR]: the versions gated on the GPUs (compiled, correct
// on every configuration and seed, timed), stored as a lineage in the skill library, and each
// accepted transition lifted into a skill card (proposed, or merged into the card of its kind).
struct LineageBuildArgs {
  std::string task;
  std::string fromVersions;  // a folder of versions; empty: the task's bundled lineage
  std::string name;          // empty: the task's name (bundled) or TASK@FOLDER
  std::string library;       // empty: SkillLibrary::defaultPath()
  std::vector<std::string> configs;
  std::string arch;
  double timeCap = 1.0;
  std::vector<int> gpus;
  std::string workers;  // --workers
  // --deoptimize EXPERT.cu: the versions come from a model taking one technique out at a time
  // (core/agent/deoptimize.h), written forward to `out`, then built as --from-versions out.
  std::string deoptimize, provider, format, model, out;
  int maxSteps = 15;
  int maxTokens = 8192;  // per de-optimization answer
  bool noProfile = false;     // every accepted step is profiled unless set
  std::string profileConfig;  // empty: kwb::largestConfiguration(task)
};

int lineageBuildCommand(const LineageBuildArgs &args, bool asJson);
