#pragma once
// The tuner's resumable cache: every measured point of a tuning context (the task's manifest,
// the candidate's source, the configurations, seeds, timing cap, architecture and GPU model) in a
// SQLite file, written as each result arrives, so a run that is stopped or crashes resumes
// where it was and a repeated run measures nothing twice. No Qt.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kwb {
class Database;
}

namespace kwb::tune {

class TuneCache {
 public:
  // $XDG_CACHE_HOME/kernel-workbench/tune.sqlite, or ~/.cache/kernel-workbench/tune.sqlite.
  static std::filesystem::path defaultPath();

  // Opens or creates the file (and its folder). Throws kwb::StoreError when it cannot.
  explicit TuneCache(const std::filesystem::path &path = defaultPath());
  ~TuneCache();
  TuneCache(const TuneCache &) = delete;
  TuneCache &operator=(const TuneCache &) = delete;

  std::optional<nlohmann::json> find(const std::string &context, const std::string &point) const;
  void store(const std::string &context, const std::string &point, const nlohmann::json &result);
  std::size_t count(const std::string &context) const;
  // Forgets a context's points (kwb tune --fresh).
  void clear(const std::string &context);
  const std::filesystem::path &path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::unique_ptr<Database> db_;
};

}  // namespace kwb::tune
