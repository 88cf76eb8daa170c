#include "core/memory/graph_layout.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <graphviz/gvc.h>

namespace kwb::memory {

namespace {

// One tree, placed at its own origin.
struct TreeLayout {
  std::vector<std::size_t> members;  // indices into the items, the root first
  std::vector<LayoutPoint> centres;  // by member
  std::vector<PlacedEdge> edges;     // ids set; paths at the tree's origin
  double width = 0, height = 0;
  bool graphviz = false;
};

struct Forest {
  std::vector<std::optional<std::size_t>> parent;  // by item index
  std::vector<std::vector<std::size_t>> children;
  std::vector<std::size_t> roots;  // in the order given
};

Forest forestOf(const std::vector<LayoutItem> &items) {
  Forest f;
  f.parent.resize(items.size());
  f.children.resize(items.size());
  std::unordered_map<std::int64_t, std::size_t> index;
  index.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) index.emplace(items[i].id, i);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].parent) continue;
    const auto p = index.find(*items[i].parent);
    if (p == index.end() || p->second == i) continue;
    f.parent[i] = p->second;
  }
  // A parent chain that loops (never from a store, whose parents come first) is cut where it
  // closes, so every item lies in exactly one tree.
  std::vector<int> state(items.size(), 0);  // 0 unseen, 1 on the current chain, 2 done
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::vector<std::size_t> chain;
    std::size_t at = i;
    while (state[at] == 0) {
      state[at] = 1;
      chain.push_back(at);
      if (!f.parent[at]) break;
      if (state[*f.parent[at]] == 1) {  // a loop: `at` becomes a root
        f.parent[at].reset();
        break;
      }
      at = *f.parent[at];
    }
    for (const auto c : chain) state[c] = 2;
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (f.parent[i]) f.children[*f.parent[i]].push_back(i);
    else f.roots.push_back(i);
  }
  return f;
}

// The tree under `root`, breadth first.
std::vector<std::size_t> membersOf(const Forest &f, std::size_t root) {
  std::vector<std::size_t> out{root};
  for (std::size_t k = 0; k < out.size(); ++k)
    for (const auto c : f.children[out[k]]) out.push_back(c);
  return out;
}

std::string inches(double points) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4f", points / 72.0);
  return buffer;
}

char *cstr(const char *text) { return const_cast<char *>(text); }

// Graphviz's context: made once, used under the lock only.
GVC_t *graphvizContext() {
  static GVC_t *context = gvContext();
  return context;
}

// dot on one tree. False (and `error`) when Graphviz could not lay it out.
bool layoutWithDot(const std::vector<LayoutItem> &items, const Forest &f, TreeLayout &tree,
                   const LayoutOptions &options, std::string &error) {
  Agraph_t *g = agopen(cstr("tree"), Agdirected, nullptr);
  agattr(g, AGRAPH, cstr("rankdir"), cstr("LR"));
  agattr(g, AGRAPH, cstr("nodesep"), cstr(inches(options.siblingGap).c_str()));
  agattr(g, AGRAPH, cstr("ranksep"), cstr(inches(options.rankGap).c_str()));
  agattr(g, AGNODE, cstr("shape"), cstr("box"));
  agattr(g, AGNODE, cstr("fixedsize"), cstr("true"));
  agattr(g, AGNODE, cstr("label"), cstr(""));
  Agsym_t *width = agattr(g, AGNODE, cstr("width"), cstr("0.3"));
  Agsym_t *height = agattr(g, AGNODE, cstr("height"), cstr("0.3"));
  agattr(g, AGEDGE, cstr("dir"), cstr("none"));
  std::unordered_map<std::size_t, std::size_t> position;  // item index -> member
  std::vector<Agnode_t *> nodes(tree.members.size());
  for (std::size_t k = 0; k < tree.members.size(); ++k) {
    const auto &item = items[tree.members[k]];
    position.emplace(tree.members[k], k);
    nodes[k] = agnode(g, cstr(std::to_string(k).c_str()), 1);
    agxset(nodes[k], width, cstr(inches(item.width).c_str()));
    agxset(nodes[k], height, cstr(inches(item.height).c_str()));
  }
  std::vector<std::pair<Agedge_t *, std::size_t>> edges;  // the edge, its child's member
  for (std::size_t k = 1; k < tree.members.size(); ++k) {
    const auto parent = position.at(*f.parent[tree.members[k]]);
    edges.emplace_back(agedge(g, nodes[parent], nodes[k], nullptr, 1), k);
  }
  if (gvLayout(graphvizContext(), g, "dot") != 0) {
    agclose(g);
    error = "Graphviz could not lay the graph out with dot (is its layout plugin installed? `dot -c` registers it)";
    return false;
  }
  const boxf bb = GD_bb(g);
  auto local = [&bb](pointf p) { return LayoutPoint{p.x - bb.LL.x, bb.UR.y - p.y}; };
  tree.width = bb.UR.x - bb.LL.x;
  tree.height = bb.UR.y - bb.LL.y;
  tree.centres.resize(tree.members.size());
  for (std::size_t k = 0; k < nodes.size(); ++k) tree.centres[k] = local(ND_coord(nodes[k]));
  for (const auto &[e, k] : edges) {
    PlacedEdge edge;
    edge.from = items[*f.parent[tree.members[k]]].id;
    edge.to = items[tree.members[k]].id;
    const splines *spl = ED_spl(e);
    if (spl && spl->size > 0 && spl->list[0].size >= 4) {
      edge.spline = true;
      for (int p = 0; p < spl->list[0].size; ++p) edge.path.push_back(local(spl->list[0].list[p]));
    }
    tree.edges.push_back(std::move(edge));
  }
  gvFreeLayout(graphvizContext(), g);
  agclose(g);
  tree.graphviz = true;
  return true;
}

// The built-in placement for trees too large for dot: a column per generation, the leaves one
// under another in depth-first order, each parent level with the middle of its children. Linear.
void layoutBuiltin(const std::vector<LayoutItem> &items, const Forest &f, TreeLayout &tree,
                   const LayoutOptions &options) {
  const std::size_t n = tree.members.size();
  std::unordered_map<std::size_t, std::size_t> position;
  for (std::size_t k = 0; k < n; ++k) position.emplace(tree.members[k], k);
  std::vector<std::size_t> depth(n, 0);
  std::vector<double> columnWidth;
  double slot = 0;
  for (std::size_t k = 0; k < n; ++k) {  // breadth first: a parent before its children
    const auto i = tree.members[k];
    if (k > 0) depth[k] = depth[position.at(*f.parent[i])] + 1;
    if (columnWidth.size() <= depth[k]) columnWidth.resize(depth[k] + 1, 0);
    columnWidth[depth[k]] = std::max(columnWidth[depth[k]], items[i].width);
    slot = std::max(slot, items[i].height);
  }
  std::vector<double> columnX(columnWidth.size(), 0);
  double x = 0;
  for (std::size_t d = 0; d < columnWidth.size(); ++d) {
    columnX[d] = x + columnWidth[d] / 2;
    x += columnWidth[d] + options.rankGap;
  }
  tree.centres.assign(n, {});
  // Depth first without recursion (a chain of thousands would overflow the stack): a node is
  // placed after its children.
  double nextY = slot / 2;
  std::vector<std::pair<std::size_t, std::size_t>> stack{{0, 0}};  // member, next child
  while (!stack.empty()) {
    auto &[k, next] = stack.back();
    const auto &kids = f.children[tree.members[k]];
    if (next < kids.size()) {
      const auto child = position.at(kids[next++]);
      stack.emplace_back(child, 0);
      continue;
    }
    const double y = kids.empty() ? std::exchange(nextY, nextY + slot + options.siblingGap)
                                  : (tree.centres[position.at(kids.front())].y + tree.centres[position.at(kids.back())].y) / 2;
    tree.centres[k] = {columnX[depth[k]], y};
    stack.pop_back();
  }
  tree.width = std::max(0.0, x - options.rankGap);
  tree.height = std::max(slot, nextY - slot / 2 - options.siblingGap);
  for (std::size_t k = 1; k < n; ++k) {
    const auto i = tree.members[k];
    const auto p = position.at(*f.parent[i]);
    const auto &a = tree.centres[p];
    const auto &b = tree.centres[k];
    const double from = a.x + items[f.parent[i].value()].width / 2, to = b.x - items[i].width / 2;
    const double middle = (from + to) / 2;
    PlacedEdge edge;
    edge.from = items[*f.parent[i]].id;
    edge.to = items[i].id;
    edge.path = {{from, a.y}, {middle, a.y}, {middle, b.y}, {to, b.y}};
    tree.edges.push_back(std::move(edge));
  }
}

}  // namespace

ForestLayout layoutForest(const std::vector<LayoutItem> &items, const LayoutOptions &options,
                          const std::function<bool()> &cancelled) {
  static std::mutex graphvizLock;  // Graphviz keeps global state: one layout at a time
  const std::lock_guard<std::mutex> lock(graphvizLock);
  const auto start = std::chrono::steady_clock::now();
  ForestLayout out;
  const Forest f = forestOf(items);

  // Trees by group, in the order their roots were given.
  std::map<std::string, std::vector<TreeLayout>> groups;
  for (const auto root : f.roots) {
    if (cancelled && cancelled()) {
      out.cancelled = true;
      return out;
    }
    TreeLayout tree;
    tree.members = membersOf(f, root);
    if (tree.members.size() <= options.graphvizLimit) {
      if (!layoutWithDot(items, f, tree, options, out.error)) return out;
      ++out.graphvizTrees;
    } else {
      layoutBuiltin(items, f, tree, options);
      ++out.builtinTrees;
    }
    groups[items[root].group].push_back(std::move(tree));
  }
  out.trees = f.roots.size();

  // Each group's trees in rows about twice as wide as the group is tall (at the group's origin),
  // then the groups the same way in the picture.
  out.items.resize(items.size());
  struct Packed {
    PlacedGroup frame;
    std::vector<std::size_t> members;  // item indices placed in out.items
    std::size_t firstEdge = 0, edges = 0;
  };
  auto shelves = [](std::vector<std::pair<double, double>> sizes, double gap, std::vector<LayoutPoint> &at) {
    double area = 0, widest = 0;
    for (const auto &[w, h] : sizes) {
      area += (w + gap) * (h + gap);
      widest = std::max(widest, w);
    }
    const double rowWidth = std::max(widest, std::sqrt(area * 2));
    double x = 0, y = 0, rowHeight = 0, right = 0;
    at.clear();
    for (const auto &[w, h] : sizes) {
      if (x > 0 && x + w > rowWidth) {
        x = 0;
        y += rowHeight + gap;
        rowHeight = 0;
      }
      at.push_back({x, y});
      right = std::max(right, x + w);
      rowHeight = std::max(rowHeight, h);
      x += w + gap;
    }
    return LayoutPoint{right, y + rowHeight};
  };
  std::vector<Packed> packed;
  std::vector<LayoutPoint> at;
  for (auto &[name, trees] : groups) {
    Packed p;
    p.frame.name = name;
    p.frame.trees = trees.size();
    p.firstEdge = out.edges.size();
    std::vector<std::pair<double, double>> sizes;
    for (const auto &t : trees) sizes.emplace_back(t.width, t.height);
    const LayoutPoint extent = shelves(sizes, options.treeGap, at);
    const double left = options.groupPadding, top = options.groupHeader;
    for (std::size_t k = 0; k < trees.size(); ++k) {
      auto &t = trees[k];
      const double x = left + at[k].x, y = top + at[k].y;
      for (std::size_t m = 0; m < t.members.size(); ++m) {
        const auto &item = items[t.members[m]];
        out.items[t.members[m]] = {item.id, x + t.centres[m].x, y + t.centres[m].y, item.width, item.height};
        p.members.push_back(t.members[m]);
      }
      for (auto &edge : t.edges) {
        for (auto &point : edge.path) point = {point.x + x, point.y + y};
        out.edges.push_back(std::move(edge));
      }
    }
    p.edges = out.edges.size() - p.firstEdge;
    p.frame.items = p.members.size();
    p.frame.width = std::max(extent.x + 2 * options.groupPadding, 120.0);  // room for the name
    p.frame.height = top + extent.y + options.groupPadding;
    packed.push_back(std::move(p));
  }
  std::vector<std::pair<double, double>> sizes;
  for (const auto &p : packed) sizes.emplace_back(p.frame.width, p.frame.height);
  const LayoutPoint extent = shelves(sizes, options.groupGap, at);
  for (std::size_t g = 0; g < packed.size(); ++g) {
    auto &p = packed[g];
    p.frame.x = at[g].x;
    p.frame.y = at[g].y;
    for (const auto m : p.members) {
      out.items[m].x += at[g].x;
      out.items[m].y += at[g].y;
    }
    for (std::size_t e = p.firstEdge; e < p.firstEdge + p.edges; ++e)
      for (auto &point : out.edges[e].path) point = {point.x + at[g].x, point.y + at[g].y};
    out.groups.push_back(std::move(p.frame));
  }
  out.width = extent.x;
  out.height = extent.y;
  out.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kwb::memory
