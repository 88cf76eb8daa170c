#pragma once
// The Profiler panel: three views of why a kernel takes the time it takes.
//  - Live: each timing sample's kernel time as a run measures it, and each point's time as a
//    tuning run finishes it (CUPTI kernel records, streamed from the worker).
//  - Metrics: the last profile's metrics (CUPTI range profiler, Nsight Compute names) as bars
//    beside the baseline's, with the delta; the replay passes it took; a banner with the reason
//    when counters could not be read. Any profile can be pinned as the baseline; until one is,
//    the profile of the candidate's parent is (the lineage step before it, when it was profiled),
//    else the previous profile of the same task.
//  - Roofline: the task's timed candidates placed by arithmetic intensity and achieved rate
//    under the GPU's measured ceilings (memory slope, f32 and tensor-core roofs), the selected
//    one marked, with the gap in words.
// Charts are redrawn once per batch of data, never per point.
#include <optional>

#include <QList>
#include <QWidget>

#include "core/eval/roofline.h"
#include "ui/models/evaluation_run.h"
#include "ui/workbench_context.h"
#include "ui/services/profile_service.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineSeries;
class QLogValueAxis;
class QPushButton;
class QScatterSeries;
class QTabWidget;
class QTableView;
class QValueAxis;
class QBarSet;
class QHorizontalBarSeries;
class QBarCategoryAxis;

namespace kwb::ui {

class EvaluationService;
class ProfileMetricsModel;
class TuningService;

struct RooflinePoint {
  QString label;       // "softmax.cu · h200"
  double flops = 0;
  double bytes = 0;
  double seconds = 0;
  bool tensor = false;
};

// Each timed configuration of an evaluation run (its timing median and the task's flops and
// bytes) as a roofline point; none for a run without timing.
QList<RooflinePoint> rooflinePointsOf(const EvaluationRun &run);

// A view of the workbench context: each selected run of the current task joins the roofline,
// selected; another task starts an empty one.
class ProfilerPanel : public QWidget, public WorkbenchView {
  Q_OBJECT

 public:
  explicit ProfilerPanel(QWidget *parent = nullptr);

  // Live view.
  void beginLive(const QString &title);
  // Samples of `group` (a run's size configuration; empty for one unnamed series): each group is
  // a series of its own, numbered on one sample axis. The time axis turns logarithmic once the
  // times span more than 10x (a small configuration beside a large one).
  void addSamples(const QList<double> &ms, const QString &group = QString());
  int liveSamples() const;
  QStringList liveGroups() const;
  bool liveLogScale() const { return liveLog_; }

  // Metrics view.
  void showProfile(const ProfileRow &row);
  void pinBaseline();  // the shown profile becomes the baseline
  bool hasBaseline() const { return baseline_.has_value(); }
  const std::optional<ProfileRow> &shownProfile() const { return shown_; }
  const std::optional<ProfileRow> &baselineProfile() const { return baseline_; }
  QString bannerText() const;
  QString metricsSummary() const;
  // The delta column as shown for metric `name`: "+12.3%"; empty when there is no baseline.
  QString deltaText(const QString &name) const;
  QTableView *metricsTable() const { return table_; }
  ProfileMetricsModel *metricsModel() const { return metrics_; }
  QString profileSet() const;
  // The task's size configurations to profile on; the first is chosen until the user picks one
  // (a choice survives a new list that still holds it).
  void setConfigurations(const QStringList &names);
  QString profileConfig() const;  // empty: none listed (the task's first)
  bool selectConfiguration(const QString &name);
  bool selectMetricSet(const QString &name);  // "default" or "detailed"
  QComboBox *configCombo() const { return config_; }

  // Roofline view.
  void setCeilings(const kwb::DeviceCeilings &c);
  void setCeilingsProblem(const QString &problem);
  void setRooflinePoints(const QList<RooflinePoint> &points, int selected);
  int rooflinePointCount() const;
  QString rooflineWords() const;  // the selected point's gap in words

  // Follows the services: a run's timing samples and each tuned point's time (Live), each
  // profile (Metrics) and the GPU's ceilings (Roofline).
  void attach(EvaluationService *evaluation, TuningService *tuning, ProfileService *profiles);

  void onTaskChanged(const WorkbenchContext &context) override;
  void onSelectionChanged(const WorkbenchContext &context) override;

  QTabWidget *tabs() const { return tabs_; }
  QPushButton *profileButton() const { return profile_; }

 signals:
  void profileRequested();

 private:
  void redrawMetrics();
  std::optional<ProfileRow> lineageParent(const ProfileRow &row) const;
  void redrawRoofline();

  QTabWidget *tabs_ = nullptr;
  // live
  QChart *liveChart_ = nullptr;
  QList<QLineSeries *> liveSeries_;  // one per group, in order of arrival
  QValueAxis *liveX_ = nullptr, *liveY_ = nullptr;
  QLogValueAxis *liveLogY_ = nullptr;
  bool liveLog_ = false;
  QLabel *liveTitle_ = nullptr;
  int liveCount_ = 0;                      // samples plotted since beginLive
  double liveTop_ = 0, liveBottom_ = 0;    // their largest and smallest positive times (0: none)
  // metrics
  QPushButton *profile_ = nullptr;
  QPushButton *pin_ = nullptr;
  QComboBox *set_ = nullptr;
  QComboBox *config_ = nullptr;
  QLabel *banner_ = nullptr;
  QLabel *summary_ = nullptr;
  QTableView *table_ = nullptr;
  ProfileMetricsModel *metrics_ = nullptr;
  QChart *barsChart_ = nullptr;
  std::optional<ProfileRow> shown_, baseline_;
  QList<ProfileRow> history_;  // this window's profiles, for the lineage parent
  bool pinned_ = false;
  bool parentBaseline_ = false;
  // roofline
  QChart *roofChart_ = nullptr;
  QLabel *roofWords_ = nullptr;
  std::optional<kwb::DeviceCeilings> ceilings_;
  QString ceilingsProblem_;
  QList<RooflinePoint> points_;
  QString rooflineTask_;  // the task the points are of
  int selected_ = -1;
};

}  // namespace kwb::ui
