#pragma once
// Paths in the GUI: one normal form, and the crossing to core's std::filesystem::path.
#include <filesystem>

#include <QDir>
#include <QString>

namespace kwb::ui {

// The one normal form for every path the GUI stores or compares (settings lists, task folders,
// open files, tree rows): absolute (against the current directory) and cleaned of ".", ".." and
// doubled separators. Symbolic links are deliberately not resolved: the user sees and keeps the
// path they chose, it costs no file system access (so it is safe on the GUI thread even for a
// hung mount), and a path that does not exist yet normalises the same way as one that does.
inline QString normalizedPath(const QString &path) {
  if (path.isEmpty()) return {};
  return QDir::cleanPath(QDir::isAbsolutePath(path) ? path : QDir::current().absoluteFilePath(path));
}

// Paths cross the Qt/core boundary as UTF-8, which is what both sides use on Linux.
inline std::filesystem::path toFsPath(const QString &path) {
  return std::filesystem::path(path.toStdString());
}

inline QString toQString(const std::filesystem::path &path) {
  return QString::fromStdString(path.string());
}

}  // namespace kwb::ui
