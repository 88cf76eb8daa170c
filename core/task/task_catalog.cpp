#include "core/task/task_catalog.h"

#include <algorithm>
#include <exception>
#include <system_error>

#include "core/task/manifest_parser.h"

namespace kwb {

namespace {

namespace fs = std::filesystem;

bool holdsManifest(const fs::path &folder) {
  std::error_code ec;
  return fs::exists(folder / kManifestFileName, ec);
}

TaskEntry load(const fs::path &folder) {
  TaskEntry entry;
  entry.folder = folder;
  try {
    entry.task = loadTask(folder);
  } catch (const std::exception &e) {
    entry.error = e.what();
  }
  return entry;
}

}  // namespace

std::vector<TaskEntry> listTasks(const std::filesystem::path &dir) {
  std::vector<TaskEntry> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  if (holdsManifest(dir)) out.push_back(load(dir));

  std::vector<fs::path> folders;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code typeError;
    if (it->is_directory(typeError) && holdsManifest(it->path())) folders.push_back(it->path());
  }
  std::sort(folders.begin(), folders.end(),
            [](const fs::path &a, const fs::path &b) { return a.filename() < b.filename(); });
  for (const fs::path &folder : folders) out.push_back(load(folder));
  return out;
}

}  // namespace kwb
