#include "ui/window/agent_controller.h"

#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QMetaObject>
#include <QPushButton>

#include "core/llm/provider_config.h"
#include "core/text/url_credentials.h"
#include "ui/services/agent_service.h"
#include "ui/services/gpu_gate.h"
#include "ui/services/skill_library_service.h"
#include "ui/settings/app_settings.h"
#include "ui/views/cuda_editor.h"
#include "ui/views/diff_dialog.h"
#include "ui/views/experience_panel.h"
#include "ui/views/lineage_panel.h"
#include "ui/views/log_panel.h"
#include "ui/views/session_panel.h"
#include "ui/views/session_settings_dialog.h"
#include "ui/views/skills_panel.h"
#include "ui/views/work_area.h"
#include "ui/window/workbench_shell.h"

namespace kwb::ui {

AgentController::AgentController(const AgentParts &parts, WorkbenchShell *shell, QWidget *window)
    : QObject(window), p_(parts), shell_(shell), window_(window) {
  // The Optimize dialog's last choices; before any, the LLM settings' dollar budget.
  if (const auto saved = settings::agentSessionSettings()) {
    settings_ = *saved;
    model_ = settings::agentModel();
  } else {
    settings_.dollars = settings::llmBudgetDollars();
  }
  wire();
}

QString AgentController::provider() const { return provider_.isEmpty() ? settings::agentProvider() : provider_; }

QString AgentController::model() const { return model_.isEmpty() ? settings::agentModel() : model_; }

bool AgentController::optimize() {
  // With an LLM configured, Optimize runs an agent session with the first provider; else the
  // built-in autotuner, and says why.
  std::vector<kwb::llm::ProviderConfig> providers;
  QString problem;
  try {
    providers = kwb::llm::loadProviders();
  } catch (const std::exception &e) {
    problem = QString::fromStdString(e.what());
  }
  if (!providers.empty()) {
    if (!canStart()) return false;
    // The session's settings first (G, K, DCP, budgets...), prefilled with the last ones.
    QStringList names;
    for (const auto &p : providers) names << QString::fromStdString(p.name);
    const QString preferred = provider();
    auto *dialog = new SessionSettingsDialog(names, preferred, model_, settings_, window_);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
      settings_ = dialog->settings();
      model_ = dialog->model();
      if (shell_->writesSettings()) {
        settings::setAgentSessionSettings(settings_);
        settings::setAgentProvider(dialog->provider(), dialog->model());
      }
      startSession(dialog->provider(), dialog->model());
    });
    dialog->open();
    return true;
  }
  // No model to ask: the user chooses between setting one up and the built-in autotuner.
  if (!shell_->gate(GpuAction::Tune).allowed) return false;
  auto *box = new QMessageBox(
      QMessageBox::Question, tr("Optimize without an LLM"),
      problem.isEmpty()
          ? tr("No LLM is set up. Optimize asks a model for faster kernels, turn by turn; without one, the built-in "
               "autotuner searches the task's tunable parameters instead.")
          : tr("The LLM providers cannot be read (%1). Without a model, the built-in autotuner searches the task's "
               "tunable parameters instead.")
                .arg(problem),
      QMessageBox::Cancel, window_);
  box->setObjectName(QStringLiteral("optimizeWithoutLlm"));
  QPushButton *setUp = box->addButton(tr("Set Up an LLM…"), QMessageBox::ActionRole);
  setUp->setObjectName(QStringLiteral("setUpLlmButton"));
  QPushButton *tuner = box->addButton(tr("Run the Autotuner"), QMessageBox::AcceptRole);
  tuner->setObjectName(QStringLiteral("runTunerButton"));
  box->setDefaultButton(setUp);
  box->setWindowModality(Qt::WindowModal);
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::buttonClicked, this, [this, setUp, tuner](QAbstractButton *clicked) {
    if (clicked == setUp) {
      QMetaObject::invokeMethod(this, [this] { shell_->showSettingsPage(tr("LLM providers")); }, Qt::QueuedConnection);
    } else if (clicked == tuner && shell_->tuneKernel()) {
      const QString line = tr("No LLM set up: Optimize ran the built-in autotuner (Settings ▸ LLM providers adds a model)");
      p_.log->info(line);
      shell_->say(line);
    }
  });
  box->open();
  return true;
}

bool AgentController::tryCard(const QString &id) {
  CudaEditor *editor = shell_->kernelEditor();
  if (shell_->taskFolder().isEmpty() || !editor) {
    p_.skillsPanel->showMessage(tr("Open a task first: the card is tried on the kernel in the editor."), true);
    return false;
  }
  const QString provider = this->provider();
  if (provider.isEmpty()) {
    p_.skillsPanel->showMessage(tr("No model chosen: run Optimize once with an LLM provider (Settings ▸ LLM providers); "
                                 "the card is tried with the same one."),
                              true);
    return false;
  }
  if (const GpuVerdict v = shell_->gate(GpuAction::TryCard); !v.allowed) {
    p_.skillsPanel->showMessage(v.why, true);
    return false;
  }
  CardTryRequest request;
  request.id = id;
  request.taskFolder = shell_->taskFolder();
  request.kernel = editor->text();
  request.kernelName = editor->fileName();
  request.provider = provider;
  request.model = model();
  request.useDevice = shell_->useDevice();
  if (!p_.skills->tryCard(request)) return false;
  p_.skillsPanel->showMessage(tr("Trying %1 on %2 with %3…").arg(id, editor->fileName(), shownProvider(provider)));
  shell_->actionsChanged();
  return true;
}

bool AgentController::buildLineage() {
  if (shell_->taskFolder().isEmpty()) {
    p_.lineage->showBuildMessage(tr("Open a task first: its bundled lineage is built."));
    return false;
  }
  if (!QFileInfo::exists(QDir(shell_->taskFolder()).filePath(QStringLiteral("lineage/lineage.toml")))) {
    p_.lineage->showBuildMessage(
        tr("%1 has no bundled lineage (lineage/lineage.toml): De-optimize current kernel makes one from an expert kernel.")
            .arg(QFileInfo(shell_->taskFolder()).fileName()));
    return false;
  }
  if (const GpuVerdict v = shell_->gate(GpuAction::BuildLineage); !v.allowed) {
    p_.lineage->showBuildMessage(v.why);
    return false;
  }
  LineageBuildRequest request;
  request.taskFolder = shell_->taskFolder();
  if (!p_.skills->buildLineage(request)) {
    p_.lineage->showBuildMessage(tr("A card try or another build is running: wait for it, or cancel it."));
    return false;
  }
  p_.lineage->buildStarted(tr("Building the lineage of %1…").arg(QFileInfo(shell_->taskFolder()).fileName()));
  shell_->actionsChanged();
  return true;
}

bool AgentController::deoptimize(bool confirmed) {
  CudaEditor *editor = shell_->kernelEditor();
  if (shell_->taskFolder().isEmpty() || !editor) {
    p_.lineage->showBuildMessage(tr("Open a task and its expert kernel first: the kernel in the editor is de-optimized."));
    return false;
  }
  const QString provider = this->provider();
  if (provider.isEmpty()) {
    p_.lineage->showBuildMessage(tr("No model chosen: run Optimize once with an LLM provider (Settings ▸ LLM "
                                       "providers); the kernel is de-optimized with the same one."));
    return false;
  }
  QString problem;
  const auto resolved = resolveAgentProvider(provider, QString(), problem);
  if (!resolved) {
    p_.lineage->showBuildMessage(problem);
    return false;
  }
  const GpuVerdict v = shell_->gate(GpuAction::Deoptimize);
  if (!v.allowed) {
    p_.lineage->showBuildMessage(v.why);
    return false;
  }
  const QString model = this->model();
  if (!confirmed) {
    // Many requests: what it costs is said before any is sent.
    const auto &config = resolved->first;
    const int requests = LineageBuildRequest{}.maxSteps;
    const QString price = !config.price ? tr("%1 has no prices set: the cost is not known.").arg(shownProvider(provider))
                          : config.price->inputPerMillion == 0 && config.price->outputPerMillion == 0
                              ? tr("%1 costs nothing per token (a local server).").arg(shownProvider(provider))
                              : tr("At %1's prices ($%2 in, $%3 out per million tokens), each request costs about $%4.")
                                    .arg(shownProvider(provider))
                                    .arg(config.price->inputPerMillion)
                                    .arg(config.price->outputPerMillion)
                                    .arg((editor->text().size() / 4.0 + 1500) * config.price->inputPerMillion / 1e6 +
                                             (editor->text().size() / 4.0 + 500) * config.price->outputPerMillion / 1e6,
                                         0, 'f', 4);
    auto *box = new QMessageBox(
        QMessageBox::Question, tr("De-optimize %1").arg(editor->fileName()),
        tr("The model takes one technique at a time out of %1 and each version is compiled and checked%2: up to %3 "
           "requests to %4 (%5), about %6 tokens each way.\n\n%7")
            .arg(editor->fileName(), v.why.isEmpty() ? tr(" and timed (kept only when slower)") : tr(" (no GPU: not timed)"))
            .arg(requests)
            .arg(shownProvider(provider), model.isEmpty() ? QString::fromStdString(config.model) : model)
            .arg(editor->text().size() / 4)
            .arg(price),
        QMessageBox::Cancel, window_);
    box->setObjectName(QStringLiteral("deoptimizeConfirmation"));
    box->addButton(tr("De-optimize"), QMessageBox::AcceptRole);
    box->setDefaultButton(QMessageBox::Cancel);
    box->setWindowModality(Qt::WindowModal);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::accepted, this, [this] { deoptimize(true); });
    box->open();
    return true;
  }
  LineageBuildRequest request;
  request.taskFolder = shell_->taskFolder();
  request.expert = editor->text();
  request.expertName = editor->fileName();
  request.provider = provider;
  request.model = model;
  if (!p_.skills->buildLineage(request)) {
    p_.lineage->showBuildMessage(tr("A card try or another build is running: wait for it, or cancel it."));
    return false;
  }
  p_.lineage->buildStarted(tr("De-optimizing %1 with %2…").arg(editor->fileName(), shownProvider(provider)));
  shell_->actionsChanged();
  return true;
}

bool AgentController::startSession(const QString &provider, const QString &model) {
  if (!canStart()) return false;
  CudaEditor *editor = shell_->kernelEditor();
  AgentRequest request;
  request.workspaceFile = shell_->workspaceFile();
  request.taskFolder = shell_->taskFolder();
  request.provider = provider;
  request.model = model;
  request.useDevice = shell_->useDevice();
  request.settings = settings_;
  request.starter = editor->text();
  request.starterName = editor->fileName();
  settings_ = request.settings;
  provider_ = provider;
  if (!p_.agent->start(request)) return false;
  p_.workArea->reveal(WorkArea::Page::Session);
  p_.log->info(tr("Optimizing %1 on task %2 with %3: G=%4, K=%5, %6 group(s)")
                 .arg(editor->fileName(), shell_->taskName(), shownProvider(provider))
                 .arg(request.settings.candidates)
                 .arg(request.settings.dcp.maxTurns)
                 .arg(request.settings.groups));
  shell_->actionsChanged();
  return true;
}

bool AgentController::canStart() {
  return shell_->gate(GpuAction::Optimize).allowed && shell_->kernelEditor();
}

void AgentController::wire() {
  connect(p_.skills, &SkillLibraryService::failed, this,
          [this](const QString &message) { p_.log->error(tr("Skill library: %1").arg(message)); });
  connect(p_.skillsPanel, &SkillsPanel::tryRequested, this, [this](const QString &id) { tryCard(id); });
  p_.skillsPanel->setReviewer(settings::reviewerName());
  connect(p_.skillsPanel, &SkillsPanel::reviewerChanged, this, [this](const QString &name) {
    if (shell_->writesSettings()) settings::setReviewerName(name);
  });
  connect(p_.lineage, &LineagePanel::buildRequested, this, [this] { buildLineage(); });
  connect(p_.lineage, &LineagePanel::deoptimizeRequested, this, [this] { deoptimize(false); });
  connect(p_.skills, &SkillLibraryService::built, this, [this](const QString &name, const QString &summary) {
    p_.log->info(tr("Lineage %1 built: %2").arg(name, summary));
  });
  connect(p_.skills, &SkillLibraryService::tried, this,
          [this](const QString &id, const QString &verdict, const QString &message, const QString &recorded) {
            p_.log->info(tr("Skill card %1 tried: %2: %3 (%4)").arg(id, verdict, message, recorded));
          });
  connect(p_.agent, &AgentService::started, this,
          [this](const QString &id, const QString &title, const kwb::agent::SessionSettings &settings) {
    p_.session->begin(id, title, settings);
    p_.log->info(tr("Agent session %1: %2").arg(id, title));
    shell_->actionsChanged();
  });
  connect(p_.agent, &AgentService::eventsArrived, this, [this](const QList<AgentEventRow> &rows) {
    for (const auto &row : rows) {
      const auto &e = row.event;
      if (e.kind == kwb::agent::SessionEvent::Kind::Dcp || e.kind == kwb::agent::SessionEvent::Kind::GroupDone ||
          e.kind == kwb::agent::SessionEvent::Kind::Baseline || e.kind == kwb::agent::SessionEvent::Kind::Best)
        p_.log->info(tr("Session: %1").arg(QString::fromStdString(e.text)));
    }
  });
  connect(p_.agent, &AgentService::error, this, [this](const QString &message) {
    p_.log->error(tr("Agent session: %1").arg(message));
    shell_->say(message);
  });
  connect(p_.agent, &AgentService::finished, this, [this](const QString &id, const QString &state, const QString &reason) {
    const QString line = tr("Agent session %1 %2%3").arg(id, state, reason.isEmpty() ? QString() : QStringLiteral(": %1").arg(reason));
    if (state == QLatin1String("failed")) p_.log->error(line);
    else p_.log->info(line);
    shell_->say(line);
    shell_->historyChanged();
    shell_->actionsChanged();
    shell_->workEnded();
  });
  connect(p_.session, &SessionPanel::resumeRequested, this, [this](const QString &id) {
    AgentRequest request;
    request.workspaceFile = shell_->workspaceFile();
    request.resumeId = id;
    request.provider = provider_;
    request.useDevice = shell_->useDevice();
    p_.agent->start(request);
    shell_->actionsChanged();
  });
  connect(p_.session, &SessionPanel::caseRequested, this, [this](qint64 id) {
    p_.workArea->reveal(WorkArea::Page::Experience);
    p_.experience->refresh();
    p_.experience->selectCase(id);
  });
  connect(p_.session, &SessionPanel::diffRequested, this,
          [this](const QString &parent, const QString &parentName, const QString &source, const QString &name) {
            auto *dialog = new DiffDialog(parent, parentName, source, name, window_);
            dialog->setAttribute(Qt::WA_DeleteOnClose);
            dialog->show();
          });
  connect(p_.session, &SessionPanel::profileRequested, this, [this](const QString &source, const QString &name) {
    if (p_.agent->isRunning()) {
      p_.log->warning(tr("Profile %1 once the session is paused or finished: a profile now would disturb its timing")
                        .arg(name));
      return;
    }
    if (shell_->openCandidate(source, name)) shell_->profileKernel();  // says why in the log when it cannot
  });
}

}  // namespace kwb::ui
