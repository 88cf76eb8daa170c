#include "ui/services/skill_library_service.h"

#include "core/lineage/skill_transfer.h"
#include "ui/filesystem_path.h"

#include <QDateTime>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QStringList>

#include <mutex>

#include "core/agent/card_application.h"
#include "core/agent/deoptimize.h"
#include "core/eval/evaluator.h"
#include "core/lineage/lineage_build.h"
#include "core/lineage/lineage_builder.h"
#include "core/lineage/skill_markdown.h"
#include "core/memory/case_sources.h"
#include "core/task/source_file.h"
#include "core/task/manifest_parser.h"
#include "ui/services/agent_service.h"

namespace kwb::ui {

namespace {

std::filesystem::path libraryPath(const QString &path) {
  return path.isEmpty() ? kwb::SkillLibrary::defaultPath() : std::filesystem::path(path.toStdString());
}

// What a job answers: a snapshot, or why there is none; for an edit, the problems of the text.
struct Answer {
  std::optional<SkillLibrarySnapshot> snapshot;
  QString error;
  QStringList problems;
  QString summary;  // an import's or export's outcome, in words
  int known = 0;    // an import: cards the library holds already
};

SkillLibrarySnapshot read(kwb::SkillLibrary &library) {
  SkillLibrarySnapshot s;
  s.path = QString::fromStdString(library.path().string());
  for (const auto &l : library.lineages())
    if (auto full = library.lineage(l.name, true)) s.lineages.push_back(std::move(*full));
  s.cards = library.cards();
  for (const auto &c : s.cards) s.audits[c.id] = library.audit(c.id);
  return s;
}

// Runs `change` on the library, then reads it all; any exception is the answer's error.
template <typename Change>
Answer changeAndRead(const QString &path, Change change) {
  Answer a;
  try {
    auto library = kwb::SkillLibrary::open(libraryPath(path));
    change(*library, a);
    if (a.problems.isEmpty()) a.snapshot = read(*library);
  } catch (const std::exception &e) {
    a.error = QString::fromStdString(e.what());
  }
  return a;
}

}  // namespace

// What cancelTry() and cancelBuild() reach from the GUI thread: the request's token, the flag a
// lineage build polls, and the evaluator in use.
struct SkillLibraryService::Control {
  std::mutex mutex;
  kwb::llm::CancelToken cancel;
  std::atomic<bool> stop{false};
  kwb::Evaluator *evaluator = nullptr;
  void reset() {
    cancel.reset();
    stop = false;
  }
  void cancelAll() {
    std::lock_guard lock(mutex);
    cancel.cancel();
    stop = true;
    if (evaluator) evaluator->cancel();
  }
  // The evaluator in use while it lives, and never after.
  struct Registration {
    Control &control;
    Registration(Control &c, kwb::Evaluator *e) : control(c) {
      std::lock_guard lock(control.mutex);
      control.evaluator = e;
    }
    ~Registration() {
      std::lock_guard lock(control.mutex);
      control.evaluator = nullptr;
    }
  };
};

SkillLibraryService::SkillLibraryService(const QString &path, QObject *parent)
    : QObject(parent),
      path_(path),
      jobs_(new BackgroundJobs(QStringLiteral("kwb-skills"), this)),
      tryJobs_(new BackgroundJobs(QStringLiteral("kwb-skill-try"), this)),
      try_(std::make_shared<Control>()),
      build_(std::make_shared<Control>()) {}

SkillLibraryService::~SkillLibraryService() {
  cancelTry();
  cancelBuild();
}

bool SkillLibraryService::tryCard(const CardTryRequest &request) {
  if (trying_ || building_) return false;
  QString problem;
  const auto provider = resolveAgentProvider(request.provider, request.apiKey, problem);
  if (!provider) {
    emit failed(problem);
    return false;
  }
  trying_ = true;
  try_->reset();
  struct Outcome {
    QString verdict, message, recorded, error;
  };
  QPointer<SkillLibraryService> self(this);
  tryJobs_->run(
      this, QString(),
      [self, control = try_, path = path_, request, provider = *provider, workers = workers_](const JobTicket &) {
        Outcome out;
        try {
          const kwb::Task task = kwb::loadTask(request.taskFolder.toStdString());
          auto library = kwb::SkillLibrary::open(libraryPath(path));
          const auto card = library->card(request.id.toStdString());
          if (!card) throw std::runtime_error("no card " + request.id.toStdString() + " in " + library->path().string());
          auto config = provider.first;
          if (!request.model.isEmpty()) config.model = request.model.toStdString();
          kwb::llm::Provider chat(config, provider.second);
          kwb::EvaluatorSettings es;
          es.useDevice = request.useDevice;
          kwb::useWorkers(es, workers);  // one evaluator: the first host
          kwb::Evaluator evaluator(es);
          const Control::Registration registration(*control, &evaluator);
          kwb::agent::CardApplicationServices services;
          services.provider = &chat;
          services.evaluator = &evaluator;
          services.cancel = &control->cancel;
          services.onProgress = [self](const std::string &line) {
            QMetaObject::invokeMethod(self, [self, line = QString::fromStdString(line)] {
              if (self) emit self->tryProgress(line);
            }, Qt::QueuedConnection);
          };
          kwb::agent::CardApplicationSettings settings;
          settings.timingCap = std::chrono::milliseconds(static_cast<long long>(request.timingCapSeconds * 1000));
          const auto a = kwb::agent::applyCard(*card, task, request.kernel.toStdString(),
                                               request.kernelName.toStdString(), services, settings);
          out.verdict = QString::fromStdString(kwb::agent::toString(a.verdict));
          out.message = QString::fromStdString(a.message);
          out.recorded = QString::fromStdString(kwb::agent::recordApplication(*library, a));
        } catch (const std::exception &e) {
          out.error = QString::fromStdString(e.what());
        }
        return out;
      },
      [this, id = request.id](const Outcome &out) {
        trying_ = false;
        if (!out.error.isEmpty()) emit failed(tr("Trying %1: %2").arg(id, out.error));
        else emit tried(id, out.verdict, out.message, out.recorded);
        refresh();
      });
  return true;
}

namespace {

// What a build answers: the stored lineage's name and a line about it, or why there is none.
struct BuildOutcome {
  QString name, summary, error;
};

}  // namespace

bool SkillLibraryService::buildLineage(const LineageBuildRequest &request) {
  if (trying_ || building_) return false;
  std::optional<std::pair<kwb::llm::ProviderConfig, std::string>> provider;
  if (!request.expert.isEmpty()) {
    QString problem;
    provider = resolveAgentProvider(request.provider, request.apiKey, problem);
    if (!provider) {
      emit failed(problem);
      return false;
    }
  }
  building_ = true;
  build_->reset();
  QPointer<SkillLibraryService> self(this);
  auto report = [self](const std::string &line, int done, int total) {
    QMetaObject::invokeMethod(self, [self, line = QString::fromStdString(line), done, total] {
      if (self) emit self->buildProgress(line, done, total);
    }, Qt::QueuedConnection);
  };
  tryJobs_->run(
      this, QString(),
      [control = build_, path = path_, request, provider, report, workers = workers_](const JobTicket &) {
        BuildOutcome out;
        try {
          const kwb::Task task = kwb::loadTask(request.taskFolder.toStdString());
          std::string versions = request.versionsFolder.toStdString(), name = request.name.toStdString();
          std::string origin = versions.empty() ? "bundled" : "versions";
          if (!request.expert.isEmpty()) {
            // The versions are written after every answer: a crash or a cancel keeps them.
            const auto stem = std::filesystem::path(request.expertName.toStdString()).stem().string();
            const auto folder = libraryPath(path).parent_path() / "deoptimized" /
                                (task.name + "-" + stem + "-" +
                                 QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-HHmmss")).toStdString());
            auto config = provider->first;
            if (!request.model.isEmpty()) config.model = request.model.toStdString();
            kwb::llm::Provider chat(config, provider->second);
            kwb::EvaluatorSettings es;
            kwb::useWorkers(es, workers);
            kwb::Evaluator evaluator(es);
            const Control::Registration registration(*control, &evaluator);
            kwb::agent::DeoptimizeServices services;
            services.provider = &chat;
            services.evaluator = &evaluator;
            services.cancel = &control->cancel;
            int answers = 0;
            services.onProgress = [&](const std::string &line) { report(line, answers, request.maxSteps); };
            services.onStep = [&](const kwb::agent::Deoptimization &soFar) { answers = static_cast<int>(soFar.steps.size()); };
            kwb::agent::DeoptimizeSettings settings;
            settings.maxSteps = request.maxSteps;
            settings.timingCap = std::chrono::milliseconds(static_cast<long long>(request.timingCapSeconds * 1000));
            const auto result = kwb::agent::deoptimizeToFolder(task, request.expert.toStdString(),
                                                               request.expertName.toStdString(), folder, services, settings);
            const auto &d = result.deoptimization;
            const std::string where = result.files.empty()
                                          ? std::string("no versions written")
                                          : std::to_string(result.files.size()) + " versions in " + folder.string();
            using Use = kwb::agent::DeoptimizedFolder::Use;
            switch (result.use()) {
              case Use::Cancelled: throw std::runtime_error("cancelled; " + where + " (nothing stored)");
              case Use::TooFewVersions:
                throw std::runtime_error("the de-optimization stopped (" + d.stopReason +
                                         ") with fewer than two versions: no lineage");
              case Use::CompiledOnly:
                throw std::runtime_error("no GPU: the answers were compiled only; " + where +
                                         " (build them on a GPU: kwb lineage build TASK --from-versions FOLDER)");
              case Use::Build: break;
            }
            report("de-optimization stopped: " + d.stopReason + "; " + where, answers, answers);
            versions = folder.string();
            origin = "deoptimization";
            if (name.empty()) name = task.name + "@deopt-" + stem;
          }
          const auto steps = versions.empty() ? kwb::loadLineage(task).steps : kwb::versionsOf(task, versions);
          if (name.empty())
            name = versions.empty() ? task.name : task.name + "@" + std::filesystem::absolute(versions).filename().string();
          const auto sources = kwb::stepSources(steps);
          kwb::EvaluatorPoolSettings ps;
          kwb::useWorkers(ps.evaluator, workers);
          kwb::EvaluatorPool pool(ps, [&](const std::string &line) { report(line, 0, 0); });
          if (pool.devices().empty())
            throw std::runtime_error("no GPU (" + pool.problem() + "): a stored lineage has every step gated and timed on a GPU");
          kwb::LineageBuildOptions options;
          options.name = name;
          options.origin = origin;
          options.evaluation.timingCap = std::chrono::milliseconds(static_cast<long long>(request.timingCapSeconds * 1000));
          options.profile = request.profile;
          const int stages = static_cast<int>(steps.size()) * (request.profile ? 2 : 1);
          int done = 0;
          kwb::LineageBuildProgress progress;
          progress.onMessage = [&](const std::string &line) { report(line, done, stages); };
          progress.onGated = [&](std::size_t i, std::size_t, const kwb::EvaluationResult &r) {
            report("gated " + steps[i].title + ": " + kwb::toString(r.outcome), ++done, stages);
          };
          progress.onProfiled = [&](std::size_t i, std::size_t, const kwb::profile::ProfileResult &p) {
            report("profiled " + steps[i].title + ": " + kwb::toString(p.outcome), ++done, stages);
          };
          auto built = kwb::buildLineage(task, steps, sources, pool, options, progress, &control->stop);
          if (built.cancelled) throw std::runtime_error("cancelled: nothing stored");
          if (!built.onGpu) throw std::runtime_error("no GPU ran the steps: nothing stored");
          auto library = kwb::SkillLibrary::open(libraryPath(path));
          const auto cards = kwb::storeLineage(*library, built.record, task, "workbench lineage build");
          std::string memoryNote;
          try {
            auto memory = kwb::memory::ExperienceStore::open(library->path());
            kwb::memory::recordLineageCases(*memory, built.record, task);
          } catch (const std::exception &e) {
            memoryNote = std::string("; the experience memory: ") + e.what();
          }
          out.name = QString::fromStdString(name);
          out.summary = QStringLiteral("%1 of %2 steps passed the gate on %3; %4 skill cards proposed or merged")
                            .arg(built.record.acceptedSteps())
                            .arg(built.record.steps.size())
                            .arg(QString::fromStdString(built.record.device))
                            .arg(cards.size()) +
                        QString::fromStdString(memoryNote);
        } catch (const std::exception &e) {
          out.error = QString::fromStdString(e.what());
        }
        return out;
      },
      [this, task = QFileInfo(request.taskFolder).fileName()](const BuildOutcome &out) {
        building_ = false;
        if (!out.error.isEmpty()) emit failed(tr("Building the lineage of %1: %2").arg(task, out.error));
        else emit built(out.name, out.summary);
        refresh();
      });
  return true;
}

void SkillLibraryService::cancelTry() {
  if (try_) try_->cancelAll();
}

void SkillLibraryService::cancelBuild() {
  if (build_) build_->cancelAll();
}

void SkillLibraryService::setPath(const QString &path) {
  path_ = path;
  refresh();
}

// Writes (no kind) all answer, in order, and are counted; reads (kind "read") replace the one still
// queued, and only the newest answers: a flag says one is in flight.
template <typename Work, typename Done>
void SkillLibraryService::post(const QString &kind, Work work, Done done) {
  const bool read = !kind.isEmpty();
  if (read) reading_ = true;
  else ++pending_;
  jobs_->run(this, kind, std::move(work), [this, read, done = std::move(done)](Answer a) mutable {
    if (a.snapshot) snapshot_ = std::move(*a.snapshot);
    if (!a.error.isEmpty()) emit failed(a.error);
    done(a);
    if (a.snapshot) emit loaded();
    if (read) reading_ = false;
    else --pending_;
    finish();
  });
}

void SkillLibraryService::finish() {
  if (!isBusy()) emit idle();
}

void SkillLibraryService::refresh() {
  post(QStringLiteral("read"), [path = path_](const JobTicket &) { return changeAndRead(path, [](auto &, auto &) {}); },
       [](const Answer &) {});
}

void SkillLibraryService::review(const QString &id, kwb::CardStatus status, const QString &who, const QString &why) {
  post(QString(),
       [path = path_, id = id.toStdString(), status, who = who.toStdString(), why = why.toStdString()](const JobTicket &) {
         return changeAndRead(path, [&](kwb::SkillLibrary &l, Answer &) { l.setStatus(id, status, who, why); });
       },
       [this, id, status](const Answer &a) {
         if (a.error.isEmpty()) emit reviewed(id, QString::fromStdString(kwb::toString(status)));
       });
}

void SkillLibraryService::importFrom(const QString &from, bool replace, const QString &who) {
  post(QString(),
       [path = path_, from = toFsPath(from), replace, who = who.toStdString()](const JobTicket &) {
         return changeAndRead(path, [&](kwb::SkillLibrary &l, Answer &a) {
           const auto r = kwb::importSkillFiles(l, from, replace, who);
           for (const auto &p : r.problems) a.problems << QString::fromStdString(p);
           a.known = static_cast<int>(r.known.size());
           if (!a.problems.isEmpty()) {
             a.summary = a.known ? tr("Nothing imported: %n card(s) are in the library already.", nullptr, a.known)
                                 : tr("Nothing imported: %n problem(s) in %1 file(s).", nullptr, static_cast<int>(a.problems.size()))
                                       .arg(r.files);
             return;
           }
           a.summary = tr("Imported %1 card(s) from %2: %3 new (proposed), %4 merged (status, evidence and log kept).")
                           .arg(r.added.size() + r.merged.size())
                           .arg(QString::fromStdString(from.string()))
                           .arg(r.added.size())
                           .arg(r.merged.size());
           for (const auto &n : r.notTaken) a.summary += QStringLiteral("\n") + QString::fromStdString(n);
         });
       },
       [this, from](const Answer &a) {
         if (a.error.isEmpty()) emit imported(from, a.summary, a.problems, a.known);
       });
}

void SkillLibraryService::exportTo(const QString &to) {
  post(QString(),
       [path = path_, to = toFsPath(to)](const JobTicket &) {
         return changeAndRead(path, [&](kwb::SkillLibrary &l, Answer &a) {
           const auto written = kwb::exportSkillCards(l.cards(), to, l.path().string());
           a.summary = tr("Wrote %1 SKILL.md file(s) under %2.").arg(written.size()).arg(QString::fromStdString(to.string()));
         });
       },
       [this](const Answer &a) {
         if (a.error.isEmpty()) emit exported(a.summary);
       });
}

void SkillLibraryService::edit(const QString &id, const QString &skillMarkdown, const QString &who) {
  post(QString(),
       [path = path_, id = id.toStdString(), text = skillMarkdown.toStdString(), who = who.toStdString()](const JobTicket &) {
         return changeAndRead(path, [&](kwb::SkillLibrary &l, Answer &a) {
           const auto read = kwb::readSkillMarkdown(text, id + "/SKILL.md");
           for (const auto &p : read.problems) a.problems << QString::fromStdString(p.text());
           if (read.card && read.card->id != id)
             a.problems << QStringLiteral("%1/SKILL.md: skill_id is '%2': an edit keeps the card's id")
                               .arg(QString::fromStdString(id), QString::fromStdString(read.card->id));
           if (!a.problems.isEmpty()) return;
           // The status, evidence and verification log are the card's record: not edited here.
           const auto stored = l.card(id);
           if (stored)
             for (const auto &p : kwb::recordClaims(read, id + "/SKILL.md", *stored))
               a.problems << QString::fromStdString(p.text());
           if (!a.problems.isEmpty()) return;
           l.editCard(*read.card, who, "in the Skills view");
         });
       },
       [this, id](const Answer &a) {
         if (!a.problems.isEmpty()) emit editRefused(id, a.problems);
         else if (a.error.isEmpty()) emit edited(id);
       });
}

}  // namespace kwb::ui
