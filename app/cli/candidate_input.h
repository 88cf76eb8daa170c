#pragma once
// What the commands that take TASK [CANDIDATE] share: the task loaded and the candidate read
// (the task's starter when none is named), and NAME=INTEGER tunable values. Problems are
// printed to stderr with what to fix; the caller exits with status 2.
//
// A candidate that is a step of the task's lineage (TASK/lineage/lineage.toml) runs as that step
// does: the task's launch replaced by the step's, and the step's tunable values (which --set
// values then override). A note on stderr says so.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/task/task.h"

struct CandidateInput {
  kwb::Task task;              // as the candidate runs: for a lineage step, with the step's launch
  std::filesystem::path path;  // the candidate's file
  std::string text;
  std::map<std::string, std::int64_t> tunables;  // the step's values (empty otherwise)
};

// `command` names the command in messages ("kwb profile").
std::optional<CandidateInput> loadCandidate(const std::string &taskArg, const std::string &candidateArg,
                                            const std::string &command = "kwb");

// NAME=INTEGER values of `option` ("--set") into `out`; false after printing the bad one.
bool parseTunableValues(const std::vector<std::string> &values, std::map<std::string, std::int64_t> &out,
                        const std::string &option, const std::string &command = "kwb");
