#pragma once
// Where the experience graph's nodes go (issue 19 item 5): a forest of Cases laid out tree by
// tree with Graphviz `dot` (roots on the left, each generation a column), the trees of a group
// (a task) packed in rows inside the group's frame, the frames packed in rows the same way (rows
// about twice as wide as the whole is tall), by name. No Qt: the
// explorer (ui/views/experience_graph_view) draws what this returns, in scene coordinates (points,
// y down, the origin at the top left).
//
// Graphviz is not thread-safe: every call into it in this process goes through layoutForest(),
// which holds one lock for the whole layout; the GUI calls it on one thread of its own. A tree
// larger than LayoutOptions::graphvizLimit nodes is laid out by a built-in tidy-tree placement
// instead (dot's cost grows faster than linearly: about 13 s for one 10,000-node tree here), and
// the result says how many trees took that path.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kwb::memory {

struct LayoutItem {
  std::int64_t id = 0;
  std::optional<std::int64_t> parent;  // a parent not among the items makes this a root
  std::string group;                   // the frame it is drawn in (the task)
  double width = 24, height = 24;      // points
};

struct LayoutPoint {
  double x = 0, y = 0;
};

struct PlacedItem {
  std::int64_t id = 0;
  double x = 0, y = 0;  // the centre
  double width = 0, height = 0;
};

struct PlacedEdge {
  std::int64_t from = 0, to = 0;
  // From the parent's side to the child's: a cubic Bezier spline (the first point, then three
  // points per segment) when `spline`, else a polyline.
  std::vector<LayoutPoint> path;
  bool spline = false;
};

struct PlacedGroup {
  std::string name;
  double x = 0, y = 0, width = 0, height = 0;  // the frame, its header (the name) included
  std::size_t items = 0, trees = 0;
};

struct ForestLayout {
  std::vector<PlacedItem> items;  // in the order given
  std::vector<PlacedEdge> edges;
  std::vector<PlacedGroup> groups;  // by name (left to right, then top to bottom)
  double width = 0, height = 0;
  std::size_t trees = 0, graphvizTrees = 0, builtinTrees = 0;
  double milliseconds = 0;
  bool cancelled = false;  // stopped early: nothing placed
  std::string error;       // Graphviz failed (a missing layout plugin): nothing placed
};

struct LayoutOptions {
  std::size_t graphvizLimit = 1000;  // larger trees: the built-in placement
  double rankGap = 28;               // between generations (points)
  double siblingGap = 10;            // between neighbours in a generation
  double treeGap = 24;               // between trees in a group
  double groupGap = 36;              // between groups
  double groupHeader = 22;           // the group's name above its trees
  double groupPadding = 10;
};

// `cancelled`, when given, is asked between trees.
ForestLayout layoutForest(const std::vector<LayoutItem> &items, const LayoutOptions &options = {},
                          const std::function<bool()> &cancelled = {});

}  // namespace kwb::memory
