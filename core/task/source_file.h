#pragma once
// Reading the files a task names and the candidates a user points at (issue 17, 2 and 5): a
// regular file only, never a FIFO (it hung kwb eval), a device (/dev/zero aborted it with
// bad_alloc) or a folder; at most a size cap, checked on the open file and while reading (a
// file that grows); a task's own sources opened without following a final symbolic link
// (O_NOFOLLOW), after the manifest parser checked where they lead.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace kwb {

struct Task;

// The largest source file (reference, starter, lineage step, candidate) that is read: CUDA
// sources are kilobytes; a larger one is refused with its size rather than read whole.
inline constexpr std::uintmax_t kMaxSourceBytes = 4u << 20;

class SourceFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SourceReadOptions {
  std::uintmax_t maxBytes = kMaxSourceBytes;
  bool followFinalLink = true;  // false: a symbolic link at the path itself is refused
  std::string what = "source";  // in messages, after "the ": "candidate", "task.toml"...
};

// The file's bytes; throws SourceFileError naming the path and what is wrong with it.
std::string readSourceFile(const std::filesystem::path &path, const SourceReadOptions &options = {});

// A file of the task's folder that its manifest names (reference, starter, a lineage step),
// `relative` to task.folder (an absolute path is used as it is): resolved with every link
// followed, refused unless that is inside the folder, and the resolved path opened with
// O_NOFOLLOW (a link put in its place after the check is not followed).
std::string readTaskFile(const Task &task, const std::filesystem::path &relative);

// A task.toml or lineage.toml: as readSourceFile, capped at TomlShapeLimits::maxBytes.
std::string readManifestText(const std::filesystem::path &path);

// Whether `path` is `root` or below it, component by component (both canonical).
bool isInsideFolder(const std::filesystem::path &path, const std::filesystem::path &root);

}  // namespace kwb
