#include "core/task/source_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/task/task.h"
#include "core/task/toml_shape.h"

namespace kwb {

namespace {

std::string kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string readSourceFile(const std::filesystem::path &path, const SourceReadOptions &options) {
  const std::string shown = options.what + " " + path.string();
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer.
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  if (!options.followFinalLink) flags |= O_NOFOLLOW;
  Fd fd(::open(path.c_str(), flags));
  if (fd.get() < 0) {
    const int e = errno;
    if (e == ELOOP && !options.followFinalLink)
      throw SourceFileError(shown + " is a symbolic link; expected a regular file inside the task folder");
    throw SourceFileError("cannot read the " + shown + ": " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw SourceFileError("cannot read the " + shown + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw SourceFileError("the " + shown + " is " + kindOf(st.st_mode) + "; expected a regular file");
  const auto tooLarge = [&](std::uintmax_t bytes) {
    return SourceFileError("the " + shown + " is " + std::to_string(bytes) + " bytes or more; at most " +
                           std::to_string(options.maxBytes) + " are read");
  };
  if (static_cast<std::uintmax_t>(st.st_size) > options.maxBytes) throw tooLarge(static_cast<std::uintmax_t>(st.st_size));
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SourceFileError("cannot read the " + shown + ": " + std::strerror(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > options.maxBytes) throw tooLarge(text.size());  // it grew while read
  }
  return text;
}

std::string readManifestText(const std::filesystem::path &path) {
  SourceReadOptions o;
  o.maxBytes = TomlShapeLimits{}.maxBytes;
  o.what = "manifest";
  return readSourceFile(path, o);
}

bool isInsideFolder(const std::filesystem::path &path, const std::filesystem::path &root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p)
    if (p == path.end() || *p != *r) return false;
  return true;
}

std::string readTaskFile(const Task &task, const std::filesystem::path &relative) {
  const std::filesystem::path named = relative.is_absolute() ? relative : task.folder / relative;
  std::error_code ec, rootEc;
  const auto real = std::filesystem::canonical(named, ec);
  const auto root = std::filesystem::canonical(task.folder, rootEc);
  if (ec) throw SourceFileError("cannot read the task file " + named.string() + ": " + ec.message());
  if (!rootEc && !isInsideFolder(real, root))
    throw SourceFileError("the task file " + named.string() + " leads to " + real.string() +
                          ", outside the task folder " + root.string());
  SourceReadOptions o;
  o.followFinalLink = false;
  o.what = "task file";
  return readSourceFile(real, o);
}

}  // namespace kwb
