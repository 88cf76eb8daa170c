#pragma once
// kwb asm TASK [CANDIDATE]: the candidate's SASS (or PTX) with the source line of each
// instruction, one source line's instructions, or the diff against another candidate.
#include <string>
#include <vector>

struct AsmArgs {
  std::string task;
  std::string candidate;             // empty: the task's starter
  bool ptx = false;
  int line = 0;                      // only this source line's instructions
  std::string diffWith;              // another candidate to compare against
  std::vector<std::string> sets;     // NAME=VALUE tunables
  std::string arch = "sm_90";
};

int asmCommand(const AsmArgs &args, bool asJson);
