#pragma once
// A lineage's steps, naive to expert, as the Lineage view's path draws them: a row per step with
// its title, what the gate said (passed, rejected and why, or not measured: a lineage read from
// its task), and for the configuration chosen its median time and its speedups over the step
// before and over the reference.
#include <optional>
#include <vector>

#include <QAbstractTableModel>

#include "core/lineage/skill_library.h"

namespace kwb::ui {

class LineageStepsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { StepColumn, GateColumn, MedianColumn, VsPreviousColumn, VsReferenceColumn, ColumnCount };
  enum class Gate { Passed, Rejected, NotMeasured };
  enum Role {
    GateRole = Qt::UserRole + 1,  // int(Gate)
    PositionRole,                 // the step's position (1-based)
    SpeedupVsPreviousRole,        // double; invalid without figures for the configuration
  };

  explicit LineageStepsModel(QObject *parent = nullptr);

  // The lineage's steps (nullptr: none) and the configuration whose figures are shown.
  void setLineage(const kwb::LineageRecord *lineage, const QString &config);
  QString config() const { return config_; }
  const kwb::LineageStepRecord *step(int row) const;
  int rowOfPosition(int position) const;  // -1: no such step
  bool hasFigures() const;                // any step was measured
  static Gate gateOf(const kwb::LineageStepRecord &step);
  // The step's figures for a configuration; nullptr when it has none there.
  static const kwb::StepFigures *figuresFor(const kwb::LineageStepRecord &step, const QString &config);

  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<kwb::LineageStepRecord> steps_;
  QString config_;
};

}  // namespace kwb::ui
