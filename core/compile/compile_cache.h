#pragma once
// The on-disk compile cache: one entry per (source form, source, source name, sorted defines,
// options, line info, expected kernels, toolkit, architecture, format version), as two files
// under the cache folder: <key>.bin (the image) and <key>.json (diagnostics, kernels, log,
// toolkit version, and the image's size and hash). Each file is written to a temporary name
// and renamed into place, the .json last, so a crash never leaves an entry that reads as whole;
// an entry whose files are missing, unreadable or disagree is a miss, and the next store
// replaces it. Failed compiles are stored too: the same source fails the same way.
#include <filesystem>
#include <optional>
#include <string>

#include "core/compile/compile_types.h"

namespace kwb {

class CompileCache {
 public:
  // Bumped whenever the entry format or the meaning of a key changes.
  static constexpr int kFormatVersion = 1;

  // $XDG_CACHE_HOME/kernel-workbench/compile, or ~/.cache/kernel-workbench/compile.
  static std::filesystem::path defaultDirectory();

  explicit CompileCache(std::filesystem::path directory = defaultDirectory());
  const std::filesystem::path &directory() const { return directory_; }

  // The entry's name for `request` compiled by the toolkit `toolkitIdentity` (which names the
  // compiler and its exact version).
  static std::string key(const CompileRequest &request, const std::string &toolkitIdentity);

  // The stored result (cacheHit and seconds left for the caller to set), or nothing on a miss.
  std::optional<CompileResult> load(const std::string &key) const;
  // Stores `result` under `key`; false (the cache is then just not used) on an I/O error.
  bool store(const std::string &key, const CompileResult &result) const;
  // The entry's two files, for tests and for clearing one entry.
  std::filesystem::path imagePath(const std::string &key) const;
  std::filesystem::path metadataPath(const std::string &key) const;

 private:
  std::filesystem::path directory_;
};

}  // namespace kwb
