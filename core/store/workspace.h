#pragma once
// A workspace: one SQLite file holding the tasks a user works on, candidate sources
// (content-addressed), the history of evaluation runs and, in later schema versions, sessions
// and lineages.
// Opening migrates an older file forward; a file from a newer version is refused.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
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

// One evaluation run in the history of a task.
struct EvaluationRecord {
  std::int64_t id = 0;
  std::int64_t taskId = 0;
  std::string taskName;    // the task's name when it ran
  std::string sourceHash;  // the candidate's text is source(sourceHash)
  std::string sourceName;  // the file it came from, for the reader
  std::string startedAt;   // UTC, ISO 8601
  std::string finishedAt;
  std::string outcome;     // as kwb::toString(Outcome) writes it: "correct", "compile-error", ...
  std::string message;
  std::string arch;
  std::string device;      // empty when no GPU ran it
  std::string resultJson;  // kwb::evaluationResultText() (core/eval/evaluation_result.h)
};

// One LLM request and its answer (core/llm's TranscriptEntry as stored; keys already redacted).
struct LlmTranscriptRecord {
  std::int64_t id = 0;
  std::string session;  // the agent session that sent it; empty for a connection test
  std::string provider, model, url;
  std::string requestHeaders, requestBody, responseText, responseRaw;
  int status = 0;
  int attempts = 0;
  std::string outcome;  // "complete", "incomplete", "cancelled", "error"
  std::string error;
  std::int64_t inputTokens = 0, outputTokens = 0;
  bool usageReported = false;
  double cost = 0, seconds = 0;
  std::string startedAt;
};

class Workspace {
 public:
  static constexpr int kSchemaVersion = 8;

  // Creates the file when missing, migrates it when older. Throws StoreError.
  static std::unique_ptr<Workspace> open(const std::filesystem::path &path);
  // For reading what a workspace holds (kwb sessions, llm transcripts, trajectories export): a
  // missing file is an error naming the path (a mistyped --workspace creates nothing), and a file
  // this process may not write (or in a folder it may not write) is opened read-only, as long as
  // it needs no migration. Throws StoreError.
  static std::unique_ptr<Workspace> openExisting(const std::filesystem::path &path);
  bool readOnly() const { return db_.readOnly(); }

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

  // Stores the source and the run in one transaction; id and sourceHash of `run` are ignored
  // and set in the record returned, an empty startedAt or finishedAt is taken as now. Throws
  // StoreError (foreign key) when the task is unknown; nothing is stored then.
  EvaluationRecord addEvaluation(const EvaluationRecord &run, const std::string &sourceText);
  // A task's runs, newest first (at most `limit` of them; 0: all), without their resultJson.
  std::vector<EvaluationRecord> evaluations(std::int64_t taskId, std::size_t limit = 0);
  // One run with its resultJson.
  std::optional<EvaluationRecord> evaluation(std::int64_t id);

  // LLM transcripts. Thread-safe with each other (a provider may record from several threads).
  LlmTranscriptRecord addLlmTranscript(const LlmTranscriptRecord &record);
  // Oldest first; limit 0 = all.
  std::vector<LlmTranscriptRecord> llmTranscripts(const std::string &session, std::size_t limit = 0);

 private:
  Workspace(const std::filesystem::path &path, Database::Mode mode);
  std::mutex transcriptMutex_;
  Database db_;
};

}  // namespace kwb
