#pragma once
// The experience graph drawn (issue 19 item 5): a Case a node coloured by its label and sized by
// its speedup (core/memory/experience_graph.h's labelColour and nodeDiameter, as in `kwb memory
// graph --dot`), an edge from the Case it started from, each task's trees in a frame of their own,
// where core/memory/graph_layout placed them. Wheel zooms about the pointer, dragging pans, F (or
// fit()) shows it all; GraphOverview is the small map in the corner. Items go into the scene in
// slices on the event loop, so ten thousand Cases never stall the window; shown() says when all
// are in. A node clicked is announced with caseClicked(); nothing here reads the memory.
#include <QGraphicsView>
#include <QHash>
#include <QImage>
#include <QPointer>
#include <QSet>
#include <QWidget>

#include <vector>

#include "core/memory/experience_store.h"
#include "core/memory/graph_layout.h"

namespace kwb::ui {

class CaseNodeItem;

class ExperienceGraphView : public QGraphicsView {
  Q_OBJECT

 public:
  explicit ExperienceGraphView(QWidget *parent = nullptr);
  ~ExperienceGraphView() override;

  // Shows `layout` of `cases` (what each node says: by id); the previous picture goes at once,
  // the new one is in after shown(). The selected Case stays selected when it is still there.
  void showLayout(const kwb::memory::ForestLayout &layout, const std::vector<kwb::memory::Case> &cases);
  void clear();
  bool isPopulating() const { return populating_; }
  int nodeCount() const { return static_cast<int>(nodes_.size()); }
  bool hasNode(qint64 id) const { return nodes_.contains(id); }
  QPointF nodeCentre(qint64 id) const;

  // Search: the marked Cases drawn as they are and the others faded; `active` false: none faded.
  void setMarked(const QSet<qint64> &ids, bool active);
  // The node drawn as the current one (ringed), centred when `centre`; false when it is not shown.
  bool selectCase(qint64 id, bool centre = true);
  qint64 selectedCase() const { return selected_; }

  // Shows the whole graph (up to three times its size), and again whenever the view's size
  // changes, until the user zooms or drags.
  void fit();
  void zoomBy(double factor);
  double zoom() const;

  // What the overview draws: the frames, and a dot per node in its colour (scene coordinates).
  struct Dot {
    QPointF at;
    QRgb colour;
  };
  const std::vector<Dot> &dots() const { return dots_; }
  const std::vector<QRectF> &frames() const { return frames_; }

 signals:
  void caseClicked(qint64 id);
  void shown();
  void viewChanged();  // zoomed or scrolled

 protected:
  void wheelEvent(QWheelEvent *event) override;
  void mousePressEvent(QMouseEvent *event) override;
  void keyPressEvent(QKeyEvent *event) override;
  void scrollContentsBy(int dx, int dy) override;
  void resizeEvent(QResizeEvent *event) override;

 private:
  void populateSlice();
  void setZoom(double wanted);
  bool fitting_ = true;

  QHash<qint64, CaseNodeItem *> nodes_;
  std::vector<Dot> dots_;
  std::vector<QRectF> frames_;
  QSet<qint64> marked_;
  bool markActive_ = false;
  qint64 selected_ = 0;
  // What is still to go into the scene.
  std::vector<kwb::memory::PlacedItem> pendingItems_;
  QHash<qint64, kwb::memory::Case> pendingCases_;
  std::size_t next_ = 0;
  bool populating_ = false;
  int generation_ = 0;
};

// The whole graph small (its frames, a dot per Case: drawing ten thousand items at that scale
// would hold the GUI thread up), with the part the view shows framed; click or drag to move the
// view there. Shown while the view shows part of the graph.
class GraphOverview : public QWidget {
  Q_OBJECT

 public:
  explicit GraphOverview(ExperienceGraphView *view, QWidget *parent = nullptr);
  // Renders the scene again (after the view's shown()).
  void refresh();

 protected:
  void paintEvent(QPaintEvent *event) override;
  void mousePressEvent(QMouseEvent *event) override;
  void mouseMoveEvent(QMouseEvent *event) override;
  void resizeEvent(QResizeEvent *event) override;

 private:
  QRectF target() const;  // where the scene is drawn in this widget
  void centreAt(const QPointF &point);

  QPointer<ExperienceGraphView> view_;
  QImage picture_;
};

}  // namespace kwb::ui
