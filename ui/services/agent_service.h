#pragma once
// Agent sessions off the GUI thread (issue 16): a kwb::agent::Session runs on the service's
// BackgroundJobs thread with a GPU pool of its own (as the tuner's), keeping its state in the
// workspace file through its own connection. Its events (answers streaming in, evaluations,
// DCP decisions, rewards) are queued and handed to the GUI thread in batches: one delivery
// posted however many queue up, so eight candidates streaming at once cost one update per batch.
// pause() and stop() work at any moment; a paused or crashed session resumes from the workspace.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include <QList>
#include <QObject>
#include <QString>

#include "core/agent/session.h"
#include "ui/models/session_candidates_model.h"
#include "ui/services/background_jobs.h"

namespace kwb::ui {

struct AgentRequest {
  QString workspaceFile;             // the workbench's workspace
  QString taskFolder;                // a new session's task
  QString provider;                  // a configured provider's name (or a base URL)
  QString model;                     // empty: the provider's
  QString apiKey;                    // empty: from the provider's environment variable
  QString starter, starterName;      // the kernel to start from (the editor's); empty: the task's starter
  kwb::agent::SessionSettings settings;
  QString resumeId;                  // non-empty: resume this session instead
  bool useDevice = true;             // false: compile only
};

// The provider a request names (a configured provider's name, or a base URL) and its key
// (`apiKey`, else the provider's environment variable); nullopt with `problem` when unknown.
// A provider as shown: a name, or a base URL without its credentials (issue 45, 2).
QString shownProvider(const QString &provider);

std::optional<std::pair<kwb::llm::ProviderConfig, std::string>> resolveAgentProvider(const QString &provider,
                                                                                    const QString &apiKey,
                                                                                    QString &problem);


class AgentService : public QObject {
  Q_OBJECT

 public:
  explicit AgentService(QObject *parent = nullptr);
  // Pauses a session in progress and waits for it to end.
  ~AgentService() override;

  // Starts (or resumes) a session; false, with error() emitted, while one runs or when the
  // provider is unknown.
  bool start(const AgentRequest &request);
  void pause();
  void stop();
  bool isRunning() const { return running_; }
  QString sessionId() const { return sessionId_; }
  // Where a session's GPU workers run (Settings ▸ GPU ▸ Workers); taken up by the next start.
  // Where its sessions' workers run: one launcher, or several hosts in one pool.
  void setWorkers(const std::vector<kwb::worker::WorkerLauncher> &launchers) { workers_ = launchers; }

  // For tests and the overhead measure: the longest time the GUI thread spent in one delivery.
  double longestDeliveryMs() const { return longestDeliveryMs_; }

 signals:
  void started(const QString &sessionId, const QString &title, const kwb::agent::SessionSettings &settings);
  void eventsArrived(const QList<kwb::ui::AgentEventRow> &events);
  void finished(const QString &sessionId, const QString &state, const QString &reason);
  void error(const QString &message);

 private:
  struct Shared {
    std::mutex mutex;
    QList<AgentEventRow> queued;
    bool posted = false;
    kwb::agent::Session *session = nullptr;  // under mutex while one runs
    bool pauseRequested = false, stopRequested = false;
  };
  void deliver();

  BackgroundJobs *jobs_ = nullptr;
  std::shared_ptr<Shared> shared_;
  bool running_ = false;
  QString sessionId_;
  std::vector<kwb::worker::WorkerLauncher> workers_;
  double longestDeliveryMs_ = 0;
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::AgentEventRow)
