#include "ui/services/llm_service.h"

#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include <QThreadPool>

namespace kwb::ui {

namespace {

// Its own pool, so a slow server never waits behind (or holds up) the global one. Destroyed at
// exit, when calls in flight have been cancelled and end within a fraction of a second.
Q_GLOBAL_STATIC(QThreadPool, llmPool)

QThreadPool *pool() {
  QThreadPool *p = llmPool();
  if (p->maxThreadCount() < 6) p->setMaxThreadCount(6);
  return p;
}

constexpr std::chrono::milliseconds kTextInterval{50};
constexpr std::size_t kMaxShownText = 4000;  // bytes of a streamed answer kept for display

}  // namespace

// How work on the pool reaches the service: the service clears `receiver` in its destructor,
// under the mutex, so a post either lands before that (and Qt drops it with the object) or sees
// no receiver at all.
struct LlmService::Channel {
  std::mutex mutex;
  LlmService *receiver = nullptr;

  void post(std::function<void(LlmService *)> fn) {
    std::lock_guard lock(mutex);
    if (!receiver) return;
    LlmService *to = receiver;
    QMetaObject::invokeMethod(
        to, [to, fn = std::move(fn)] { fn(to); }, Qt::QueuedConnection);
  }
};

// One call in flight.
struct LlmService::Call {
  kwb::llm::CancelToken cancel;
  std::mutex mutex;
  std::string text;  // the answer so far (its first kMaxShownText bytes)
  bool posted = false;
  std::chrono::steady_clock::time_point lastPost{};
};

LlmService::LlmService(QObject *parent) : QObject(parent), channel_(std::make_shared<Channel>()) {
  qRegisterMetaType<kwb::ui::ConnectionTest>();
  qRegisterMetaType<kwb::llm::DiscoveredServer>();
  qRegisterMetaType<QList<kwb::llm::DiscoveredServer>>();
  channel_->receiver = this;
}

LlmService::~LlmService() {
  {
    std::lock_guard lock(channel_->mutex);
    channel_->receiver = nullptr;
  }
  if (listCall_) listCall_->cancel.cancel();
  if (testCall_) testCall_->cancel.cancel();
}

void LlmService::setDiscoveryTargets(const QString &host,
                                     const std::vector<kwb::llm::LocalServerKind> &kinds) {
  discoveryHost_ = host;
  discoveryKinds_ = kinds;
}

void LlmService::listModels(const kwb::llm::ProviderConfig &config, const QString &key) {
  if (listCall_) listCall_->cancel.cancel();
  auto call = std::make_shared<Call>();
  listCall_ = call;
  listing_ = true;
  pool()->start([channel = channel_, call, config, key = key.toStdString()] {
    kwb::llm::ModelsResult result;
    try {
      kwb::llm::Provider provider(config, key);
      result = provider.models(&call->cancel);
    } catch (const std::exception &e) {
      result.error = e.what();
    }
    if (call->cancel.cancelled() && result.error.empty()) result.error = "cancelled";
    channel->post([call, result](LlmService *self) {
      if (self->listCall_ != call) return;  // a newer list was asked for
      self->listCall_.reset();
      self->listing_ = false;
      QStringList models;
      for (const auto &m : result.models) models.append(QString::fromStdString(m));
      emit self->modelsListed(models, QString::fromStdString(result.error), result.seconds);
    });
  });
}

void LlmService::testConnection(const kwb::llm::ProviderConfig &config, const QString &key,
                                const QString &model) {
  if (testCall_) testCall_->cancel.cancel();
  auto call = std::make_shared<Call>();
  testCall_ = call;
  testing_ = true;

  kwb::llm::ChatRequest request;
  request.model = model.isEmpty() ? config.model : model.toStdString();
  request.messages.push_back({"user", kTestPrompt, {}, {}});
  request.maxTokens = kTestMaxTokens;
  request.stream = true;

  pool()->start([channel = channel_, call, config, key = key.toStdString(), request] {
    auto onDelta = [&channel, &call](const kwb::llm::StreamDelta &delta) {
      if (delta.kind != kwb::llm::StreamDelta::Kind::Text || delta.text.empty()) return;
      std::lock_guard lock(call->mutex);
      if (call->text.size() < kMaxShownText)
        call->text += delta.text.substr(0, kMaxShownText - call->text.size());
      const auto now = std::chrono::steady_clock::now();
      if (call->posted || now - call->lastPost < kTextInterval) return;
      call->posted = true;
      call->lastPost = now;
      channel->post([call](LlmService *self) {
        QString text;
        {
          std::lock_guard lock(call->mutex);
          text = QString::fromStdString(call->text);
          call->posted = false;
        }
        if (self->testCall_ == call) emit self->testText(text);
      });
    };

    ConnectionTest test;
    test.provider = QString::fromStdString(config.name);
    test.model = QString::fromStdString(request.model);
    try {
      kwb::llm::Provider provider(config, key);
      const kwb::llm::ChatResult result = provider.chat(request, onDelta, &call->cancel);
      test.ok = result.ok();
      test.cancelled = result.cancelled || call->cancel.cancelled();
      test.error = QString::fromStdString(result.error);
      if (test.cancelled && test.error.isEmpty()) test.error = tr("cancelled");
      if (!test.ok && test.error.isEmpty())
        test.error = tr("the answer ended before its end marker (the stream was cut)");
      test.status = result.status;
      test.seconds = result.seconds;
      test.secondsToFirstToken = result.secondsToFirstToken;
      std::string text = result.response.text;
      if (text.empty() && !result.response.reasoning.empty()) text = result.response.reasoning;
      test.text = QString::fromStdString(text.substr(0, kMaxShownText));
      test.inputTokens = result.response.usage.inputTokens;
      test.outputTokens = result.response.usage.outputTokens;
      test.usageReported = result.response.usage.reported;
      test.note = QString::fromStdString(result.note);
      if (test.ok) {
        const kwb::llm::ServerLimits limits = kwb::llm::readServerLimits(config, key, std::string());
        test.contextWindow = limits.contextWindow > 0 ? limits.contextWindow : provider.contextWindow();
        test.serverSlots = limits.concurrent;
        test.limitsFrom = limits.contextWindow > 0 || limits.concurrent > 0 ? QString::fromStdString(limits.from)
                          : provider.contextWindow() > 0 ? tr("the configured value") : QString();
      }
    } catch (const std::exception &e) {
      test.error = QString::fromStdString(e.what());
    }
    channel->post([call, test](LlmService *self) {
      if (self->testCall_ != call) return;  // a newer test replaced this one
      self->testCall_.reset();
      self->testing_ = false;
      emit self->testFinished(test);
    });
  });
}

void LlmService::cancel() {
  if (testCall_) testCall_->cancel.cancel();
}

void LlmService::discover() {
  const quint64 id = ++discoverId_;
  discovering_ = true;
  pool()->start([channel = channel_, id, host = discoveryHost_.toStdString(), kinds = discoveryKinds_] {
    QList<kwb::llm::DiscoveredServer> found;
    try {
      for (auto &server : kwb::llm::discoverLocalServers(host, kinds)) found.append(std::move(server));
    } catch (const std::exception &) {
      // Nothing found is the honest answer: discovery only offers shortcuts.
    }
    channel->post([id, found](LlmService *self) {
      if (self->discoverId_ != id) return;
      self->discovering_ = false;
      emit self->serversFound(found);
    });
  });
}

}  // namespace kwb::ui
