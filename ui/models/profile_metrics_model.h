#pragma once
// The profiler panel's Metrics table: a row per metric of the profile shown (its label, value
// with unit, the baseline's value and the change from it, the Nsight Compute name). The baseline
// is another profile of the same metric set (pinned, the lineage parent or the previous profile);
// a metric the baseline lacks has no baseline value or delta.
#include <optional>

#include <QAbstractTableModel>

#include "ui/models/profile_rows.h"

namespace kwb::ui {

class ProfileMetricsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { MetricColumn, ValueColumn, BaselineColumn, DeltaColumn, NameColumn, ColumnCount };
  enum Role {
    NameRole = Qt::UserRole + 1,  // the metric's Nsight Compute name
    ValueRole,                    // its value as a number, in its unit
    DeltaRole,                    // the change from the baseline in percent (invalid: none)
  };

  explicit ProfileMetricsModel(QObject *parent = nullptr);

  // The profile shown and its baseline (nullopt: none).
  void setProfile(const ProfileRow &shown, const std::optional<ProfileRow> &baseline);
  void clear();

  // "84.47 %", "198.7 µs": nanoseconds read as µs or ms once they are that large.
  static QString withUnit(double value, const QString &unit);
  // "+12.5%", "-3.0%", "new" (the baseline's was 0), "" without a baseline value.
  QString deltaText(const QString &name) const;
  // The metric's change from the baseline in percent; nullopt when it has none (or it was 0).
  std::optional<double> delta(const QString &name) const;
  const MetricRow *baselineOf(const QString &name) const;

  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QList<MetricRow> metrics_;
  std::optional<ProfileRow> baseline_;
};

// The metric of that name in a profile; nullptr when it has none.
const MetricRow *findMetric(const ProfileRow &row, const QString &name);

}  // namespace kwb::ui
