#pragma once
// A gated application of a skill card (KLineage admission, issue 18 item 4): a model is given
// the card only (its intent, preconditions, features and carrier: the Before/After code) and a
// kernel it was not lifted from, and asked to apply it. Its answer is evaluated like any
// candidate (compiled, checked on every configuration and seed, timed against the kernel it
// started from, in the same worker). The application succeeds when the result is correct and
// shows the card's declared effect; recordApplication() then adds the measurement to the card's
// evidence, success or failure, and moves a proposed card to admitted or rejected, by "gate",
// in its audit trail. No Qt; blocks; cancellable.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/eval/evaluation_result.h"
#include "core/eval/evaluator.h"
#include "core/lineage/skill_card.h"
#include "core/llm/provider.h"
#include "core/task/task.h"

namespace kwb {
class SkillLibrary;
}

namespace kwb::agent {

struct CardApplicationSettings {
  std::chrono::milliseconds timingCap{500};  // sampling time per configuration, each side
  // The share of the declared gain an application must show at the gate's configuration: with a
  // card measured at x1.40 and 0.5, at least x1.20. A card declaring no gain (x1.02 or less) must
  // still be x1.02 faster: a card is admitted for speed, never for "not slower".
  double effectShare = 0.5;
  int maxTokens = 8192;
  std::string arch;  // empty: the device's
  std::map<std::string, std::int64_t> tunables;  // the kernel's (a lineage step's), for both sides
};

enum class ApplicationVerdict {
  Success,     // correct, every configuration timed, the declared effect shown
  NoEffect,    // correct, but under the declared effect at the gate's configuration, or slower overall
  Incorrect,   // compiled but failed the check (or crashed, or timed out)
  CompileError,
  NoAnswer,    // the model gave no usable code (none, cut off, or the request failed)
  NotGated,    // not measured: no GPU (compile only), the starting kernel failed, or cancelled
};
std::string toString(ApplicationVerdict verdict);  // "success", "no-effect", ...

struct CardApplication {
  std::string cardId, task, kernelName;
  ApplicationVerdict verdict = ApplicationVerdict::NotGated;
  std::string message;       // in words: what happened and why
  std::string answerOutcome; // core/agent/answer.h's word for the answer ("code", "no-code", ...)
  std::string source;        // the applied kernel (empty: none)
  double declaredSpeedup = 0, requiredSpeedup = 0;
  std::string declaredWhere;  // "softmax at large": where the card's gain was measured
  // The configuration the effect is judged at: the one of the declared gain's name when the task
  // has it, else the task's largest (the lineages' target); its speedup.
  std::string gateConfig;
  std::optional<double> gateSpeedup, gateBeforeMs, gateAfterMs;  // at gateConfig
  std::optional<double> beforeMs, afterMs, speedup;  // geometric means over the configurations
  std::string device, arch;
  EvaluationResult before, after;
  // Whether the gate ruled on it (success, no effect, incorrect, compile error): only those are
  // evidence. No answer and not gated leave the card as it was.
  bool gated() const;
};

// The speedup an application must show to count as the card's effect (see effectShare).
double requiredSpeedup(double declared, double effectShare);

// The configuration of `task` a card's effect is judged at (CardApplication::gateConfig).
std::string gateConfigOf(const Task &task, const std::string &declaredConfig);

// The gate on a correct, timed application: sets verdict, gateSpeedup, speedup and message from
// a.before and a.after (both correct and timed on every configuration). Success needs the
// required speedup at the gate's configuration and no loss over all configurations.
void judgeEffect(CardApplication &a, const std::string &kernelName);

// How many tasks a card must be reproduced on, besides those it was lifted from (KLineage checks
// on several), before the gate admits it.
inline constexpr int kTasksToAdmit = 2;

// The messages the model gets: the system prompt (resources/prompts/system.md, or the user's
// copy) and apply_card.md filled with the card, the task's specification and the kernel.
std::vector<llm::Message> cardApplicationMessages(const SkillCard &card, const Task &task, const std::string &kernel,
                                                  const std::string &kernelName,
                                                  const std::filesystem::path &promptsUserDir = {},
                                                  const std::filesystem::path &promptsBundledDir = {});

struct CardApplicationServices {
  llm::Provider *provider = nullptr;
  Evaluator *evaluator = nullptr;
  std::filesystem::path promptsUserDir, promptsBundledDir;
  std::function<void(const std::string &)> onProgress;  // one line per stage; may be empty
  const llm::CancelToken *cancel = nullptr;
};

// Applies `card` to `kernel` (a source of `task`, named kernelName) and gates the result.
// Never throws for the model's or the kernel's failures: they are the verdict. Throws
// std::runtime_error when a prompt template cannot be read.
CardApplication applyCard(const SkillCard &card, const Task &task, const std::string &kernel,
                          const std::string &kernelName, const CardApplicationServices &services,
                          const CardApplicationSettings &settings = {});

// Records a gated application: evidence on the card (kind "application", at the gate's
// configuration), and the card's status by "gate": a proposed card is rejected by a failed
// application; a proposed or approved card is admitted once successful applications reproduced
// it on `tasksToAdmit` tasks it was not lifted from (until then it stays as it is, and the answer
// says how many). An admitted card stays admitted and a rejected one rejected: the evidence grows
// either way. Does nothing when the application was not gated. Returns what it did, in words.
std::string recordApplication(SkillLibrary &library, const CardApplication &application, int tasksToAdmit = kTasksToAdmit);

}  // namespace kwb::agent
