#pragma once
// LLM calls for the GUI, off the GUI thread: listing a server's models, a tiny test request
// (streamed live, cancellable), and the search for local servers. Each call runs core/llm on a
// thread of a private pool and reports back through queued signals; nothing here waits on the
// GUI thread, not even the destructor (a call in flight is cancelled and its answer dropped).
// A newer call of the same kind wins: the answer of an older one is dropped.
#include <memory>
#include <vector>

#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>

#include "core/llm/discovery.h"
#include "core/llm/provider.h"

namespace kwb::ui {

// How a test request went.
struct ConnectionTest {
  QString provider, model;
  bool ok = false;
  bool cancelled = false;
  QString error;                    // in words; empty when ok
  int status = 0;                   // HTTP status of the last attempt; 0 when none arrived
  double seconds = 0;               // the whole request
  double secondsToFirstToken = -1;  // -1: no token arrived
  QString text;                     // the first tokens (all of the answer, which is short)
  qint64 inputTokens = 0, outputTokens = 0;
  bool usageReported = false;  // false: estimated or unknown
  QString note;                // what the provider did about the server's behaviour (ChatResult::note)
  // What the server says of its limits (kwb::llm::readServerLimits): 0 when it does not say.
  int contextWindow = 0, serverSlots = 0;
  QString limitsFrom;
};

class LlmService : public QObject {
  Q_OBJECT

 public:
  // The prompt of the test request, and how many tokens it asks for at most.
  static constexpr const char *kTestPrompt = "Reply with a short greeting of at most five words.";
  static constexpr int kTestMaxTokens = 24;

  explicit LlmService(QObject *parent = nullptr);
  ~LlmService() override;

  void listModels(const kwb::llm::ProviderConfig &config, const QString &key);
  // Streams textSoFar() as it arrives (testText), then testFinished. model empty: the config's.
  void testConnection(const kwb::llm::ProviderConfig &config, const QString &key, const QString &model);
  // Stops the test request in flight; its testFinished says "cancelled". A model list in flight
  // goes on.
  void cancel();
  void discover();
  // Where discover() looks: by default knownLocalServers() on 127.0.0.1.
  void setDiscoveryTargets(const QString &host, const std::vector<kwb::llm::LocalServerKind> &kinds);

  bool isTesting() const { return testing_; }
  bool isListingModels() const { return listing_; }
  bool isDiscovering() const { return discovering_; }

 signals:
  void modelsListed(const QStringList &models, const QString &error, double seconds);
  // The answer so far, at most every 50 ms while it streams.
  void testText(const QString &textSoFar);
  void testFinished(const kwb::ui::ConnectionTest &result);
  void serversFound(const QList<kwb::llm::DiscoveredServer> &servers);

 private:
  struct Channel;
  struct Call;

  std::shared_ptr<Channel> channel_;
  std::shared_ptr<Call> listCall_, testCall_;
  quint64 discoverId_ = 0;
  bool testing_ = false, listing_ = false, discovering_ = false;
  QString discoveryHost_ = QStringLiteral("127.0.0.1");
  std::vector<kwb::llm::LocalServerKind> discoveryKinds_;
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::ConnectionTest)
Q_DECLARE_METATYPE(kwb::llm::DiscoveredServer)
