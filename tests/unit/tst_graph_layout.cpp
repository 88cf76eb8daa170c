// The experience graph's layout (core/memory/graph_layout, issue 19 item 5): Graphviz dot per
// tree, the built-in placement past the limit, trees packed in their group's frame. Checked on
// what a drawing needs: every item placed once, inside its group's frame, no two overlapping,
// each child to the right of its parent, an edge per parent link, the picture's size holding it all.
#include <QtTest>

#include <map>
#include <random>
#include <set>

#include "core/memory/graph_layout.h"

using namespace kwb::memory;

namespace {

// A random forest: `n` items in `groups` groups, each a child of an earlier item of its group with
// probability `attach` (else a root); sizes 16-40 pt.
std::vector<LayoutItem> randomForest(std::size_t n, int groups, double attach, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<LayoutItem> items;
  std::map<int, std::vector<std::int64_t>> byGroup;
  for (std::size_t i = 0; i < n; ++i) {
    const int g = static_cast<int>(rng() % static_cast<unsigned>(groups));
    LayoutItem item;
    item.id = static_cast<std::int64_t>(i + 1) * 7;  // ids are any numbers
    item.group = "task-" + std::to_string(g);
    item.width = item.height = 16 + 24 * u(rng);
    auto &earlier = byGroup[g];
    if (!earlier.empty() && u(rng) < attach) item.parent = earlier[rng() % earlier.size()];
    earlier.push_back(item.id);
    items.push_back(item);
  }
  return items;
}

// What every layout must satisfy; returns the first problem ("" when none).
QString problemOf(const std::vector<LayoutItem> &items, const ForestLayout &out) {
  if (!out.error.empty()) return QString::fromStdString(out.error);
  if (out.items.size() != items.size()) return QStringLiteral("%1 placed of %2").arg(out.items.size()).arg(items.size());
  std::map<std::int64_t, const PlacedItem *> placed;
  std::map<std::int64_t, std::string> groupOf;
  std::set<std::int64_t> ids;
  for (const auto &i : items) ids.insert(i.id);
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (out.items[k].id != items[k].id) return QStringLiteral("item %1 out of order").arg(k);
    placed[items[k].id] = &out.items[k];
  }
  // Each item's group: its root's (the walk up remembered, for chains thousands long).
  std::map<std::int64_t, const LayoutItem *> byId;
  for (const auto &i : items) byId[i.id] = &i;
  for (const auto &i : items) {
    std::vector<std::int64_t> path;
    const LayoutItem *at = &i;
    while (!groupOf.count(at->id) && at->parent && byId.count(*at->parent) && path.size() <= items.size()) {
      path.push_back(at->id);
      at = byId[*at->parent];
    }
    const std::string group = groupOf.count(at->id) ? groupOf[at->id] : at->group;
    groupOf[at->id] = group;
    for (const auto id : path) groupOf[id] = group;
  }
  std::map<std::string, const PlacedGroup *> frames;
  for (const auto &g : out.groups) frames[g.name] = &g;
  for (const auto &[id, p] : placed) {
    const auto *frame = frames.count(groupOf[id]) ? frames[groupOf[id]] : nullptr;
    if (!frame) return QStringLiteral("item %1 has no frame").arg(id);
    if (p->x - p->width / 2 < frame->x - 1e-6 || p->x + p->width / 2 > frame->x + frame->width + 1e-6 ||
        p->y - p->height / 2 < frame->y - 1e-6 || p->y + p->height / 2 > frame->y + frame->height + 1e-6)
      return QStringLiteral("item %1 outside its frame").arg(id);
    if (p->x + p->width / 2 > out.width + 1e-6 || p->y + p->height / 2 > out.height + 1e-6)
      return QStringLiteral("item %1 outside the picture").arg(id);
  }
  // No two overlap (a sweep over x).
  std::vector<const PlacedItem *> byX;
  for (const auto &p : out.items) byX.push_back(&p);
  std::sort(byX.begin(), byX.end(), [](auto *a, auto *b) { return a->x - a->width / 2 < b->x - b->width / 2; });
  for (std::size_t a = 0; a < byX.size(); ++a)
    for (std::size_t b = a + 1; b < byX.size(); ++b) {
      if (byX[b]->x - byX[b]->width / 2 >= byX[a]->x + byX[a]->width / 2 - 1e-6) break;
      if (std::abs(byX[a]->y - byX[b]->y) < (byX[a]->height + byX[b]->height) / 2 - 1e-6)
        return QStringLiteral("items %1 and %2 overlap").arg(byX[a]->id).arg(byX[b]->id);
    }
  std::size_t links = 0;
  for (const auto &i : items)
    if (i.parent && ids.count(*i.parent)) {
      ++links;
      if (placed[i.id]->x <= placed[*i.parent]->x) return QStringLiteral("item %1 is not right of its parent").arg(i.id);
    }
  if (out.edges.size() != links) return QStringLiteral("%1 edges for %2 links").arg(out.edges.size()).arg(links);
  for (const auto &e : out.edges) {
    if (e.path.size() < 2) return QStringLiteral("edge %1->%2 has no path").arg(e.from).arg(e.to);
    if (e.spline && (e.path.size() - 1) % 3 != 0) return QStringLiteral("edge %1->%2: not a cubic spline").arg(e.from).arg(e.to);
  }
  return {};
}

}  // namespace

class TestGraphLayout : public QObject {
  Q_OBJECT

 private slots:
  void smallForestByDot() {
    // softmax: 1 -> {2 -> 3, 4}; layernorm: 5 -> 6; reduce: 7 alone; 8's parent is not shown: a root.
    const std::vector<LayoutItem> items{{1, {}, "softmax", 22, 22},  {2, 1, "softmax", 30, 30},
                                        {3, 2, "softmax", 34, 34},   {4, 1, "softmax", 16, 16},
                                        {5, {}, "layernorm", 22, 22}, {6, 5, "layernorm", 28, 28},
                                        {7, {}, "reduce", 22, 22},   {8, 99, "softmax", 22, 22}};
    const auto out = layoutForest(items);
    QCOMPARE(problemOf(items, out), QString());
    QCOMPARE(out.trees, std::size_t(4));
    QCOMPARE(out.graphvizTrees, std::size_t(4));
    QCOMPARE(out.builtinTrees, std::size_t(0));
    QCOMPARE(out.groups.size(), std::size_t(3));
    QCOMPARE(out.groups[0].name, std::string("layernorm"));  // by name; frames apart
    for (std::size_t a = 0; a < out.groups.size(); ++a)
      for (std::size_t b = a + 1; b < out.groups.size(); ++b) {
        const auto &g = out.groups[a], &h = out.groups[b];
        QVERIFY(g.x + g.width <= h.x || h.x + h.width <= g.x || g.y + g.height <= h.y || h.y + h.height <= g.y);
      }
    QCOMPARE(out.groups[2].name, std::string("softmax"));
    QCOMPARE(out.groups[2].items, std::size_t(5));
    QCOMPARE(out.groups[2].trees, std::size_t(2));
    // dot's edges are splines from the parent to the child.
    for (const auto &e : out.edges) {
      QVERIFY(e.spline);
      const auto &from = out.items[static_cast<std::size_t>(e.from - 1)];
      const auto &to = out.items[static_cast<std::size_t>(e.to - 1)];
      QVERIFY(std::abs(e.path.front().x - from.x) <= from.width / 2 + 1);
      QVERIFY(std::abs(e.path.back().x - to.x) <= to.width / 2 + 1);
    }
    // Siblings share a column (the same generation).
    QCOMPARE(out.items[1].x, out.items[3].x);
  }

  void randomForestsHoldTogether() {
    for (unsigned seed = 1; seed <= 12; ++seed) {
      const auto items = randomForest(60 + 20 * seed, 1 + static_cast<int>(seed % 4), seed % 3 == 0 ? 0.95 : 0.7, seed);
      const auto out = layoutForest(items);
      QVERIFY2(problemOf(items, out).isEmpty(), qPrintable(QStringLiteral("seed %1: %2").arg(seed).arg(problemOf(items, out))));
    }
  }

  void largeTreesTakeTheBuiltinPlacement() {
    // Past the limit: the built-in placement, held to the same rules (chains and wide trees).
    LayoutOptions options;
    options.graphvizLimit = 20;
    for (unsigned seed = 1; seed <= 6; ++seed) {
      auto items = randomForest(300, 2, 0.97, seed);
      if (seed % 2 == 0)  // long chains
        for (std::size_t i = 1; i < items.size(); ++i)
          if (items[i].parent) items[i].parent = items[i - 1].group == items[i].group ? items[i - 1].id : items[i].parent;
      const auto out = layoutForest(items, options);
      QVERIFY2(problemOf(items, out).isEmpty(), qPrintable(QStringLiteral("seed %1: %2").arg(seed).arg(problemOf(items, out))));
      QVERIFY(out.builtinTrees > 0);
      QCOMPARE(out.builtinTrees + out.graphvizTrees, out.trees);
    }
    // A chain of 5000 (deeper than a recursion would survive).
    std::vector<LayoutItem> chain;
    for (int i = 1; i <= 5000; ++i) chain.push_back({i, i > 1 ? std::optional<std::int64_t>(i - 1) : std::nullopt, "t", 20, 20});
    const auto out = layoutForest(chain, options);
    QCOMPARE(problemOf(chain, out), QString());
    QCOMPARE(out.builtinTrees, std::size_t(1));
  }

  void loopsAndCancelling() {
    // A parent chain that loops (never from the store) still gives every item a place.
    const std::vector<LayoutItem> loop{{1, 3, "t", 20, 20}, {2, 1, "t", 20, 20}, {3, 2, "t", 20, 20}, {4, 4, "t", 20, 20}};
    const auto out = layoutForest(loop);
    QCOMPARE(out.items.size(), std::size_t(4));
    QCOMPARE(out.trees, std::size_t(2));
    QVERIFY(out.error.empty());
    // Cancelled before the first tree: nothing placed.
    int asked = 0;
    const auto stopped = layoutForest(randomForest(200, 2, 0.5, 3), {}, [&asked] { return ++asked > 2; });
    QVERIFY(stopped.cancelled);
    QVERIFY(stopped.items.empty());
    QCOMPARE(asked, 3);
    // Nothing to lay out.
    const auto none = layoutForest({});
    QVERIFY(none.items.empty() && none.groups.empty());
    QCOMPARE(none.width, 0.0);
  }
};

QTEST_APPLESS_MAIN(TestGraphLayout)
#include "tst_graph_layout.moc"
