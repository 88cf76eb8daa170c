#pragma once
// The Tuning panel: a tuning run as it goes. A line with the task, the strategy and the best
// point so far; a progress bar over the budget and a Cancel button; the table of points
// (TunePointsModel, sortable); a scatter of one tunable (chosen in a list) against the time of
// each correct point, the best one marked; and the command that reproduces the best point.
// It takes results in batches (TuningService::pointsArrived) and redraws the chart once per batch.
#include <QWidget>

#include "ui/services/tuning_service.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QScatterSeries;
class QSortFilterProxyModel;
class QTableView;
class QTimer;
class QValueAxis;

namespace kwb::ui {

class TunePointsModel;

class TuningPanel : public QWidget {
  Q_OBJECT

 public:
  explicit TuningPanel(QWidget *parent = nullptr);

  // Connects to a service's signals; Cancel calls its cancel().
  void attach(TuningService *service);

  void begin(const TuneSummary &header);
  void addPoints(const QList<TunePointRow> &rows, const TuneSummary &sofar);
  void end(const TuneSummary &summary);

  QString statusText() const;
  QString reproduceText() const;
  TunePointsModel *model() const { return model_; }
  QTableView *table() const { return table_; }
  QChartView *chartView() const { return chartView_; }
  QProgressBar *progressBar() const { return progress_; }
  QPushButton *cancelButton() const { return cancel_; }
  QComboBox *axisChoice() const { return axis_; }
  int plottedPoints() const;  // correct points in the scatter

 signals:
  void cancelRequested();

 private:
  void replot();
  void showStatus(const TuneSummary &s, bool running);

  QLabel *status_ = nullptr;
  QProgressBar *progress_ = nullptr;
  QPushButton *cancel_ = nullptr;
  QTableView *table_ = nullptr;
  TunePointsModel *model_ = nullptr;
  QSortFilterProxyModel *proxy_ = nullptr;
  QComboBox *axis_ = nullptr;
  QChartView *chartView_ = nullptr;
  QChart *chart_ = nullptr;
  QScatterSeries *points_ = nullptr;
  QScatterSeries *best_ = nullptr;
  QValueAxis *xAxis_ = nullptr;
  QValueAxis *yAxis_ = nullptr;
  QLabel *reproduce_ = nullptr;
  // While points stream in, the scatter and the progress bar are redrawn at most every 100 ms:
  // each costs the GUI thread far more than a batch of table rows (QProgressBar::setValue paints
  // at once, 6 to 23 ms in a full window here), and batches can come every few ms.
  QTimer *refreshTimer_ = nullptr;
  TuneSummary summary_;
};

}  // namespace kwb::ui
