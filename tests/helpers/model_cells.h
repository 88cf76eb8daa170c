#pragma once
// For the model and window suites: what a model shows, read the way a view reads it, and a
// fixture file read whole.
#include <QAbstractItemModel>
#include <QByteArray>
#include <QFile>
#include <QList>
#include <QModelIndex>
#include <QString>

namespace kwb::test {

// The text of the cell in `column` of index's row.
inline QString cell(const QModelIndex &row, int column) {
  return row.siblingAtColumn(column).data().toString();
}

inline QString cell(const QAbstractItemModel *model, int row, int column) {
  return model->index(row, column).data().toString();
}

// The top-level rows whose `role` holds `value` (a kind, say).
inline QList<QModelIndex> topLevelRows(const QAbstractItemModel *model, int role, int value) {
  QList<QModelIndex> rows;
  for (int row = 0; row < model->rowCount(); ++row) {
    const QModelIndex index = model->index(row, 0);
    if (index.data(role).toInt() == value) rows << index;
  }
  return rows;
}

inline QByteArray readBytes(const QString &path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

}  // namespace kwb::test
