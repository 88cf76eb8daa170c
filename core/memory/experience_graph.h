#pragma once
// KOPE's experience graph (../shared/RESEARCH.md, KOPE; issue 19 item 2): Cases linked to the Case
// they started from form a forest. Each Case has a step ratio r (its speedup over the speedup it
// started from), a label from r, and a downstream score
//     d(v) = w_self * r_v + w_succ * gamma * sum of d(s) over v's successors s
// kept current as Cases arrive: a new leaf changes only its ancestors' scores, each by the change
// below it times w_succ * gamma. No Qt, no SQLite: the store (experience_store.h) keeps the same
// numbers in the library database with these functions.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kwb::memory {

struct ScoreWeights {
  double self = 0.5;        // w_self
  double successors = 0.5;  // w_succ
  double gamma = 0.7;       // the discount per generation
  friend bool operator==(const ScoreWeights &, const ScoreWeights &) = default;
};

enum class Label { Effective, Partial, Ineffective, Negative };

// effective r >= 1.05, partial 1 <= r < 1.05, ineffective 0.85 <= r < 1, negative below (an
// incorrect Case has r = 0: negative).
Label labelOf(double ratio);
const char *toString(Label label);
std::optional<Label> labelFromString(const std::string &text);
// Effective first: the order retrieval groups by.
int labelRank(Label label);
// How a Case is drawn, in the Graphviz export and the explorer alike: its label's colour (#rrggbb),
// and a diameter in points that grows with the logarithm of its speedup (22 pt at 1x, 16 pt for
// an incorrect or untimed Case).
const char *labelColour(Label label);
double nodeDiameter(double speedup);

// A Case's step ratio: its speedup over `baseline`, the speedup of the nearest correct Case it
// descends from (none: a root, r = 1). An incorrect Case, or one not timed, has r = 0.
double stepRatio(bool correct, double speedup, std::optional<double> baseline);

// Confidence in a measured speedup from its timing's relative spread (IQR over median): 1 for a
// tight measurement, 1/2 at 10 % spread, 1/(1 + 10 s) in general; 0 for an untimed or incorrect
// Case.
double confidenceOf(bool correct, double speedup, double relativeSpread);

// The forest as numbers. Ids are the Cases' (any positive values); a parent is added before its
// children.
class ScoreForest {
 public:
  explicit ScoreForest(ScoreWeights weights = {}) : weights_(weights) {}
  struct Node {
    std::optional<std::int64_t> parent;
    double ratio = 0;
    double score = 0;
    std::vector<std::int64_t> children;
  };
  // Adds a leaf and brings its ancestors' scores up to date. Returns every (id, new score) that
  // changed, the new leaf first. Throws std::invalid_argument for a known id or an unknown parent.
  std::vector<std::pair<std::int64_t, double>> add(std::int64_t id, std::optional<std::int64_t> parent, double ratio);
  // Every score computed again from the leaves up (after the weights change).
  void recompute();
  void setWeights(const ScoreWeights &weights);
  const ScoreWeights &weights() const { return weights_; }
  const std::map<std::int64_t, Node> &nodes() const { return nodes_; }
  double score(std::int64_t id) const { return nodes_.at(id).score; }

 private:
  ScoreWeights weights_;
  std::map<std::int64_t, Node> nodes_;
  std::vector<std::int64_t> order_;  // ids in the order added
};

}  // namespace kwb::memory
