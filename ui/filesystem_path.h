#pragma once
// Paths cross the Qt/core boundary as UTF-8, which is what both sides use on Linux.
#include <filesystem>

#include <QString>

namespace kwb::ui {

inline std::filesystem::path toFsPath(const QString &path) {
  return std::filesystem::path(path.toStdString());
}

inline QString toQString(const std::filesystem::path &path) {
  return QString::fromStdString(path.string());
}

}  // namespace kwb::ui
