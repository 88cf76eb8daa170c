#include "ui/views/profiler_panel.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QDir>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QPushButton>
#include <QScatterSeries>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QValueAxis>
#include <QVBoxLayout>

#include "core/lineage/step_resolution.h"
#include "ui/models/outcome_style.h"
#include "ui/models/profile_metrics_model.h"
#include "ui/services/evaluation_service.h"
#include "ui/services/tuning_service.h"

namespace kwb::ui {

namespace {

QChartView *chartView(QChart *chart, QWidget *parent) {
  auto *v = new QChartView(chart, parent);
  v->setRenderHint(QPainter::Antialiasing);
  v->setMinimumSize(120, 40);
  return v;
}

}  // namespace

QList<RooflinePoint> rooflinePointsOf(const EvaluationRun &run) {
  QList<RooflinePoint> out;
  if (!run.result) return out;
  for (const auto &config : run.result->configs) {
    if (!config.timing || !config.timing->ok) continue;
    const kwb::TimingOutcome &timing = *config.timing;
    RooflinePoint p;
    p.label = QStringLiteral("%1 · %2").arg(QFileInfo(run.sourceName).fileName(), QString::fromStdString(config.config));
    if (timing.roofline) {
      p.flops = timing.roofline->flops;
      p.bytes = timing.roofline->bytes;
    }
    p.seconds = timing.candidate.median * 1e-3;
    if (p.seconds > 0) out << p;
  }
  return out;
}

ProfilerPanel::ProfilerPanel(QWidget *parent) : QWidget(parent) {
  tabs_ = new QTabWidget(this);

  // Live.
  auto *livePage = new QWidget(this);
  liveTitle_ = new QLabel(tr("Kernel times appear here as a run or a tuning measures them."), livePage);
  liveTitle_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  liveChart_ = new QChart;
  liveChart_->legend()->hide();
  liveChart_->legend()->setAlignment(Qt::AlignBottom);
  liveX_ = new QValueAxis;
  liveX_->setTitleText(tr("sample"));
  liveX_->setLabelFormat(QStringLiteral("%d"));
  liveY_ = new QValueAxis;
  liveY_->setTitleText(tr("kernel time (ms)"));
  liveLogY_ = new QLogValueAxis;
  liveLogY_->setTitleText(tr("kernel time (ms, log)"));
  liveLogY_->setLabelFormat(QStringLiteral("%.3g"));
  liveLogY_->setMinorTickCount(-1);
  liveLogY_->setVisible(false);
  liveChart_->addAxis(liveX_, Qt::AlignBottom);
  liveChart_->addAxis(liveY_, Qt::AlignLeft);
  liveChart_->addAxis(liveLogY_, Qt::AlignLeft);
  auto *liveLayout = new QVBoxLayout(livePage);
  liveLayout->setContentsMargins(0, 0, 0, 0);
  liveLayout->addWidget(liveTitle_);
  liveLayout->addWidget(chartView(liveChart_, livePage), 1);
  tabs_->addTab(livePage, tr("Live"));

  // Metrics.
  auto *metricsPage = new QWidget(this);
  profile_ = new QPushButton(tr("Profile"), metricsPage);
  profile_->setToolTip(tr("Read the GPU's counters for the kernel in the editor (CUPTI, a pass of its own)"));
  connect(profile_, &QPushButton::clicked, this, &ProfilerPanel::profileRequested);
  set_ = new QComboBox(metricsPage);
  set_->addItem(QStringLiteral("default"));
  set_->addItem(QStringLiteral("detailed"));
  set_->setToolTip(tr("default: 5 metrics in 2 replay passes on an H100/H200; detailed adds SM throughput and the warp "
                      "stall reasons (14 passes there)"));
  config_ = new QComboBox(metricsPage);
  config_->setToolTip(tr("The task's size configuration to profile on (small sizes are launch-bound: their counters "
                         "say little about the large ones)"));
  config_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  pin_ = new QPushButton(tr("Pin as Baseline"), metricsPage);
  pin_->setEnabled(false);
  connect(pin_, &QPushButton::clicked, this, &ProfilerPanel::pinBaseline);
  summary_ = new QLabel(tr("No profile yet."), metricsPage);
  summary_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  banner_ = new QLabel(metricsPage);
  banner_->setStyleSheet(QStringLiteral("QLabel { background: #fff3cd; color: #664d03; padding: 4px; }"));
  banner_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  banner_->hide();
  metrics_ = new ProfileMetricsModel(this);
  table_ = new QTableView(metricsPage);
  table_->setObjectName(QStringLiteral("profileMetrics"));
  table_->setModel(metrics_);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setMinimumHeight(40);
  barsChart_ = new QChart;
  barsChart_->legend()->setAlignment(Qt::AlignBottom);
  auto *bar = new QHBoxLayout;
  bar->addWidget(profile_);
  bar->addWidget(set_);
  bar->addWidget(config_);
  bar->addWidget(pin_);
  bar->addWidget(summary_, 1);
  auto *split = new QSplitter(Qt::Horizontal, metricsPage);
  split->addWidget(table_);
  split->addWidget(chartView(barsChart_, metricsPage));
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({600, 400});  // the table's wide Name column would otherwise squeeze the bars
  auto *metricsLayout = new QVBoxLayout(metricsPage);
  metricsLayout->setContentsMargins(0, 0, 0, 0);
  metricsLayout->addLayout(bar);
  metricsLayout->addWidget(banner_);
  metricsLayout->addWidget(split, 1);
  tabs_->addTab(metricsPage, tr("Metrics"));

  // Roofline.
  auto *roofPage = new QWidget(this);
  roofWords_ = new QLabel(tr("Timed runs of this task appear here under the GPU's measured ceilings."), roofPage);
  roofWords_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  roofChart_ = new QChart;
  roofChart_->legend()->setAlignment(Qt::AlignBottom);
  auto *roofLayout = new QVBoxLayout(roofPage);
  roofLayout->setContentsMargins(0, 0, 0, 0);
  roofLayout->addWidget(roofWords_);
  roofLayout->addWidget(chartView(roofChart_, roofPage), 1);
  tabs_->addTab(roofPage, tr("Roofline"));

  auto *layout = new QVBoxLayout(this);
  layout->addWidget(tabs_);
}

void ProfilerPanel::beginLive(const QString &title) {
  liveCount_ = 0;
  liveTop_ = liveBottom_ = 0;
  for (auto *series : liveSeries_) liveChart_->removeSeries(series);
  qDeleteAll(liveSeries_);
  liveSeries_.clear();
  liveChart_->legend()->hide();
  liveLog_ = false;
  liveY_->setVisible(true);
  liveLogY_->setVisible(false);
  liveTitle_->setText(title);
  liveX_->setRange(0, 1);
  liveY_->setRange(0, 1);
}

void ProfilerPanel::addSamples(const QList<double> &ms, const QString &group) {
  if (ms.isEmpty()) return;
  auto it = std::find_if(liveSeries_.begin(), liveSeries_.end(), [&](QLineSeries *s) { return s->name() == group; });
  QLineSeries *series = it == liveSeries_.end() ? nullptr : *it;
  if (!series) {
    series = new QLineSeries;
    series->setName(group);
    series->setPointsVisible(true);
    liveChart_->addSeries(series);
    series->attachAxis(liveX_);
    series->attachAxis(liveLog_ ? static_cast<QAbstractAxis *>(liveLogY_) : liveY_);
    liveSeries_ << series;
    liveChart_->legend()->setVisible(liveSeries_.size() > 1 || !group.isEmpty());
  }
  QList<QPointF> pts;
  pts.reserve(ms.size());
  for (double v : ms) {
    pts << QPointF(static_cast<double>(liveCount_++), v);
    if (v > 0) {
      liveTop_ = std::max(liveTop_, v);
      liveBottom_ = liveBottom_ > 0 ? std::min(liveBottom_, v) : v;
    }
  }
  series->append(pts);  // one update for the batch
  const double top = liveTop_, bottom = liveBottom_;
  const bool log = bottom > 0 && top / bottom > 10;
  if (log != liveLog_) {
    QAbstractAxis *from = liveLog_ ? static_cast<QAbstractAxis *>(liveLogY_) : liveY_;
    QAbstractAxis *to = log ? static_cast<QAbstractAxis *>(liveLogY_) : liveY_;
    for (auto *s : liveSeries_) {
      s->detachAxis(from);
      s->attachAxis(to);
    }
    liveY_->setVisible(!log);
    liveLogY_->setVisible(log);
    liveLog_ = log;
  }
  liveX_->setRange(0, std::max(1.0, static_cast<double>(liveCount_ - 1)));
  if (log) liveLogY_->setRange(bottom / 1.5, top * 1.5);
  else liveY_->setRange(0, top > 0 ? top * 1.1 : 1.0);
}

int ProfilerPanel::liveSamples() const { return liveCount_; }

QStringList ProfilerPanel::liveGroups() const {
  QStringList names;
  for (const auto *s : liveSeries_) names << s->name();
  return names;
}

QString ProfilerPanel::profileSet() const { return set_->currentText(); }

void ProfilerPanel::setConfigurations(const QStringList &names) {
  const QString kept = config_->currentText();
  config_->clear();
  config_->addItems(names);
  if (!kept.isEmpty()) selectConfiguration(kept);
}

QString ProfilerPanel::profileConfig() const { return config_->currentText(); }

namespace {
bool selectItem(QComboBox *box, const QString &text) {
  const int i = box->findText(text);
  if (i >= 0) box->setCurrentIndex(i);
  return i >= 0;
}
}  // namespace

bool ProfilerPanel::selectMetricSet(const QString &name) { return selectItem(set_, name); }

bool ProfilerPanel::selectConfiguration(const QString &name) { return selectItem(config_, name); }

void ProfilerPanel::showProfile(const ProfileRow &row) {
  tabs_->setCurrentIndex(1);
  if (row.outcome != kwb::Outcome::Profiled) {
    banner_->setText(row.outcome == kwb::Outcome::NotProfiled
                         ? tr("GPU counters unavailable (%1): %2. Timing and everything else still work.").arg(row.reason, row.message)
                         : tr("Not profiled (%1): %2").arg(outcomeText(row.outcome), row.message));
    banner_->show();
    return;
  }
  banner_->hide();
  // The default baseline, until one is pinned: the lineage parent's profile (step N-1 of the
  // same lineage folder, "NN-name.cu"), else the previous profile of the same task.
  if (!pinned_) {
    const auto parent = lineageParent(row);
    if (parent) baseline_ = parent;
    else if (shown_ && shown_->taskFolder == row.taskFolder) baseline_ = shown_;
    parentBaseline_ = parent.has_value();
  }
  shown_ = row;
  history_ << row;
  pin_->setEnabled(true);
  redrawMetrics();
}

std::optional<ProfileRow> ProfilerPanel::lineageParent(const ProfileRow &row) const {
  const std::filesystem::path file = row.sourceName.toStdString();
  const auto n = kwb::lineageStepNumber(file);
  if (!n) return std::nullopt;
  for (auto it = history_.crbegin(); it != history_.crend(); ++it) {
    const std::filesystem::path other = it->sourceName.toStdString();
    if (other.parent_path() == file.parent_path() && kwb::lineageStepNumber(other) == *n - 1 &&
        it->config == row.config)
      return *it;
  }
  return std::nullopt;
}

void ProfilerPanel::attach(EvaluationService *evaluation, TuningService *tuning, ProfileService *profiles) {
  connect(evaluation, &EvaluationService::started, this,
          [this] { beginLive(tr("Run: kernel times of each timing sample, as measured")); });
  connect(evaluation, &EvaluationService::progress, this,
          [this](const EvaluationStep &step) { addSamples(step.samplesMs, step.config); });
  connect(tuning, &TuningService::started, this,
          [this] { beginLive(tr("Tuning: each correct point's time, as measured")); });
  connect(tuning, &TuningService::pointsArrived, this, [this](const QList<TunePointRow> &rows) {
    QList<double> ms;
    for (const auto &r : rows)
      if (!std::isnan(r.objectiveMs)) ms << r.objectiveMs;
    addSamples(ms);
  });
  connect(profiles, &ProfileService::finished, this, &ProfilerPanel::showProfile);
  connect(profiles, &ProfileService::ceilingsReady, this, &ProfilerPanel::setCeilings);
  connect(profiles, &ProfileService::ceilingsFailed, this, &ProfilerPanel::setCeilingsProblem);
}

void ProfilerPanel::onTaskChanged(const WorkbenchContext &context) {
  if (context.taskFolder() == rooflineTask_) return;
  rooflineTask_ = context.taskFolder();
  setRooflinePoints({}, -1);
}

void ProfilerPanel::onSelectionChanged(const WorkbenchContext &context) {
  const auto &selection = context.selection();
  if (!selection || selection->run.taskFolder != context.taskFolder()) return;
  const auto added = rooflinePointsOf(selection->run);
  if (added.isEmpty()) return;
  setRooflinePoints(points_ + added, static_cast<int>(points_.size() + added.size()) - 1);  // the newest is selected
}

void ProfilerPanel::pinBaseline() {
  if (!shown_) return;
  baseline_ = shown_;
  pinned_ = true;
  redrawMetrics();
}

QString ProfilerPanel::deltaText(const QString &name) const { return metrics_->deltaText(name); }

void ProfilerPanel::redrawMetrics() {
  if (!shown_) return;
  const auto &row = *shown_;
  summary_->setText(tr("%1 · %2 · %3 on %4 (%5), %n replay pass(es)", nullptr, row.passes)
                        .arg(QFileInfo(row.sourceName).fileName(), row.config,
                             row.set.isEmpty() ? tr("custom metrics") : tr("%1 set").arg(row.set), row.device, row.chip) +
                    (baseline_ ? tr(" · baseline %1%2").arg(QFileInfo(baseline_->sourceName).fileName(),
                                                            pinned_ ? tr(" (pinned)") : parentBaseline_ ? tr(" (the lineage parent)") : tr(" (the previous profile)"))
                               : QString()));
  metrics_->setProfile(row, baseline_);
  // Bars: the percentage metrics, this profile beside the baseline.
  barsChart_->removeAllSeries();
  for (auto *a : barsChart_->axes()) barsChart_->removeAxis(a);
  auto *series = new QHorizontalBarSeries;
  auto *now = new QBarSet(QFileInfo(row.sourceName).fileName());
  QBarSet *then = baseline_ ? new QBarSet(tr("baseline")) : nullptr;
  QStringList categories;
  for (const auto &m : row.metrics) {
    if (m.unit != QLatin1String("%")) continue;
    categories << m.label;
    *now << m.value;
    if (then) {
      const auto *b = findMetric(*baseline_, m.name);
      *then << (b ? b->value : 0.0);
    }
  }
  if (then) series->append(then);
  series->append(now);
  barsChart_->addSeries(series);
  auto *y = new QBarCategoryAxis;
  y->append(categories);
  auto *x = new QValueAxis;
  x->setRange(0, 100);
  x->setTitleText(QStringLiteral("%"));
  barsChart_->addAxis(y, Qt::AlignLeft);
  barsChart_->addAxis(x, Qt::AlignBottom);
  series->attachAxis(y);
  series->attachAxis(x);
}

QString ProfilerPanel::bannerText() const { return banner_->isHidden() ? QString() : banner_->text(); }
QString ProfilerPanel::metricsSummary() const { return summary_->text(); }

void ProfilerPanel::setCeilings(const kwb::DeviceCeilings &c) {
  ceilings_ = c;
  ceilingsProblem_.clear();
  redrawRoofline();
}

void ProfilerPanel::setCeilingsProblem(const QString &problem) {
  ceilingsProblem_ = problem;
  redrawRoofline();
}

void ProfilerPanel::setRooflinePoints(const QList<RooflinePoint> &points, int selected) {
  points_ = points;
  selected_ = selected;
  redrawRoofline();
}

int ProfilerPanel::rooflinePointCount() const { return static_cast<int>(points_.size()); }
QString ProfilerPanel::rooflineWords() const { return roofWords_->text(); }

void ProfilerPanel::redrawRoofline() {
  roofChart_->removeAllSeries();
  for (auto *a : roofChart_->axes()) roofChart_->removeAxis(a);
  // Intensity from 1/64 to 1024 flop/byte; rates in GFLOP/s.
  double xmin = 1.0 / 64, xmax = 1024, ymin = 1, ymax = 1e6;
  auto *x = new QLogValueAxis;
  x->setBase(10);
  x->setTitleText(tr("arithmetic intensity (flop/byte)"));
  x->setLabelFormat(QStringLiteral("%g"));
  auto *y = new QLogValueAxis;
  y->setBase(10);
  y->setTitleText(tr("GFLOP/s"));
  y->setLabelFormat(QStringLiteral("%g"));
  roofChart_->addAxis(x, Qt::AlignBottom);
  roofChart_->addAxis(y, Qt::AlignLeft);
  auto attach = [&](QAbstractSeries *s) {
    roofChart_->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  };
  if (ceilings_) {
    const double bw = ceilings_->copyBytesPerS / 1e9;  // GB/s: GFLOP/s per flop/byte
    auto roof = [&](double peakGflops, const QString &name, Qt::PenStyle style) {
      auto *s = new QLineSeries;
      s->setName(name);
      const double ridge = peakGflops / bw;
      s->append(xmin, bw * xmin);
      s->append(std::clamp(ridge, xmin, xmax), std::min(peakGflops, bw * std::clamp(ridge, xmin, xmax)));
      s->append(xmax, peakGflops);
      QPen pen = s->pen();
      pen.setStyle(style);
      pen.setWidth(2);
      s->setPen(pen);
      attach(s);
    };
    roof(ceilings_->fp32FlopsPerS / 1e9, tr("memory + f32 roof (measured)"), Qt::SolidLine);
    if (ceilings_->tensorFlopsPerS > 0) roof(ceilings_->tensorFlopsPerS / 1e9, tr("bf16 mma.sync roof"), Qt::DashLine);
    ymax = std::max(ymax, ceilings_->tensorFlopsPerS / 1e9 * 2);
  }
  auto *pts = new QScatterSeries;
  pts->setName(tr("timed runs"));
  pts->setMarkerSize(9);
  auto *sel = new QScatterSeries;
  sel->setName(tr("selected"));
  sel->setMarkerSize(15);
  sel->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
  QString words;
  for (int i = 0; i < points_.size(); ++i) {
    const auto &p = points_[i];
    if (p.seconds <= 0) continue;
    if (i == selected_ && ceilings_)
      if (auto placed = kwb::placeOnRoofline(p.flops, p.bytes, p.seconds, *ceilings_, p.tensor))
        words = p.label + QStringLiteral(": ") + QString::fromStdString(placed->words);
    if (p.flops <= 0 || p.bytes <= 0) continue;  // no intensity to plot (a copy-like task)
    const QPointF at(p.flops / p.bytes, p.flops / p.seconds / 1e9);
    pts->append(at);
    if (i == selected_) sel->append(at);
  }
  attach(pts);
  attach(sel);
  x->setRange(xmin, xmax);
  y->setRange(ymin, ymax);
  if (!ceilings_)
    roofWords_->setText(ceilingsProblem_.isEmpty() ? tr("The GPU's ceilings are being measured…")
                                                   : tr("No ceilings: %1").arg(ceilingsProblem_));
  else if (!words.isEmpty())
    roofWords_->setText(words);
  else
    roofWords_->setText(tr("%1: copy %2 GB/s, f32 %3 TFLOP/s, bf16 mma.sync %4 TFLOP/s (measured)")
                            .arg(QString::fromStdString(ceilings_->device))
                            .arg(ceilings_->copyBytesPerS / 1e9, 0, 'f', 0)
                            .arg(ceilings_->fp32FlopsPerS / 1e12, 0, 'f', 1)
                            .arg(ceilings_->tensorFlopsPerS / 1e12, 0, 'f', 0));
}

}  // namespace kwb::ui
