#include "core/agent/session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/agent/answer.h"
#include "core/agent/prompt.h"
#include "core/agent/prompt_templates.h"
#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_library.h"
#include "core/lineage/skill_retrieval.h"
#include "core/memory/case_sources.h"
#include "core/profile/bottleneck.h"
#include "core/profile/profiler.h"
#include "core/store/database.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"
#include "core/text/content_hash.h"

namespace kwb::agent {

namespace {

// The most characters of skill cards a first turn carries (about 2000 tokens).
constexpr std::size_t kSkillSectionChars = 8000;

std::string msText(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms >= 1 ? "%.3f ms" : "%.1f us", ms >= 1 ? ms : ms * 1000);
  return buf;
}

std::string ratioText(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", x);
  return buf;
}

// The geometric mean over a correct result's configurations of `value`; nullopt when one lacks it.
template <typename F>
std::optional<double> geometricMean(const EvaluationResult &r, F value) {
  if (r.outcome != Outcome::Correct || r.configs.empty()) return std::nullopt;
  double logSum = 0;
  for (const auto &c : r.configs) {
    if (!c.timing || !c.timing->ok) return std::nullopt;
    const double v = value(*c.timing);
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
    logSum += std::log(v);
  }
  return std::exp(logSum / static_cast<double>(r.configs.size()));
}

// The bottleneck class a profile note names ("Profile (large, 3 passes): memory-bound, ..." ->
// "memory"); "" when it names none.
std::string bottleneckOfNote(const std::string &note) {
  const auto colon = note.find(": ");
  if (colon == std::string::npos) return {};
  const auto end = note.find_first_of(" ,;:\n", colon + 2);
  std::string word = note.substr(colon + 2, end == std::string::npos ? std::string::npos : end - colon - 2);
  if (const auto bound = word.find("-bound"); bound != std::string::npos) word.erase(bound);
  for (const char *known : {"memory", "compute", "latency", "balanced"})
    if (word == known) return word;
  return {};
}

SessionEvent event(SessionEvent::Kind kind, int group, int line, int turn, std::string text) {
  SessionEvent e;
  e.kind = kind;
  e.group = group;
  e.line = line;
  e.turn = turn;
  e.text = std::move(text);
  return e;
}


// Why an answer gave nothing to evaluate, where the response says more than the parser saw.
std::string likelyCause(AnswerOutcome outcome, const llm::ChatResult &result, int maxTokens) {
  if (outcome != AnswerOutcome::Empty && outcome != AnswerOutcome::NoCode) return {};
  const auto &r = result.response;
  const bool cut = r.finishReason == "length" || r.finishReason == "max_tokens";
  const std::string limit = "the answer limit of " + std::to_string(maxTokens) + " tokens";
  if (cut && !r.reasoning.empty() && r.text.find("```") == std::string::npos)
    return limit + " ran out while the model was still reasoning (" + std::to_string(r.reasoning.size()) +
           " characters of it): raise the session's answer limit";
  if (cut)
    return limit + " ran out before any code: raise the session's answer limit, or ask for less";
  if (outcome == AnswerOutcome::Empty)
    return r.finishReason.empty()
               ? std::string("the server ended the answer with no text and no finish reason")
               : "the model ended its answer at once with no text (finish reason \"" + r.finishReason +
                     "\"): a model too small for the task, or a prompt near the end of its context window";
  return {};
}

}  // namespace

std::string answersSummary(const std::vector<AttemptRecord> &attempts) {
  std::size_t answers = 0, compiled = 0, correct = 0, compileErrors = 0, noCode = 0, empty = 0, truncated = 0,
              otherKernel = 0;
  for (const auto &a : attempts) {
    if (a.answerOutcome.empty()) continue;
    ++answers;
    if (a.answerOutcome == "no-code") ++noCode;
    else if (a.answerOutcome == "empty") ++empty;
    else if (a.answerOutcome == "truncated") ++truncated;
    else if (a.answerOutcome == "missing-kernel") ++otherKernel;
    if (!a.evaluated || a.sourceHash.empty()) continue;
    if (a.outcome == "compile-error") ++compileErrors;
    else if (a.outcome != "cancelled" && a.outcome != "error") ++compiled;
    if (a.outcome == "correct") ++correct;
  }
  if (answers == 0) return "no answers";
  std::string text = std::to_string(answers) + (answers == 1 ? " answer: " : " answers: ") + std::to_string(compiled) +
                     " compiled (" + std::to_string(correct) + " correct)";
  const auto part = [&](std::size_t n, const char *what) {
    if (n) text += ", " + std::to_string(n) + " " + what;
  };
  part(compileErrors, "did not compile");
  part(noCode, "had no code");
  part(empty, empty == 1 ? "was empty" : "were empty");
  part(truncated, truncated == 1 ? "was cut off" : "were cut off");
  part(otherKernel, "named another kernel");
  return text;
}

std::optional<double> objectiveMs(const EvaluationResult &result) {
  return geometricMean(result, [](const TimingOutcome &t) { return t.candidate.median; });
}

std::optional<double> objectiveSpeedup(const EvaluationResult &result) {
  return geometricMean(result, [](const TimingOutcome &t) { return t.speedup; });
}

struct Session::Pending {
  int line = 0, turn = 0;
  std::optional<AttemptRecord> attempt;   // answered earlier, not evaluated yet
  std::optional<AttemptRecord> previous;  // the line's previous turn (repairs)
};

SessionRecord Session::create(SessionStore &store, const Task &task, const SessionSettings &settings,
                              const std::string &providerName, const std::string &model, const std::string &starter,
                              const std::string &starterName) {
  if (settings.candidates < 1 || settings.candidates > 16)
    throw std::invalid_argument("candidates per group must be within 1..16 (got " + std::to_string(settings.candidates) + ")");
  if (settings.dcp.maxTurns < 1) throw std::invalid_argument("a session needs at least one turn per group");
  if (settings.groups < 1) throw std::invalid_argument("a session needs at least one group");
  if (!(settings.discount >= 0 && settings.discount <= 1))
    throw std::invalid_argument("the turn credit's discount must be within [0, 1]");
  SessionSettings s = settings;
  s.taskFolder = std::filesystem::absolute(task.folder).lexically_normal().string();
  s.provider = providerName;
  s.model = model;
  if (!starter.empty()) {
    s.starterHash = store.workspace().putSource(starter);
    s.starterName = starterName.empty() ? std::string("starter.cu") : starterName;
  }
  std::string manifestHash;
  try {
    manifestHash = contentHash(readManifestText(task.manifestPath));
  } catch (const std::exception &) {
  }
  return store.createSession(task.name, s.taskFolder, manifestHash, providerName, model, s);
}

Session::Session(SessionServices services, std::string sessionId, EventSink onEvent)
    : services_(std::move(services)), id_(std::move(sessionId)), onEvent_(std::move(onEvent)) {
  if (!services_.store) throw std::invalid_argument("a session needs a store");
  auto record = services_.store->session(id_);
  if (!record) throw std::invalid_argument("no session " + id_ + " in " + services_.store->workspace().path().string());
  record_ = *record;
  task_ = loadTask(record_.settings.taskFolder);
  llm::ProviderConfig config = services_.provider;
  if (!record_.model.empty()) config.model = record_.model;
  auto store = services_.store;
  const std::string id = id_;
  provider_ = std::make_unique<llm::Provider>(config, services_.apiKey, std::make_shared<llm::Accounting>(),
                                              [store, id](const llm::TranscriptEntry &e) {
                                                try {
                                                  store->addTranscript(e, id);
                                                } catch (const std::exception &) {
                                                }
                                              });
  const auto load = [&](const char *name) {
    return loadPromptTemplate(name, services_.promptsUserDir, services_.promptsBundledDir).text;
  };
  templateSystem_ = load("system");
  templateFirst_ = load("first_turn");
  templateRepair_ = load("repair");
  templateAnswer_ = load("answer_format");
  taskSpec_ = taskSpec(task_);
}

Session::~Session() { stop(); }

void Session::publish(SessionEvent event) {
  if (onEvent_) onEvent_(event);
}

double Session::elapsedNow() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - runStarted_).count();
}

void Session::setState(SessionState state, const std::string &reason) {
  record_.state = state;
  record_.stopReason = reason;
  services_.store->setState(id_, state, reason);
  SessionEvent e;
  e.kind = SessionEvent::Kind::State;
  e.state = state;
  e.text = reason;
  publish(e);
}

void Session::pause(const std::string &reason) {
  std::lock_guard lock(mutex_);
  if (!requestedState_) {
    requestedState_ = SessionState::Paused;
    requestedReason_ = reason;
  }
  stopRequested_ = true;
  for (auto &t : inFlight_) t->cancel();
  if (services_.pool) services_.pool->cancelAll();
}

void Session::stop(const std::string &reason) {
  std::lock_guard lock(mutex_);
  requestedState_ = SessionState::Stopped;
  requestedReason_ = reason;
  stopRequested_ = true;
  for (auto &t : inFlight_) t->cancel();
  if (services_.pool) services_.pool->cancelAll();
}

std::string Session::budgetRefusal() {
  const SessionSettings &s = record_.settings;
  if (s.wallSeconds && record_.elapsedSeconds + elapsedNow() >= *s.wallSeconds) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "wall-time budget reached: %.0f s of %.0f s", record_.elapsedSeconds + elapsedNow(),
                  *s.wallSeconds);
    return buf;
  }
  if (s.dollars || s.tokens) {
    const auto spent = services_.store->spend(id_);
    if (s.dollars && spent.cost >= *s.dollars) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "dollar budget reached: $%.4f of $%.2f spent", spent.cost, *s.dollars);
      return buf;
    }
    if (s.tokens && spent.tokens >= *s.tokens)
      return "token budget reached: " + std::to_string(spent.tokens) + " of " + std::to_string(*s.tokens) + " tokens";
  }
  return {};
}

bool Session::evaluateOn(const std::string &source, const std::string &sourceName, EvaluationResult &result) {
  EvaluationOptions o;
  o.configs = record_.settings.configs;
  o.sourceName = sourceName;
  o.timingCap = std::chrono::milliseconds(static_cast<long long>(record_.settings.timingCapSeconds * 1000));
  o.timeLimit = std::chrono::milliseconds(static_cast<long long>(record_.settings.timeLimitSeconds * 1000));
  const bool gpu = onGpu();
  o.time = gpu;
  try {
    if (gpu) {
      std::string arch;
      {
        std::lock_guard lock(mutex_);
        arch = arch_;
      }
      if (!arch.empty()) {  // compile here, on this line's thread: the worker's compile is then a cache hit
        try {
          Compiler(services_.evaluator.compiler)
              .compile(requestFor(task_, source, sourceName, arch, effectiveTunables(task_, {})));
        } catch (const std::exception &) {
          // The evaluation reports it.
        }
      }
      result = services_.pool->submit(task_, source, o).get();
      if (!result.arch.empty() && !result.device.empty()) {
        std::lock_guard lock(mutex_);
        arch_ = result.arch;
        gpu_ = result.device;
      }
    } else {
      EvaluatorSettings es = services_.evaluator;
      es.useDevice = false;
      Evaluator evaluator(es);
      result = evaluator.evaluate(task_, source, o);
    }
  } catch (const std::exception &e) {
    result = EvaluationResult{};
    result.outcome = Outcome::Error;
    result.message = e.what();
  }
  return result.outcome != Outcome::Cancelled;
}

bool Session::onGpu() const {
  return services_.pool && record_.settings.useDevice && !services_.pool->devices().empty();
}

bool Session::sanitizeBefore(AttemptRecord &attempt, EvaluationResult &result, const std::string &source,
                             const std::string &name, int group) {
  if (!onGpu() || !record_.settings.sanitizeBest) return true;
  SanitizeOptions o;
  o.sourceName = name;
  SanitizeResult sanitized;
  const auto t0 = std::chrono::steady_clock::now();
  const bool ran = services_.pool
                       ->submitWork([&](Evaluator &evaluator) {
                         try {
                           sanitized = evaluator.sanitize(task_, source, o);
                         } catch (const std::exception &e) {
                           sanitized.problem = e.what();
                         }
                       })
                       .get();
  if (!ran || stopRequested_) return false;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  attempt.evalSeconds += seconds;
  result.sanitize = sanitized;
  const bool errors = sanitized.candidateErrors() > 0;
  if (errors) {
    attempt.outcome = toString(Outcome::Incorrect);
    attempt.message = "compute-sanitizer: " + sanitized.summary();
    attempt.success = false;
  }
  if (!attempt.feedback.empty() && attempt.feedback.back() != '\n') attempt.feedback += "\n";
  if (sanitized.problem.empty()) attempt.feedback += sanitizerFeedback(sanitized);
  if (errors) attempt.feedback += "Correct on the checks, but compute-sanitizer found errors in its code: fix them.\n";
  if (!sanitized.complete())
    attempt.feedback += "Not sanitized: " + (sanitized.problem.empty() ? sanitized.summary() : sanitized.problem) + "\n";
  char text[96];
  std::snprintf(text, sizeof text, "sanitized %s in %.1f s: ", name.c_str(), seconds);
  publish(event(SessionEvent::Kind::Message, group, attempt.line, attempt.turn,
                text + sanitized.summary()));
  return true;
}

std::string Session::profileNote(const std::string &sourceHash, const std::string &name, int group) {
  if (!onGpu() || !record_.settings.profile || sourceHash.empty()) return {};
  {
    std::unique_lock lock(profileMutex_);
    profileDone_.wait(lock, [&] { return !profiling_.count(sourceHash); });
    if (auto known = services_.store->profile(id_, sourceHash)) return *known;
    if (stopRequested_) return {};
    profiling_.insert(sourceHash);
  }
  const std::string source = services_.store->source(sourceHash).value_or("");
  profile::ProfileOptions o;
  if (!record_.settings.configs.empty()) o.config = record_.settings.configs.front();
  o.set = "detailed";
  o.sourceName = name;
  o.timeLimit = std::chrono::milliseconds(static_cast<long long>(record_.settings.timeLimitSeconds * 1000));
  profile::ProfileResult result;
  result.outcome = Outcome::Cancelled;
  const auto t0 = std::chrono::steady_clock::now();
  const bool ran = services_.pool
                       ->submitWork([&](Evaluator &evaluator) {
                         try {
                           result = profile::profileCandidate(task_, source, o, evaluator);
                         } catch (const std::exception &e) {
                           result.outcome = Outcome::Error;
                           result.message = e.what();
                         }
                       })
                       .get();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string note;
  if (ran && result.outcome != Outcome::Cancelled && !stopRequested_) {
    note = profile::bottleneckSummary(result);
    services_.store->setProfile(id_, sourceHash, note);
    char text[96];
    std::snprintf(text, sizeof text, "profiled %s in %.1f s: ", name.c_str(), seconds);
    publish(event(SessionEvent::Kind::Message, group, 0, 0, text + note.substr(0, note.find('\n'))));
  }
  {
    std::lock_guard lock(profileMutex_);
    profiling_.erase(sourceHash);
  }
  profileDone_.notify_all();
  return note;
}

Goal Session::goalFor(const Incumbent &incumbent) const {
  if (!onGpu()) return Goal::Compiles;
  return incumbent.ms ? Goal::Faster : Goal::Correct;
}

bool Session::measureBaseline() {
  if (record_.baseline) return true;
  Incumbent b;
  std::string source, name;
  if (!record_.settings.starterHash.empty()) {
    source = services_.store->source(record_.settings.starterHash).value_or("");
    name = record_.settings.starterName;
  } else {
    try {
      source = readTaskFile(task_, task_.starterSource());
      name = task_.starterSource().filename().string();
    } catch (const std::exception &e) {
      publish(event(SessionEvent::Kind::Message, 0, 0, 0, std::string("no starter kernel: ") + e.what()));
    }
  }
  if (!source.empty()) {
    publish(event(SessionEvent::Kind::Message, 0, 0, 0, "measuring the starter " + name));
    EvaluationResult r;
    if (!evaluateOn(source, name, r)) return false;
    b.sourceHash = services_.store->workspace().putSource(source);
    b.outcome = toString(r.outcome);
    b.ms = objectiveMs(r);
    b.speedup = objectiveSpeedup(r);
    b.feedback = evaluationFeedback(r);
  }
  services_.store->setBaseline(id_, b);
  record_.baseline = b;
  std::string text = "starter: " + (b.outcome.empty() ? std::string("none") : b.outcome);
  if (b.ms) text += ", " + msText(*b.ms);
  if (b.speedup) text += " (" + ratioText(*b.speedup) + " the reference)";
  if (b.ms) bestMs_ = b.ms;
  publish(event(SessionEvent::Kind::Baseline, 0, 0, 0, text));
  return true;
}

Incumbent Session::incumbentFor() {
  Incumbent best = record_.baseline.value_or(Incumbent{});
  for (const auto &a : services_.store->sessionAttempts(id_)) {
    if (!a.evaluated || a.outcome != "correct" || !a.ms) continue;
    if (!best.ms || *a.ms < *best.ms) {
      best.sourceHash = a.sourceHash;
      best.outcome = a.outcome;
      best.ms = a.ms;
      best.speedup = a.speedup;
      best.attemptId = a.id;
      best.feedback = a.feedback;
    }
  }
  return best;
}

std::vector<llm::Message> Session::firstTurnMessages(const GroupRecord &group, std::vector<std::string> &cards,
                                                     nlohmann::json &context) {
  // The group's incumbent: the attempt (or the starter) whose source it names.
  Incumbent inc = record_.baseline.value_or(Incumbent{});
  if (!group.incumbentHash.empty() && group.incumbentHash != inc.sourceHash) {
    for (const auto &a : services_.store->sessionAttempts(id_))
      if (a.sourceHash == group.incumbentHash && a.evaluated) {
        inc.sourceHash = a.sourceHash;
        inc.ms = a.ms;
        inc.speedup = a.speedup;
        inc.feedback = a.feedback;
        break;
      }
  }
  std::string bottleneck;
  if (group.goal == Goal::Faster && !inc.sourceHash.empty()) {
    const std::string note = profileNote(inc.sourceHash, "incumbent.cu", group.ordinal);
    if (!note.empty()) inc.feedback += (inc.feedback.empty() || inc.feedback.back() == '\n' ? "" : "\n") + note;
    bottleneck = bottleneckOfNote(note);
  }
  const std::string incumbentText =
      inc.sourceHash.empty() ? std::string("// (none yet: write the kernel from the specification)")
                             : services_.store->source(inc.sourceHash).value_or("");
  std::string goal;
  switch (group.goal) {
    case Goal::Correct:
      goal = "Goal: a correct kernel: it must match the reference on every configuration and seed.";
      break;
    case Goal::Faster:
      goal = "Goal: a correct kernel that is faster than the current one (" + msText(group.incumbentMs.value_or(0)) +
             ", the geometric mean over the configurations); it counts when it is at least " +
             std::to_string(static_cast<int>(record_.settings.minGain * 100 + 0.5)) + "% faster.";
      break;
    case Goal::Compiles:
      goal = "Goal: a correct kernel that is faster than the current one. (This session has no GPU: your kernel is "
             "compiled and its launch checked, nothing is run.)";
      break;
  }
  const std::string kernel = task_.launch ? task_.launch->kernel : std::string("kwb_launch");
  const std::string answerFormat = renderTemplate(templateAnswer_, {{"kernel", kernel}}, "answer_format.md");
  const std::map<std::string, std::string> values = {{"task", taskSpec_},
                                                     {"incumbent", incumbentText},
                                                     {"incumbent_feedback", inc.feedback},
                                                     {"goal", goal},
                                                     {"answer_format", answerFormat}};
  std::string user = renderTemplate(templateFirst_, values, "first_turn.md");
  // The latest result (the incumbent's feedback) is the recency reserve R; the rest of the prompt
  // is hot (counted once: the hot text is the prompt without it).
  auto withoutRecent = values;
  withoutRecent["incumbent_feedback"] = "";
  std::string hot = renderTemplate(templateFirst_, withoutRecent, "first_turn.md");
  context = nlohmann::json::object();
  if (const std::string section = skillSection(inc.sourceHash.empty() ? std::string() : incumbentText, cards, context);
      !section.empty()) {
    user += (user.empty() || user.back() == '\n' ? "\n" : "\n\n") + section;
    hot += "\n\n" + section;
  }
  const std::string system = renderTemplate(templateSystem_, {}, "system.md");
  std::size_t recency = 0;
  {
    std::lock_guard lock(memoryMutex_);
    recency = estimator_.estimate(inc.feedback);
  }
  if (const std::string experience = memorySection(hot, system, recency, bottleneck, context); !experience.empty())
    user += (user.empty() || user.back() == '\n' ? "" : "\n") + experience;
  return {{"system", system, {}, {}}, {"user", user, {}, {}}};
}

std::size_t Session::contextWindow(nlohmann::json *context) const {
  std::size_t window = record_.settings.contextWindow;
  const char *from = "the session's setting";
  if (!window && services_.provider.contextWindow > 0) {
    window = static_cast<std::size_t>(services_.provider.contextWindow);
    from = "the provider's setting";
  }
  if (!window && provider_ && provider_->contextWindow() > 0) {
    window = static_cast<std::size_t>(provider_->contextWindow());
    from = "the server's word (it refused a longer prompt)";
  }
  if (!window) {
    window = llm::kAssumedContextWindow;
    from = "assumed: the provider does not say (set its context window)";
  }
  if (context) {
    (*context)["window"] = window;
    (*context)["window_from"] = from;
  }
  return window;
}

int Session::answerLimit() const {
  const int asked = std::max(1, record_.settings.maxTokens);
  return services_.provider.maxOutputTokens > 0 ? std::min(asked, services_.provider.maxOutputTokens) : asked;
}

std::string Session::memorySection(const std::string &hot, const std::string &system, std::size_t recency,
                                   const std::string &bottleneck, nlohmann::json &context) {
  if (!context.is_object()) context = nlohmann::json::object();
  if (!services_.memory || !record_.settings.memory) return {};
  std::lock_guard lock(memoryMutex_);
  try {
    memory::MemoryQuery q;
    q.task = task_.name;
    q.operatorClass = operatorClassOf(task_);
    q.text = task_.name + " " + task_.description;
    // The session's features, so that Cases alike rank first (KOPE's similarity).
    const memory::Measured features = memory::measuredOf(EvaluationResult{}, &task_);
    q.shape = features.shape;
    q.intensity = features.intensity;
    q.bottleneck = bottleneck;
    {
      std::lock_guard archLock(mutex_);
      q.nearArch = arch_;
      q.nearGpu = gpu_;
    }
    const auto items = memory::experienceFor(*services_.memory, q);
    memory::ContextBudget budget;
    budget.window = contextWindow(&context);
    budget.system = estimator_.estimate(system);
    budget.generation = static_cast<std::size_t>(answerLimit());
    budget.recency = recency;
    const std::vector<memory::ContextItem> hotItems = {
        {memory::Tier::Hot, "prompt", hot, "the task, the kernel, its feedback and the goal: always", 0}};
    auto assembled = memory::assembleContext(hotItems, items.warm, items.cold, budget, {}, estimator_);
    context.update(assembled.record());
    context["generation"] = budget.generation;
    context["recency"] = budget.recency;
    context["system"] = budget.system;
    context["chars_per_token"] = estimator_.charsPerToken();
    context["features"] = {{"shape", q.shape}, {"intensity", q.intensity}, {"bottleneck", q.bottleneck},
                           {"arch", q.nearArch}, {"gpu", q.nearGpu}};
    std::erase_if(assembled.included, [](const memory::ContextItem &i) { return i.tier == memory::Tier::Hot; });
    return assembled.text();
  } catch (const std::exception &e) {
    publish(event(SessionEvent::Kind::Message, 0, 0, 0, std::string("experience left out: ") + e.what()));
    return {};
  }
}

std::string Session::skillSection(const std::string &kernel, std::vector<std::string> &cards, nlohmann::json &context) {
  cards.clear();
  if (!services_.skills || !record_.settings.skills || record_.settings.skillCards <= 0) return {};
  RetrievalQuery q;
  q.operatorClass = operatorClassOf(task_);
  q.problemText = task_.name + " " + task_.description;
  if (!task_.configs.empty()) q.shape = task_.configs.back().values;  // the largest, by the tasks' habit
  q.kernelSource = kernel;
  q.configShapes = configShapesOf({task_});
  q.limit = record_.settings.skillCards;
  q.includeProposed = record_.settings.proposedCards;
  {
    std::lock_guard lock(mutex_);
    q.platform = arch_;
  }
  if (!context.is_object()) context = nlohmann::json::object();
  context["proposed_cards"] = record_.settings.proposedCards;
  try {
    std::lock_guard lock(skillsMutex_);
    // A group's lines share its kernel: the library is read and ranked once for it.
    auto it = skillSections_.find(kernel);
    if (it == skillSections_.end()) {
      const Retrieval r = retrieveCards(services_.skills->cards(), q);
      SkillSection section;
      section.text = formatCardsForPrompt(r.chosen, kSkillSectionChars, &section.ids);
      section.record = nlohmann::json::array();
      for (const auto &id : section.ids)
        for (const auto &c : r.chosen)
          if (c.card.id == id) section.record.push_back({{"id", id}, {"status", toString(c.card.status)}});
      it = skillSections_.emplace(kernel, std::move(section)).first;
    }
    cards = it->second.ids;
    context["cards"] = it->second.record;
    return it->second.text;
  } catch (const std::exception &e) {
    publish(event(SessionEvent::Kind::Message, 0, 0, 0, std::string("skill cards left out: ") + e.what()));
    cards.clear();
    return {};
  }
}

void Session::recordCardEvidence(const GroupRecord &group, const AttemptRecord &attempt, const EvaluationResult &r) {
  if (attempt.cards.empty() || !services_.skills) return;
  const bool timed = r.outcome == Outcome::Correct && attempt.ms;
  const bool failed = r.outcome == Outcome::CompileError || r.outcome == Outcome::Incorrect ||
                      r.outcome == Outcome::RuntimeError || r.outcome == Outcome::Timeout || r.outcome == Outcome::LoadError;
  if (!timed && !failed) return;  // not run (no GPU), cancelled, or the workbench's own trouble
  CardEvidence e;
  e.kind = "session";
  e.task = task_.name;
  e.config = "all";
  if (!record_.settings.configs.empty()) {
    e.config.clear();
    for (const auto &c : record_.settings.configs) e.config += (e.config.empty() ? "" : ",") + c;
  }
  e.device = r.device;
  e.arch = r.arch;
  if (timed && group.incumbentMs) {
    e.beforeMs = *group.incumbentMs;
    e.afterMs = *attempt.ms;
    e.speedup = e.beforeMs / e.afterMs;
  }
  e.success = timed && attempt.success;
  e.note = "session " + id_ + ", group " + std::to_string(group.ordinal) + ", line " + std::to_string(attempt.line) +
           ", turn " + std::to_string(attempt.turn) + ": " + attempt.outcome + (timed && !attempt.success ? ", goal not met" : "");
  e.at = utcTimestamp();
  std::lock_guard lock(skillsMutex_);
  for (const auto &id : attempt.cards) {
    try {
      services_.skills->addEvidence(id, e, "session " + id_);
    } catch (const std::exception &ex) {
      publish(event(SessionEvent::Kind::Message, group.ordinal, attempt.line, attempt.turn,
                    "card " + id + ": its evidence was not recorded: " + ex.what()));
    }
  }
}

std::vector<llm::Message> Session::repairMessages(const GroupRecord &group, const AttemptRecord &previous,
                                                  std::vector<std::string> &cards, nlohmann::json &context) {
  const std::string kernel = task_.launch ? task_.launch->kernel : std::string("kwb_launch");
  const std::string answerFormat = renderTemplate(templateAnswer_, {{"kernel", kernel}}, "answer_format.md");
  std::string candidate = previous.sourceHash.empty() ? previous.responseText
                                                       : services_.store->source(previous.sourceHash).value_or("");
  std::string feedback = previous.feedback;
  std::string bottleneck;
  // Correct but not faster: where its time goes.
  if (previous.outcome == "correct" && !previous.sourceHash.empty()) {
    char name[64];
    std::snprintf(name, sizeof name, "g%d-l%d-t%d.cu", group.ordinal, previous.line, previous.turn);
    const std::string note = profileNote(previous.sourceHash, name, group.ordinal);
    if (!note.empty()) feedback += (feedback.empty() || feedback.back() == '\n' ? "" : "\n") + note;
    bottleneck = bottleneckOfNote(note);
  }
  const std::map<std::string, std::string> values = {
      {"task", taskSpec_}, {"candidate", candidate}, {"feedback", feedback}, {"answer_format", answerFormat}};
  std::string user = renderTemplate(templateRepair_, values, "repair.md");
  // The previous candidate and its feedback are the recency reserve R; the hot text is the rest.
  auto withoutRecent = values;
  withoutRecent["candidate"] = "";
  withoutRecent["feedback"] = "";
  std::string hot = renderTemplate(templateRepair_, withoutRecent, "repair.md");
  context = nlohmann::json::object();
  // The line's own history before the previous turn (hot: what this line tried and how it ended).
  std::string history;
  for (const auto &a : services_.store->attempts(group.id)) {
    if (a.line != previous.line || a.turn >= previous.turn || !a.evaluated) continue;
    const std::string idea = memory::statedIntent(a.responseText);
    history += "- turn " + std::to_string(a.turn) + ": " + a.outcome + (idea.empty() ? "" : " (" + idea + ")") +
               (a.message.empty() ? "" : ": " + a.message.substr(0, a.message.find('\n'))) + "\n";
  }
  if (!history.empty()) {
    user += "\nWhat this line tried before (oldest first):\n" + history;
    hot += "\nWhat this line tried before (oldest first):\n" + history;
  }
  // The cards the line's first turn carried, and only those (after a resume, or with the library
  // changed since, a new retrieval could pick others).
  if (const std::string section = lineCardsSection(group, previous.cards, cards, context); !section.empty()) {
    user += "\n" + section;
    hot += "\n" + section;
  }
  const std::string system = renderTemplate(templateSystem_, {}, "system.md");
  std::size_t recency = 0;
  {
    std::lock_guard lock(memoryMutex_);
    recency = estimator_.estimate(candidate.size() + feedback.size());
  }
  if (const std::string experience = memorySection(hot, system, recency, bottleneck, context); !experience.empty())
    user += (user.empty() || user.back() == '\n' ? "" : "\n") + experience;
  return {{"system", system, {}, {}}, {"user", user, {}, {}}};
}

std::string Session::lineCardsSection(const GroupRecord &group, const std::vector<std::string> &lineCards,
                                      std::vector<std::string> &cards, nlohmann::json &context) {
  cards.clear();
  if (!context.is_object()) context = nlohmann::json::object();
  if (lineCards.empty() || !services_.skills) return {};
  const std::string kernel =
      group.incumbentHash.empty() ? std::string() : services_.store->source(group.incumbentHash).value_or("");
  {
    std::lock_guard lock(skillsMutex_);
    if (const auto it = skillSections_.find(kernel); it != skillSections_.end() && it->second.ids == lineCards) {
      cards = it->second.ids;
      context["cards"] = it->second.record;
      context["proposed_cards"] = record_.settings.proposedCards;
      return it->second.text;
    }
  }
  // Not cached (a resume): the line's cards as the library holds them now, in the line's order.
  try {
    std::vector<RetrievedCard> chosen;
    {
      std::lock_guard lock(skillsMutex_);
      for (const auto &id : lineCards)
        if (auto card = services_.skills->card(id)) chosen.push_back(RetrievedCard{*card, 0, 0, card->measuredSpeedup(), {}});
    }
    const std::string text = formatCardsForPrompt(chosen, kSkillSectionChars, &cards);
    context["cards"] = nlohmann::json::array();
    for (const auto &id : cards)
      for (const auto &c : chosen)
        if (c.card.id == id) context["cards"].push_back({{"id", id}, {"status", toString(c.card.status)}});
    context["proposed_cards"] = record_.settings.proposedCards;
    return text;
  } catch (const std::exception &e) {
    publish(event(SessionEvent::Kind::Message, group.ordinal, 0, 0, std::string("skill cards left out: ") + e.what()));
    cards.clear();
    return {};
  }
}

void Session::recordCase(const AttemptRecord &attempt) {
  if (!services_.memory || !record_.settings.memory || !attempt.evaluationId) return;
  std::lock_guard lock(memoryMutex_);
  try {
    memory::SyncReport report;
    services_.store->withWorkspace([&](Workspace &workspace) {
      report = memory::recordSessionRun(*services_.memory, workspace, attempt.evaluationId, &task_);
    });
    for (const auto &problem : report.problems)
      publish(event(SessionEvent::Kind::Message, 0, attempt.line, attempt.turn, "experience not recorded: " + problem));
  } catch (const std::exception &e) {
    publish(event(SessionEvent::Kind::Message, 0, attempt.line, attempt.turn, std::string("experience not recorded: ") + e.what()));
  }
}

void Session::evaluateAttempt(GroupRecord &group, AttemptRecord &attempt) {
  std::optional<EvaluationRecord> run;
  std::string source;
  if (attempt.sourceHash.empty()) {
    attempt.outcome = attempt.answerOutcome;
    attempt.message = attempt.answerNote.empty() ? "the answer held no code to evaluate" : attempt.answerNote;
    attempt.feedback = "Outcome: " + attempt.answerOutcome + " \u2014 " + attempt.message +
                       "\nAnswer with the complete source file in one ```cuda code block.";
    attempt.success = false;
  } else {
    source = services_.store->source(attempt.sourceHash).value_or("");
    char name[64];
    std::snprintf(name, sizeof name, "g%d-l%d-t%d.cu", group.ordinal, attempt.line, attempt.turn);
    const auto started = utcTimestamp();
    const auto t0 = std::chrono::steady_clock::now();
    EvaluationResult r;
    if (!evaluateOn(source, name, r)) return;  // cancelled: evaluated on resume
    attempt.evalSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    attempt.outcome = toString(r.outcome);
    attempt.message = r.message;
    attempt.ms = objectiveMs(r);
    attempt.speedup = objectiveSpeedup(r);
    attempt.feedback = evaluationFeedback(r);
    if (attempt.answerOutcome == "missing-kernel" && !attempt.answerNote.empty())
      attempt.feedback = attempt.answerNote + "\n" + attempt.feedback;
    switch (group.goal) {
      case Goal::Compiles:
        attempt.success = r.outcome == Outcome::NotRun || r.outcome == Outcome::Correct;
        break;
      case Goal::Correct:
        attempt.success = r.outcome == Outcome::Correct;
        break;
      case Goal::Faster:
        attempt.success = r.outcome == Outcome::Correct && attempt.ms && group.incumbentMs &&
                          *attempt.ms * (1.0 + record_.settings.minGain) <= *group.incumbentMs;
        if (r.outcome == Outcome::Correct && !attempt.success) {
          attempt.feedback += "\nCorrect, but not faster than the current kernel: " +
                              (attempt.ms ? msText(*attempt.ms) : std::string("not timed")) + " against " +
                              msText(group.incumbentMs.value_or(0)) + ".";
        }
        break;
    }
    if (r.outcome == Outcome::Correct && attempt.ms) {
      bool wouldBeBest = false;
      {
        std::lock_guard lock(mutex_);
        wouldBeBest = !bestMs_ || *attempt.ms < *bestMs_;
      }
      if (wouldBeBest && !sanitizeBefore(attempt, r, source, name, group.ordinal)) return;
    }
    EvaluationRecord rec;
    rec.taskId = record_.taskId;
    rec.taskName = task_.name;
    rec.sourceName = std::string("session ") + id_ + " " + name;
    rec.startedAt = started;
    rec.outcome = attempt.outcome;
    rec.message = r.message;
    rec.arch = r.arch;
    rec.device = r.device;
    rec.resultJson = evaluationResultText(r);
    run = rec;
    recordCardEvidence(group, attempt, r);
  }
  services_.store->setEvaluation(attempt, run, source);
  if (run) recordCase(attempt);
  SessionEvent e = event(SessionEvent::Kind::Evaluated, group.ordinal, attempt.line, attempt.turn, attempt.outcome);
  e.attempt = attempt;
  e.source = source;
  publish(e);
  if (attempt.outcome == "correct" && attempt.ms) {
    bool better = false;
    {
      std::lock_guard lock(mutex_);
      better = !bestMs_ || *attempt.ms < *bestMs_;
      if (better) bestMs_ = attempt.ms;
    }
    if (better) {
      SessionEvent b = e;
      b.kind = SessionEvent::Kind::Best;
      b.text = msText(*attempt.ms) + (attempt.speedup ? " (" + ratioText(*attempt.speedup) + " the reference)" : "");
      publish(b);
    }
  }
}

void Session::runOne(GroupRecord &group, Pending &pending) {
  if (pending.attempt) {  // answered before a pause or a crash: only its evaluation is missing
    if (!stopRequested_) evaluateAttempt(group, *pending.attempt);
    return;
  }
  if (stopRequested_) return;
  {
    std::lock_guard lock(mutex_);
    if (!budgetHit_.empty()) return;
    const std::string refusal = budgetRefusal();
    if (!refusal.empty()) {
      budgetHit_ = refusal;
      return;
    }
  }
  AttemptRecord a;
  a.groupId = group.id;
  a.line = pending.line;
  a.turn = pending.turn;
  a.parentId = pending.previous ? pending.previous->id : 0;
  if (pending.previous) {
    a.messages = repairMessages(group, *pending.previous, a.cards, a.context);
  } else {
    a.messages = firstTurnMessages(group, a.cards, a.context);
  }
  llm::ChatRequest request;
  request.model = record_.model;
  request.messages = a.messages;
  request.maxTokens = answerLimit();
  request.temperature = record_.settings.temperature;
  request.stream = true;
  auto cancel = std::make_shared<llm::CancelToken>();
  {
    std::lock_guard lock(mutex_);
    if (stopRequested_) return;
    inFlight_.push_back(cancel);
  }
  publish(event(SessionEvent::Kind::Requesting, group.ordinal, a.line, a.turn, {}));
  const llm::ChatResult result = provider_->chat(
      request,
      [&](const llm::StreamDelta &d) {
        if (d.kind == llm::StreamDelta::Kind::Text && !d.text.empty())
          publish(event(SessionEvent::Kind::Text, group.ordinal, a.line, a.turn, d.text));
      },
      cancel.get());
  {
    std::lock_guard lock(mutex_);
    inFlight_.erase(std::remove(inFlight_.begin(), inFlight_.end(), cancel), inFlight_.end());
  }
  if (result.cancelled || cancel->cancelled()) return;  // asked again on resume
  if (!result.ok()) {
    std::lock_guard lock(mutex_);
    if (llmFailure_.empty())
      llmFailure_ = result.error.empty() ? std::string("the answer's stream broke off before its end") : result.error;
    return;
  }
  a.responseText = result.response.text;
  a.finishReason = result.response.finishReason;
  a.inputTokens = result.response.usage.inputTokens;
  if (result.response.usage.reported && a.inputTokens > 0) {
    std::size_t chars = 0;
    for (const auto &m : a.messages) chars += m.content.size();
    std::lock_guard lock(memoryMutex_);
    estimator_.calibrate(chars, static_cast<std::size_t>(a.inputTokens));
  }
  a.outputTokens = result.response.usage.outputTokens;
  a.cost = result.cost;
  a.llmSeconds = result.seconds;
  const ParsedAnswer parsed = parseAnswer(a.responseText, expectedKernel(task_),
                                          a.finishReason);
  a.answerOutcome = std::string(answerOutcomeName(parsed.outcome));
  a.answerNote = parsed.note;
  if (const std::string cause = likelyCause(parsed.outcome, result, request.maxTokens); !cause.empty())
    a.answerNote = a.answerNote.empty() ? cause : a.answerNote + "; " + cause;
  if (!result.note.empty()) a.answerNote += (a.answerNote.empty() ? "" : "; ") + result.note;
  const bool evaluable = parsed.outcome == AnswerOutcome::Code || parsed.outcome == AnswerOutcome::MissingKernel;
  a = services_.store->addAttempt(a, evaluable ? parsed.source : std::string());
  SessionEvent e = event(SessionEvent::Kind::Answered, group.ordinal, a.line, a.turn, a.answerOutcome);
  e.attempt = a;
  if (evaluable) e.source = parsed.source;
  publish(e);
  if (!stopRequested_) evaluateAttempt(group, a);
}

bool Session::runTurn(GroupRecord &group, int turn, const std::vector<int> &lines) {
  const auto attempts = services_.store->attempts(group.id);
  std::vector<Pending> pending;
  for (int line : lines) {
    Pending p;
    p.line = line;
    p.turn = turn;
    bool done = false;
    for (const auto &a : attempts) {
      if (a.line != line) continue;
      if (a.turn == turn) {
        if (a.evaluated) done = true;
        else p.attempt = a;
      } else if (a.turn == turn - 1) {
        p.previous = a;
      }
    }
    if (!done) pending.push_back(std::move(p));
  }
  const std::size_t width = services_.parallelLines == 0 ? pending.size() : services_.parallelLines;
  for (std::size_t first = 0; first < pending.size(); first += width) {
    std::vector<std::thread> threads;
    for (std::size_t i = first; i < std::min(pending.size(), first + width); ++i)
      threads.emplace_back([this, &group, p = &pending[i]] { runOne(group, *p); });
    for (auto &t : threads) t.join();
  }
  // Complete when every line has its evaluated attempt at this turn.
  const auto after = services_.store->attempts(group.id);
  for (int line : lines) {
    const bool has = std::any_of(after.begin(), after.end(), [&](const AttemptRecord &a) {
      return a.line == line && a.turn == turn && a.evaluated;
    });
    if (!has) return false;
  }
  return true;
}

void Session::giveRewards(GroupRecord &group) {
  const auto attempts = services_.store->attempts(group.id);
  const int G = static_cast<int>(record_.settings.candidates);
  std::vector<Attempt> outcomes(static_cast<std::size_t>(G));
  std::vector<std::vector<const AttemptRecord *>> lines(static_cast<std::size_t>(G));
  for (const auto &a : attempts)
    if (a.line >= 1 && a.line <= G) lines[static_cast<std::size_t>(a.line - 1)].push_back(&a);
  for (int l = 0; l < G; ++l) {
    for (const auto *a : lines[static_cast<std::size_t>(l)]) {
      if (a->success) {
        outcomes[static_cast<std::size_t>(l)] = Attempt{true, static_cast<std::size_t>(a->turn), a->ms};
        break;
      }
    }
  }
  const auto rewards = rankRewards(outcomes, record_.settings.timeTolerance);
  int successes = 0;
  for (int l = 0; l < G; ++l) {
    const auto &line = lines[static_cast<std::size_t>(l)];
    if (outcomes[static_cast<std::size_t>(l)].success) ++successes;
    const auto credits = turnCredits(rewards[static_cast<std::size_t>(l)], line.size(), record_.settings.discount);
    for (std::size_t k = 0; k < line.size(); ++k) {
      services_.store->setRewards(line[k]->id, rewards[static_cast<std::size_t>(l)], credits[k]);
      SessionEvent e = event(SessionEvent::Kind::Rewarded, group.ordinal, line[k]->line, line[k]->turn, {});
      e.attempt = *line[k];
      e.attempt->reward = rewards[static_cast<std::size_t>(l)];
      e.attempt->credit = credits[k];
      publish(e);
    }
  }
  services_.store->finishGroup(group.id);
  group.done = true;
  publish(event(SessionEvent::Kind::GroupDone, group.ordinal, 0, 0,
        "group " + std::to_string(group.ordinal) + ": " + std::to_string(successes) + " of " + std::to_string(G) +
            " lines met the goal (" + toString(group.goal) + ")"));
}

bool Session::processGroup(GroupRecord &group) {
  const int G = static_cast<int>(record_.settings.candidates);
  std::vector<int> all;
  for (int l = 1; l <= G; ++l) all.push_back(l);
  if (!runTurn(group, 1, all)) return false;
  if (!group.dcp) {
    const auto attempts = services_.store->attempts(group.id);
    std::size_t failures = 0;
    for (const auto &a : attempts)
      if (a.turn == 1 && !a.success) ++failures;
    const std::string success = group.goal == Goal::Faster     ? "correct and faster"
                                : group.goal == Goal::Compiles ? "compiled"
                                                               : "correct";
    group.dcp = decideRepair(failures, static_cast<std::size_t>(G), record_.settings.dcp, success);
    services_.store->setDcp(group.id, *group.dcp);
    publish(event(SessionEvent::Kind::Dcp, group.ordinal, 0, 0, group.dcp->reason));
  }
  if (group.dcp->verdict == DcpVerdict::Repair) {
    for (int turn = 2; turn <= 1 + static_cast<int>(group.dcp->repairTurns); ++turn) {
      const auto attempts = services_.store->attempts(group.id);
      std::vector<int> failed;
      for (int l = 1; l <= G; ++l) {
        bool succeeded = false, hadPrevious = false;
        for (const auto &a : attempts) {
          if (a.line != l) continue;
          if (a.success && a.turn < turn) succeeded = true;
          if (a.turn == turn - 1) hadPrevious = true;
        }
        if (!succeeded && hadPrevious) failed.push_back(l);
      }
      if (failed.empty()) break;
      if (!runTurn(group, turn, failed)) return false;
    }
  }
  giveRewards(group);
  return true;
}

SessionState Session::run() {
  // A pause() or stop() that came before run() (while the caller was still preparing, e.g.
  // waiting for GPUs) holds: run() ends at once in that state. What run() was told is forgotten
  // as it ends, so the next run() (a resume) starts afresh.
  {
    std::lock_guard lock(mutex_);
    llmFailure_.clear();
    budgetHit_.clear();
  }
  record_ = *services_.store->session(id_);
  runStarted_ = std::chrono::steady_clock::now();
  if (record_.state == SessionState::Running && !record_.updatedAt.empty() && record_.createdAt != record_.updatedAt)
    publish(event(SessionEvent::Kind::Message, 0, 0, 0, "resuming a session that was left running (its process ended)"));
  setState(SessionState::Running, {});
  if (record_.settings.useDevice && !onGpu() && !services_.noDevice.empty())
    publish(event(SessionEvent::Kind::Message, 0, 0, 0,
                  "no GPU: " + services_.noDevice + "; every candidate is compiled and its launch checked, nothing is run"));
  const auto finishRun = [&](SessionState state, const std::string &reason) {
    services_.store->addElapsed(id_, elapsedNow());
    setState(state, reason);
    std::lock_guard lock(mutex_);
    stopRequested_ = false;
    requestedState_.reset();
    requestedReason_.clear();
    return state;
  };
  const auto interrupted = [&]() -> std::optional<SessionState> {
    std::lock_guard lock(mutex_);
    if (requestedState_) return requestedState_;
    return std::nullopt;
  };
  const auto requestedReason = [&] {  // a copy: stop() may change it from another thread
    std::lock_guard lock(mutex_);
    return requestedReason_;
  };
  try {
    if (const auto s = interrupted()) return finishRun(*s, requestedReason());
    if (!measureBaseline()) {
      const auto s = interrupted();
      return finishRun(s.value_or(SessionState::Paused), s ? requestedReason() : "cancelled");
    }
    bestMs_ = incumbentFor().ms;
    for (;;) {
      if (const auto s = interrupted()) return finishRun(*s, requestedReason());
      auto groups = services_.store->groups(id_);
      GroupRecord *current = nullptr;
      for (auto &g : groups)
        if (!g.done) {
          current = &g;
          break;
        }
      GroupRecord fresh;
      if (!current) {
        if (groups.size() >= record_.settings.groups)
          return finishRun(SessionState::Finished,
                           "done: " + std::to_string(groups.size()) + " group" + (groups.size() == 1 ? "" : "s") +
                               "; " + answersSummary(services_.store->sessionAttempts(id_)));
        const std::string refusal = budgetRefusal();
        if (!refusal.empty())
          return finishRun(SessionState::Finished, refusal + "; " + answersSummary(services_.store->sessionAttempts(id_)));
        const Incumbent inc = incumbentFor();
        fresh = services_.store->addGroup(id_, static_cast<int>(groups.size()) + 1, goalFor(inc), inc);
        current = &fresh;
      }
      {
        // The group's start, with its incumbent's code (a viewer diffs first turns against it).
        SessionEvent e = event(SessionEvent::Kind::Message, current->ordinal, 0, 0,
                               "group " + std::to_string(current->ordinal) + (current == &fresh ? "" : " (resumed)") +
                                   ": goal " + toString(current->goal) +
                                   (current->incumbentMs ? ", incumbent " + msText(*current->incumbentMs) : std::string()));
        if (!current->incumbentHash.empty()) e.source = services_.store->source(current->incumbentHash).value_or("");
        publish(e);
      }
      const bool complete = processGroup(*current);
      if (complete) continue;
      if (const auto s = interrupted()) return finishRun(*s, requestedReason());
      std::string llmFailure, budgetHit;
      {
        std::lock_guard lock(mutex_);
        llmFailure = llmFailure_;
        budgetHit = budgetHit_;
      }
      if (!llmFailure.empty())
        return finishRun(SessionState::Failed, "the provider did not answer: " + llmFailure +
                                                   " (the session resumes where it was once it answers)");
      if (!budgetHit.empty()) return finishRun(SessionState::Finished, budgetHit);
      return finishRun(SessionState::Failed, "a turn did not complete (evaluations were cancelled)");
    }
  } catch (const std::exception &e) {
    return finishRun(SessionState::Failed, e.what());
  }
}

}  // namespace kwb::agent
