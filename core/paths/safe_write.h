#pragma once
// Writing files without following links (issue 45 item 4): an export or an import writes into a
// folder it has checked, and a symbolic link planted there (to ~/.bashrc, to a folder elsewhere)
// is replaced or refused, never written through. The folder is held open (O_DIRECTORY|O_NOFOLLOW)
// and every file is made new beside its final name (openat O_CREAT|O_EXCL|O_NOFOLLOW), synced and
// renamed onto it (renameat replaces a link itself). Names are checked on the way out: one path
// component each. No Qt.
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace kwb {

class SafeWriteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws SafeWriteError unless `name` is one path component: not empty, no '/', no NUL, not "."
// or "..". `what` names it in the message ("the task's name").
void checkPathComponent(const std::string &name, const std::string &what);

// A folder opened for writing without following links. Copyable (the descriptor is shared).
class SafeFolder {
 public:
  // `dir` opened; with `create`, made first with its missing parents. The folder itself (its last
  // component) must be a real folder, not a symbolic link to one. Throws SafeWriteError.
  static SafeFolder open(const std::filesystem::path &dir, bool create = true);

  // The subfolder `name` (one component), made when missing (mkdirat) and opened O_NOFOLLOW; a
  // symbolic link in its place is removed and a real folder made (never followed). A file there
  // is refused.
  SafeFolder subfolder(const std::string &name) const;

  // Writes `bytes` to `name` (one component) in this folder: a new temporary file beside it,
  // fsync'd, renamed onto `name`. A symbolic link at `name` is replaced, never written through;
  // a folder there is refused. Throws SafeWriteError naming the path.
  void write(const std::string &name, std::string_view bytes, mode_t mode = 0644) const;

  // `relative` ("include/x.h"; each component checked as above) written below this folder, its
  // subfolders through subfolder().
  void writeRelative(const std::filesystem::path &relative, std::string_view bytes, mode_t mode = 0644) const;

  const std::filesystem::path &path() const { return path_; }
  int fd() const;

 private:
  SafeFolder(std::filesystem::path path, int fd);
  std::filesystem::path path_;
  std::shared_ptr<const int> fd_;
};

}  // namespace kwb
