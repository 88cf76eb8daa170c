#pragma once
// A provider's API key in the desktop keychain (the Secret Service, KWallet, ...) through
// QtKeychain: service "kernel-workbench", key the provider's name. Every call starts a job and
// returns at once; its answer comes back as a signal on the GUI thread. Nothing falls back to a
// file: where no keychain is available, the call fails and says so in words.
#include <QObject>
#include <QString>

namespace kwb::ui {

class Keychain : public QObject {
  Q_OBJECT

 public:
  static constexpr const char *kService = "kernel-workbench";

  explicit Keychain(QObject *parent = nullptr);

  void readKey(const QString &provider);
  void writeKey(const QString &provider, const QString &key);
  // Deleting a key that is not there counts as done.
  void deleteKey(const QString &provider);

  // "the desktop keychain is not available: <why>; keep the key in an environment variable and
  // name it here instead".
  static QString unavailableMessage(const QString &why);

 signals:
  void keyRead(const QString &provider, const QString &key);
  void keyWritten(const QString &provider);
  void keyDeleted(const QString &provider);
  // operation: "read", "write" or "delete"; message in words, with the way out when known.
  void failed(const QString &provider, const QString &operation, const QString &message);
};

}  // namespace kwb::ui
