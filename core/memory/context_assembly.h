#pragma once
// KOPE's active context (issue 19 item 4): each turn's prompt is rebuilt in tiers under a budget
//     B = max(0, W - S - G - R)
// (the model's window, less the system prompt, the generation allowance and a recency reserve):
// hot (task spec, incumbent, latest feedback, target) always; warm (graph-ranked experience of this
// task and operator) up to a cap; cold (skill cards, cross-task experience, digests) up to a cap.
// Token counts are estimated from characters, calibrated with the provider's reported usage. What
// was included, and why, comes back with the text. No Qt.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/memory/experience_store.h"

namespace kwb::memory {

enum class Tier { Hot, Warm, Cold };
const char *toString(Tier tier);

struct ContextItem {
  Tier tier = Tier::Hot;
  std::string kind;  // "task", "incumbent", "feedback", "target", "experience", "card", "cross-task", "digest"
  std::string text;
  std::string why;   // why it was chosen ("effective x1.32 over its parent; d x confidence 0.61")
  std::int64_t caseId = 0;
};

struct ContextBudget {
  std::size_t window = 0;      // W: the model's context window, tokens
  std::size_t system = 0;      // S: the system prompt
  std::size_t generation = 0;  // G: the answer's allowance (max tokens)
  std::size_t recency = 0;     // R: kept for the latest exchange (a repair's transcript)
  std::size_t budget() const;  // max(0, W - S - G - R)
};

struct TierCaps {
  std::size_t warmItems = 6, coldItems = 4;
  // Of what the hot tier leaves, the most each tier may take (fractions of B).
  double warmShare = 0.6, coldShare = 0.4;
};

// Characters per token, learned from what the provider reported: starts at 4 (English prose and
// code under BPE tokenizers), then moves toward each observed ratio (an exponential average).
class TokenEstimator {
 public:
  std::size_t estimate(const std::string &text) const;
  std::size_t estimate(std::size_t chars) const;
  void calibrate(std::size_t chars, std::size_t reportedTokens);
  double charsPerToken() const { return charsPerToken_; }
  std::size_t observations() const { return observations_; }

 private:
  double charsPerToken_ = 4.0;
  std::size_t observations_ = 0;
};

struct AssembledContext {
  std::vector<ContextItem> included;  // hot first, then warm, then cold, each in the order given
  std::vector<ContextItem> left;      // offered but not included, with why
  std::size_t budget = 0;             // B
  std::size_t tokens = 0;             // estimated, of what was included
  std::size_t hotTokens = 0;
  bool hotOverBudget = false;         // the hot tier alone exceeds B (it is included all the same)
  // The included items' text, tier by tier, with headings for the warm and cold tiers.
  std::string text() const;
  // What was included and left, and why: stored with the turn, shown in the session view.
  nlohmann::json record() const;
};

// Hot items all go in; warm items in order while each fits in the warm share and cap; cold items
// likewise. An item that does not fit is left (the next smaller one may still fit). Never more
// than B in all, unless the hot tier alone is more (then only the hot tier).
AssembledContext assembleContext(const std::vector<ContextItem> &hot, const std::vector<ContextItem> &warm,
                                 const std::vector<ContextItem> &cold, const ContextBudget &budget,
                                 const TierCaps &caps = {}, const TokenEstimator &estimator = {});

// One Case as a prompt line: its label and ratio, its speedup over the reference, the idea, and its
// feedback when it failed ("negative: incorrect - 'wide: 12 elements differ'").
std::string experienceLine(const Case &c);

// A digest as prompt lines, under `title` ("softmax"): counts by label, the best Case, the ideas that
// paid off, slowed the kernel down or broke it, and the failures by outcome. "" for no Cases.
std::string digestText(const Digest &digest, const std::string &title);

// Experience for a turn on `task`: warm items from this task's and operator class's Cases ranked
// by the memory (effective first, d x confidence x similarity); cold items: digests of this task's
// and its operator's other tasks' Cases where there are more than the warm items show one by one,
// then Cases of other operator classes that match the task's words. Each item says why it was
// chosen.
struct ExperienceItems {
  std::vector<ContextItem> warm, cold;
};
ExperienceItems experienceFor(ExperienceStore &store, const MemoryQuery &query, std::size_t warmLimit = 12,
                              std::size_t coldLimit = 6);

}  // namespace kwb::memory
