#pragma once
// The Results panel's tree, read from one kwb::EvaluationResult: a compile row (its
// diagnostics under it), one row per size configuration (outcome, message, launch, occupancy,
// timing) with a row per seed under it (passed or failed, summary, error figures, first
// mismatches, unwritten elements, race), and a run row when no configuration says what
// happened (the task did not load, the run was cancelled before any, the form is unsupported).
// With the sanitizer asked for: a row per compute-sanitizer tool (clean, its errors in the
// candidate's code, or why it did not finish), a row per finding under it, named by its source
// line.
#include <array>
#include <vector>

#include <QAbstractItemModel>
#include <QString>

#include "core/eval/evaluation_result.h"
#include "ui/models/outcome_style.h"

namespace kwb::ui {

class EvaluationResultModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum class Kind { Run, Compile, Diagnostic, Config, Seed, Sanitizer, SanitizerFinding };
  Q_ENUM(Kind)
  enum Column {
    NameColumn,
    OutcomeColumn,
    DetailColumn,
    LaunchColumn,
    OccupancyColumn,
    TimeColumn,
    SpeedupColumn,
    TorchColumn,  // the speedups over the task's PyTorch module, eager and torch.compile
    ErrorColumn,
    MismatchColumn,
    ChecksColumn,
    ColumnCount
  };
  enum Role {
    KindRole = Qt::UserRole + 1,  // Kind as int
    OutcomeRole,  // QString: an Outcome's name ("not-run"), "passed"/"failed" (seeds), "ok" (compile), a severity
  };

  explicit EvaluationResultModel(QObject *parent = nullptr);

  void setResult(const EvaluationResult &result);
  void clear();

  // The first top-level row of that kind (invalid when none).
  QModelIndex firstOf(Kind kind) const;

  QModelIndex index(int row, int column, const QModelIndex &parent = QModelIndex()) const override;
  QModelIndex parent(const QModelIndex &child) const override;
  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  struct Row {
    Kind kind = Kind::Run;
    QString outcome;
    OutcomeTone tone = OutcomeTone::Bad;
    std::array<QString, ColumnCount> text;
    std::array<QString, ColumnCount> tip;
    std::vector<Row> children;
  };

 private:
  const Row *rowAt(const QModelIndex &index) const;

  std::vector<Row> rows_;
};

}  // namespace kwb::ui
