#pragma once
// The work that asks an LLM, for the window: Optimize (the session settings dialog, or without a
// model the choice between setting one up and the autotuner), agent sessions started, resumed and
// reported, and the Library's LLM and GPU jobs (build the bundled lineage, de-optimize the editor's
// kernel after saying what it costs, try a skill card on it). It holds the session's last choices
// (provider, model, settings) and wires the Session, Lineage and Skills views to the services.
#include <QObject>
#include <QString>

#include "core/agent/session_store.h"

class QWidget;

namespace kwb::ui {

class AgentService;
class ExperiencePanel;
class LineagePanel;
class LogPanel;
class SessionPanel;
class SkillLibraryService;
class SkillsPanel;
class WorkArea;
class WorkbenchShell;

struct AgentParts {
  AgentService *agent = nullptr;
  SessionPanel *session = nullptr;
  SkillLibraryService *skills = nullptr;
  SkillsPanel *skillsPanel = nullptr;
  LineagePanel *lineage = nullptr;
  ExperiencePanel *experience = nullptr;
  WorkArea *workArea = nullptr;
  LogPanel *log = nullptr;
};

class AgentController : public QObject {
  Q_OBJECT

 public:
  // `window`: the parent of the dialogs it opens.
  AgentController(const AgentParts &parts, WorkbenchShell *shell, QWidget *window);

  bool optimize();
  bool startSession(const QString &provider, const QString &model);
  bool buildLineage();
  bool deoptimize(bool confirmed);
  bool tryCard(const QString &id);
  bool canStart();
  // The provider and model the Library's jobs use: the last session's, else the saved choice.
  QString provider() const;
  QString model() const;

 private:
  void wire();

  AgentParts p_;
  WorkbenchShell *shell_;
  QWidget *window_;
  kwb::agent::SessionSettings settings_;  // the last session started here
  QString provider_, model_;              // asked for with it (model empty: the provider's default)
};

}  // namespace kwb::ui
