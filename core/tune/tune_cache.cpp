#include "core/tune/tune_cache.h"


#include "core/paths/install_paths.h"
#include "core/store/database.h"

namespace kwb::tune {

std::filesystem::path TuneCache::defaultPath() { return userCacheDir() / "tune.sqlite"; }

TuneCache::TuneCache(const std::filesystem::path &path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  db_ = std::make_unique<Database>(path, Database::Mode::OpenOrCreate, DatabaseKind::TuneCache);
  db_->transaction([&] {
    db_->exec(
        "CREATE TABLE IF NOT EXISTS tune_points ("
        " context TEXT NOT NULL, point TEXT NOT NULL, result TEXT NOT NULL, measured_at TEXT NOT NULL,"
        " PRIMARY KEY (context, point))");
  });
}

TuneCache::~TuneCache() = default;

std::optional<nlohmann::json> TuneCache::find(const std::string &context, const std::string &point) const {
  auto st = db_->prepare("SELECT result FROM tune_points WHERE context = ?1 AND point = ?2");
  st.bind(1, context).bind(2, point);
  if (!st.step()) return std::nullopt;
  auto j = nlohmann::json::parse(st.columnText(0), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;  // a damaged row is measured again
  return j;
}

void TuneCache::store(const std::string &context, const std::string &point, const nlohmann::json &result) {
  db_->transaction([&] {
    auto st = db_->prepare(
        "INSERT INTO tune_points (context, point, result, measured_at) VALUES (?1, ?2, ?3, ?4)"
        " ON CONFLICT (context, point) DO UPDATE SET result = excluded.result, measured_at = excluded.measured_at");
    st.bind(1, context).bind(2, point).bind(3, result.dump()).bind(4, utcTimestamp());
    st.run();
  });
}

std::size_t TuneCache::count(const std::string &context) const {
  auto st = db_->prepare("SELECT COUNT(*) FROM tune_points WHERE context = ?1");
  st.bind(1, context);
  return st.step() ? static_cast<std::size_t>(st.columnInt(0)) : 0;
}

void TuneCache::clear(const std::string &context) {
  db_->transaction([&] {
    auto st = db_->prepare("DELETE FROM tune_points WHERE context = ?1");
    st.bind(1, context);
    st.run();
  });
}

}  // namespace kwb::tune
