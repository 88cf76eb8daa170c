#pragma once
// KOPE's experience memory (issue 19 items 1-3, 6): every evaluation the workbench makes is a
// Case in the user's library database (core/store/library_schema.h), linked to the Case it
// started from. Step ratio, label and downstream score are kept current as Cases arrive
// (experience_graph.h); retrieval combines exact filters, full-text search (FTS5, BM25) and
// feature similarity, ordered by label and, within a label, by d x confidence. No Qt. Every change
// is one transaction.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/memory/experience_graph.h"
#include "core/store/database.h"

namespace kwb::memory {

struct Case {
  std::int64_t id = 0;
  // Where it came from: "editor", "tune", "session", "lineage", "import". With `sourceRef` (unique
  // within the source) recording the same evaluation twice gives one Case.
  std::string source;
  std::string sourceRef;
  std::string task, operatorClass, config;  // config: the size configuration measured ("" for all)
  std::string gpu, arch;
  std::string idea;      // the agent's stated intent, the skill card used, the tuning parameters
  std::string ideaKind;  // "intent", "card", "tuning", "step", "edit"
  std::string session;   // the agent session, when there was one
  std::string before, after;  // the code it started from and the code tried (stored once by hash)
  std::string feedback;  // the compiler's, the runtime's or the mismatch, as the evaluator said it
  std::string outcome;   // the evaluation's ("correct", "incorrect", "compile-error", ...)
  bool correct = false;
  double speedup = 0;    // over the task's reference (geometric mean over configurations); 0: not timed
  double relativeSpread = 0;
  double confidence = 0; // from the spread (confidenceOf); set by record()
  std::optional<std::int64_t> parent;
  std::string journal;   // one human-readable entry
  std::string bottleneck;  // the profiler's class: "memory", "compute", "latency" ("" unknown)
  double intensity = 0;    // FLOP per byte (0 unknown)
  std::string shape;       // "M=4096,N=4096,K=4096"
  std::string createdAt;
  // Kept by the store.
  double ratio = 0;
  Label label = Label::Negative;
  double score = 0;
};

struct MemoryStats {
  std::int64_t cases = 0, roots = 0, correct = 0;
  std::int64_t byLabel[4] = {0, 0, 0, 0};  // by labelRank
  std::vector<std::pair<std::string, std::int64_t>> tasks, gpus, sources;  // name, Cases; most first
  struct Best {
    std::string task;
    std::int64_t caseId = 0;
    double speedup = 0;
  };
  std::vector<Best> best;  // per task: its fastest correct Case
};

// Many Cases summed up (the cold tier's digests): what was tried in a scope, what paid off, what
// slowed the kernel down or broke it, and how attempts failed.
struct DigestScope {
  std::string task;           // one task's Cases; or
  std::string operatorClass;  // an operator class's,
  std::string excludeTask;    // leaving this task's out ("" for none)
};

struct Digest {
  std::int64_t cases = 0, correct = 0, tasks = 0, gpus = 0;
  std::int64_t byLabel[4] = {0, 0, 0, 0};  // by labelRank
  struct Best {
    std::int64_t caseId = 0;
    std::string task, idea, gpu;
    double speedup = 0;
  };
  std::optional<Best> best;  // the fastest correct Case
  struct Idea {
    std::string idea;
    std::int64_t tries = 0;
    double ratio = 0;         // the best ratio (paid off), the worst (slowed down); 0 when it broke
    std::string outcome;      // for ideas that broke the kernel: the commonest outcome
  };
  std::vector<Idea> paidOff, slowedDown, broke;  // effective best first; negative worst first; broke most tried first
  std::vector<std::pair<std::string, std::int64_t>> failures;  // outcome, Cases; most first
};

struct MemoryQuery {
  std::string text;  // words, all of which must appear (any order); "" for none
  bool anyWord = false;  // any of the words will do (common words left out; BM25 first within a label)
  std::string task, operatorClass, arch, gpu, session, source;
  std::string idea;  // a substring of the idea (case-insensitive)
  std::optional<Label> label;
  std::optional<bool> correct;
  // Features of the kernel being worked on: Cases alike rank higher within their label.
  std::string bottleneck;
  double intensity = 0;
  std::string shape;
  std::string nearArch, nearGpu;  // the architecture and GPU the work runs on (not filters: alike ranks higher)
  std::size_t limit = 20;
};

struct QueryHit {
  Case c;
  double similarity = 1;  // feature similarity, (0, 1]; 1 when the query gives no features
  double textScore = 0;   // BM25 (higher is better; 0 without text, and for terms in most rows)
  double rank = 0;        // d x confidence x similarity: the order within a label
};

// Feature similarity in (0, 1]: the same bottleneck class, arithmetic intensity within a factor,
// the same shape, the same architecture (another: x0.7) and GPU (another of the same
// architecture: x0.9). 1 when `query` gives no features.
double featureSimilarity(const MemoryQuery &query, const Case &c);

// Words for an FTS5 MATCH: each quoted (so `dram__throughput` or `-` are words, not syntax), all
// required (or, with `any`, any one). Empty when the text has no word characters.
std::string ftsQuery(const std::string &text, bool any = false);

class ExperienceStore {
 public:
  // The library database (libraryDatabasePath() by default), created or migrated forward.
  // Throws StoreError.
  static std::unique_ptr<ExperienceStore> open(const std::filesystem::path &path);
  static std::unique_ptr<ExperienceStore> open();
  const std::filesystem::path &path() const { return db_.path(); }

  // Records a Case: its ratio (against the nearest correct ancestor), label, confidence and
  // score, and its ancestors' scores, in one transaction. A Case whose (source, sourceRef) is
  // already there is not recorded again: its id is returned. Throws StoreError for an unknown
  // parent.
  std::int64_t record(Case c);
  // The Case recorded from (source, sourceRef).
  std::optional<std::int64_t> find(const std::string &source, const std::string &sourceRef);
  // The Case of `task` whose code (after) has this content hash (core/text/content_hash.h): the
  // newest correct one, else the newest.
  std::optional<std::int64_t> findByCode(const std::string &task, const std::string &codeHash);
  std::optional<Case> get(std::int64_t id, bool withCode = false);
  // All Cases (without code), oldest first; of one task when `task` is given.
  std::vector<Case> cases(const std::string &task = {});
  std::vector<std::int64_t> children(std::int64_t id);
  // Runs `work` (records, weight changes) as one transaction: all of it or none, one sync to disk
  // (a history imported at once, a benchmark's corpus).
  void transaction(const std::function<void()> &work) { db_.transaction(work); }

  // The weights of d(v) (stored in the library; changing them recomputes every score).
  ScoreWeights weights();
  void setWeights(const ScoreWeights &weights);
  // Every score computed again from the leaves up; returns how many changed by more than 1e-12.
  std::size_t recomputeScores();

  MemoryStats stats();
  // The Cases of `scope` summed up, with up to `ideas` ideas in each list.
  Digest digest(const DigestScope &scope, std::size_t ideas = 3);
  std::vector<QueryHit> query(const MemoryQuery &query);

  // One JSON object per line, oldest first, code included.
  void exportJsonl(std::ostream &out);
  // The forest in Graphviz's language: a cluster per task, nodes coloured by label and sized by
  // speedup.
  std::string graphDot(const std::string &task = {});

 private:
  explicit ExperienceStore(const std::filesystem::path &path);
  Case read(Statement &row, bool withCode);
  Database db_;
};

}  // namespace kwb::memory
