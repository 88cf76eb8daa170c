#pragma once
// A thin RAII layer over SQLite: one connection, prepared statements, transactions.
// Every write goes through transaction(); errors throw StoreError with SQLite's message.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace kwb {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The current time in UTC as ISO 8601 with milliseconds ("2024-05-01T12:34:56.789Z"), the
// format of every timestamp column; it sorts as text in time order.
std::string utcTimestamp();

class Statement {
 public:
  Statement(sqlite3 *db, std::string_view sql);
  ~Statement();
  Statement(const Statement &) = delete;
  Statement &operator=(const Statement &) = delete;
  Statement(Statement &&other) noexcept;

  Statement &bind(int index, std::int64_t value);
  Statement &bind(int index, double value);
  Statement &bind(int index, std::string_view text);
  Statement &bindBlob(int index, const void *data, std::size_t size);
  Statement &bindNull(int index);
  // Returns true while a row is available.
  bool step();
  // Runs to completion (for writes).
  void run();
  void reset();

  std::int64_t columnInt(int index) const;
  double columnDouble(int index) const;
  std::string columnText(int index) const;
  std::vector<unsigned char> columnBlob(int index) const;
  bool columnIsNull(int index) const;

 private:
  sqlite3 *db_ = nullptr;
  sqlite3_stmt *stmt_ = nullptr;
};

// The kinds of file Kernel Workbench keeps in SQLite. Each is marked with its own application_id
// (a number in the file's header: ASCII "KWBW", "KWBL", "KWBT"), so that an open for one kind
// refuses another before it writes anything; files made before the mark are recognised by their
// tables, and marked when opened for writing. Any: no check (tests, tools).
enum class DatabaseKind { Any, Workspace, Library, TuneCache };
// "Kernel Workbench workspace", "Kernel Workbench skill library", ...
std::string kindName(DatabaseKind kind);
std::int32_t applicationIdOf(DatabaseKind kind);

class Database {
 public:
  // Opens (creating when allowed) with WAL, foreign keys on and a busy timeout. ReadOnly opens
  // an existing file for reading only (a workspace on a read-only disk, or another user's file):
  // no journal switch, every write fails. With a kind, a file of another kind (or another
  // application's) is refused before anything is written to it, naming both kinds.
  enum class Mode { OpenOrCreate, OpenExisting, ReadOnly };
  explicit Database(const std::filesystem::path &path, Mode mode = Mode::OpenOrCreate,
                    DatabaseKind kind = DatabaseKind::Any);
  // Whether this process may write the file and its folder (SQLite writes its -wal and -shm
  // beside it); false means it can only be opened ReadOnly.
  static bool writable(const std::filesystem::path &path);
  ~Database();
  Database(const Database &) = delete;
  Database &operator=(const Database &) = delete;

  const std::filesystem::path &path() const { return path_; }
  bool readOnly() const { return readOnly_; }
  DatabaseKind kind() const { return kind_; }
  void exec(std::string_view sql);
  Statement prepare(std::string_view sql);
  // Runs fn inside BEGIN IMMEDIATE ... COMMIT; rolls back and rethrows on an exception.
  // Called inside another transaction it nests as a SAVEPOINT: an exception undoes only the
  // inner work, and nothing is durable until the outermost transaction commits.
  void transaction(const std::function<void()> &fn);
  std::int64_t lastInsertId() const;
  std::string pragma(std::string_view name);  // first column of the first row, as text

 private:
  std::filesystem::path path_;
  sqlite3 *db_ = nullptr;
  bool readOnly_ = false;
  DatabaseKind kind_ = DatabaseKind::Any;
};

}  // namespace kwb
