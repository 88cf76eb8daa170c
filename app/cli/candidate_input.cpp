#include "app/cli/candidate_input.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "core/lineage/step_resolution.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"

std::optional<CandidateInput> loadCandidate(const std::string &taskArg, const std::string &candidateArg,
                                            const std::string &command) {
  CandidateInput in;
  try {
    in.task = kwb::loadTask(taskArg);
  } catch (const kwb::ManifestError &e) {
    std::cerr << e.what() << "\n";
    return std::nullopt;
  } catch (const std::exception &e) {
    std::cerr << command << ": " << taskArg << ": " << e.what() << "\n";
    return std::nullopt;
  }
  in.path = candidateArg.empty() ? in.task.folder / in.task.starterSource() : std::filesystem::path(candidateArg);
  try {
    if (candidateArg.empty()) {
      in.text = kwb::readTaskFile(in.task, in.task.starterSource());
    } else {
      kwb::SourceReadOptions o;
      o.what = "candidate";
      in.text = kwb::readSourceFile(in.path, o);
    }
  } catch (const kwb::SourceFileError &e) {
    std::cerr << command << ": " << e.what() << "\n";
    return std::nullopt;
  }
  if (kwb::runAsReference(in.task, in.path))
    std::cerr << command << ": " << in.path.filename().string()
              << " is the task's reference source (the task has no [editor] starter): it runs with the "
                 "reference's launch (kernel '"
              << in.task.reference.launch.kernel << "')\n";
  if (!candidateArg.empty()) {
    try {
      if (auto resolved = kwb::resolveLineageStep(in.task, in.path)) {
        std::cerr << command << ": " << kwb::describeResolvedStep(*resolved, in.path) << "\n";
        in.task = std::move(resolved->task);
        in.tunables = resolved->step.tunables;
      }
    } catch (const std::exception &e) {
      // A broken lineage.toml does not stop a candidate from running; it runs as the task's.
      std::cerr << command << ": note: the task's lineage is not read (" << e.what()
                << "); the candidate runs with the task's launch\n";
    }
  }
  return in;
}

bool parseTunableValues(const std::vector<std::string> &values, std::map<std::string, std::int64_t> &out,
                        const std::string &option, const std::string &command) {
  for (const auto &v : values) {
    const auto eq = v.find('=');
    bool ok = eq != std::string::npos && eq > 0;
    std::int64_t value = 0;
    if (ok) {
      try {
        std::size_t used = 0;
        value = std::stoll(v.substr(eq + 1), &used);
        ok = used == v.size() - eq - 1;
      } catch (const std::exception &) {
        ok = false;
      }
    }
    if (!ok) {
      std::cerr << command << ": " << option << " expects NAME=INTEGER, not '" << v << "'\n";
      return false;
    }
    out[v.substr(0, eq)] = value;
  }
  return true;
}
