#include "ui/services/agent_service.h"

#include "core/text/url_credentials.h"

#include <QElapsedTimer>
#include <QMetaObject>
#include <QPointer>

#include "core/memory/case_sources.h"
#include "core/lineage/skill_library.h"
#include "core/llm/provider_config.h"
#include "core/task/manifest_parser.h"

namespace kwb::ui {

QString shownProvider(const QString &provider) { return QString::fromStdString(kwb::redactUrlsIn(provider.toStdString())); }

std::optional<std::pair<kwb::llm::ProviderConfig, std::string>> resolveAgentProvider(const QString &provider,
                                                                                    const QString &apiKey,
                                                                                    QString &problem) {
  const std::string target = provider.toStdString();
  kwb::llm::ProviderConfig config;
  if (provider.startsWith(QLatin1String("http://")) || provider.startsWith(QLatin1String("https://"))) {
    config = kwb::llm::adHocProvider(target);
  } else {
    std::vector<kwb::llm::ProviderConfig> providers;
    try {
      providers = kwb::llm::loadProviders();
    } catch (const std::exception &e) {
      problem = QString::fromStdString(e.what());
      return std::nullopt;
    }
    const auto it = std::find_if(providers.begin(), providers.end(), [&](const auto &p) { return p.name == target; });
    if (it == providers.end()) {
      problem = QObject::tr("no LLM provider named '%1' (Settings ▸ LLM providers)").arg(provider);
      return std::nullopt;
    }
    config = *it;
  }
  std::string key = apiKey.isEmpty() ? kwb::llm::keyFromEnvironment(config) : apiKey.toStdString();
  return std::make_pair(config, key);
}


AgentService::AgentService(QObject *parent)
    : QObject(parent), jobs_(new BackgroundJobs(QStringLiteral("agent"), this)), shared_(std::make_shared<Shared>()) {
  qRegisterMetaType<kwb::ui::AgentEventRow>();
  qRegisterMetaType<QList<kwb::ui::AgentEventRow>>();
}

AgentService::~AgentService() {
  pause();
  delete jobs_;  // waits for the session to end
}

void AgentService::pause() {
  std::lock_guard lock(shared_->mutex);
  shared_->pauseRequested = true;
  if (shared_->session) shared_->session->pause();
}

void AgentService::stop() {
  std::lock_guard lock(shared_->mutex);
  shared_->stopRequested = true;
  if (shared_->session) shared_->session->stop();
}

void AgentService::deliver() {
  QElapsedTimer timer;
  timer.start();
  QList<AgentEventRow> rows;
  {
    std::lock_guard lock(shared_->mutex);
    rows.swap(shared_->queued);
    shared_->posted = false;
  }
  if (!rows.isEmpty()) emit eventsArrived(rows);
  longestDeliveryMs_ = std::max(longestDeliveryMs_, static_cast<double>(timer.nsecsElapsed()) / 1e6);
}

bool AgentService::start(const AgentRequest &request) {
  if (running_) {
    emit error(tr("an agent session is already running"));
    return false;
  }
  QString problem;
  const auto provider = resolveAgentProvider(request.provider, request.apiKey, problem);
  if (!provider) {
    emit error(problem);
    return false;
  }
  running_ = true;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->pauseRequested = shared_->stopRequested = false;
    shared_->queued.clear();
  }
  auto shared = shared_;
  QPointer<AgentService> self(this);
  struct Outcome {
    QString id, state, reason;
  };
  jobs_->run(
      this, QString(),  // of no kind: never dropped, so its finished() always arrives
      [self, shared, request, provider = *provider, workers = workers_](const JobTicket &) {
        Outcome out;
        QElapsedTimer clock;
        clock.start();
        try {
          auto store = std::make_shared<kwb::agent::SessionStore>(request.workspaceFile.toStdString());
          std::string id = request.resumeId.toStdString();
          if (id.empty()) {
            const kwb::Task task = kwb::loadTask(request.taskFolder.toStdString());
            auto settings = request.settings;
            settings.useDevice = request.useDevice;
            id = kwb::agent::Session::create(*store, task, settings, request.provider.toStdString(),
                                             request.model.isEmpty() ? provider.first.model : request.model.toStdString(),
                                             request.starter.toStdString(), request.starterName.toStdString())
                     .id;
          }
          out.id = QString::fromStdString(id);
          const auto record = store->session(id);
          if (!record) throw std::runtime_error("no session " + id);
          kwb::agent::SessionServices services;
          kwb::useWorkers(services.evaluator, workers);
          services.store = store;
          services.provider = provider.first;
          services.apiKey = provider.second;
          services.skills = kwb::SkillLibrary::openIfPresent();
          try {
            services.memory = kwb::memory::ExperienceStore::open();
          } catch (const std::exception &) {
            services.memory.reset();  // the session runs without experience; recording says why at its end
          }
          if (request.useDevice && record->settings.useDevice) {
            // Every GPU its workers see (through Slurm: the workers it asked for); none: compile only.
            kwb::EvaluatorPoolSettings ps;
            ps.evaluator = services.evaluator;
            // Pause or Stop while it waits for a Slurm allocation: it gives up (compile only).
            ps.cancelled = [shared] {
              std::lock_guard lock(shared->mutex);
              return shared->pauseRequested || shared->stopRequested;
            };
            auto pool = std::make_shared<kwb::EvaluatorPool>(ps);
            if (!pool->devices().empty()) services.pool = std::move(pool);
            else services.noDevice = pool->problem().empty() ? "no GPU in the evaluation pool" : pool->problem();
          }
          const QString title = QStringLiteral("%1 · %2%3")
                                    .arg(QString::fromStdString(record->taskName), QString::fromStdString(record->provider),
                                         record->model.empty() ? QString() : QStringLiteral(" (%1)").arg(QString::fromStdString(record->model)));
          if (self) {
            QMetaObject::invokeMethod(
                self.data(),
                [self, id = out.id, title, settings = record->settings] {
                  if (!self) return;
                  self->sessionId_ = id;
                  emit self->started(id, title, settings);
                },
                Qt::QueuedConnection);
          }
          kwb::agent::Session session(services, id, [&](const kwb::agent::SessionEvent &e) {
            bool post = false;
            {
              std::lock_guard lock(shared->mutex);
              shared->queued.append(AgentEventRow{e, static_cast<double>(clock.nsecsElapsed()) / 1e9});
              post = !shared->posted;
              shared->posted = true;
            }
            if (post && self)
              QMetaObject::invokeMethod(self.data(), [self] { if (self) self->deliver(); }, Qt::QueuedConnection);
          });
          {
            std::lock_guard lock(shared->mutex);
            shared->session = &session;
            if (shared->stopRequested) session.stop();
            else if (shared->pauseRequested) session.pause();
          }
          const auto state = session.run();
          {
            std::lock_guard lock(shared->mutex);
            shared->session = nullptr;
          }
          out.state = QString::fromUtf8(kwb::agent::toString(state));
          out.reason = QString::fromStdString(store->session(id)->stopReason);
          // Every candidate evaluated is experience: a Case in the user's memory.
          try {
            auto memory = kwb::memory::ExperienceStore::open();
            kwb::memory::syncWorkspace(*memory, store->workspace());
          } catch (const std::exception &e) {
            out.reason += QStringLiteral(" (not recorded in the experience memory: %1)").arg(QString::fromStdString(e.what()));
          }
        } catch (const std::exception &e) {
          std::lock_guard lock(shared->mutex);
          shared->session = nullptr;
          out.state = QStringLiteral("failed");
          out.reason = QString::fromStdString(e.what());
        }
        return out;
      },
      [this](const Outcome &out) {
        deliver();  // what is still queued first
        running_ = false;
        emit finished(out.id, out.state, out.reason);
      });
  return true;
}

}  // namespace kwb::ui
