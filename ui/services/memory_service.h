#pragma once
// The experience memory (core/memory/experience_store.h) behind a queue, for the explorer: Cases
// read and searched on a thread of their own, and the graph laid out by Graphviz
// (core/memory/graph_layout.h) on another single thread, the only one that calls Graphviz (the
// library is not thread-safe). Answers come back as signals on the GUI thread; the views never
// touch SQLite or Graphviz. Newest request wins: an older read, search or layout still queued is
// dropped, and a layout in progress stops between trees.
#include <memory>
#include <optional>
#include <vector>

#include <QHash>
#include <QList>
#include <QObject>
#include <QString>

#include "core/memory/experience_store.h"
#include "core/memory/graph_layout.h"
#include "ui/models/evaluation_run.h"
#include "ui/services/background_jobs.h"

namespace kwb::ui {

struct MemorySnapshot {
  QString path;
  std::vector<kwb::memory::Case> cases;  // every Case, without code, oldest first
  kwb::memory::MemoryStats stats;
};

// A Case with its code, and the Case it started from (with code) when there is one.
struct CaseDetail {
  kwb::memory::Case c;
  std::optional<kwb::memory::Case> parent;
};

// A Case as the workbench context carries a candidate (Origin::GraphNode): its task (the open
// folder when it is the open task), outcome, feedback as the message, GPU and architecture. It has
// no per-configuration result: the memory keeps the Case's summary, not the evaluation.
EvaluationRun runOfCase(const kwb::memory::Case &c, const QString &openTask, const QString &openFolder);

class MemoryService : public QObject {
  Q_OBJECT

 public:
  // path empty: the library database ($KWB_LIBRARY, else the user's data folder).
  explicit MemoryService(const QString &path = {}, QObject *parent = nullptr);
  ~MemoryService() override;

  QString path() const { return path_; }
  void setPath(const QString &path);  // then refresh()

  // Reads every Case; answers with loaded() or failed().
  void refresh();
  // The Cases whose text (idea, journal, feedback, code) holds every word; answers with searched().
  void search(const QString &text);
  // One Case with its code and its parent's; answers with fetched() or failed().
  void fetch(qint64 id);
  // Lays the items out; answers with laidOut(generation, layout) (a failed layout has its error set).
  // Returns the generation, counted from 1.
  int layout(std::vector<kwb::memory::LayoutItem> items);

  // A request whose answer has not come back yet (an older one superseded by a newer of its kind
  // counts until the newer answers).
  bool isBusy() const;
  const MemorySnapshot &snapshot() const { return snapshot_; }

 signals:
  void loaded();
  void searched(const QString &text, const QList<qint64> &ids);
  void fetched(const kwb::ui::CaseDetail &detail);
  void laidOut(int generation, const kwb::memory::ForestLayout &layout);
  void failed(const QString &message);
  void idle();

 private:
  struct Store;  // the open store, used on the jobs' thread only
  template <typename T, typename Read, typename Done>
  void read(const QString &kind, Read work, Done done);
  void settle();

  QString path_;
  BackgroundJobs *jobs_ = nullptr;     // SQLite
  BackgroundJobs *layouts_ = nullptr;  // Graphviz
  std::shared_ptr<Store> store_;
  MemorySnapshot snapshot_;
  int generation_ = 0;
  QHash<QString, int> asked_, answered_;  // by kind: the newest request, the newest answer
};

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::CaseDetail)
Q_DECLARE_METATYPE(kwb::memory::ForestLayout)
