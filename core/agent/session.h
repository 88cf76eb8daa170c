#pragma once
// An agent session (issue 16): an LLM improves a task's kernel group by group. A group asks for
// G candidates for one goal (correct first, then correct and faster than the incumbent),
// concurrently within the provider's limit; each answer's code is evaluated, concurrently over
// the GPU pool (compile only without a GPU). After the group's first turn LEAP's
// Difficulty-Conditioned Pruning decides whether the failed candidates get repair turns with
// their feedback (up to K turns in all); when the group is over its attempts get rank-based
// rewards and per-turn credits, and the best success becomes the next group's incumbent.
//
// Everything is in the workspace as it happens (SessionStore): a session stopped, paused or
// killed resumes where it was, asking again only for answers that had not arrived. Budgets
// (dollars, tokens, wall time, groups) stop new requests; what runs finishes. No Qt; run() blocks
// and reports through the event callback from its own and its worker threads.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/agent/session_store.h"
#include "core/eval/evaluator.h"
#include "core/eval/evaluator_pool.h"
#include "core/llm/provider.h"
#include "core/memory/context_assembly.h"
#include "core/task/task.h"

namespace kwb {
class SkillLibrary;
}

namespace kwb::agent {

struct SessionEvent {
  enum class Kind {
    State,       // the session's state changed (state, text: the reason)
    Message,     // a line for the log (text)
    Baseline,    // the starter was measured (text: its summary)
    Requesting,  // a request for (group, line, turn) went out
    Text,        // text of that answer arrived (text: the new piece)
    Answered,    // the answer was parsed and stored (attempt)
    Evaluated,   // its evaluation is in (attempt)
    Dcp,         // a group's DCP decision (text: the reason)
    Rewarded,    // an attempt's reward and credit, when its group ended (attempt)
    GroupDone,   // a group ended, rewards given (text: a summary)
    Best,        // a new best kernel (attempt)
  };
  Kind kind = Kind::Message;
  int group = 0, line = 0, turn = 0;
  std::string text;
  SessionState state = SessionState::Running;
  std::optional<AttemptRecord> attempt;
  std::string source;  // Answered, Evaluated: the code taken from the answer (empty: none);
                       // a group's first Message: its incumbent's code (empty: none)
};

struct SessionServices {
  std::shared_ptr<SessionStore> store;
  llm::ProviderConfig provider;        // model: the session's
  std::string apiKey;
  // GPUs to evaluate on; null (or without devices): compile only.
  std::shared_ptr<EvaluatorPool> pool;
  // Why there is no GPU when one was wanted (salloc's refusal, no CUDA device, ...): said as a
  // Message at the start of each run. Empty: nothing said.
  std::string noDevice;
  // The settings of the pool's evaluators: compile-only evaluations use them, and so does each
  // line's thread compiling its candidate before it queues for a GPU (the compile cache on disk
  // hands the result over), so compiles overlap other candidates' GPU time.
  EvaluatorSettings evaluator;
  std::filesystem::path promptsUserDir, promptsBundledDir;  // empty: the defaults (prompt_templates.h)
  // The user's skill library (core/lineage): admitted and approved cards chosen for the group's
  // kernel go into its turns (SessionSettings::skills, proposedCards), and each gated evaluation
  // of an attempt that carried cards adds to their evidence. Null: no cards.
  std::shared_ptr<SkillLibrary> skills;
  // The user's experience memory (core/memory): ranked experience of this task and others goes
  // into every turn, within the context budget (SessionSettings::memory, contextWindow), and what
  // was included, and why, is stored with the attempt; each evaluated attempt is recorded as a
  // Case when its evaluation ends. Null: none.
  std::shared_ptr<memory::ExperienceStore> memory;
  // Lines of a turn worked on at once (each: its request, then its evaluation); 0: all of them.
  // 1 runs a turn's candidates one after another (the overhead benchmark's comparison).
  std::size_t parallelLines = 0;
};

// The geometric mean of a correct evaluation's candidate medians and of its speedups; nullopt
// unless every configuration was timed.
std::optional<double> objectiveMs(const EvaluationResult &result);
std::optional<double> objectiveSpeedup(const EvaluationResult &result);
// What a session's answers came to, in words ("36 answers: 0 compiled (0 correct), 27 had no code,
// 9 were empty"): the end of a finished session's reason.
std::string answersSummary(const std::vector<AttemptRecord> &attempts);

class Session {
 public:
  using EventSink = std::function<void(const SessionEvent &)>;

  // A new session in the store for `task` (its folder, name and manifest recorded). Throws
  // std::invalid_argument for settings out of range (G outside 1..16, no turn, no group).
  // `starter` (with its file name): the kernel to start from instead of the task's starter (the
  // editor's text, a file given to kwb optimize); empty: the task's.
  static SessionRecord create(SessionStore &store, const Task &task, const SessionSettings &settings,
                              const std::string &providerName, const std::string &model,
                              const std::string &starter = {}, const std::string &starterName = {});

  // Throws std::invalid_argument when the store has no such session.
  Session(SessionServices services, std::string sessionId, EventSink onEvent = {});
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  // Runs until the session finishes (groups or a budget), is paused or stopped, or fails; returns
  // the state it was left in. Safe to call again after a pause (that is a resume). A pause() or
  // stop() before run() holds: it returns at once in that state.
  SessionState run();
  // From any thread: requests in flight are cancelled and their lines asked again on resume;
  // evaluations in flight are cancelled too. pause() leaves the session resumable ("paused"),
  // stop() ends it ("stopped"; it can still be resumed explicitly).
  void pause(const std::string &reason = "paused by the user");
  void stop(const std::string &reason = "stopped by the user");

  const std::string &id() const { return id_; }
  const Task &task() const { return task_; }

 private:
  struct Pending;
  bool processGroup(GroupRecord &group);
  // Runs the given lines' attempts at `turn` (their requests and evaluations), concurrently.
  // False when the session must stop before the turn is complete.
  bool runTurn(GroupRecord &group, int turn, const std::vector<int> &lines);
  void runOne(GroupRecord &group, Pending &pending);
  void evaluateAttempt(GroupRecord &group, AttemptRecord &attempt);
  void giveRewards(GroupRecord &group);
  Incumbent incumbentFor();
  bool measureBaseline();
  Goal goalFor(const Incumbent &incumbent) const;
  // `cards`: the skill ids the prompt carries; `context`: what the prompt carries beside the
  // task and the kernel, and why (the cards with their statuses, the budget, the experience).
  std::vector<llm::Message> firstTurnMessages(const GroupRecord &group, std::vector<std::string> &cards,
                                              nlohmann::json &context);
  // A repair turn: the line's previous candidate and its feedback (the recency reserve R), the
  // line's earlier turns (hot), its cards, and experience as the budget allows.
  std::vector<llm::Message> repairMessages(const GroupRecord &group, const AttemptRecord &previous,
                                           std::vector<std::string> &cards, nlohmann::json &context);
  // The experience section for a turn whose other text is `hot` (core/memory/context_assembly.h),
  // with `recency` tokens kept for the latest exchange; what was included and left, and why, goes
  // into `context`. Empty without a memory or with it switched off.
  std::string memorySection(const std::string &hot, const std::string &system, std::size_t recency,
                            const std::string &bottleneck, nlohmann::json &context);
  // The prompt section of the cards retrieved for `kernel` (core/lineage/skill_retrieval.h), their
  // ids, and their statuses into context["cards"]; empty without a library or with
  // SessionSettings::skills off.
  std::string skillSection(const std::string &kernel, std::vector<std::string> &cards, nlohmann::json &context);
  // A repair's cards: its line's (`lineCards`), the same section its first turn showed; their ids
  // into `cards` and their statuses into context["cards"].
  std::string lineCardsSection(const GroupRecord &group, const std::vector<std::string> &lineCards,
                               std::vector<std::string> &cards, nlohmann::json &context);
  // W and the answer limit G for this session's prompts (the session's setting, else the
  // provider's, else assumed), recorded in `context` with where each came from.
  std::size_t contextWindow(nlohmann::json *context = nullptr) const;
  int answerLimit() const;
  // An attempt that carried cards was evaluated: its measurement joins each card's evidence
  // (kind "session"), when the gate ruled (compile error, incorrect, or correct and timed).
  void recordCardEvidence(const GroupRecord &group, const AttemptRecord &attempt, const EvaluationResult &result);
  // The attempt's run becomes a Case of the experience memory now, so later turns and groups of
  // this session learn from it (KOPE: memory within a session).
  void recordCase(const AttemptRecord &attempt);
  // Candidates run on the pool's GPUs: there is a pool with a device, and the settings use it.
  bool onGpu() const;
  // compute-sanitizer on a kernel about to become the session's best (issue 15: never call a
  // racy kernel the best): errors in its code make the attempt incorrect, with the findings in
  // its feedback. False when cancelled (the attempt is evaluated again on resume).
  bool sanitizeBefore(AttemptRecord &attempt, EvaluationResult &result, const std::string &source,
                      const std::string &name, int group);
  // The profiler's bottleneck summary of a source shown to the model (core/profile/bottleneck.h):
  // from the store when this session measured it before, else profiled now on the pool (once
  // per source: lines asking for the same one wait for the first). Empty without a GPU, with
  // SessionSettings::profile off, or when cancelled.
  std::string profileNote(const std::string &sourceHash, const std::string &name, int group);
  // Empty when a new request may start, else the budget that was reached.
  std::string budgetRefusal();
  bool evaluateOn(const std::string &source, const std::string &sourceName, EvaluationResult &result);
  void publish(SessionEvent event);
  void setState(SessionState state, const std::string &reason);
  double elapsedNow() const;

  SessionServices services_;
  std::string id_;
  EventSink onEvent_;
  SessionRecord record_;
  Task task_;
  std::unique_ptr<llm::Provider> provider_;
  std::string templateSystem_, templateFirst_, templateRepair_, templateAnswer_, taskSpec_;
  std::atomic<bool> stopRequested_{false};
  std::mutex skillsMutex_;  // the skill library is used by one line at a time
  // skillSection()'s answers by kernel (under skillsMutex_): the section, its cards' ids, and
  // their record ({"id", "status"} each).
  struct SkillSection {
    std::string text;
    std::vector<std::string> ids;
    nlohmann::json record;
  };
  std::map<std::string, SkillSection> skillSections_;
  std::mutex memoryMutex_;  // the memory's connection, and the estimator, one line at a time
  memory::TokenEstimator estimator_;  // calibrated by the provider's reported input tokens
  std::mutex mutex_;
  std::optional<SessionState> requestedState_;
  std::string requestedReason_;
  std::vector<std::shared_ptr<llm::CancelToken>> inFlight_;
  std::string llmFailure_;  // a request the provider could not answer (not the model's fault)
  std::string budgetHit_;
  std::mutex profileMutex_;
  std::condition_variable profileDone_;
  std::set<std::string> profiling_;  // sources being profiled now
  std::chrono::steady_clock::time_point runStarted_;
  std::optional<double> bestMs_;
  std::string arch_;  // the GPU's, from the first evaluation on it (compiling ahead waits for it)
  std::string gpu_;   // its name, from the same evaluation
};

}  // namespace kwb::agent
