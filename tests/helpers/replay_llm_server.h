#pragma once
// For the agent tests: a scripted OpenAI-compatible chat server on loopback (LoopbackHttpServer,
// real sockets, the wire format of OpenAI's streamed chat completions) whose answers are a
// bundled task's lineage. Shown step k's source in the prompt (the incumbent, or the candidate
// being repaired), it answers with step k+1; shown none of them (the starter), the step after
// the latest it answered (step 1 at first); shown the last, the last again. Faults scripted with script() replace answers, in the order requests arrive: a compile
// error (step k+1 with a syntax error), a wrong answer (step k+1 with softmax's normalisation
// doubled: its steps have "1.0f / "), an
// answer cut off inside its code block (finish_reason "length"), or prose without code.
#include <chrono>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "tests/helpers/loopback_http_server.h"

namespace kwb::test {

// Racy: softmax's step 2 with its two block reductions sharing one shared-memory buffer. A warp's
// store of its partial sum can overwrite a partial maximum another warp has not read yet: a race
// compute-sanitizer's racecheck reports, which the correctness checks' double run does not see
// (the sum's store comes a whole pass over the row later). Answered whatever step was shown.
// Empty: no text at all, finish reason "stop" (what a small local model answers a prompt near the
// end of its window with).
enum class ReplayFault { None, CompileError, WrongAnswer, Truncated, NoCode, Racy, Empty };

class ReplayLlmServer {
 public:
  // Reads TASK/lineage/lineage.toml's steps (their files, in order). Throws std::runtime_error.
  explicit ReplayLlmServer(const std::filesystem::path &taskFolder);

  std::string baseUrl() const;  // "http://127.0.0.1:PORT/v1"
  // Faults for the next requests, in arrival order; requests beyond the list answer normally.
  void script(std::vector<ReplayFault> faults);
  // Each answer waits this long before its headers, and this long between its chunks.
  void setDelays(std::chrono::milliseconds beforeHeaders, std::chrono::milliseconds betweenChunks);
  // Only the steps up to this one (1-based) are answered; beyond it the last allowed one is repeated.
  void setLastStep(std::size_t step);
  // De-optimization (issue 18, 2): shown step k, answer step k-1, its first line
  // "Removed: <step k's title>"; shown step 1, answer "NOTHING LEFT" without code.
  void setBackward(bool backward);
  const std::string &stepTitle(std::size_t step) const { return titles_.at(step - 1); }

  std::size_t steps() const { return sources_.size(); }
  const std::string &stepSource(std::size_t step) const { return sources_.at(step - 1); }
  // The step (1-based) each answer carried, in arrival order (0: a NoCode answer).
  std::vector<std::size_t> answeredSteps() const;
  // The step a prompt showed (0: none), as the server judged it.
  std::size_t stepShown(const std::string &promptText) const;
  LoopbackHttpServer &http() { return http_; }

 private:
  ScriptedResponse answer(const ReceivedRequest &request);

  LoopbackHttpServer http_;
  std::vector<std::string> sources_, titles_;
  bool backward_ = false;
  mutable std::mutex mutex_;
  std::deque<ReplayFault> faults_;
  std::vector<std::size_t> answered_;
  std::chrono::milliseconds beforeHeaders_{0}, betweenChunks_{0};
  std::size_t lastStep_ = 0;
  std::size_t served_ = 0;
};

// An OpenAI chat-completion stream (SSE) carrying `text`, split into pieces of about `piece`
// bytes, ending with `finishReason`, a usage chunk and [DONE].
std::vector<std::string> openAiStream(const std::string &text, const std::string &finishReason, std::size_t piece = 200,
                                      long long promptTokens = 100);

}  // namespace kwb::test
