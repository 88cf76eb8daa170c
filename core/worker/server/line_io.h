#pragma once
// Whole writes and newline-ended reads on a file descriptor, for the line protocols inside
// kwb-worker (a host launcher's process, the compile service).
#include <cstddef>
#include <string>

namespace kwb::worker {

// Writes all `size` bytes (retrying after EINTR and short writes); false on an error.
// Async-signal-safe: the compile service's signal handlers use it.
bool writeAll(int fd, const char *data, std::size_t size);
inline bool writeAll(int fd, const std::string &text) { return writeAll(fd, text.data(), text.size()); }

// One line from `fd` through `buffer` (without the newline); false at EOF, on an error, or past
// `limit` characters.
bool readLineFrom(int fd, std::string &buffer, std::string &line, std::size_t limit);

}  // namespace kwb::worker
