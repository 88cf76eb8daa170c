#pragma once
// kwb import kernelbench|torch PROBLEM.py... --to DIR [--force] [--json] [--python PATH]:
// KernelBench problem files, or a user's own modules in the same shape (`torch`), made into task
// folders DIR/NAME (core/import/kernelbench_import.h), each with the module as its PyTorch
// reference and a CUDA starter.
#include <string>
#include <vector>

struct ImportArgs {
  std::string command = "kernelbench";  // "kernelbench" or "torch": the subcommand, for messages
  std::vector<std::string> problems;  // the problem files
  std::string to;                     // the folder the task folders are made in
  // The interpreter (default: $KWB_PYTHON, else install-torch.sh's venv where it exists, else
  // python3 on PATH).
  std::string python;
  bool force = false;                 // write into a task folder that already holds files
  // What the parser did not take: options it does not know. One that names an existing file (a
  // problem called --no-torch.py) is a problem file; any other is a usage error.
  std::vector<std::string> extras;
};

// Exit status: 0 every problem imported; 1 one or more failed; 2 usage error.
int importKernelBenchCommand(const ImportArgs &args, bool asJson);
