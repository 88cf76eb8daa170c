// kwb import kernelbench / torch: see import_command.h. One line per problem (and its warnings), or with
// --json an array of the outcomes.
#include "app/cli/import_command.h"

#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/import/kernelbench_import.h"
#include "core/text/printable.h"

namespace {

nlohmann::json outcomeJson(const kwb::ImportOutcome &o) {
  return {{"ok", o.ok},           {"problem", o.problem}, {"message", o.message},
          {"folder", o.folder.string()}, {"name", o.name},  {"warnings", o.warnings},
          {"configs", o.configs}, {"inputs", o.inputs},   {"outputs", o.outputs}};
}

std::string counted(std::size_t n, const char *what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

void printOutcome(const kwb::ImportOutcome &o, const std::string &command) {
  if (o.ok) {
    std::string configs;
    for (const auto &c : o.configs) configs += (configs.empty() ? "" : ", ") + c;
    std::cout << "imported " << std::filesystem::path(o.problem).filename().string() << " -> " << o.folder.string()
              << ": configurations " << configs << "; " << counted(o.inputs, "input") << ", "
              << counted(o.outputs, "output") << "\n";
  } else {
    std::cerr << "kwb import " << command << ": " << kwb::printable(o.message, 8192) << "\n";
  }
  for (const auto &w : o.warnings) (o.ok ? std::cout : std::cerr) << "  warning: " << kwb::printable(w, 8192) << "\n";
}

}  // namespace

int importKernelBenchCommand(const ImportArgs &given, bool asJson) {
  ImportArgs args = given;
  for (const auto &extra : given.extras) {
    std::error_code ec;
    if (extra == "--") continue;  // what follows it is already a PROBLEM
    if (extra.size() > 1 && extra[0] == '-' && std::filesystem::is_regular_file(extra, ec)) {
      args.problems.push_back(extra);  // a problem named like an option: a file, as it exists
      continue;
    }
    const std::string shown = kwb::printable(extra, 256);
    std::cerr << "kwb import " << args.command << ": unknown option '" << shown << "'; a problem file whose name begins with '-' is "
              << "given as ./" << shown << " or after --: kwb import " << args.command << " --to DIR -- " << shown << "\n";
    return 2;
  }
  if (args.problems.empty() || args.to.empty()) {
    std::cerr << "kwb import " << args.command << ": " << (args.problems.empty() ? "give one or more PROBLEM.py files" : "--to DIR is required")
              << "; usage: kwb import " << args.command << " PROBLEM.py... --to DIR [--force] [--json] [--python PATH]\n";
    return 2;
  }
  kwb::TorchSettings python;
  python.python = args.python.empty() ? kwb::importPython() : args.python;
  nlohmann::json all = nlohmann::json::array();
  bool failed = false;
  for (const auto &problem : args.problems) {
    // What the reader is doing, on stderr (an import takes seconds: PyTorch builds the module).
    const std::string shown = kwb::printable(std::filesystem::path(problem).filename().string(), 120);
    const auto outcome = kwb::importKernelBench(problem, args.to, args.force, python, [&](const std::string &step) {
      std::cerr << "  " << shown << ": " << step << "\n";
    });
    failed = failed || !outcome.ok;
    if (asJson) all.push_back(outcomeJson(outcome));
    else printOutcome(outcome, args.command);
  }
  if (asJson) std::cout << all.dump(2) << "\n";
  return failed ? 1 : 0;
}
