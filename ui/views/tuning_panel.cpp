#include "ui/views/tuning_panel.h"

#include <algorithm>
#include <cmath>

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScatterSeries>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QValueAxis>
#include <QVBoxLayout>

#include "ui/models/tune_points_model.h"

namespace kwb::ui {

namespace {
constexpr int kRefreshMs = 100;
}  // namespace

TuningPanel::TuningPanel(QWidget *parent) : QWidget(parent) {
  status_ = new QLabel(tr("No tuning run yet. Tune (or Optimize without an LLM) searches the task's tunable parameters."), this);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // long lines are clipped, never grow the dock
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setEnabled(false);
  connect(cancel_, &QPushButton::clicked, this, [this] {
    cancel_->setEnabled(false);
    emit cancelRequested();
  });

  model_ = new TunePointsModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::UserRole);
  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(0, Qt::AscendingOrder);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setMinimumHeight(40);

  axis_ = new QComboBox(this);
  axis_->setToolTip(tr("The tunable on the horizontal axis"));
  connect(axis_, &QComboBox::currentIndexChanged, this, [this] { replot(); });
  refreshTimer_ = new QTimer(this);
  refreshTimer_->setSingleShot(true);
  refreshTimer_->setInterval(kRefreshMs);
  connect(refreshTimer_, &QTimer::timeout, this, [this] {
    if (summary_.budget > 0) {
      progress_->setRange(0, static_cast<int>(summary_.budget));
      progress_->setValue(std::min<int>(model_->rowCount(), static_cast<int>(summary_.budget)));
    }
    replot();
  });

  chart_ = new QChart;
  chart_->legend()->setVisible(true);
  chart_->legend()->setAlignment(Qt::AlignBottom);
  points_ = new QScatterSeries;
  points_->setName(tr("correct points"));
  points_->setMarkerSize(8);
  best_ = new QScatterSeries;
  best_->setName(tr("best"));
  best_->setMarkerSize(14);
  best_->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  chart_->addSeries(points_);
  chart_->addSeries(best_);
  xAxis_ = new QValueAxis;
  yAxis_ = new QValueAxis;
  yAxis_->setTitleText(tr("time (ms)"));
  chart_->addAxis(xAxis_, Qt::AlignBottom);
  chart_->addAxis(yAxis_, Qt::AlignLeft);
  for (auto *s : {points_, best_}) {
    s->attachAxis(xAxis_);
    s->attachAxis(yAxis_);
  }
  chartView_ = new QChartView(chart_, this);
  chartView_->setRenderHint(QPainter::Antialiasing);
  chartView_->setMinimumSize(280, 40);

  reproduce_ = new QLabel(this);
  reproduce_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  reproduce_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);

  auto *top = new QHBoxLayout;
  top->addWidget(progress_, 1);
  top->addWidget(new QLabel(tr("Chart by:"), this));
  top->addWidget(axis_);
  top->addWidget(cancel_);
  auto *split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(table_);
  split->addWidget(chartView_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  // The table's wide columns would otherwise squeeze the scatter to a strip with elided labels.
  split->setSizes({560, 440});
  auto *layout = new QVBoxLayout(this);
  layout->addWidget(status_);
  layout->addLayout(top);
  layout->addWidget(split, 1);
  layout->addWidget(reproduce_);
}

void TuningPanel::attach(TuningService *service) {
  connect(service, &TuningService::started, this, &TuningPanel::begin);
  connect(service, &TuningService::pointsArrived, this, &TuningPanel::addPoints);
  connect(service, &TuningService::finished, this, &TuningPanel::end);
  connect(this, &TuningPanel::cancelRequested, service, &TuningService::cancel);
}

void TuningPanel::begin(const TuneSummary &header) {
  summary_ = header;
  model_->clear();
  axis_->blockSignals(true);
  axis_->clear();
  axis_->addItems(header.tunables);
  axis_->blockSignals(false);
  points_->clear();
  best_->clear();
  reproduce_->clear();
  progress_->setRange(0, header.budget > 0 ? static_cast<int>(header.budget) : 0);  // 0..0: busy
  progress_->setValue(0);
  cancel_->setEnabled(true);
  showStatus(header, true);
}

void TuningPanel::addPoints(const QList<TunePointRow> &rows, const TuneSummary &sofar) {
  summary_ = sofar;
  model_->append(rows);
  model_->setBest(sofar.bestOrder);
  if (axis_->count() == 0 && !model_->tunables().isEmpty()) {
    axis_->blockSignals(true);
    axis_->addItems(model_->tunables());
    axis_->blockSignals(false);
  }
  if (!refreshTimer_->isActive()) refreshTimer_->start();
  showStatus(sofar, true);
}

void TuningPanel::end(const TuneSummary &summary) {
  summary_ = summary;
  model_->setBest(summary.bestOrder);
  cancel_->setEnabled(false);
  progress_->setRange(0, std::max(1, model_->rowCount()));
  progress_->setValue(model_->rowCount());
  refreshTimer_->stop();
  replot();
  showStatus(summary, false);
  reproduce_->setText(summary.reproduce.isEmpty() ? QString() : tr("Reproduce the best: %1").arg(summary.reproduce));
}

void TuningPanel::replot() {
  const QString name = axis_->currentText();
  QList<QPointF> pts;
  QList<QPointF> best;
  double xmin = 0, xmax = 1, ymax = 0;
  bool first = true;
  for (const auto &r : model_->rows()) {
    if (std::isnan(r.objectiveMs)) continue;
    const auto it = r.point.find(name.toStdString());
    const double x = it == r.point.end() ? static_cast<double>(r.order) : static_cast<double>(it->second);
    pts << QPointF(x, r.objectiveMs);
    if (r.order == summary_.bestOrder) best << QPointF(x, r.objectiveMs);
    xmin = first ? x : std::min(xmin, x);
    xmax = first ? x : std::max(xmax, x);
    ymax = std::max(ymax, r.objectiveMs);
    first = false;
  }
  points_->replace(pts);  // one update for the whole batch
  best_->replace(best);
  const double pad = xmax > xmin ? (xmax - xmin) * 0.05 : 1.0;
  xAxis_->setRange(xmin - pad, xmax + pad);
  xAxis_->setTitleText(name.isEmpty() ? tr("point") : name);
  yAxis_->setRange(0, ymax > 0 ? ymax * 1.1 : 1.0);
}

int TuningPanel::plottedPoints() const { return static_cast<int>(points_->count()); }

void TuningPanel::showStatus(const TuneSummary &s, bool running) {
  const QString task = QFileInfo(s.task).fileName().isEmpty() ? s.task : QFileInfo(s.task).fileName();
  QString text = running ? tr("Tuning %1 (%2)").arg(task, QFileInfo(s.sourceName).fileName())
                         : tr("Tuned %1 (%2)").arg(task, QFileInfo(s.sourceName).fileName());
  if (!s.strategy.isEmpty())
    text += tr(": %1 of %2 points, %3").arg(model_->rowCount()).arg(s.budget ? s.budget : s.spaceSize).arg(s.strategy);
  if (!std::isnan(s.bestMs)) text += tr("; best %1 at %2").arg(formatMs(s.bestMs), s.bestLabel);
  if (!running) {
    QStringList counts;
    if (s.measured || s.cached || s.rejected || !s.compiledOnly)
      counts << tr("%1 measured, %2 cached, %3 rejected").arg(s.measured).arg(s.cached).arg(s.rejected);
    if (s.compiledOnly) counts << tr("%1 compiled, not run (no GPU)").arg(s.compiledOnly);
    text += QStringLiteral(". ") + counts.join(QStringLiteral("; "));
    if (s.stop == QLatin1String("cancelled")) text += tr("; cancelled (what was measured is kept)");
    if (!s.message.isEmpty() && s.stop != QLatin1String("cancelled")) text += QStringLiteral(". ") + s.message;
  }
  status_->setText(text);
}

QString TuningPanel::statusText() const { return status_->text(); }
QString TuningPanel::reproduceText() const { return reproduce_->text(); }

}  // namespace kwb::ui
