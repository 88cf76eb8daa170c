#pragma once
// Lineage by de-optimization (KLineage, issue 18 item 2): from an expert kernel, a model is asked
// again and again to take out one named optimization technique; each answer is gated (compiled,
// checked on every configuration and seed, timed; without a GPU: compiled only, and said so), an
// accepted one becomes the kernel the next request starts from, a rejected one is recorded with
// its reason and the model is asked again from the same kernel (told what was rejected). It stops
// when the model answers "NOTHING LEFT", at the step limit, or when cancelled.
//
// The accepted versions read backwards are a lineage from the plainest kernel to the expert:
// writeForwardVersions() puts them in a folder (NN-name.cu with "Adds:"/"Relies on:" headers), where
// `kwb lineage build TASK --from-versions DIR` re-derives each forward edit and gates it again, in
// forward order, and lifts the cards. No Qt; blocks.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/eval/evaluator.h"
#include "core/llm/provider.h"
#include "core/task/task.h"

namespace kwb::agent {

struct DeoptimizeSettings {
  int maxSteps = 15;  // requests in all, accepted and rejected
  int maxTokens = 8192;
  std::chrono::milliseconds timingCap{500};
  std::string arch;                              // empty: the device's
  std::map<std::string, std::int64_t> tunables;  // the expert's (a lineage step's)
  // On a GPU, keep a version only when it is slower than the one it was taken from at the task's
  // largest configuration (KLineage: read forward, every step pays).
  bool requireSlower = true;
};

struct DeoptimizeStep {
  int request = 0;        // 1-based
  int fromVersion = 0;    // the index in Deoptimization::versions of the kernel it was asked of
  std::string technique;  // the model's "Removed:" line ("" when it named none)
  bool accepted = false;
  std::string outcome;    // the evaluation's ("correct", "not-run", "compile-error", ...) or the answer's
  std::string reason;     // why it was rejected; for an accepted one, what was measured
  std::string source;     // the answer's code (empty: none)
  std::optional<double> ms;  // geometric mean over the configurations, when timed
  std::optional<double> targetMs;  // the median at Deoptimization::targetConfig, when timed
};

struct Deoptimization {
  std::vector<DeoptimizeStep> steps;     // in the order asked
  std::vector<std::string> versions;     // accepted, the expert first
  std::vector<std::string> techniques;   // techniques[i]: taken out between versions[i] and versions[i + 1]
  std::vector<std::optional<double>> ms; // per version
  std::string stopReason;                // "nothing left", "step limit (15)", "cancelled", or the failure
  std::string targetConfig;              // the configuration speed is judged at (the task's largest)
  bool onGpu = false;                    // steps were checked and timed, not only compiled
  bool cancelled = false;
};

struct DeoptimizeServices {
  llm::Provider *provider = nullptr;
  Evaluator *evaluator = nullptr;
  std::filesystem::path promptsUserDir, promptsBundledDir;
  std::function<void(const std::string &)> onProgress;  // one line per stage; may be empty
  // After each answer is ruled on, with everything so far (kwb writes the folder each time, so an
  // interrupted run keeps what it had). May be empty.
  std::function<void(const Deoptimization &)> onStep;
  const llm::CancelToken *cancel = nullptr;
};

// The messages for one request: the system prompt and deoptimize.md filled with the task, the
// kernel and what was rejected from this kernel so far.
std::vector<llm::Message> deoptimizeMessages(const Task &task, const std::string &kernel,
                                             const std::vector<DeoptimizeStep> &rejectedHere,
                                             const std::filesystem::path &promptsUserDir = {},
                                             const std::filesystem::path &promptsBundledDir = {});

// Runs the loop from `expert`. An answer is accepted when it compiles, is correct everywhere and
// timed, and (settings.requireSlower) is slower at the task's largest configuration than the
// kernel it was taken from; otherwise rejected with its numbers. Throws std::runtime_error when a
// prompt template cannot be read; everything else (the model, the kernels) is in the result.
Deoptimization deoptimize(const Task &task, const std::string &expert, const DeoptimizeServices &services,
                          const DeoptimizeSettings &settings = {});

// Writes the accepted versions forward into `dir` (created; files of an earlier run there are
// replaced): 01-plainest.cu ... NN-expert.cu, each opening with "// Adds: <technique>" and
// "// Relies on: <features>" (kernel_features.h: those of the step before that the step keeps,
// so its card's `requires` is filled); lineage.toml listing them (titles: the techniques; every
// step with `tunables`, the expert's; `risks`: the answers rejected when asked to take something
// out of the step's kernel, so they become risk entries of its card); deoptimize.json (every step
// asked, accepted and rejected, with reasons). Each version runs as the task's [launch]. Returns the files, in order. Throws
// std::runtime_error.
std::vector<std::filesystem::path> writeForwardVersions(const Deoptimization &d, const std::filesystem::path &dir,
                                                        const std::string &expertName,
                                                        const std::map<std::string, std::int64_t> &tunables = {});

// deoptimize() into a folder of forward versions, kept current: the folder is rewritten after every
// answer (a crash or a cancel keeps what there was; services.onStep is still called after), written
// once more at the end (with settings.tunables), and removed when no version is left in it.
struct DeoptimizedFolder {
  Deoptimization deoptimization;
  std::vector<std::filesystem::path> files;  // the forward versions, in order
  // Whether the folder can become a lineage on a GPU.
  enum class Use { Build, Cancelled, TooFewVersions, CompiledOnly };
  Use use() const;
};
DeoptimizedFolder deoptimizeToFolder(const Task &task, const std::string &expert, const std::string &expertName,
                                     const std::filesystem::path &folder, DeoptimizeServices services,
                                     const DeoptimizeSettings &settings = {});

}  // namespace kwb::agent
