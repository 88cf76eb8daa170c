#include "ui/services/skill_library_service.h"

#include <QStringList>

#include "core/lineage/skill_markdown.h"

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

SkillLibraryService::SkillLibraryService(const QString &path, QObject *parent)
    : QObject(parent), path_(path), jobs_(new BackgroundJobs(QStringLiteral("kwb-skills"), this)) {}

SkillLibraryService::~SkillLibraryService() = default;

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
