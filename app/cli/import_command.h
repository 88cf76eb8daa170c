#pragma once
// kwb import kernelbench PROBLEM.py... --to DIR [--force] [--json] [--python PATH]: KernelBench
// problem files made into task folders DIR/NAME (core/import/kernelbench_import.h), each with the
// problem as its PyTorch reference and a CUDA starter to fill in.
#include <string>
#include <vector>

struct ImportArgs {
  std::vector<std::string> problems;  // the problem files
  std::string to;                     // the folder the task folders are made in
  std::string python;                 // the interpreter (default: $KWB_PYTHON, else python3 on PATH)
  bool force = false;                 // write into a task folder that already holds files
  // What the parser did not take: options it does not know. One that names an existing file (a
  // problem called --no-torch.py) is a problem file; any other is a usage error.
  std::vector<std::string> extras;
};

// Exit status: 0 every problem imported; 1 one or more failed; 2 usage error.
int importKernelBenchCommand(const ImportArgs &args, bool asJson);
