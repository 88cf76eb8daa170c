#pragma once
// Reads a task folder's manifest (task.toml) into a Task, checking everything a later stage
// relies on. Errors carry the file, line and field, and say what was expected:
//   kernels/softmax/task.toml:12: tensors.y.shape: unknown size 'cols2'; known sizes: rows, cols
#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/task/task.h"

namespace kwb {

class ManifestError : public std::runtime_error {
 public:
  ManifestError(std::string file, int line, std::string field, std::string message);
  const std::string &file() const { return file_; }
  // 1-based; 0 when no line applies (a missing top-level key, an unreadable file), and then
  // what() reads "file: field: detail" with no ":0".
  int line() const { return line_; }
  const std::string &field() const { return field_; }
  const std::string &detail() const { return detail_; }

 private:
  std::string file_;
  int line_;
  std::string field_;
  std::string detail_;
};

inline constexpr const char *kManifestFileName = "task.toml";

// Parses manifest text. displayPath is used in messages; folder is where sources are checked
// for existence (skipped when folder is empty). Task::manifestPath is folder / "task.toml", or
// displayPath when folder is empty.
Task parseManifest(const std::string &text, const std::string &displayPath,
                   const std::filesystem::path &folder);

// Loads <folder>/task.toml. `path` may name the folder or the manifest file itself, under any
// name; Task::manifestPath is then that file.
Task loadTask(const std::filesystem::path &path);

}  // namespace kwb
