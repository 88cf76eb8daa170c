#include "ui/models/lineage_steps_model.h"

#include <QColor>

namespace kwb::ui {

namespace {

QString times(double v) { return QStringLiteral("\u00d7%1").arg(v, 0, 'f', 2); }

}  // namespace

LineageStepsModel::LineageStepsModel(QObject *parent) : QAbstractTableModel(parent) {}

void LineageStepsModel::setLineage(const kwb::LineageRecord *lineage, const QString &config) {
  beginResetModel();
  steps_.clear();
  if (lineage)
    for (const auto &s : lineage->steps) {
      kwb::LineageStepRecord copy = s;
      copy.source.clear();  // the path needs no code; the panel reads it from the lineage
      steps_.push_back(std::move(copy));
    }
  config_ = config;
  endResetModel();
}

const kwb::LineageStepRecord *LineageStepsModel::step(int row) const {
  return row >= 0 && row < static_cast<int>(steps_.size()) ? &steps_[static_cast<std::size_t>(row)] : nullptr;
}

int LineageStepsModel::rowOfPosition(int position) const {
  for (std::size_t i = 0; i < steps_.size(); ++i)
    if (steps_[i].position == position) return static_cast<int>(i);
  return -1;
}

bool LineageStepsModel::hasFigures() const {
  for (const auto &s : steps_)
    if (!s.figures.empty()) return true;
  return false;
}

LineageStepsModel::Gate LineageStepsModel::gateOf(const kwb::LineageStepRecord &step) {
  if (step.accepted) return Gate::Passed;
  return step.outcome == "not-measured" ? Gate::NotMeasured : Gate::Rejected;
}

const kwb::StepFigures *LineageStepsModel::figuresFor(const kwb::LineageStepRecord &step, const QString &config) {
  for (const auto &f : step.figures)
    if (QString::fromStdString(f.config) == config) return &f;
  return nullptr;
}

int LineageStepsModel::rowCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : static_cast<int>(steps_.size()); }

int LineageStepsModel::columnCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LineageStepsModel::data(const QModelIndex &index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const auto &s = steps_[static_cast<std::size_t>(index.row())];
  const auto *f = figuresFor(s, config_);
  const Gate gate = gateOf(s);
  switch (role) {
    case GateRole: return static_cast<int>(gate);
    case PositionRole: return s.position;
    case SpeedupVsPreviousRole: return f && f->speedupVsPrevious > 0 ? QVariant(f->speedupVsPrevious) : QVariant();
    case Qt::DecorationRole:
      // Green: passed the gate; red: rejected; grey: read from the task, not measured.
      if (index.column() != StepColumn) return {};
      return gate == Gate::Passed ? QColor(0x16, 0xa3, 0x4a) : gate == Gate::NotMeasured ? QColor(0x9c, 0xa3, 0xaf) : QColor(0xdc, 0x26, 0x26);
    case Qt::ToolTipRole:
      return index.column() == GateColumn && !s.reason.empty() ? QVariant(QString::fromStdString(s.reason)) : QVariant();
    case Qt::DisplayRole: break;
    default: return {};
  }
  switch (index.column()) {
    case StepColumn: return QStringLiteral("%1. %2").arg(s.position).arg(QString::fromStdString(s.title));
    case GateColumn:
      return gate == Gate::Passed ? tr("passed")
             : gate == Gate::NotMeasured
                 ? tr("not measured")
                 : tr("rejected: %1").arg(QString::fromStdString(s.reason.empty() ? s.outcome : s.reason));
    case MedianColumn: return f && f->medianMs > 0 ? QStringLiteral("%1 ms").arg(f->medianMs, 0, 'f', 3) : QString();
    case VsPreviousColumn: return f && f->speedupVsPrevious > 0 ? times(f->speedupVsPrevious) : QString();
    case VsReferenceColumn: return f && f->speedupVsReference > 0 ? times(f->speedupVsReference) : QString();
    default: return {};
  }
}

QVariant LineageStepsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case StepColumn: return tr("Step");
    case GateColumn: return tr("Gate");
    case MedianColumn: return tr("Median");
    case VsPreviousColumn: return tr("vs previous");
    case VsReferenceColumn: return tr("vs reference");
    default: return {};
  }
}

}  // namespace kwb::ui
