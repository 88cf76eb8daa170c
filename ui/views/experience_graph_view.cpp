#include "ui/views/experience_graph_view.h"

#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QStyleOptionGraphicsItem>
#include <QTimer>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace kwb::ui {

namespace {

constexpr std::size_t kSlice = 400;  // nodes (or edges) added per turn of the event loop
constexpr double kMaxZoom = 4.0;
constexpr double kMinZoom = 0.01;
// Fit fills the view, but a few Cases are not blown up past this (their nodes would be the size
// of the page).
constexpr double kFitMostZoom = 3.0;

QString speedText(const kwb::memory::Case &c) {
  if (!c.correct) return QStringLiteral("✗");
  return c.speedup > 0 ? QString::number(c.speedup, 'f', c.speedup < 10 ? 2 : 1) + QLatin1Char('x') : QString();
}

QString tooltipOf(const kwb::memory::Case &c) {
  QString text = QStringLiteral("<b>Case %1</b> · %2 · %3").arg(c.id).arg(QString::fromStdString(c.task),
                                                                         QLatin1String(kwb::memory::toString(c.label)));
  if (c.correct && c.speedup > 0)
    text += QStringLiteral("<br>%1x the reference, x%2 its parent").arg(c.speedup, 0, 'f', 2).arg(c.ratio, 0, 'f', 2);
  else
    text += QStringLiteral("<br>%1").arg(QString::fromStdString(c.outcome).toHtmlEscaped());
  if (!c.idea.empty()) text += QStringLiteral("<br>%1").arg(QString::fromStdString(c.idea).left(160).toHtmlEscaped());
  return text;
}

}  // namespace

// A Case: a disc in its label's colour, ringed when it is the current one, faded when a search
// leaves it out; its speedup written inside once the disc is large enough on screen.
class CaseNodeItem : public QGraphicsItem {
 public:
  CaseNodeItem(qint64 id, double diameter, const QColor &colour, QString tag)
      : id_(id), diameter_(diameter), colour_(colour), tag_(std::move(tag)) {
    setCacheMode(NoCache);
    setAcceptedMouseButtons(Qt::LeftButton);
  }
  enum { Type = UserType + 19 };
  int type() const override { return Type; }
  qint64 id() const { return id_; }
  void setFaded(bool faded) {
    if (faded == faded_) return;
    faded_ = faded;
    update();
  }
  void setCurrent(bool current) {
    if (current == current_) return;
    current_ = current;
    setZValue(current ? 2 : 1);
    update();
  }
  QRectF boundingRect() const override {
    const double r = diameter_ / 2 + 4;
    return {-r, -r, 2 * r, 2 * r};
  }
  void paint(QPainter *painter, const QStyleOptionGraphicsItem *option, QWidget *) override {
    const double lod = option->levelOfDetailFromTransform(painter->worldTransform());
    QColor fill = colour_;
    if (faded_) fill.setAlpha(45);
    const QRectF disc(-diameter_ / 2, -diameter_ / 2, diameter_, diameter_);
    if (lod * diameter_ < 4) {  // a few pixels: a square is as good, and cheaper
      painter->fillRect(disc, current_ ? QColor(Qt::black) : fill);
      return;
    }
    painter->setRenderHint(QPainter::Antialiasing, lod * diameter_ < 60);
    painter->setPen(faded_ ? Qt::NoPen : QPen(fill.darker(140), 0));
    painter->setBrush(fill);
    painter->drawEllipse(disc);
    if (current_) {
      painter->setPen(QPen(QColor(20, 20, 20), 2.5 / std::max(lod, 0.5)));
      painter->setBrush(Qt::NoBrush);
      painter->drawEllipse(disc.adjusted(-3, -3, 3, 3));
    }
    if (lod * diameter_ >= 30 && !tag_.isEmpty() && !faded_) {
      QFont font = painter->font();
      font.setPointSizeF(std::max(3.0, diameter_ / 4.2));
      painter->setFont(font);
      painter->setPen(Qt::white);
      painter->drawText(disc, Qt::AlignCenter, tag_);
    }
  }

 private:
  qint64 id_;
  double diameter_;
  QColor colour_;
  QString tag_;
  bool faded_ = false, current_ = false;
};

ExperienceGraphView::ExperienceGraphView(QWidget *parent) : QGraphicsView(parent) {
  setObjectName(QStringLiteral("experienceGraph"));
  setScene(new QGraphicsScene(this));
  setDragMode(ScrollHandDrag);
  setTransformationAnchor(AnchorUnderMouse);
  setResizeAnchor(AnchorViewCenter);
  setViewportUpdateMode(SmartViewportUpdate);
  setOptimizationFlags(DontSavePainterState | DontAdjustForAntialiasing);
  setBackgroundBrush(palette().base());
  setFocusPolicy(Qt::StrongFocus);
}

ExperienceGraphView::~ExperienceGraphView() = default;

void ExperienceGraphView::clear() {
  ++generation_;
  populating_ = false;
  viewport()->setUpdatesEnabled(true);
  dots_.clear();
  frames_.clear();
  viewport()->setUpdatesEnabled(true);
  viewport()->update();
  pendingItems_.clear();
  pendingCases_.clear();
  nodes_.clear();
  scene()->clear();
  scene()->setSceneRect(QRectF());
}

void ExperienceGraphView::showLayout(const kwb::memory::ForestLayout &layout,
                                     const std::vector<kwb::memory::Case> &cases) {
  clear();
  const double margin = 24;
  scene()->setSceneRect(-margin, -margin, layout.width + 2 * margin, layout.height + 2 * margin);
  // Frames and edges first (few, or cheap), nodes in slices after.
  const QColor frame = palette().color(QPalette::Mid);
  for (const auto &g : layout.groups) {
    auto *rect = scene()->addRect(QRectF(g.x, g.y, g.width, g.height), QPen(frame, 0), palette().alternateBase());
    rect->setZValue(-2);
    frames_.push_back(rect->rect());
    auto *title = scene()->addSimpleText(QStringLiteral("%1 · %2 Case%3")
                                             .arg(QString::fromStdString(g.name))
                                             .arg(g.items)
                                             .arg(g.items == 1 ? QString() : QStringLiteral("s")));
    title->setPos(g.x + 8, g.y + 4);
    title->setBrush(palette().text());
    title->setZValue(-1);
  }
  const QPen edgePen(palette().color(QPalette::Dark), 0);
  for (const auto &e : layout.edges) {
    if (e.path.empty()) continue;
    QPainterPath path(QPointF(e.path[0].x, e.path[0].y));
    if (e.spline) {
      for (std::size_t p = 1; p + 2 < e.path.size(); p += 3)
        path.cubicTo(e.path[p].x, e.path[p].y, e.path[p + 1].x, e.path[p + 1].y, e.path[p + 2].x, e.path[p + 2].y);
    } else {
      for (std::size_t p = 1; p < e.path.size(); ++p) path.lineTo(e.path[p].x, e.path[p].y);
    }
    auto *item = scene()->addPath(path, edgePen);
    item->setZValue(0);
  }
  pendingItems_ = layout.items;
  for (const auto &c : cases) pendingCases_.insert(c.id, c);
  next_ = 0;
  populating_ = true;
  // Not painted until every node is in: a paint per slice would draw the whole graph again each time.
  viewport()->setUpdatesEnabled(false);
  fit();
  const int generation = generation_;
  QTimer::singleShot(0, this, [this, generation] {
    if (generation == generation_) populateSlice();
  });
}

void ExperienceGraphView::populateSlice() {
  const std::size_t end = std::min(pendingItems_.size(), next_ + kSlice);
  for (; next_ < end; ++next_) {
    const auto &p = pendingItems_[next_];
    const auto c = pendingCases_.constFind(p.id);
    if (c == pendingCases_.constEnd()) continue;
    const QColor colour(QLatin1String(kwb::memory::labelColour(c->label)));
    auto *node = new CaseNodeItem(p.id, p.width, colour, speedText(*c));
    dots_.push_back({QPointF(p.x, p.y), colour.rgb()});
    node->setPos(p.x, p.y);
    node->setZValue(1);
    node->setToolTip(tooltipOf(*c));
    node->setFaded(markActive_ && !marked_.contains(p.id));
    scene()->addItem(node);
    nodes_.insert(p.id, node);
  }
  if (next_ < pendingItems_.size()) {
    const int generation = generation_;
    QTimer::singleShot(0, this, [this, generation] {
      if (generation == generation_) populateSlice();
    });
    return;
  }
  populating_ = false;
  viewport()->setUpdatesEnabled(true);
  viewport()->update();
  pendingItems_.clear();
  pendingCases_.clear();
  if (selected_ && nodes_.contains(selected_)) nodes_[selected_]->setCurrent(true);
  emit shown();
}

QPointF ExperienceGraphView::nodeCentre(qint64 id) const {
  const auto *node = nodes_.value(id);
  return node ? node->pos() : QPointF();
}

void ExperienceGraphView::setMarked(const QSet<qint64> &ids, bool active) {
  marked_ = ids;
  markActive_ = active;
  for (auto it = nodes_.cbegin(); it != nodes_.cend(); ++it) it.value()->setFaded(active && !ids.contains(it.key()));
}

bool ExperienceGraphView::selectCase(qint64 id, bool centre) {
  if (auto *old = nodes_.value(selected_)) old->setCurrent(false);
  selected_ = id;
  auto *node = nodes_.value(id);
  if (!node) return false;
  node->setCurrent(true);
  if (centre) centerOn(node);
  return true;
}

void ExperienceGraphView::fit() {
  fitting_ = true;  // fitted again whenever the view's size changes, until a zoom or a drag of the user's
  const QRectF rect = scene()->sceneRect();
  if (rect.isEmpty()) return;
  fitInView(rect, Qt::KeepAspectRatio);
  if (zoom() > kFitMostZoom) setZoom(kFitMostZoom);
  emit viewChanged();
}

void ExperienceGraphView::setZoom(double wanted) {
  const double f = std::clamp(wanted, kMinZoom, kMaxZoom) / zoom();
  if (std::fabs(f - 1) < 1e-9) return;
  scale(f, f);
}

void ExperienceGraphView::resizeEvent(QResizeEvent *event) {
  QGraphicsView::resizeEvent(event);
  // Laid out while the page was hidden (or smaller), the graph was fitted to another size.
  if (fitting_) fit();
}

double ExperienceGraphView::zoom() const { return transform().m11(); }

void ExperienceGraphView::zoomBy(double factor) {
  fitting_ = false;
  const double before = zoom();
  setZoom(before * factor);
  if (zoom() != before) emit viewChanged();
}

void ExperienceGraphView::wheelEvent(QWheelEvent *event) {
  const int steps = event->angleDelta().y();
  if (steps == 0) {
    QGraphicsView::wheelEvent(event);
    return;
  }
  zoomBy(std::pow(1.0015, steps));  // one notch (120) ~ x1.2
  event->accept();
}

void ExperienceGraphView::mousePressEvent(QMouseEvent *event) {
  if (event->button() == Qt::LeftButton)
    for (QGraphicsItem *item : items(event->position().toPoint()))
      if (item->type() == CaseNodeItem::Type) {
        const qint64 id = static_cast<CaseNodeItem *>(item)->id();
        selectCase(id, false);
        emit caseClicked(id);
        event->accept();
        return;
      }
  fitting_ = false;  // a drag moves the view: it stays where it is put
  QGraphicsView::mousePressEvent(event);
}

void ExperienceGraphView::keyPressEvent(QKeyEvent *event) {
  switch (event->key()) {
    case Qt::Key_F: fit(); return;
    case Qt::Key_Plus:
    case Qt::Key_Equal: zoomBy(1.25); return;
    case Qt::Key_Minus: zoomBy(0.8); return;
    default: QGraphicsView::keyPressEvent(event);
  }
}

void ExperienceGraphView::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  emit viewChanged();
}

GraphOverview::GraphOverview(ExperienceGraphView *view, QWidget *parent) : QWidget(parent), view_(view) {
  setObjectName(QStringLiteral("experienceOverview"));
  setToolTip(tr("The whole graph: click or drag to look there"));
  connect(view, &ExperienceGraphView::shown, this, &GraphOverview::refresh);
  // Shown only while the view shows part of the graph.
  connect(view, &ExperienceGraphView::viewChanged, this, [this] {
    if (!view_) return;
    const QRectF scene = view_->scene()->sceneRect();
    const QRectF shown = view_->mapToScene(view_->viewport()->rect()).boundingRect();
    setVisible(!scene.isEmpty() && !shown.adjusted(-1, -1, 1, 1).contains(scene));
    update();
  });
}

QRectF GraphOverview::target() const {
  if (!view_) return {};
  const QRectF scene = view_->scene()->sceneRect();
  if (scene.isEmpty()) return {};
  const double s = std::min((width() - 4) / scene.width(), (height() - 4) / scene.height());
  const QSizeF size(scene.width() * s, scene.height() * s);
  return {QPointF((width() - size.width()) / 2, (height() - size.height()) / 2), size};
}

void GraphOverview::refresh() {
  picture_ = QImage();
  const QRectF to = target();
  if (view_ && !to.isEmpty()) {
    picture_ = QImage(size() * devicePixelRatioF(), QImage::Format_ARGB32_Premultiplied);
    picture_.setDevicePixelRatio(devicePixelRatioF());
    picture_.fill(Qt::transparent);
    QPainter p(&picture_);
    const QRectF scene = view_->scene()->sceneRect();
    const double s = to.width() / scene.width();
    auto map = [&](const QPointF &at) { return QPointF(to.left() + (at.x() - scene.left()) * s, to.top() + (at.y() - scene.top()) * s); };
    p.setPen(QPen(palette().color(QPalette::Mid), 0));
    p.setBrush(palette().alternateBase());
    for (const QRectF &f : view_->frames()) p.drawRect(QRectF(map(f.topLeft()), map(f.bottomRight())));
    const double dot = std::clamp(12 * s, 1.0, 4.0);
    for (const auto &d : view_->dots()) {
      const QPointF c = map(d.at);
      p.fillRect(QRectF(c.x() - dot / 2, c.y() - dot / 2, dot, dot), QColor::fromRgb(d.colour));
    }
  }
  update();
}

void GraphOverview::paintEvent(QPaintEvent *) {
  QPainter p(this);
  p.fillRect(rect(), palette().window());
  p.setPen(palette().color(QPalette::Mid));
  p.drawRect(rect().adjusted(0, 0, -1, -1));
  if (!view_ || picture_.isNull()) return;
  p.drawImage(0, 0, picture_);
  const QRectF scene = view_->scene()->sceneRect();
  const QRectF to = target();
  const QRectF shown = view_->mapToScene(view_->viewport()->rect()).boundingRect().intersected(scene);
  const double s = to.width() / scene.width();
  p.setPen(QPen(palette().color(QPalette::Highlight), 1.5));
  p.setBrush(Qt::NoBrush);
  p.drawRect(QRectF(to.left() + (shown.left() - scene.left()) * s, to.top() + (shown.top() - scene.top()) * s,
                    shown.width() * s, shown.height() * s));
}

void GraphOverview::centreAt(const QPointF &point) {
  const QRectF to = target();
  if (!view_ || to.isEmpty()) return;
  const QRectF scene = view_->scene()->sceneRect();
  const double s = to.width() / scene.width();
  view_->centerOn(scene.left() + (point.x() - to.left()) / s, scene.top() + (point.y() - to.top()) / s);
}

void GraphOverview::mousePressEvent(QMouseEvent *event) { centreAt(event->position()); }

void GraphOverview::mouseMoveEvent(QMouseEvent *event) {
  if (event->buttons() & Qt::LeftButton) centreAt(event->position());
}

void GraphOverview::resizeEvent(QResizeEvent *) { refresh(); }

}  // namespace kwb::ui
