#pragma once
// kwb suite DIR --candidates DIR: every task folder in DIR evaluated with its candidate
// (CANDIDATES/NAME.cu) over the GPU pool, timed against PyTorch, and KernelBench's metrics:
// correctness rate and fast_p (p = 1, 1.5, 2) over PyTorch eager and torch.compile
// (core/eval/suite_metrics.h), as a table and JSON.
#include <string>
#include <vector>

struct SuiteArgs {
  std::string tasks;       // the folder of task folders
  std::string candidates;  // the folder of candidates, NAME.cu per task
  std::vector<std::string> configs;  // per task: these configurations where it has them (default: all)
  std::vector<int> devices;          // CUDA ordinals (default: every device)
  std::string workers;               // --workers: where the workers run (empty: this machine)
  double timeCap = 1.0;              // seconds of sampling per configuration
  double timeLimit = 120.0;          // seconds per configuration's evaluation
  std::string out;                   // the JSON file (default: none; --json prints it)
  std::string python;
  bool noTorchCompile = false;
};

// Exit status: 0 the suite ran (whatever the candidates did); 2 usage error; 3 no CUDA device.
int suiteCommand(const SuiteArgs &args, bool asJson);
