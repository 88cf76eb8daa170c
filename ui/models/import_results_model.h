#pragma once
// The import dialog's result table: one row per module the import tried, in order: the file, what
// came of it (imported, refused), the task folder made or why not (FILE:LINE: part: why), and what
// to look at in the task (the importer's warnings). Rows are appended as answers arrive.
#include <QAbstractTableModel>
#include <QList>
#include <QString>
#include <QStringList>

namespace kwb::ui {

// One problem's answer.
struct ImportedProblem {
  QString problem;       // the .py file
  bool ok = false;
  QString folder;        // the task folder made (ok)
  QString message;       // why it was refused ("FILE:LINE: part: why"), empty when ok
  QStringList warnings;  // what to look at in the task made
  int configs = 0, inputs = 0, outputs = 0;
};

class ImportResultsModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { ModuleColumn, ResultColumn, DetailColumn, NotesColumn, ColumnCount };
  enum Role { FolderRole = Qt::UserRole + 1, OkRole };

  explicit ImportResultsModel(QObject *parent = nullptr);

  void clear();
  void append(const ImportedProblem &row);
  const QList<ImportedProblem> &rows() const { return rows_; }
  int imported() const;

  int rowCount(const QModelIndex &parent = QModelIndex()) const override;
  int columnCount(const QModelIndex &parent = QModelIndex()) const override;
  QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  QList<ImportedProblem> rows_;
};

}  // namespace kwb::ui
