#include "ui/services/memory_service.h"

#include <exception>
#include <filesystem>
#include <stdexcept>

#include "core/store/library_schema.h"

namespace kwb::ui {

struct MemoryService::Store {
  std::filesystem::path path;
  std::unique_ptr<kwb::memory::ExperienceStore> store;
  // The store at `wanted` (empty: the library database), opened again when the path changed.
  kwb::memory::ExperienceStore &at(const QString &wanted) {
    const std::filesystem::path p =
        wanted.isEmpty() ? kwb::libraryDatabasePath() : std::filesystem::path(wanted.toStdString());
    if (!store || p != path) {
      store.reset();
      store = kwb::memory::ExperienceStore::open(p);
      path = p;
    }
    return *store;
  }
};

namespace {

template <typename T>
struct Answer {
  std::optional<T> value;
  QString error;
};

}  // namespace

EvaluationRun runOfCase(const kwb::memory::Case &c, const QString &openTask, const QString &openFolder) {
  EvaluationRun run;
  run.taskName = QString::fromStdString(c.task);
  if (run.taskName == openTask) run.taskFolder = openFolder;
  run.sourceName = QStringLiteral("%1-case-%2.cu").arg(run.taskName).arg(c.id);
  run.startedAt = run.finishedAt = QString::fromStdString(c.createdAt);
  run.outcome = kwb::parseOutcome(c.outcome).value_or(c.correct ? kwb::Outcome::Correct : kwb::Outcome::Error);
  QString message = c.correct && c.speedup > 0
                        ? QStringLiteral("Case %1: %2x the reference, x%3 its parent (%4)")
                              .arg(c.id)
                              .arg(c.speedup, 0, 'f', 2)
                              .arg(c.ratio, 0, 'f', 2)
                              .arg(QLatin1String(kwb::memory::toString(c.label)))
                        : QStringLiteral("Case %1").arg(c.id);
  if (!c.feedback.empty()) message += QLatin1Char('\n') + QString::fromStdString(c.feedback);
  run.message = message;
  run.arch = QString::fromStdString(c.arch);
  run.device = QString::fromStdString(c.gpu);
  return run;
}

MemoryService::MemoryService(const QString &path, QObject *parent)
    : QObject(parent),
      path_(path),
      jobs_(new BackgroundJobs(QStringLiteral("kwb-memory"), this)),
      layouts_(new BackgroundJobs(QStringLiteral("kwb-graphviz"), this)),
      store_(std::make_shared<Store>()) {
  qRegisterMetaType<kwb::ui::CaseDetail>();
  qRegisterMetaType<kwb::memory::ForestLayout>();
}

MemoryService::~MemoryService() = default;

void MemoryService::setPath(const QString &path) {
  path_ = path;
  refresh();
}

bool MemoryService::isBusy() const {
  for (auto it = asked_.cbegin(); it != asked_.cend(); ++it)
    if (answered_.value(it.key()) != it.value()) return true;
  return false;
}

void MemoryService::settle() {
  if (!isBusy()) emit idle();
}

// `work(store)` on the jobs' thread; `done(value)` here, or failed() with what went wrong.
template <typename T, typename Read, typename Done>
void MemoryService::read(const QString &kind, Read work, Done done) {
  const int asked = ++asked_[kind];
  jobs_->run(
      this, kind,
      [path = path_, store = store_, work](const JobTicket &) {
        Answer<T> a;
        try {
          a.value = work(store->at(path));
        } catch (const std::exception &e) {
          store->store.reset();
          a.error = QString::fromStdString(e.what());
        }
        return a;
      },
      [this, done, kind, asked](Answer<T> a) {
        answered_[kind] = asked;
        if (a.value) done(std::move(*a.value));
        else emit failed(tr("The experience memory: %1").arg(a.error));
        settle();
      });
}

void MemoryService::refresh() {
  read<MemorySnapshot>(
      QStringLiteral("read"),
      [](kwb::memory::ExperienceStore &store) {
        MemorySnapshot s;
        s.path = QString::fromStdString(store.path().string());
        s.cases = store.cases();
        s.stats = store.stats();
        return s;
      },
      [this](MemorySnapshot s) {
        snapshot_ = std::move(s);
        emit loaded();
      });
}

void MemoryService::search(const QString &text) {
  kwb::memory::MemoryQuery q;
  q.text = text.toStdString();
  q.limit = 1000000;  // every match: the explorer marks them all
  read<QList<qint64>>(
      QStringLiteral("search"),
      [q](kwb::memory::ExperienceStore &store) {
        QList<qint64> ids;
        if (kwb::memory::ftsQuery(q.text).empty()) return ids;
        for (const auto &hit : store.query(q)) ids.append(hit.c.id);
        return ids;
      },
      [this, text](QList<qint64> ids) { emit searched(text, ids); });
}

void MemoryService::fetch(qint64 id) {
  read<CaseDetail>(
      QStringLiteral("fetch"),
      [id](kwb::memory::ExperienceStore &store) {
        auto c = store.get(id, true);
        if (!c) throw std::runtime_error("no Case " + std::to_string(id) + " (the memory changed: refresh)");
        CaseDetail d{std::move(*c), std::nullopt};
        if (d.c.parent) d.parent = store.get(*d.c.parent, true);
        return d;
      },
      [this](CaseDetail d) { emit fetched(d); });
}

int MemoryService::layout(std::vector<kwb::memory::LayoutItem> items) {
  const int generation = ++generation_;
  asked_[QStringLiteral("layout")] = generation;
  layouts_->run(
      this, QStringLiteral("layout"),
      [items = std::move(items)](const JobTicket &ticket) {
        return kwb::memory::layoutForest(items, {}, [&ticket] { return ticket.cancelled(); });
      },
      [this, generation](kwb::memory::ForestLayout layout) {
        answered_[QStringLiteral("layout")] = generation;
        emit laidOut(generation, layout);
        settle();
      });
  return generation;
}

}  // namespace kwb::ui
