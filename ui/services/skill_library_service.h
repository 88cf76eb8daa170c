#pragma once
// The skill library (core/lineage/skill_library.h) behind a queue: its lineages and cards read,
// and reviews written, on a thread of its own; the answers come back as signals on the GUI
// thread. The views never touch SQLite.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <QObject>
#include <QString>

#include "core/lineage/skill_library.h"
#include "core/worker/worker_launcher.h"
#include "ui/services/background_jobs.h"

namespace kwb::ui {

// Everything the Lineage and Skills views show, read in one go.
struct SkillLibrarySnapshot {
  QString path;
  std::vector<kwb::LineageRecord> lineages;  // with their steps and sources
  std::vector<kwb::SkillCard> cards;         // by id
  std::map<std::string, std::vector<kwb::CardAuditEntry>> audits;
};

// "Try on current kernel": a gated application of a card (core/agent/card_application.h) to the
// editor's kernel, by the provider the Optimize action uses.
struct CardTryRequest {
  QString id;                       // the card
  QString taskFolder;
  QString kernel, kernelName;       // the editor's text and file name
  QString provider, model, apiKey;  // as AgentRequest's
  bool useDevice = true;            // false: compile only (nothing is admitted)
  double timingCapSeconds = 0.5;
};

// "Build lineage": the task's bundled lineage, a folder of versions, or (with `expert`) the
// versions a model gives by taking one technique at a time out of an expert kernel
// (core/agent/deoptimize.h, written forward to the library's deoptimized/ folder after every
// answer), gated, profiled and stored with their cards (core/lineage/lineage_build.h).
struct LineageBuildRequest {
  QString taskFolder;
  QString versionsFolder;           // empty: the task's bundled lineage (or the de-optimized versions)
  QString expert, expertName;       // an expert kernel's text and file name: de-optimize it first
  QString provider, model, apiKey;  // the model that de-optimizes, as AgentRequest's
  QString name;                     // empty: the task's name, TASK@FOLDER or TASK@deopt-EXPERT
  double timingCapSeconds = 0.5;
  bool profile = true;
  int maxSteps = 15;                // de-optimization requests at most
};

class SkillLibraryService : public QObject {
  Q_OBJECT

 public:
  // path empty: SkillLibrary::defaultPath() ($KWB_LIBRARY, else the user's data folder).
  explicit SkillLibraryService(const QString &path = {}, QObject *parent = nullptr);
  ~SkillLibraryService() override;

  QString path() const { return path_; }
  void setPath(const QString &path);  // then refresh()

  // Reads the library; answers with loaded() or failed().
  void refresh();
  // A review: the card's new status, who and why. Answers with reviewed() (and a refresh) or failed().
  void review(const QString &id, kwb::CardStatus status, const QString &who, const QString &why);
  // An edit: the card's SKILL.md text as the reviewer left it, stored when it reads back as a
  // card with the same id. Answers with edited() (and a refresh), editRefused(problems) or failed().
  void edit(const QString &id, const QString &skillMarkdown, const QString &who);

  // SKILL.md files in (a file, or a folder of them; `replace`: known cards take the files' text,
  // keeping status, evidence and log) and out (every card as TO/<id>/SKILL.md), as kwb skills
  // import / export do. Answer with imported() or exported() (and a refresh), or failed().
  void importFrom(const QString &from, bool replace, const QString &who);
  void exportTo(const QString &to);

  // A gated application, on a thread of its own (reads and reviews go on meanwhile). Answers with
  // tryProgress() lines, then tried() (and a refresh) or failed(). One at a time: false while one runs.
  bool tryCard(const CardTryRequest &request);
  // Stops the try in progress: its request and evaluation are cancelled; tried() says "not-gated".
  void cancelTry();
  bool isTrying() const { return trying_; }

  // A lineage build, on the same thread as a try (one of them at a time: false while either
  // runs, or when the de-optimizing provider is unknown, with failed()). Answers with
  // buildProgress() as it goes, then built() (and a refresh) or failed(); nothing is stored when
  // it is cancelled or no GPU ran the steps.
  bool buildLineage(const LineageBuildRequest &request);
  // Where the tries', de-optimizations' and builds' GPU workers run (Settings ▸ GPU ▸ Workers);
  // taken up by the next one.
  // Where the builds' and tries' workers run: one launcher, or several hosts in one pool.
  void setWorkers(const std::vector<kwb::worker::WorkerLauncher> &launchers) { workers_ = launchers; }
  void cancelBuild();
  bool isBuilding() const { return building_; }

  bool isBusy() const { return pending_ > 0 || reading_ || trying_ || building_; }
  const SkillLibrarySnapshot &snapshot() const { return snapshot_; }

 signals:
  void loaded();
  void reviewed(const QString &id, const QString &status);
  void edited(const QString &id);
  void editRefused(const QString &id, const QStringList &problems);
  // problems: why nothing was imported (known: how many of the cards the library holds already).
  void imported(const QString &from, const QString &summary, const QStringList &problems, int known);
  void exported(const QString &summary);
  void failed(const QString &message);
  void tryProgress(const QString &line);
  // verdict: core/agent/card_application.h's word ("success", "no-effect", "compile-error", ...);
  // recorded: what the library now holds ("evidence added; the card is now admitted").
  void tried(const QString &id, const QString &verdict, const QString &message, const QString &recorded);
  // done of total steps of the current stage (total 0: not counted).
  void buildProgress(const QString &line, int done, int total);
  void built(const QString &lineage, const QString &summary);
  void idle();

 private:
  template <typename Work, typename Done>
  void post(const QString &kind, Work work, Done done);
  void finish();

  struct Control;
  QString path_;
  std::vector<kwb::worker::WorkerLauncher> workers_;
  BackgroundJobs *jobs_ = nullptr;
  BackgroundJobs *tryJobs_ = nullptr;  // tries and builds
  std::shared_ptr<Control> try_, build_;
  bool trying_ = false, building_ = false;
  SkillLibrarySnapshot snapshot_;
  int pending_ = 0;     // writes queued or running
  bool reading_ = false;  // a read queued or running
};

}  // namespace kwb::ui
