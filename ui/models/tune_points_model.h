#pragma once
// The tuning view's table: one row per evaluated point, in the order results arrived (order,
// the tunables' values, outcome, time, where it ran, cached or measured). Rows are only ever
// appended, in batches.
#include <QAbstractTableModel>
#include <QList>
#include <QStringList>

#include "ui/models/tune_rows.h"

namespace kwb::ui {

class TunePointsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Role {
    ObjectiveRole = Qt::UserRole + 1,  // double: the point's time in ms (NaN when none), for sorting
    OutcomeRole,                       // QString: "correct", "incorrect", ...
  };

  explicit TunePointsModel(QObject *parent = nullptr);

  void clear();
  void append(const QList<TunePointRow> &rows);
  void setBest(int order);
  const QList<TunePointRow> &rows() const { return rows_; }
  const QStringList &tunables() const { return tunables_; }

  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QList<TunePointRow> rows_;
  QStringList tunables_;  // from the first row: one column each
  int best_ = -1;
};

// "0.612 ms" or "41.3 µs"; "—" for NaN.
QString formatMs(double ms);

}  // namespace kwb::ui
