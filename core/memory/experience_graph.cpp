#include "core/memory/experience_graph.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kwb::memory {

Label labelOf(double ratio) {
  if (ratio >= 1.05) return Label::Effective;
  if (ratio >= 1.0) return Label::Partial;
  if (ratio >= 0.85) return Label::Ineffective;
  return Label::Negative;
}

const char *toString(Label label) {
  switch (label) {
    case Label::Effective: return "effective";
    case Label::Partial: return "partial";
    case Label::Ineffective: return "ineffective";
    case Label::Negative: return "negative";
  }
  return "negative";
}

std::optional<Label> labelFromString(const std::string &text) {
  for (const Label l : {Label::Effective, Label::Partial, Label::Ineffective, Label::Negative})
    if (text == toString(l)) return l;
  return std::nullopt;
}

int labelRank(Label label) { return static_cast<int>(label); }

const char *labelColour(Label label) {
  switch (label) {
    case Label::Effective: return "#2e7d32";
    case Label::Partial: return "#9e9d24";
    case Label::Ineffective: return "#ef6c00";
    case Label::Negative: return "#c62828";
  }
  return "#c62828";
}

double nodeDiameter(double speedup) {
  return speedup > 0 ? 22 + 11 * std::log2(std::max(1.0, speedup)) : 16;
}

double stepRatio(bool correct, double speedup, std::optional<double> baseline) {
  if (!correct || !(speedup > 0)) return 0;
  if (!baseline || !(*baseline > 0)) return 1;
  return speedup / *baseline;
}

double confidenceOf(bool correct, double speedup, double relativeSpread) {
  if (!correct || !(speedup > 0)) return 0;
  const double s = relativeSpread > 0 ? relativeSpread : 0;
  return 1.0 / (1.0 + 10.0 * s);
}

std::vector<std::pair<std::int64_t, double>> ScoreForest::add(std::int64_t id, std::optional<std::int64_t> parent,
                                                              double ratio) {
  if (nodes_.count(id)) throw std::invalid_argument("Case " + std::to_string(id) + " is already in the graph");
  if (parent && !nodes_.count(*parent))
    throw std::invalid_argument("Case " + std::to_string(id) + " starts from Case " + std::to_string(*parent) +
                                ", which is not in the graph");
  Node node;
  node.parent = parent;
  node.ratio = ratio;
  node.score = weights_.self * ratio;
  nodes_[id] = node;
  order_.push_back(id);
  std::vector<std::pair<std::int64_t, double>> changed{{id, node.score}};
  if (parent) nodes_[*parent].children.push_back(id);
  // Each ancestor's score moves by the change below it, discounted once per generation.
  double change = node.score;
  for (auto up = parent; up && change != 0; up = nodes_[*up].parent) {
    change *= weights_.successors * weights_.gamma;
    nodes_[*up].score += change;
    changed.emplace_back(*up, nodes_[*up].score);
  }
  return changed;
}

void ScoreForest::recompute() {
  // Children are added after their parents: in reverse order of arrival, every child's score is
  // final before its parent's is computed (no recursion: a long session is a deep chain).
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    Node &n = nodes_[*it];
    double below = 0;
    for (const auto child : n.children) below += nodes_[child].score;
    n.score = weights_.self * n.ratio + weights_.successors * weights_.gamma * below;
  }
}

void ScoreForest::setWeights(const ScoreWeights &weights) {
  weights_ = weights;
  recompute();
}

}  // namespace kwb::memory
