#pragma once
// For the UI tests: a temporary HOME with its own XDG folders and cleared settings, so the
// user's settings and data stay out of reach and parallel runs never share a file.
#include <QDir>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtGlobal>

#include <memory>

class IsolatedHome {
 public:
  IsolatedHome() : dir_(std::make_unique<QTemporaryDir>()) {
    QStandardPaths::setTestModeEnabled(true);  // QSettings under $HOME/.qttest
    qputenv("HOME", dir_->path().toUtf8());
    qputenv("XDG_DATA_HOME", path(QStringLiteral("data")).toUtf8());
    qputenv("XDG_CONFIG_HOME", path(QStringLiteral("config")).toUtf8());
    qputenv("XDG_CACHE_HOME", path(QStringLiteral("cache")).toUtf8());
    qunsetenv("KWB_KERNELS_DIR");
    QSettings(QStringLiteral("KernelWorkbench"), QStringLiteral("kernel-workbench")).clear();
  }
  bool isValid() const { return dir_->isValid(); }
  QString root() const { return dir_->path(); }
  QString path(const QString &name) const { return QDir(dir_->path()).filePath(name); }

 private:
  std::unique_ptr<QTemporaryDir> dir_;
};
