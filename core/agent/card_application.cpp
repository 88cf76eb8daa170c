#include "core/agent/card_application.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/agent/answer.h"
#include "core/agent/prompt.h"
#include "core/agent/prompt_templates.h"
#include "core/agent/session.h"
#include "core/lineage/lineage_build.h"
#include "core/lineage/skill_library.h"
#include "core/lineage/skill_retrieval.h"
#include "core/store/database.h"

namespace kwb::agent {
namespace {

std::string times(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "x%.2f", x);
  return buffer;
}

// The card as the model sees it: everything but its evidence and audit trail.
std::string cardText(const SkillCard &card) {
  std::string out = "Skill `" + card.id + "`\n\n";
  if (!card.anchor.empty()) out += "Where it acts (where it was learned): " + card.anchor + "\n";
  out += cardPromptText(card);
  if (const auto overview = card.section("Overview"); !overview.empty()) out += "\nOverview:\n" + overview + "\n";
  return out;
}

EvaluationOptions timedOptions(const CardApplicationSettings &settings, const std::string &name,
                               const std::function<void(const std::string &)> &progress) {
  EvaluationOptions o;
  o.arch = settings.arch;
  o.time = true;
  o.timeTorch = false;  // with and without the card, against each other
  o.timingCap = settings.timingCap;
  o.sourceName = name;
  o.tunables = settings.tunables;
  o.onProgress = progress;
  return o;
}

}  // namespace

std::string toString(ApplicationVerdict verdict) {
  switch (verdict) {
    case ApplicationVerdict::Success: return "success";
    case ApplicationVerdict::NoEffect: return "no-effect";
    case ApplicationVerdict::Incorrect: return "incorrect";
    case ApplicationVerdict::CompileError: return "compile-error";
    case ApplicationVerdict::NoAnswer: return "no-answer";
    case ApplicationVerdict::NotGated: return "not-gated";
  }
  return "not-gated";
}

bool CardApplication::gated() const {
  return verdict == ApplicationVerdict::Success || verdict == ApplicationVerdict::NoEffect ||
         verdict == ApplicationVerdict::Incorrect || verdict == ApplicationVerdict::CompileError;
}

double requiredSpeedup(double declared, double effectShare) {
  if (!(declared > 1.02)) return 1.02;
  return std::max(1.02, 1.0 + effectShare * (declared - 1.0));
}

std::string gateConfigOf(const Task &task, const std::string &declaredConfig) {
  if (!declaredConfig.empty() && task.config(declaredConfig)) return declaredConfig;
  return largestConfiguration(task);
}

void judgeEffect(CardApplication &a, const std::string &kernelName) {
  a.speedup = a.beforeMs && a.afterMs ? std::optional<double>(*a.beforeMs / *a.afterMs) : std::nullopt;
  a.gateSpeedup.reset();
  auto medianAt = [&](const EvaluationResult &r) -> std::optional<double> {
    for (const auto &c : r.configs)
      if (c.config == a.gateConfig && c.timing && c.timing->ok && c.timing->candidate.median > 0) return c.timing->candidate.median;
    return std::nullopt;
  };
  const auto before = medianAt(a.before), after = medianAt(a.after);
  a.gateBeforeMs = before;
  a.gateAfterMs = after;
  if (before && after) a.gateSpeedup = *before / *after;
  const bool atGate = a.gateSpeedup && *a.gateSpeedup >= a.requiredSpeedup;
  const bool notSlower = a.speedup && *a.speedup >= 1.0;
  a.verdict = atGate && notSlower ? ApplicationVerdict::Success : ApplicationVerdict::NoEffect;
  a.message = "correct, " + (a.gateSpeedup ? times(*a.gateSpeedup) : std::string("not timed")) + " at " + a.gateConfig +
              " and " + (a.speedup ? times(*a.speedup) : std::string("not timed")) + " over all configurations against " +
              kernelName + " (the card declares " +
              (a.declaredSpeedup > 0 ? times(a.declaredSpeedup) + (a.declaredWhere.empty() ? "" : " " + a.declaredWhere)
                                     : std::string("no measurement")) +
              "; " + times(a.requiredSpeedup) + " asked at " + a.gateConfig + ")";
  if (!atGate) a.message += ": the declared effect is not there";
  else if (!notSlower) a.message += ": it made the kernel slower over all configurations";
}

std::vector<llm::Message> cardApplicationMessages(const SkillCard &card, const Task &task, const std::string &kernel,
                                                  const std::string &kernelName,
                                                  const std::filesystem::path &promptsUserDir,
                                                  const std::filesystem::path &promptsBundledDir) {
  const auto system = loadPromptTemplate("system", promptsUserDir, promptsBundledDir);
  const auto apply = loadPromptTemplate("apply_card", promptsUserDir, promptsBundledDir);
  const auto format = loadPromptTemplate("answer_format", promptsUserDir, promptsBundledDir);
  const std::map<std::string, std::string> values = {
      {"card", cardText(card)},
      {"task", taskSpec(task)},
      {"kernel", kernel},
      {"kernel_name", kernelName},
      {"answer_format", renderTemplate(format.text, {{"kernel", task.launch ? task.launch->kernel : std::string("kwb_launch")}},
                                       "answer_format.md")}};
  return {llm::Message{.role = "system", .content = system.text},
          llm::Message{.role = "user", .content = renderTemplate(apply.text, values, "apply_card.md")}};
}

CardApplication applyCard(const SkillCard &card, const Task &task, const std::string &kernel,
                          const std::string &kernelName, const CardApplicationServices &services,
                          const CardApplicationSettings &settings) {
  CardApplication a;
  a.cardId = card.id;
  a.task = task.name;
  a.kernelName = kernelName;
  const auto declared = card.declaredGain();
  a.declaredSpeedup = declared ? declared->speedup : card.measuredSpeedup();
  if (declared) a.declaredWhere = "on " + declared->task + " at " + declared->config;
  a.requiredSpeedup = requiredSpeedup(a.declaredSpeedup, settings.effectShare);
  a.gateConfig = gateConfigOf(task, declared ? declared->config : std::string());
  auto progress = [&](const std::string &line) {
    if (services.onProgress) services.onProgress(line);
  };
  auto cancelled = [&] { return services.cancel && services.cancel->cancelled(); };
  auto notGated = [&](std::string why) {
    a.verdict = ApplicationVerdict::NotGated;
    a.message = std::move(why);
    return a;
  };

  progress("measuring " + kernelName + " (the kernel the card is applied to)");
  a.before = services.evaluator->evaluate(task, kernel, timedOptions(settings, kernelName, progress));
  a.device = a.before.device;
  a.arch = a.before.arch;
  if (cancelled() || a.before.outcome == Outcome::Cancelled) return notGated("cancelled");
  // Without a GPU (not-run) the application is still asked for and compiled: a compile error is
  // the gate's verdict anywhere; correctness and effect need the GPU.
  const bool onGpu = a.before.outcome != Outcome::NotRun;
  if (onGpu && a.before.outcome != Outcome::Correct)
    return notGated("not gated: the kernel to apply the card to is itself " + std::string(toString(a.before.outcome)) + ": " +
                    a.before.message);
  a.beforeMs = objectiveMs(a.before);
  if (onGpu && !a.beforeMs)
    return notGated("not gated: the kernel to apply the card to was not timed on every configuration");

  progress("asking " + services.provider->config().name + " to apply " + card.id);
  llm::ChatRequest request;
  request.messages = cardApplicationMessages(card, task, kernel, kernelName, services.promptsUserDir,
                                             services.promptsBundledDir);
  request.maxTokens = settings.maxTokens;
  const auto reply = services.provider->chat(std::move(request), {}, services.cancel);
  if (reply.cancelled || cancelled()) return notGated("cancelled");
  const auto parsed = parseAnswer(reply.response.text, expectedKernel(task), reply.response.finishReason);
  a.answerOutcome = std::string(answerOutcomeName(parsed.outcome));
  if (!reply.ok() && parsed.outcome != AnswerOutcome::Code) {
    a.verdict = ApplicationVerdict::NoAnswer;
    a.message = "the model's answer did not arrive: " + (reply.error.empty() ? std::string("the stream broke") : reply.error);
    return a;
  }
  if (parsed.outcome != AnswerOutcome::Code && parsed.outcome != AnswerOutcome::MissingKernel) {
    a.verdict = ApplicationVerdict::NoAnswer;
    a.message = "the model's answer holds no usable code (" + a.answerOutcome + ")";
    return a;
  }
  a.source = parsed.source;
  if (a.source == kernel) {
    a.verdict = ApplicationVerdict::NoAnswer;
    a.message = "the model answered with the kernel unchanged (it judged the card's preconditions unmet)";
    return a;
  }

  const std::string appliedName = card.id + "-applied.cu";
  progress("gating the applied kernel");
  a.after = services.evaluator->evaluate(task, a.source, timedOptions(settings, appliedName, progress));
  if (cancelled() || a.after.outcome == Outcome::Cancelled) return notGated("cancelled");
  switch (a.after.outcome) {
    case Outcome::Correct: break;
    case Outcome::CompileError:
      a.verdict = ApplicationVerdict::CompileError;
      a.message = "the applied kernel does not compile: " + a.after.message;
      return a;
    case Outcome::NotRun:
      return notGated("not gated: no GPU here: the applied kernel compiles; its check and timing need a GPU");
    case Outcome::Error: return notGated("not gated: " + a.after.message);
    default:
      a.verdict = ApplicationVerdict::Incorrect;
      a.message = "the applied kernel is " + std::string(toString(a.after.outcome)) + ": " + a.after.message;
      return a;
  }
  a.afterMs = objectiveMs(a.after);
  if (!a.afterMs) return notGated("not gated: the applied kernel was not timed on every configuration");
  judgeEffect(a, kernelName);
  return a;
}

std::string recordApplication(SkillLibrary &library, const CardApplication &a, int tasksToAdmit) {
  if (!a.gated()) return "not recorded (" + toString(a.verdict) + ")";
  CardEvidence e;
  e.kind = "application";
  e.task = a.task;
  e.config = a.gateConfig.empty() ? std::string("all") : a.gateConfig;
  e.device = a.device;
  e.arch = a.arch;
  // At the gate's configuration when it was timed there (speedup = before / after), else over all.
  const bool atGate = a.gateSpeedup && a.gateBeforeMs && a.gateAfterMs;
  e.beforeMs = atGate ? *a.gateBeforeMs : a.beforeMs.value_or(0);
  e.afterMs = atGate ? *a.gateAfterMs : a.afterMs.value_or(0);
  e.speedup = atGate ? *a.gateSpeedup : a.speedup.value_or(0);
  e.success = a.verdict == ApplicationVerdict::Success;
  e.note = "applied to " + a.kernelName + ": " + toString(a.verdict) + ": " + a.message;
  if (e.note.size() > 600) e.note = e.note.substr(0, 597) + "...";
  e.at = utcTimestamp();
  library.addEvidence(a.cardId, e, "gate");
  const auto card = library.card(a.cardId);
  if (!card) return "evidence added; the card is unknown";
  if (!e.success) {
    // A failure rejects a proposed card; a reviewer's approval is not overturned by it.
    if (card->status != CardStatus::Proposed) return "evidence added; the card stays " + toString(card->status);
    library.setStatus(a.cardId, CardStatus::Rejected, "gate", e.note);
    return "evidence added; the card is now rejected";
  }
  if (card->status != CardStatus::Proposed && card->status != CardStatus::Approved)
    return "evidence added; the card stays " + toString(card->status);
  // Admitted when reproduced on enough tasks it was not lifted from.
  const auto reproduced = card->reproducedOn();
  const int need = std::max(1, tasksToAdmit);
  std::string on;
  for (const auto &t : reproduced) on += (on.empty() ? "" : ", ") + t;
  if (static_cast<int>(reproduced.size()) < need)
    return "evidence added; the card stays " + toString(card->status) + ": reproduced on " +
           std::to_string(reproduced.size()) + " of the " + std::to_string(need) +
           " tasks it was not lifted from that admission asks" + (on.empty() ? "" : " (" + on + ")");
  library.setStatus(a.cardId, CardStatus::Admitted, "gate", "reproduced on " + on + ": " + e.note);
  return "evidence added; the card is now admitted (reproduced on " + on + ")";
}

}  // namespace kwb::agent
