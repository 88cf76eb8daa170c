#pragma once
// Settings page "LLM providers": the providers in the providers file (core/llm/provider_config.h),
// added from a template or from a server found on this machine, edited, removed; the model
// chosen from the server's own list; the key named as an environment variable or kept in the
// desktop keychain (never in the file or the settings); limits, prices and the session budget;
// and a live connection test. The network work runs in LlmService, the keychain in Keychain:
// nothing here waits on the GUI thread.
#include <functional>
#include <optional>
#include <vector>

#include <QHash>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "core/llm/discovery.h"
#include "core/llm/provider.h"
#include "ui/services/llm_service.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QMenu;
class QPlainTextEdit;
class QPushButton;
class QRadioButton;
class QSpinBox;
class QTimer;
class QToolButton;

namespace kwb::ui {

class Keychain;

// What is wrong with a field, in words; empty when nothing is.
QString providerNameProblem(const QString &name, const QStringList &otherNames);
QString baseUrlProblem(const QString &url);

class LlmProvidersPage : public QWidget {
  Q_OBJECT

 public:
  explicit LlmProvidersPage(QWidget *parent = nullptr);

  // Reads the providers file and the budget into the page (keys typed for the keychain and not
  // stored yet are kept).
  void load();
  // Saves the providers (when they changed), stores keys typed for the keychain, deletes the
  // keychain keys of removed providers, and stores the budget. False, with the problem shown
  // inline and its provider selected, when a field is wrong or the file cannot be written.
  bool apply();
  bool hasChanges() const { return dirty_; }

  // Adds a provider from providerTemplates() (by its name) or from a server found by discovery,
  // and selects it. Returns its row.
  int addFromTemplate(const QString &templateName);
  int addDiscovered(const kwb::llm::DiscoveredServer &server);
  // Asks for confirmation (a window-modal message box), then removes the selected provider.
  void removeSelected();
  void refreshModels();
  void testConnection();
  void cancelTest();
  void discoverServers();

  // The providers as the fields say now.
  std::vector<kwb::llm::ProviderConfig> providers() const;
  LlmService *service() const { return service_; }
  Keychain *keychain() const { return keychain_; }

  QListWidget *providerList() const { return list_; }
  QToolButton *addButton() const { return add_; }
  QMenu *addMenu() const { return addMenu_; }
  QPushButton *removeButton() const { return remove_; }
  QLineEdit *nameField() const { return name_; }
  QLabel *nameError() const { return nameError_; }
  QComboBox *formatField() const { return format_; }
  QLineEdit *baseUrlField() const { return baseUrl_; }
  QLabel *baseUrlError() const { return urlError_; }
  QComboBox *modelField() const { return model_; }
  QPushButton *refreshModelsButton() const { return refreshModels_; }
  QLabel *modelsStatus() const { return modelsStatus_; }
  QRadioButton *keyFromEnvironmentButton() const { return keyFromEnv_; }
  QRadioButton *keyFromKeychainButton() const { return keyFromKeychain_; }
  QLineEdit *keyVariableField() const { return keyEnv_; }
  QLabel *keyVariableStatus() const { return keyEnvStatus_; }
  QLineEdit *keychainKeyField() const { return keychainKey_; }
  QLabel *keychainStatus() const { return keychainStatus_; }
  QSpinBox *maxConcurrentField() const { return maxConcurrent_; }
  QSpinBox *stallTimeoutField() const { return stallTimeout_; }
  QSpinBox *contextWindowField() const { return contextWindow_; }
  QSpinBox *maxOutputTokensField() const { return maxOutputTokens_; }
  QLineEdit *inputPriceField() const { return inputPrice_; }
  QLineEdit *outputPriceField() const { return outputPrice_; }
  QDoubleSpinBox *budgetField() const { return budget_; }
  QPushButton *testButton() const { return test_; }
  QPushButton *cancelTestButton() const { return cancel_; }
  QLabel *testStatus() const { return testStatus_; }
  QPlainTextEdit *testOutput() const { return testOutput_; }
  QLabel *fileStatus() const { return fileStatus_; }

 signals:
  // The list of servers found on this machine changed (the add menu shows them).
  void discoveryFinished();
  void testStateChanged(bool testing);

 protected:
  void showEvent(QShowEvent *event) override;

 private:
  struct Entry {
    quint64 uid = 0;
    kwb::llm::ProviderConfig config;
    QString pendingKey;       // typed for the keychain, not stored yet; memory only
    QString storedName;       // the name it was last saved under (its keychain entry's); empty if never
    QStringList models;       // from the server
    QString modelsListedFor;  // the base URL the list (or its error) is for
    QString modelsMessage;
  };

  QWidget *buildEditor();
  QWidget *buildTest();
  void rebuildAddMenu();
  int appendEntry(kwb::llm::ProviderConfig config);
  QString uniqueName(const QString &wanted) const;
  int currentRow() const;
  Entry *current();
  Entry *entryByUid(quint64 uid);
  void showEntry(int row);
  void storeFields();
  void fieldsEdited();
  bool validate(int row, bool showInline);
  void updateKeyStatus();
  void updateModelsCombo(const Entry &entry);
  void maybeListModels(bool onlyWhenCheap);
  // Calls `then` with the key of the provider (from its variable, the typed one, or the
  // keychain: asynchronously); an empty key when there is none.
  void withKey(const Entry &entry, std::function<void(const QString &)> then);
  void setTesting(bool testing);
  void onModelsListed(const QStringList &models, const QString &error, double seconds);
  void onTestFinished(const kwb::ui::ConnectionTest &result);
  void onKeychainFailed(const QString &provider, const QString &operation, const QString &message);

  LlmService *service_ = nullptr;
  Keychain *keychain_ = nullptr;
  std::vector<Entry> entries_;
  quint64 nextUid_ = 1;
  bool loading_ = false;  // fields are being filled from an entry: edits are not changes
  bool dirty_ = false;
  bool loadFailed_ = false;
  bool discoveryStarted_ = false;
  QStringList removedKeychainNames_;          // keychain keys to delete on Apply
  QHash<QString, QString> keysBeingWritten_;  // provider -> the key its keychain write in flight holds
  QHash<QString, QString> keychainMessages_;  // per provider name: the keychain's last word
  QHash<QString, std::vector<std::function<void(const QString &)>>> keyWaiters_;
  QList<kwb::llm::DiscoveredServer> found_;
  quint64 modelsFor_ = 0;  // the entry a model list is being fetched for
  QString modelsUrl_;
  quint64 testSerial_ = 0;  // a test started or cancelled

  QListWidget *list_ = nullptr;
  QToolButton *add_ = nullptr;
  QMenu *addMenu_ = nullptr;
  QPushButton *remove_ = nullptr;
  QWidget *editor_ = nullptr;
  QLabel *emptyHint_ = nullptr;
  QLineEdit *name_ = nullptr;
  QLabel *nameError_ = nullptr;
  QComboBox *format_ = nullptr;
  QLineEdit *baseUrl_ = nullptr;
  QLabel *urlError_ = nullptr;
  QComboBox *model_ = nullptr;
  QPushButton *refreshModels_ = nullptr;
  QLabel *modelsStatus_ = nullptr;
  QRadioButton *keyFromEnv_ = nullptr;
  QRadioButton *keyFromKeychain_ = nullptr;
  QLineEdit *keyEnv_ = nullptr;
  QLabel *keyEnvStatus_ = nullptr;
  QLineEdit *keychainKey_ = nullptr;
  QLabel *keychainStatus_ = nullptr;
  QSpinBox *maxConcurrent_ = nullptr;
  QSpinBox *stallTimeout_ = nullptr;
  QSpinBox *contextWindow_ = nullptr;
  QSpinBox *maxOutputTokens_ = nullptr;
  QLineEdit *inputPrice_ = nullptr;
  QLineEdit *outputPrice_ = nullptr;
  QDoubleSpinBox *budget_ = nullptr;
  QPushButton *test_ = nullptr;
  QPushButton *cancel_ = nullptr;
  QLabel *testStatus_ = nullptr;
  QPlainTextEdit *testOutput_ = nullptr;
  QLabel *fileStatus_ = nullptr;
  QTimer *urlDebounce_ = nullptr;
};

}  // namespace kwb::ui
