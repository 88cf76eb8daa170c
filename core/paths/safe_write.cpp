#include "core/paths/safe_write.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "core/text/printable.h"

namespace kwb {

namespace fs = std::filesystem;

namespace {

std::string errorText(int error) { return std::strerror(error); }

// What is at `name` in the folder `dirFd`, without following a link: "a symbolic link", "a file"...
std::string whatIsAt(int dirFd, const std::string &name) {
  struct stat st {};
  if (::fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return "missing";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISREG(st.st_mode)) return "a file";
  return "not a file or folder";
}

void closeFd(const int *fd) {
  if (*fd >= 0) ::close(*fd);
  delete fd;
}

bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

void checkPathComponent(const std::string &name, const std::string &what) {
  const char *why = nullptr;
  if (name.empty()) why = "is empty";
  else if (name == "." || name == "..") why = "names the folder itself or its parent";
  else if (name.find('/') != std::string::npos) why = "holds '/'";
  else if (name.find('\0') != std::string::npos) why = "holds a NUL byte";
  if (why)
    throw SafeWriteError(what + " '" + printable(name, 256) + "' " + why +
                         "; a file or folder written here is named by one path component");
}

SafeFolder::SafeFolder(fs::path path, int fd) : path_(std::move(path)), fd_(new int(fd), closeFd) {}

int SafeFolder::fd() const { return *fd_; }

SafeFolder SafeFolder::open(const fs::path &dir, bool create) {
  std::error_code ec;
  if (create) {
    // Parents are the user's to choose (a home folder may be a link); the folder itself is
    // checked by the open below.
    if (!fs::is_symlink(dir, ec) && !fs::exists(dir, ec)) {
      fs::create_directories(dir, ec);
      if (ec) throw SafeWriteError(dir.string() + ": cannot be made: " + ec.message());
    }
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (fs::is_symlink(dir, ec))
      throw SafeWriteError(dir.string() + ": is a symbolic link (to " + fs::read_symlink(dir, ec).string() +
                           "); files are not written through links: name the folder it leads to");
    if (error == ENOTDIR) throw SafeWriteError(dir.string() + ": is not a folder; name a folder to write into");
    throw SafeWriteError(dir.string() + ": cannot be opened: " + errorText(error));
  }
  return SafeFolder(dir, fd);
}

SafeFolder SafeFolder::subfolder(const std::string &name) const {
  checkPathComponent(name, "the folder name");
  const fs::path shown = path_ / name;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::mkdirat(fd(), name.c_str(), 0755) != 0 && errno != EEXIST)
      throw SafeWriteError(shown.string() + ": cannot be made: " + errorText(errno));
    const int sub = ::openat(fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub >= 0) return SafeFolder(shown, sub);
    const int error = errno;
    const std::string what = whatIsAt(fd(), name);
    if (what != "a symbolic link" || attempt > 0) {
      if (what == "a file" || what == "not a file or folder")
        throw SafeWriteError(shown.string() + ": is " + what + ", where a folder goes; remove it or write elsewhere");
      throw SafeWriteError(shown.string() + ": cannot be opened as a folder: " + errorText(error));
    }
    // A link where the folder goes: the link is removed (what it leads to is untouched).
    if (::unlinkat(fd(), name.c_str(), 0) != 0)
      throw SafeWriteError(shown.string() + ": is a symbolic link that cannot be removed: " + errorText(errno));
  }
  throw SafeWriteError(shown.string() + ": cannot be made");
}

void SafeFolder::write(const std::string &name, std::string_view bytes, mode_t mode) const {
  checkPathComponent(name, "the file name");
  const fs::path shown = path_ / name;
  static thread_local std::mt19937_64 random{std::random_device{}()};
  std::string temporary;
  int out = -1;
  for (int attempt = 0; out < 0 && attempt < 100; ++attempt) {
    temporary = "." + name.substr(0, 64) + ".kwb-" + std::to_string(::getpid()) + "-" + std::to_string(random() % 1000000000);
    out = ::openat(fd(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (out < 0 && errno != EEXIST) throw SafeWriteError(shown.string() + ": cannot be written: " + errorText(errno));
  }
  if (out < 0) throw SafeWriteError(shown.string() + ": cannot be written: no free temporary name beside it");
  // The first error wins, taken when it happens (a later call may change errno, a short write
  // may leave it unset).
  int writeError = 0;
  errno = 0;
  if (!writeAll(out, bytes)) writeError = errno != 0 ? errno : EIO;
  else if (::fsync(out) != 0) writeError = errno;
  if (::close(out) != 0 && writeError == 0) writeError = errno;
  if (writeError != 0) {
    ::unlinkat(fd(), temporary.c_str(), 0);
    throw SafeWriteError(shown.string() + ": cannot be written: " + errorText(writeError));
  }
  if (::renameat(fd(), temporary.c_str(), fd(), name.c_str()) != 0) {
    const int error = errno;
    ::unlinkat(fd(), temporary.c_str(), 0);
    const std::string what = whatIsAt(fd(), name);
    if (what == "a folder") throw SafeWriteError(shown.string() + ": is a folder, where a file goes; remove it or write elsewhere");
    throw SafeWriteError(shown.string() + ": cannot be written: " + errorText(error));
  }
  ::fsync(fd());  // the folder's new entry too, so a crash keeps the new name (best effort)
}

void SafeFolder::writeRelative(const fs::path &relative, std::string_view bytes, mode_t mode) const {
  std::vector<std::string> parts;
  for (const auto &part : relative) parts.push_back(part.string());
  if (relative.is_absolute() || parts.empty())
    throw SafeWriteError("'" + relative.string() + "': not a path relative to " + path_.string());
  SafeFolder folder = *this;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) folder = folder.subfolder(parts[i]);
  folder.write(parts.back(), bytes, mode);
}

}  // namespace kwb
