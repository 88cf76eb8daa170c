#include "core/store/database.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <ctime>
#include <exception>
#include <thread>
#include <utility>

namespace kwb {

namespace {

// A path as the path of a file: URI (RFC 3986 unreserved characters and '/' kept, the rest %XX).
std::string uriPath(const std::string &path) {
  static const char *hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

constexpr int kBusyTimeoutMs = 5000;

// The file a connection has open, for error messages ("" for a temporary database).
std::string fileOf(sqlite3 *db) {
  const char *name = db ? sqlite3_db_filename(db, "main") : nullptr;
  return (name && *name) ? std::string(name) : std::string("(temporary database)");
}

// A statement's text, shortened for an error message.
std::string excerpt(std::string_view sql) {
  constexpr std::size_t kMax = 120;
  std::string text(sql.substr(0, kMax));
  for (char &c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (sql.size() > kMax) text += "...";
  return text;
}

[[noreturn]] void fail(const std::string &file, const std::string &what, const std::string &detail) {
  throw StoreError(file + ": " + what + ": " + detail);
}

[[noreturn]] void failWith(sqlite3 *db, const std::string &what) {
  fail(fileOf(db), what, db ? sqlite3_errmsg(db) : "out of memory");
}

// Switches a connection to write-ahead logging and returns the journal mode it ended in.
// Changing the mode reads the header, then upgrades to a write lock; SQLite does not call the
// busy handler for that upgrade (two readers upgrading at once would deadlock), so when another
// connection is switching the same new file at that moment this one gets SQLITE_BUSY at once,
// whatever the busy timeout. Only a new workspace or library is not yet in WAL mode, so this is
// two first opens meeting (seen once in CI: two threads of tst_skills_views opening a new
// library). Retry as long as the busy timeout would have waited.
std::string switchToWal(sqlite3 *db) {
  using namespace std::chrono;
  const auto deadline = steady_clock::now() + milliseconds(kBusyTimeoutMs);
  for (int attempt = 1;; ++attempt) {
    sqlite3_stmt *stmt = nullptr;
    int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &stmt, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
    const unsigned char *text = rc == SQLITE_ROW ? sqlite3_column_text(stmt, 0) : nullptr;
    const std::string mode = text ? reinterpret_cast<const char *>(text) : "";
    const std::string message = sqlite3_errmsg(db);
    sqlite3_finalize(stmt);
    if (rc == SQLITE_ROW) return mode;
    if ((rc & 0xff) != SQLITE_BUSY) fail(fileOf(db), "\"PRAGMA journal_mode=WAL\" failed", message);
    if (steady_clock::now() >= deadline) {
      fail(fileOf(db), "cannot switch the database to write-ahead logging",
           message + " (another process kept it locked for " + std::to_string(kBusyTimeoutMs / 1000) +
               " s; close other Kernel Workbench windows using it and try again)");
    }
    std::this_thread::sleep_for(milliseconds(attempt < 10 ? 5 * attempt : 50));
  }
}

// What a kind of file is called, how a file made before the kinds were marked shows which it is
// (tables only it has), and what to do about it when it was given where another belongs.
struct KindInfo {
  DatabaseKind kind;
  std::int32_t id;                 // its application_id: four ASCII letters
  const char *name;
  const char *noun;  // in "cannot open the ..."
  std::vector<std::string> tables;
  const char *want;  // where a file of this kind is given, when another kind was
  const char *use;   // what this kind is opened with, when it was given where another belongs
};

constexpr std::int32_t fourLetters(const char (&s)[5]) {
  return (std::int32_t(s[0]) << 24) | (std::int32_t(s[1]) << 16) | (std::int32_t(s[2]) << 8) | std::int32_t(s[3]);
}

const std::vector<KindInfo> &kinds() {
  static const std::vector<KindInfo> all = {
      {DatabaseKind::Workspace, fourLetters("KWBW"), "Kernel Workbench workspace", "workspace database", {"tasks", "candidates"},
       "pass a workspace (the workbench's own is ~/.local/share/kernel-workbench/workspace.kwb)",
       "a workspace is given with --workspace"},
      {DatabaseKind::Library, fourLetters("KWBL"), "Kernel Workbench skill library", "skill library",
       {"skill_cards", "lineage_steps", "memory_cases"},
       "pass the skill library with --library or $KWB_LIBRARY (by default "
       "~/.local/share/kernel-workbench/library.sqlite)",
       "a skill library is read and changed with `kwb skills` and `kwb memory` (--library or $KWB_LIBRARY)"},
      {DatabaseKind::TuneCache, fourLetters("KWBT"), "Kernel Workbench tuning cache", "tuning cache", {"tune_points"},
       "pass a tuning cache with --cache (by default ~/.cache/kernel-workbench/tune.sqlite)",
       "a tuning cache is given with `kwb tune --cache`"},
  };
  return all;
}

const KindInfo *infoOf(DatabaseKind kind) {
  for (const KindInfo &info : kinds())
    if (info.kind == kind) return &info;
  return nullptr;
}

}  // namespace

std::string kindName(DatabaseKind kind) {
  const KindInfo *info = infoOf(kind);
  return info ? info->name : "Kernel Workbench database";
}

std::int32_t applicationIdOf(DatabaseKind kind) {
  const KindInfo *info = infoOf(kind);
  return info ? info->id : 0;
}

namespace {

// What the file db has open is, read without writing: its application_id, else (unmarked: made
// before the mark, or new) its tables. Returns the id found: expected's own, or 0 for an unmarked
// file of the expected kind or an empty one. Throws StoreError, naming both kinds, for a file of
// another kind or of another application.
std::int32_t checkKind(Database &db, const std::string &file, DatabaseKind expected) {
  const KindInfo &want = *infoOf(expected);
  const auto refuse = [&](const std::string &is, const char *use) -> std::int32_t {
    throw StoreError(file + " is " + is + ", not a " + want.name + ", and was left as it is: " + want.want +
                     (use ? std::string("; ") + use : std::string()));
  };
  const std::string mark = db.pragma("application_id");
  const std::int32_t id = mark.empty() ? 0 : static_cast<std::int32_t>(std::stoll(mark));
  if (id == want.id) return id;
  if (id != 0) {
    for (const KindInfo &other : kinds())
      if (other.id == id) return refuse(std::string("a ") + other.name, other.use);
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", static_cast<unsigned>(id));
    return refuse(std::string("a SQLite database of another application (application_id ") + hex + ")", nullptr);
  }
  std::vector<std::string> tables;
  for (Statement query = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
       query.step();)
    tables.push_back(query.columnText(0));
  if (tables.empty()) return 0;
  std::vector<const KindInfo *> like;
  for (const KindInfo &info : kinds()) {
    if (std::any_of(info.tables.begin(), info.tables.end(),
                    [&](const std::string &t) { return std::find(tables.begin(), tables.end(), t) != tables.end(); }))
      like.push_back(&info);
  }
  if (like.size() == 1 && like.front()->kind == expected) return 0;
  if (like.size() == 1) return refuse(std::string("a ") + like.front()->name + " (made before files were marked)", like.front()->use);
  return refuse("a SQLite database of another application (its tables are no Kernel Workbench file's)", nullptr);
}

}  // namespace

std::string utcTimestamp() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto whole = floor<seconds>(now);
  const auto millis = duration_cast<milliseconds>(now - whole).count();
  const std::time_t seconds = system_clock::to_time_t(whole);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char date[24];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &utc);
  char result[32];
  std::snprintf(result, sizeof result, "%s.%03dZ", date, static_cast<int>(millis));
  return result;
}

// ---------------------------------------------------------------------------------------------
// Statement

Statement::Statement(sqlite3 *db, std::string_view sql) : db_(db) {
  if (!db_) throw StoreError("prepare on a closed database: " + excerpt(sql));
  const char *tail = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt_, &tail);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    failWith(db_, "cannot prepare \"" + excerpt(sql) + "\"");
  }
  if (!stmt_) fail(fileOf(db_), "cannot prepare \"" + excerpt(sql) + "\"", "no statement in the text");
  // One statement per Statement: anything after it would be silently ignored otherwise.
  const std::string_view rest = sql.substr(static_cast<std::size_t>(tail - sql.data()));
  if (rest.find_first_not_of(" \t\r\n;") != std::string_view::npos) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    fail(fileOf(db_), "cannot prepare \"" + excerpt(sql) + "\"",
         "more than one statement (use Database::exec for scripts)");
  }
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement::Statement(Statement &&other) noexcept
    : db_(std::exchange(other.db_, nullptr)), stmt_(std::exchange(other.stmt_, nullptr)) {}

namespace {
void checkBind(sqlite3 *db, sqlite3_stmt *stmt, int rc, int index) {
  if (rc != SQLITE_OK) {
    failWith(db, "cannot bind parameter " + std::to_string(index) + " of \"" +
                     excerpt(sqlite3_sql(stmt) ? sqlite3_sql(stmt) : "") + "\"");
  }
}
void checkLive(sqlite3_stmt *stmt) {
  if (!stmt) throw StoreError("use of a moved-from Statement");
}
}  // namespace

Statement &Statement::bind(int index, std::int64_t value) {
  checkLive(stmt_);
  checkBind(db_, stmt_, sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement &Statement::bind(int index, double value) {
  checkLive(stmt_);
  checkBind(db_, stmt_, sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement &Statement::bind(int index, std::string_view text) {
  checkLive(stmt_);
  // A null pointer would bind SQL NULL; an empty string must stay an empty string.
  const char *data = text.data() ? text.data() : "";
  checkBind(db_, stmt_, sqlite3_bind_text64(stmt_, index, data, text.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
            index);
  return *this;
}

Statement &Statement::bindBlob(int index, const void *data, std::size_t size) {
  checkLive(stmt_);
  const int rc = (size == 0) ? sqlite3_bind_zeroblob(stmt_, index, 0)
                             : sqlite3_bind_blob64(stmt_, index, data, size, SQLITE_TRANSIENT);
  checkBind(db_, stmt_, rc, index);
  return *this;
}

Statement &Statement::bindNull(int index) {
  checkLive(stmt_);
  checkBind(db_, stmt_, sqlite3_bind_null(stmt_, index), index);
  return *this;
}

bool Statement::step() {
  checkLive(stmt_);
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Take the message before reset, which leaves the statement ready to run again.
  const std::string message = sqlite3_errmsg(db_);
  const std::string sql = excerpt(sqlite3_sql(stmt_) ? sqlite3_sql(stmt_) : "");
  sqlite3_reset(stmt_);
  fail(fileOf(db_), "\"" + sql + "\" failed", message);
}

void Statement::run() {
  while (step()) {
  }
  sqlite3_reset(stmt_);
}

void Statement::reset() {
  checkLive(stmt_);
  // sqlite3_reset repeats the last step's error code, which step() has already reported.
  sqlite3_reset(stmt_);
}

std::int64_t Statement::columnInt(int index) const {
  checkLive(stmt_);
  return sqlite3_column_int64(stmt_, index);
}

double Statement::columnDouble(int index) const {
  checkLive(stmt_);
  return sqlite3_column_double(stmt_, index);
}

std::string Statement::columnText(int index) const {
  checkLive(stmt_);
  const auto *text = sqlite3_column_text(stmt_, index);
  const int size = sqlite3_column_bytes(stmt_, index);  // after column_text, as SQLite asks
  if (!text) return {};
  return std::string(reinterpret_cast<const char *>(text), static_cast<std::size_t>(size));
}

std::vector<unsigned char> Statement::columnBlob(int index) const {
  checkLive(stmt_);
  const auto *data = static_cast<const unsigned char *>(sqlite3_column_blob(stmt_, index));
  const int size = sqlite3_column_bytes(stmt_, index);
  if (!data || size <= 0) return {};
  return std::vector<unsigned char>(data, data + size);
}

bool Statement::columnIsNull(int index) const {
  checkLive(stmt_);
  return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

// ---------------------------------------------------------------------------------------------
// Database

Database::Database(const std::filesystem::path &path, Mode mode, DatabaseKind kind)
    : path_(path), readOnly_(mode == Mode::ReadOnly), kind_(kind) {
  const std::string file = path_.string();
  const std::string noun = infoOf(kind == DatabaseKind::Any ? DatabaseKind::Workspace : kind)->noun;
  const std::string opening = "cannot open " + noun;
  if (mode != Mode::OpenOrCreate) {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) {
      throw StoreError(file + ": " + opening + ": the file does not exist");
    }
  }

  {
    // Only a regular file is a workspace: `--workspace /dev/null` as root left /dev/null-journal
    // beside the device (issue 17, 6).
    std::error_code ec;
    const auto status = std::filesystem::status(path_, ec);
    if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
      throw StoreError(file + ": " + opening + ": not a regular file");
  }
  if (mode == Mode::OpenOrCreate) {
    // A new workspace is the user's alone (0600; SQLite gives its journal the same mode): it
    // holds LLM transcripts and sources. Created here so that the umask's 0644 never applies.
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) ::close(fd);
  }
  int flags = (readOnly_ ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX;
  if (mode == Mode::OpenOrCreate) flags |= SQLITE_OPEN_CREATE;
  // Read-only: a WAL database is readable without its -shm file (which cannot be made here)
  // only as "immutable": no locks, no log. What a writer elsewhere has not checkpointed yet is
  // not seen; nothing can be damaged.
  const std::string name = readOnly_ ? "file:" + uriPath(file) + "?immutable=1" : file;
  const int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    fail(file, opening, message);
  }
  sqlite3_extended_result_codes(db_, 1);

  try {
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);

    // SQLite opens lazily: the first read of the header is where a foreign file shows itself.
    {
      sqlite3_stmt *probe = nullptr;
      int probeRc = sqlite3_prepare_v2(db_, "SELECT count(*) FROM sqlite_master", -1, &probe, nullptr);
      if (probeRc == SQLITE_OK) probeRc = sqlite3_step(probe);
      const std::string message = sqlite3_errmsg(db_);
      sqlite3_finalize(probe);
      if ((probeRc & 0xff) == SQLITE_NOTADB) {
        fail(file, "not a SQLite database, so not a " + kindName(kind == DatabaseKind::Any ? DatabaseKind::Workspace : kind), message);
      }
      if (probeRc != SQLITE_ROW) fail(file, "cannot read " + noun, message);
    }

    // A file of another kind is refused here, before the journal switch (a write when the file
    // is not in WAL mode yet) or anything else writes to it (issue 45: a skill library given as a
    // workspace was migrated as one and ruined).
    const std::int32_t mark = kind == DatabaseKind::Any ? 0 : checkKind(*this, file, kind);

    // Write-ahead log: readers never block the writer, and a commit is one append to the log.
    // A read-only reader takes the file as it is.
    const std::string journal = readOnly_ ? std::string("wal") : switchToWal(db_);
    if (journal != "wal") {
      fail(file, "cannot switch the database to write-ahead logging",
           "journal_mode is \"" + journal + "\" (is the file on a network or read-only filesystem?)");
    }

    // synchronous=FULL: every COMMIT fsyncs the log before it returns. In WAL mode NORMAL would
    // already keep committed transactions through a killed process (the log is in the OS page
    // cache), but a power cut or kernel crash could lose the last commits. The design promises
    // that nothing is lost on a crash, and workspace writes are few and small (a task opened, a
    // candidate saved), so the extra fsync per commit is worth it.
    if (!readOnly_) exec("PRAGMA synchronous=FULL");

    exec("PRAGMA foreign_keys=ON");
    if (pragma("foreign_keys") != "1") {
      fail(file, "cannot enable foreign keys", "this SQLite was built without them");
    }

    // An unmarked file of this kind (or a new one) gets its mark, checked again under the write
    // lock: another process may have marked it meanwhile.
    if (kind != DatabaseKind::Any && mark == 0 && !readOnly_) {
      transaction([&] {
        if (checkKind(*this, file, kind) == 0) exec("PRAGMA application_id=" + std::to_string(applicationIdOf(kind)));
      });
    }
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

Database::~Database() {
  // close_v2 defers the close until any Statement still alive is finalized.
  sqlite3_close_v2(db_);
}

void Database::exec(std::string_view sql) {
  if (!db_) throw StoreError(path_.string() + ": exec on a closed database");
  const std::string script(sql);  // sqlite3_exec wants a terminated string
  char *error = nullptr;
  const int rc = sqlite3_exec(db_, script.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    const std::string message = error ? error : sqlite3_errmsg(db_);
    sqlite3_free(error);
    fail(fileOf(db_), "\"" + excerpt(sql) + "\" failed", message);
  }
}

Statement Database::prepare(std::string_view sql) {
  return Statement(db_, sql);
}

void Database::transaction(const std::function<void()> &fn) {
  if (!db_) throw StoreError(path_.string() + ": transaction on a closed database");
  if (readOnly_) {
    throw StoreError(path_.string() + ": cannot change it: it is open read-only, because this user may not write the " +
                     "file or its folder (nothing was changed; give this user write access to both, or work on a copy)");
  }

  if (sqlite3_get_autocommit(db_) == 0) {
    // Already inside a transaction: nest as a savepoint, so the inner work can be undone alone
    // and the outer transaction still decides what is committed. SQLite matches the most recent
    // savepoint of a name, so one name serves every depth.
    exec("SAVEPOINT kwb_nested");
    try {
      fn();
      exec("RELEASE kwb_nested");
    } catch (...) {
      // Some errors (I/O, out of memory) make SQLite roll the whole transaction back itself;
      // then there is no savepoint left, and the original exception is what matters.
      if (sqlite3_get_autocommit(db_) == 0) {
        sqlite3_exec(db_, "ROLLBACK TO kwb_nested; RELEASE kwb_nested", nullptr, nullptr, nullptr);
      }
      throw;
    }
    return;
  }

  // IMMEDIATE takes the write lock up front, so the transaction cannot fail half way with
  // SQLITE_BUSY when a read would have to be upgraded to a write; the busy timeout waits instead.
  exec("BEGIN IMMEDIATE");
  try {
    fn();
    exec("COMMIT");
  } catch (...) {
    if (sqlite3_get_autocommit(db_) == 0) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    throw;
  }
}

std::int64_t Database::lastInsertId() const {
  return db_ ? sqlite3_last_insert_rowid(db_) : 0;
}

bool Database::writable(const std::filesystem::path &path) {
  const auto folder = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  return ::access(path.c_str(), W_OK) == 0 && ::access(folder.c_str(), W_OK) == 0;
}

std::string Database::pragma(std::string_view name) {
  Statement statement = prepare("PRAGMA " + std::string(name));
  if (!statement.step()) return {};
  return statement.columnText(0);
}

}  // namespace kwb
