#include "ui/services/skill_library_service.h"

#include <QMetaObject>
#include <QPointer>
#include <QStringList>

#include <mutex>

#include "core/agent/card_application.h"
#include "core/eval/evaluator.h"
#include "core/lineage/skill_markdown.h"
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

// What cancelTry() reaches from the GUI thread: the request's token and the evaluator in use.
struct SkillLibraryService::TryControl {
  std::mutex mutex;
  kwb::llm::CancelToken cancel;
  kwb::Evaluator *evaluator = nullptr;
};

SkillLibraryService::SkillLibraryService(const QString &path, QObject *parent)
    : QObject(parent),
      path_(path),
      jobs_(new BackgroundJobs(QStringLiteral("kwb-skills"), this)),
      tryJobs_(new BackgroundJobs(QStringLiteral("kwb-skill-try"), this)),
      try_(std::make_shared<TryControl>()) {}

SkillLibraryService::~SkillLibraryService() { cancelTry(); }

bool SkillLibraryService::tryCard(const CardTryRequest &request) {
  if (trying_) return false;
  QString problem;
  const auto provider = resolveAgentProvider(request.provider, request.apiKey, problem);
  if (!provider) {
    emit failed(problem);
    return false;
  }
  trying_ = true;
  try_->cancel.reset();
  struct Outcome {
    QString verdict, message, recorded, error;
  };
  QPointer<SkillLibraryService> self(this);
  tryJobs_->run(
      this, QString(),
      [self, control = try_, path = path_, request, provider = *provider](const JobTicket &) {
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
          kwb::Evaluator evaluator(es);
          // cancelTry() reaches the evaluator while it lives, and never after.
          struct Registration {
            TryControl &control;
            Registration(TryControl &c, kwb::Evaluator *e) : control(c) {
              std::lock_guard lock(control.mutex);
              control.evaluator = e;
            }
            ~Registration() {
              std::lock_guard lock(control.mutex);
              control.evaluator = nullptr;
            }
          } registration(*control, &evaluator);
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

void SkillLibraryService::cancelTry() {
  if (!try_) return;
  std::lock_guard lock(try_->mutex);
  try_->cancel.cancel();
  if (try_->evaluator) try_->evaluator->cancel();
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
           l.putCard(*read.card, who, "edited", "in the Skills view");
         });
       },
       [this, id](const Answer &a) {
         if (!a.problems.isEmpty()) emit editRefused(id, a.problems);
         else if (a.error.isEmpty()) emit edited(id);
       });
}

}  // namespace kwb::ui
