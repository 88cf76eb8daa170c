#include "core/lineage/lineage.h"

#include <fstream>
#include <sstream>

#include "core/compile/compile_types.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"

namespace kwb {

namespace fs = std::filesystem;

namespace {

std::string readText(const fs::path &path, const std::string &shown) {
  try {
    SourceReadOptions o;
    o.what = "file";
    return readSourceFile(path, o);
  } catch (const SourceFileError &e) {
    throw ManifestError(shown, 0, "", e.what());
  }
}

std::string trimmed(std::string s) {
  const auto b = s.find_first_not_of(" \t\r");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The "Adds:" and "Relies on:" texts of the comment that opens a step's file. "Adds:" runs on
// over the comment lines after it up to "Relies on:" (or a blank comment line); "Relies on:"
// continues only over indented lines ("//   more text"), so notes after it stay apart.
void readHeader(const std::string &source, LineageStep &step, const std::string &shown, bool required = true) {
  std::istringstream in(source);
  std::string line;
  std::string *current = nullptr;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string t = trimmed(line);
    if (t.rfind("//", 0) != 0) {
      if (t.empty() && number == 1) continue;
      break;
    }
    const std::string raw = t.substr(2);
    const std::string body = trimmed(raw);
    if (body.rfind("Adds:", 0) == 0) {
      step.adds = trimmed(body.substr(5));
      current = &step.adds;
    } else if (body.rfind("Relies on:", 0) == 0) {
      step.reliesOn = trimmed(body.substr(10));
      current = &step.reliesOn;
    } else if (current == &step.adds && !body.empty()) {  // Adds runs on to "Relies on:"
      *current += " " + body;
    } else if (current && !body.empty() && raw.rfind("  ", 0) == 0) {  // an indented continuation
      *current += " " + body;
    } else {
      current = nullptr;
    }
  }
  if (!required) return;
  const char *expected = "; expected the file to open with a comment holding \"// Adds: <the one optimization "
                         "this step adds>\" and \"// Relies on: <earlier steps, or nothing>\"";
  if (step.adds.empty()) throw ManifestError(shown, 1, "header", std::string("no \"Adds:\" line") + expected);
  if (step.reliesOn.empty())
    throw ManifestError(shown, 1, "header", std::string("no \"Relies on:\" line") + expected);
}

}  // namespace

bool hasLineage(const Task &task) {
  std::error_code ec;
  return fs::is_regular_file(task.folder / kLineageFolderName / kLineageFileName, ec);
}

Lineage loadLineage(const Task &task) { return loadLineageFrom(task, task.folder / kLineageFolderName); }

void readStepHeader(const std::string &source, LineageStep &step, bool required) {
  readHeader(source, step, step.file.string(), required);
}

Lineage loadLineageFrom(const Task &task, const fs::path &folder) {
  const fs::path manifest = folder / kLineageFileName;
  const std::string shown = manifest.string();
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec))
    throw ManifestError(shown, 0, "", "no lineage: expected " + std::string(kLineageFolderName) + "/" +
                                          kLineageFileName + " in the task folder");
  Lineage lineage = parseLineageManifest(readText(manifest, shown), shown, folder, task);
  for (auto &step : lineage.steps) {
    const std::string source = readText(step.file, step.file.string());
    readHeader(source, step, step.file.string());
    step.hostLauncher = detectSourceForm(source) == SourceForm::HostLauncher;
  }
  return lineage;
}

Task taskForStep(const Task &task, const LineageStep &step) {
  Task out = task;
  if (step.launch) out.launch = step.launch;
  return out;
}

}  // namespace kwb
