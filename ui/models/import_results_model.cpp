#include "ui/models/import_results_model.h"

#include <QBrush>
#include <QColor>
#include <QFileInfo>

namespace kwb::ui {

ImportResultsModel::ImportResultsModel(QObject *parent) : QAbstractTableModel(parent) {}

void ImportResultsModel::clear() {
  if (rows_.isEmpty()) return;
  beginResetModel();
  rows_.clear();
  endResetModel();
}

void ImportResultsModel::append(const ImportedProblem &row) {
  const int at = static_cast<int>(rows_.size());
  beginInsertRows(QModelIndex(), at, at);
  rows_.append(row);
  endInsertRows();
}

int ImportResultsModel::imported() const {
  int n = 0;
  for (const ImportedProblem &r : rows_) n += r.ok ? 1 : 0;
  return n;
}

int ImportResultsModel::rowCount(const QModelIndex &parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ImportResultsModel::columnCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ImportResultsModel::data(const QModelIndex &index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const ImportedProblem &r = rows_.at(index.row());
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case ModuleColumn:
          return QFileInfo(r.problem).fileName();
        case ResultColumn:
          return r.ok ? tr("imported") : tr("refused");
        case DetailColumn:
          return r.ok ? tr("%1 (%2 configurations, %3 inputs, %4 outputs)")
                            .arg(QFileInfo(r.folder).fileName())
                            .arg(r.configs)
                            .arg(r.inputs)
                            .arg(r.outputs)
                      : r.message;
        case NotesColumn:
          return r.warnings.join(QStringLiteral("; "));
        default:
          return {};
      }
    case Qt::ToolTipRole:
      switch (index.column()) {
        case ModuleColumn:
          return r.problem;
        case DetailColumn:
          return r.ok ? r.folder : r.message;
        case NotesColumn:
          return r.warnings.isEmpty() ? QVariant() : QVariant(r.warnings.join(QLatin1Char('\n')));
        default:
          return {};
      }
    case Qt::ForegroundRole:
      if (index.column() == ResultColumn) return QBrush(r.ok ? QColor(0x2e, 0x7d, 0x32) : QColor(0xc6, 0x28, 0x28));
      return {};
    case FolderRole:
      return r.folder;
    case OkRole:
      return r.ok;
    default:
      return {};
  }
}

QVariant ImportResultsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ModuleColumn:
      return tr("Module");
    case ResultColumn:
      return tr("Result");
    case DetailColumn:
      return tr("Task, or why not");
    case NotesColumn:
      return tr("To look at");
    default:
      return {};
  }
}

}  // namespace kwb::ui
