#pragma once
// kwb export SOURCE --task T --to DIR [--format cuda|torch|report]: an optimized kernel written out
// for use elsewhere (core/export). SOURCE: a candidate file, run:N (a run of the workspace's
// history), session:ID (an agent session's best), case:N (a Case of the experience memory).
#include <string>
#include <vector>

struct ExportArgs {
  std::string source;
  std::string task;
  std::string to;
  std::string format = "cuda";
  std::vector<std::string> set;  // NAME=V: tunables to bake in
  std::string workspace;         // default: the workbench's
  std::string library;           // case:N: the library database (default: the user's)
  bool force = false;
  bool profile = false;          // report: profile the kernel and the starter on this machine's GPU
};

int exportCommand(const ExportArgs &args, bool asJson);
