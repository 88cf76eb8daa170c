#pragma once
// An agent session as the workspace keeps it (schema version 5: agent_sessions, agent_groups,
// agent_attempts; core/store/migrations.cpp). Every state change is one transaction, so a
// session killed at any moment resumes from what was committed: an attempt is stored once its
// answer has arrived (state "answered") and completed once evaluated ("evaluated"). Thread-safe:
// the session's worker threads write through one store. No Qt.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/agent/leap.h"
#include "core/llm/provider.h"
#include "core/store/workspace.h"

namespace kwb::agent {

// What a group's candidates must do to count as a success.
enum class Goal {
  Compiles,  // no GPU: only the compile and the launch checks can be judged
  Correct,   // no correct kernel yet
  Faster,    // correct and faster than the incumbent by at least SessionSettings::minGain
};
const char *toString(Goal goal);  // "compiles", "correct", "faster"
std::optional<Goal> goalFromName(const std::string &name);

// A session's state: "running" while a process works on it (or was killed while it did),
// "paused" (resumable), "finished" (a budget or the group limit ended it; resumable with more),
// "stopped" (by the user), "failed" (something the session cannot get past without the user).
enum class SessionState { Running, Paused, Finished, Stopped, Failed };
const char *toString(SessionState state);
std::optional<SessionState> sessionStateFromName(const std::string &name);

struct SessionSettings {
  std::string taskFolder;              // absolute
  std::string provider;                // a configured provider's name, or a base URL
  std::string model;                   // empty: the provider's default
  std::size_t candidates = 4;          // G per group, 1..16
  DcpSettings dcp;                     // maxTurns = K
  double discount = 0.5;               // the turn credit's discount (LEAP: positive credit passed back)
  double minGain = 0.02;               // "faster" means at least this much faster than the incumbent
  double timeTolerance = 0.01;         // rank ties within this relative time
  // Budgets; unset: no limit. A reached budget starts no new request; what runs finishes.
  std::optional<double> dollars;
  std::optional<std::int64_t> tokens;  // input + output, over the whole session
  std::optional<double> wallSeconds;   // time spent running, over every resume
  std::size_t groups = 3;              // groups in all (each one goal, G candidates, up to K turns)
  int maxTokens = 4096;                // per answer
  std::optional<double> temperature = 0.7;
  // Evaluation.
  std::vector<std::string> configs;    // empty: all of the task's
  double timingCapSeconds = 1.0;       // per configuration
  double timeLimitSeconds = 120.0;     // per worker request
  bool useDevice = true;               // false: compile only, even with a GPU
  bool profile = true;                 // with a GPU: the profiler's bottleneck summary of the incumbent and of
                                       // correct candidates under repair goes into the prompts
  bool sanitizeBest = true;            // with a GPU: compute-sanitizer (all four tools, smallest config) on a
                                       // kernel before it becomes the session's best; its errors make it incorrect
  bool skills = true;                  // with a skill library: cards chosen for the kernel go into the prompts
  int skillCards = 3;                  // the most cards a prompt carries
  bool proposedCards = false;          // also proposed (unproven) cards, not only admitted and approved ones;
                                       // each attempt's context record says so
  bool memory = true;                  // with an experience memory: ranked experience goes into every turn
  std::size_t contextWindow = 0;       // W, the model's window in tokens; 0: the provider's (ProviderConfig::
                                       // contextWindow), else llm::kAssumedContextWindow. The experience's
                                       // budget is max(0, W - system - answer limit - recency - the rest)
  std::string starterHash;             // the kernel to start from (in the store's sources); empty: the task's starter
  std::string starterName;             // its file name, for the log
};
void to_json(nlohmann::json &j, const SessionSettings &s);
void from_json(const nlohmann::json &j, SessionSettings &s);

// The kernel a group improves on, with what was measured for it.
struct Incumbent {
  std::string sourceHash;              // empty: none (no starter)
  std::string outcome;                 // its evaluation's outcome
  std::optional<double> ms;            // correct and timed: the geometric mean over configurations
  std::optional<double> speedup;       // against the task's reference (geometric mean)
  std::int64_t attemptId = 0;          // 0: the task's starter
  std::string feedback;                // its evaluation in the prompt's words
};
void to_json(nlohmann::json &j, const Incumbent &v);
void from_json(const nlohmann::json &j, Incumbent &v);

struct SessionRecord {
  std::string id;
  std::int64_t taskId = 0;
  std::string taskName;
  std::string provider, model;
  SessionSettings settings;
  SessionState state = SessionState::Running;
  std::string stopReason;
  std::optional<Incumbent> baseline;   // the starter as measured when the session began
  double elapsedSeconds = 0;
  std::string createdAt, updatedAt;
};

struct GroupRecord {
  std::int64_t id = 0;
  std::string sessionId;
  int ordinal = 0;                     // 1-based within the session
  Goal goal = Goal::Correct;
  std::string incumbentHash;
  std::optional<double> incumbentMs;
  bool done = false;
  std::optional<DcpDecision> dcp;      // after the first turn
  std::string createdAt, finishedAt;
};

struct AttemptRecord {
  std::int64_t id = 0;
  std::int64_t groupId = 0;
  int line = 1, turn = 1;              // 1-based
  std::int64_t parentId = 0;           // the same line's previous turn (0: none)
  bool evaluated = false;
  std::vector<llm::Message> messages;  // what was sent
  std::string responseText, finishReason;
  std::string answerOutcome, answerNote;  // core/agent/answer.h's names
  std::string sourceHash;              // the code taken from the answer (empty: none)
  std::int64_t evaluationId = 0;       // the workspace's run history row (0: not evaluated by the GPU or compiler)
  std::string outcome;                 // evaluation outcome, or the answer's ("no-code", ...)
  std::string message;
  std::string feedback;                // what the next turn is told about it
  bool success = false;                // met its group's goal
  std::optional<double> ms, speedup;
  std::optional<double> reward, credit;
  std::int64_t inputTokens = 0, outputTokens = 0;
  double cost = 0, llmSeconds = 0, evalSeconds = 0;
  std::string createdAt, evaluatedAt;
  std::vector<std::string> cards;      // skill ids the prompt carried (a repair: its line's first turn's)
  // The experience memory's part of the prompt: what was included and left, and why
  // (AssembledContext::record()); null when the memory was not used.
  nlohmann::json context;
};

void to_json(nlohmann::json &j, const DcpDecision &d);
void from_json(const nlohmann::json &j, DcpDecision &d);
nlohmann::json messagesToJson(const std::vector<llm::Message> &messages);
std::vector<llm::Message> messagesFromJson(const nlohmann::json &j);

// Totals over a session's attempts.
struct SessionTotals {
  std::size_t attempts = 0, evaluated = 0, successes = 0;
  std::int64_t inputTokens = 0, outputTokens = 0;
  double cost = 0;
  std::optional<double> bestMs, bestSpeedup;
  std::int64_t bestAttemptId = 0;
};

// What a session's requests cost, from its transcripts (every request, answered or not).
struct SessionSpend {
  std::int64_t requests = 0, tokens = 0;  // tokens: input + output
  double cost = 0;
  // Requests whose answer the server cut for another request (asked again), and those whose
  // answer broke off and was lost (the session asks them again on resume).
  std::int64_t interrupted = 0, incomplete = 0;
};

class SessionStore {
 public:
  // Opens (and migrates) the workspace file.
  explicit SessionStore(const std::filesystem::path &workspaceFile);
  explicit SessionStore(std::shared_ptr<Workspace> workspace);
  Workspace &workspace() { return *workspace_; }
  // Runs `work` on the workspace while holding the store's connection (no other thread of a
  // session writes meanwhile).
  void withWorkspace(const std::function<void(Workspace &)> &work);

  // A new session row for the task (recorded as opened); the id is "YYYYMMDD-HHMMSS-xxxx".
  SessionRecord createSession(const std::string &taskName, const std::string &taskFolder, const std::string &manifestHash,
                              const std::string &provider, const std::string &model, const SessionSettings &settings);
  std::optional<SessionRecord> session(const std::string &id);
  std::vector<SessionRecord> sessions();  // newest first
  void setState(const std::string &id, SessionState state, const std::string &reason = {});
  void setBaseline(const std::string &id, const Incumbent &baseline);
  void setSettings(const std::string &id, const SessionSettings &settings);
  void addElapsed(const std::string &id, double seconds);

  GroupRecord addGroup(const std::string &sessionId, int ordinal, Goal goal, const Incumbent &incumbent);
  void setDcp(std::int64_t groupId, const DcpDecision &decision);
  void finishGroup(std::int64_t groupId);
  std::vector<GroupRecord> groups(const std::string &sessionId);  // by ordinal

  // An answer arrived: stores its code (when any) and the attempt; id and evaluated ignored.
  AttemptRecord addAttempt(const AttemptRecord &attempt, const std::string &sourceText);
  // The attempt's evaluation (fields outcome..evalSeconds, evaluationId) and, when `run` is
  // given, the run history row; marks it evaluated.
  void setEvaluation(AttemptRecord &attempt, const std::optional<EvaluationRecord> &run, const std::string &sourceText);
  void setRewards(std::int64_t attemptId, double reward, double credit);
  std::vector<AttemptRecord> attempts(std::int64_t groupId);                 // by line, then turn
  std::vector<AttemptRecord> sessionAttempts(const std::string &sessionId);  // by group, line, turn
  std::optional<std::string> source(const std::string &hash);
  // The profiler's bottleneck summary of a source, once per session (agent_profiles).
  void setProfile(const std::string &sessionId, const std::string &sourceHash, const std::string &summary);
  std::optional<std::string> profile(const std::string &sessionId, const std::string &sourceHash);
  SessionTotals totals(const std::string &sessionId);

  void addTranscript(const llm::TranscriptEntry &entry, const std::string &sessionId);
  SessionSpend spend(const std::string &sessionId);

 private:
  std::shared_ptr<Workspace> workspace_;
  std::mutex mutex_;  // one connection: one writer at a time
};

}  // namespace kwb::agent
