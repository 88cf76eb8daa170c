#pragma once
// A workspace: one SQLite file holding the tasks a user works on, candidate sources
// (content-addressed) and, in later schema versions, results, sessions and lineages.
// Opening migrates an older file forward; a file from a newer version is refused.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/store/database.h"

namespace kwb {

struct TaskRecord {
  std::int64_t id = 0;
  std::string name;
  std::string folder;        // absolute path of the task folder
  std::string manifestHash;  // content hash of task.toml when last opened
  std::string addedAt;       // UTC, ISO 8601
  std::string lastOpenedAt;  // UTC, ISO 8601
};

struct CandidateRecord {
  std::int64_t id = 0;
  std::int64_t taskId = 0;
  std::string sourceHash;
  std::string label;
  std::string createdAt;
};

class Workspace {
 public:
  static constexpr int kSchemaVersion = 2;

  // Creates the file when missing, migrates it when older. Throws StoreError.
  static std::unique_ptr<Workspace> open(const std::filesystem::path &path);

  int schemaVersion();
  const std::filesystem::path &path() const { return db_.path(); }
  Database &database() { return db_; }

  // Adds the task, or updates name/hash/last-opened when the folder is already known.
  TaskRecord recordTaskOpened(const std::string &name, const std::string &folder,
                              const std::string &manifestHash);
  std::vector<TaskRecord> tasks();  // in the order they were first added
  std::optional<TaskRecord> taskByFolder(const std::string &folder);

  // Stores source text once per content; returns its hash.
  std::string putSource(const std::string &text);
  std::optional<std::string> source(const std::string &hash);
  // Stores the source and the candidate in one transaction. Throws StoreError (foreign key)
  // when the task is unknown; nothing is stored then.
  CandidateRecord addCandidate(std::int64_t taskId, const std::string &sourceText, const std::string &label);
  std::vector<CandidateRecord> candidates(std::int64_t taskId);  // oldest first

 private:
  explicit Workspace(const std::filesystem::path &path);
  Database db_;
};

}  // namespace kwb
