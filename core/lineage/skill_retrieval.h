#pragma once
// Which skill cards an optimization session hands its agent (KLineage "Use", ../shared/RESEARCH.md;
// issue 18, 6): the cards whose scope covers the problem, reached on a lineage path from the
// kernel as it is now, ranked by how close their problem is to this one; and the prompt section
// that shows the chosen ones, with each card's carrier as the code hint. Pure logic: the caller
// reads the cards (SkillLibrary::cards) and the kernel, and puts the text into its prompt.
//
//   Retrieval r = retrieveCards(library.cards(), query);
//   std::string section = formatCardsForPrompt(r.chosen, 12000);
//
// A card is chosen in four stages; each card left out gets one reason (Retrieval::skipped).
//
// 1. Status: rejected cards never; proposed ones (unproven) only with includeProposed; admitted
//    (the gate's) and approved (a reviewer's) always.
// 2. Scope: scope.cases must match operatorClass, scope.languages language, scope.platforms
//    platform ('*' wildcards, case-insensitive; an empty list, or an empty query field, matches
//    anything). A platform is an architecture ("sm_90") or a family ("hopper", "ampere", "ada",
//    "turing", "volta", "blackwell"), which stands for its architectures; "sm_90a" and "sm_90" are
//    the same GPUs, so either matches the other.
// 3. Lineage path. The kernel's features F are read from kernelSource (detectFeatures). Each card
//    is judged alone first, in this order:
//      - "already has X": its provides is non-empty and all of it is in F;
//      - "needs sm_80 or newer for cp-async...": a feature it provides (kernel_features.h) does not
//        run on the query's platform (checked when the platform is an sm_NN). Arch-specific
//        features ("sm_90a": wgmma) run on that architecture's GPUs only; sm_90 and sm_90a are
//        the same GPUs;
//      - "conflicts with Y the kernel has": one of its conflicts is in F;
//      - "requires Z the kernel lacks": one of its requires is not in F;
//      - otherwise it is open.
//    Then every lineage the cards were lifted from (their successful "lineage-step" evidence) is
//    walked as a path, in step order. The kernel's position on the path is the last step whose
//    card it already has; cards before that position that provide nothing the code shows
//    (a "global-memory coalescing" card) are passed ("passed: ..."), those that provide a feature
//    the kernel lacks are judged alone (a blocked one does not stop the walk). From the position on, the
//    walk skips cards the kernel already has, takes open cards, and stops at the first card
//    that conflicts or lacks a requirement: that card and every later one on the path are left
//    out ("beyond X (step s of lineage L), where the walk stops: ..."). A card on several paths
//    is taken when one path takes it; otherwise the reason is the first path's, by lineage name.
//    A card on no path (an imported card) is taken when it is open.
// 4. Ranking, lexicographic, each score higher first:
//      a. text similarity, quantized to steps of 0.05 (rounded), so that token-overlap noise ties
//         and the next key decides;
//      b. shape similarity, quantized to steps of 0.05;
//      c. measured gain (SkillCard::measuredSpeedup), rounded to 0.01;
//      d. admitted, then approved, then proposed; e. id, ascending (the order is total and deterministic).
//    The first `limit` are chosen (limit <= 0: all); the rest are skipped as "ranked N-th...".
//
// Text similarity: cosine of term counts. Terms are lower-cased runs of letters and digits, at
// least two characters, English stop words dropped, a plural 's' folded ("tiles" = "tile").
// The query side is problemText; the card side is its intent, its Overview and Scope sections
// (Scope says what problem the card was measured on) and its scope cases. In [0, 1].
//
// Shape similarity: the query's sizes Q against each size sample of the card; the card's score
// is its best sample's. Size names compare case-insensitively; only positive sizes count. For one
// sample E: sum over names in both of 1 / (1 + |log2(q / e)|) (1 when equal, 0.5 at twice or
// half, 0.25 at 8x), divided by the number of names in Q or E. Samples, in the order looked for:
//      - each successful, non-rejected evidence's (task, config) looked up in configShapes (the
//        evidence stores names, not sizes: configShapesOf(tasks) gives the bundled tasks' sizes);
//      - an evidence's config written as sizes ("M=512,N=512,K=512");
//      - the rows of a Markdown table in the card's "Example configuration" section whose header
//        names sizes of Q (the published cards have "| M | N | K | tile |"); only those columns,
//        and only integer cells, are read.
//    A card without any sample, or a query without sizes, scores 0.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/lineage/skill_card.h"
#include "core/task/task.h"

namespace kwb {

// One configuration's sizes, by size name ("M" -> 4096): SizeConfig::values.
using ShapeSizes = std::map<std::string, std::int64_t>;
// Sizes by task name, then configuration name.
using ConfigShapes = std::map<std::string, std::map<std::string, ShapeSizes>>;

// The configurations' sizes of `tasks` (a task catalog), for RetrievalQuery::configShapes.
ConfigShapes configShapesOf(const std::vector<Task> &tasks);

struct RetrievalQuery {
  std::string operatorClass;      // operatorClassOf(task): "gemm"; empty: any
  std::string language = "cuda";  // empty: any
  std::string platform;           // the device's architecture ("sm_90"); empty: any
  std::string problemText;        // the task's name and description, what the session is after
  ShapeSizes shape;               // the sizes the kernel is tuned for (one configuration)
  std::string kernelSource;       // the kernel as it is now
  ConfigShapes configShapes;      // how evidence (task, config) turns into sizes
  bool includeProposed = false;   // true: proposed (unproven) cards too, not only admitted and approved
  int limit = 3;                  // at most this many chosen; <= 0: no limit
};

struct RetrievedCard {
  SkillCard card;
  double textScore = 0;   // [0, 1], unquantized
  double shapeScore = 0;  // [0, 1], unquantized
  double gain = 0;        // card.measuredSpeedup(): 0 without measurements
  std::string why;        // how it was reached and scored, for a log or a tooltip
};

struct SkippedCard {
  std::string id;
  std::string reason;  // "rejected", "scope: ...", "already has X", "conflicts with Y the kernel has", ...
  friend bool operator==(const SkippedCard &, const SkippedCard &) = default;
};

struct Retrieval {
  std::vector<RetrievedCard> chosen;   // best first
  std::vector<SkippedCard> skipped;    // in the order of the cards given
  std::vector<std::string> kernelFeatures;  // F, the features read from the kernel, sorted
};

Retrieval retrieveCards(const std::vector<SkillCard> &cards, const RetrievalQuery &query);

// The two similarities on their own (as retrieveCards computes them).
double textSimilarity(const std::string &problemText, const SkillCard &card);
double shapeSimilarity(const ShapeSizes &shape, const SkillCard &card, const ConfigShapes &configShapes = {});
// The terms of `text` as the text similarity counts them.
std::vector<std::string> similarityTerms(const std::string &text);
// Whether a card's platform entry (a pattern, an architecture or a family) covers `arch`.
bool platformMatches(const std::string &cardPlatform, const std::string &arch);

// The prompt section for the chosen cards, best first: a heading and a line on how to use them,
// then per card its id and status, intent, measured gain, requires / provides / conflicts, the
// preconditions, the risk (when the card has one, on one line) and the carrier, Before and After,
// each in a fenced block. At most maxChars characters: a card that does not fit is left out
// whole (a later, shorter one may still fit), so no code fence is ever cut; "" when none fits.
// `included`, when given, receives the ids shown, in order.
// One card as the model reads it: intent, measured gain, requires/provides/conflicts, the
// preconditions, the risk and the Before/After carrier as fenced code (formatCardsForPrompt's
// blocks, and a card application's prompt: core/agent/card_application.h).
std::string cardPromptText(const SkillCard &card);

std::string formatCardsForPrompt(const std::vector<RetrievedCard> &cards, std::size_t maxChars,
                                 std::vector<std::string> *included = nullptr);

}  // namespace kwb
