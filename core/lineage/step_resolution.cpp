#include "core/lineage/step_resolution.h"

#include <cctype>

namespace kwb {

namespace fs = std::filesystem;

std::optional<ResolvedStep> resolveLineageStep(const Task &task, const fs::path &candidate) {
  if (!hasLineage(task)) return std::nullopt;
  std::error_code ec;
  const fs::path wanted = fs::weakly_canonical(candidate, ec);
  if (ec) return std::nullopt;
  const Lineage lineage = loadLineage(task);
  for (const auto &step : lineage.steps) {
    const fs::path file = fs::weakly_canonical(step.file, ec);
    if (!ec && file == wanted) return ResolvedStep{step, taskForStep(task, step)};
  }
  return std::nullopt;
}

bool runAsReference(Task &task, const fs::path &candidate) {
  bool ownLaunches = false;
  for (const auto &c : task.configs) ownLaunches = ownLaunches || c.launch;
  if (!task.launch && !ownLaunches) return false;  // the candidate already runs with the reference's launch
  if (!task.reference.hasCuda()) return false;
  std::error_code ec, ec2;
  const fs::path wanted = fs::weakly_canonical(candidate, ec);
  const fs::path reference = fs::weakly_canonical(task.folder / task.reference.source, ec2);
  if (ec || ec2 || wanted != reference) return false;
  useReferenceLaunches(task);
  return true;
}

std::optional<int> lineageStepNumber(const fs::path &file) {
  if (file.parent_path().filename() != kLineageFolderName) return std::nullopt;
  const std::string name = file.filename().string();
  std::size_t digits = 0;
  while (digits < name.size() && digits < 9 && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
  if (digits == 0 || digits >= name.size() || name[digits] != '-') return std::nullopt;
  return std::stoi(name.substr(0, digits));
}

std::string describeResolvedStep(const ResolvedStep &resolved, const fs::path &candidate) {
  const LineageStep &step = resolved.step;
  std::string values;
  for (const auto &[name, value] : step.tunables) values += " " + name + "=" + std::to_string(value);
  return candidate.filename().string() + " is step " + std::to_string(step.index) + " of the lineage (" + step.title +
         "): run with its launch" + (step.launch ? " from lineage.toml" : " (the task's)") +
         (values.empty() ? std::string() : "; its tunables" + values + " unless set otherwise");
}

}  // namespace kwb
