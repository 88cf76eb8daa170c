#include "app/cli/memory_command.h"

#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/memory/case_sources.h"
#include "core/memory/experience_store.h"
#include "core/paths/install_paths.h"
#include "core/store/library_schema.h"
#include "core/store/workspace.h"
#include "core/text/printable.h"

using nlohmann::json;
using namespace kwb::memory;

using kwb::fixed;

namespace {

std::unique_ptr<ExperienceStore> openStore(const MemoryArgs &args) {
  try {
    return ExperienceStore::open(args.library.empty() ? kwb::libraryDatabasePath() : std::filesystem::path(args.library));
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return nullptr;
  }
}

json caseJson(const Case &c) {
  return {{"id", c.id},           {"task", c.task},         {"operator_class", c.operatorClass},
          {"source", c.source},   {"gpu", c.gpu},           {"arch", c.arch},
          {"idea", c.idea},       {"outcome", c.outcome},   {"correct", c.correct},
          {"speedup", c.speedup}, {"ratio", c.ratio},       {"label", toString(c.label)},
          {"score", c.score},     {"confidence", c.confidence},
          {"parent", c.parent ? json(*c.parent) : json(nullptr)},
          {"journal", c.journal}, {"created_at", c.createdAt}};
}

}  // namespace

int memoryStatsCommand(const MemoryArgs &args, bool asJson) {
  auto store = openStore(args);
  if (!store) return 2;
  kwb::memory::MemoryStats st;
  kwb::memory::ScoreWeights w;
  try {
    st = store->stats();
    w = store->weights();
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return 1;
  }
  if (asJson) {
    json out = {{"library", store->path().string()}, {"cases", st.cases}, {"roots", st.roots}, {"correct", st.correct},
                {"weights", {{"w_self", w.self}, {"w_succ", w.successors}, {"gamma", w.gamma}}}};
    for (const Label l : {Label::Effective, Label::Partial, Label::Ineffective, Label::Negative})
      out["labels"][toString(l)] = st.byLabel[labelRank(l)];
    for (const auto &[name, n] : st.tasks) out["tasks"][name] = n;
    for (const auto &[name, n] : st.gpus) out["gpus"][name.empty() ? "(none)" : name] = n;
    for (const auto &[name, n] : st.sources) out["sources"][name] = n;
    out["best"] = json::array();
    for (const auto &b : st.best) out["best"].push_back({{"task", b.task}, {"case", b.caseId}, {"speedup", b.speedup}});
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::cout << "Experience memory: " << store->path().string() << "\n"
            << "  " << st.cases << " Cases (" << st.correct << " correct) in " << st.roots << " trees\n  labels:";
  for (const Label l : {Label::Effective, Label::Partial, Label::Ineffective, Label::Negative})
    std::cout << " " << toString(l) << " " << st.byLabel[labelRank(l)];
  std::cout << "\n  d(v) = " << w.self << " r + " << w.successors << " x " << w.gamma << " x sum d(successors)\n";
  if (!st.sources.empty()) {
    std::cout << "  sources:";
    for (const auto &[name, n] : st.sources) std::cout << " " << name << " " << n;
    std::cout << "\n";
  }
  for (const auto &[name, n] : st.gpus) std::cout << "  GPU " << (name.empty() ? "(none: compiled only)" : name) << ": " << n << "\n";
  if (!st.tasks.empty()) std::cout << "  task                       Cases   best\n";
  for (const auto &[name, n] : st.tasks) {
    std::string best = "-";
    for (const auto &b : st.best)
      if (b.task == name) best = fixed(b.speedup, 2) + "x (Case " + std::to_string(b.caseId) + ")";
    char line[256];
    std::snprintf(line, sizeof line, "  %-26s %5lld   %s\n", name.c_str(), static_cast<long long>(n), best.c_str());
    std::cout << line;
  }
  return 0;
}

int memoryQueryCommand(const MemoryArgs &args, bool asJson) {
  MemoryQuery q;
  q.text = args.text;
  q.task = args.task;
  q.idea = args.idea;
  q.limit = args.limit;
  if (!args.label.empty()) {
    q.label = labelFromString(args.label);
    if (!q.label) {
      std::cerr << "kwb: --label " << args.label << ": one of effective, partial, ineffective, negative\n";
      return 2;
    }
  }
  auto store = openStore(args);
  if (!store) return 2;
  std::vector<QueryHit> hits;
  try {
    hits = store->query(q);
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return 1;
  }
  if (asJson) {
    json out = json::array();
    for (const auto &h : hits) {
      auto j = caseJson(h.c);
      j["rank"] = h.rank;
      j["text_score"] = h.textScore;
      j["similarity"] = h.similarity;
      out.push_back(j);
    }
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (hits.empty()) {
    std::cout << "No Cases match.\n";
    return 0;
  }
  std::cout << "  Case  label        speedup  ratio  d x conf  task            idea\n";
  for (const auto &h : hits) {
    char line[512];
    std::snprintf(line, sizeof line, "%6lld  %-11s %7s  %5s  %8s  %-15s %s\n", static_cast<long long>(h.c.id),
                  toString(h.c.label), h.c.correct ? (fixed(h.c.speedup, 2) + "x").c_str() : h.c.outcome.c_str(),
                  fixed(h.c.ratio, 2).c_str(), fixed(h.rank, 3).c_str(), h.c.task.c_str(),
                  kwb::clippedLine(h.c.idea.empty() ? h.c.journal : h.c.idea, 67).c_str());
    std::cout << line;
  }
  return 0;
}

int memoryExportCommand(const MemoryArgs &args) {
  if (args.format != "jsonl") {
    std::cerr << "kwb: --format " << args.format << ": the memory exports as jsonl (one Case per line)\n";
    return 2;
  }
  auto store = openStore(args);
  if (!store) return 2;
  try {
    store->exportJsonl(std::cout);
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int memoryGraphCommand(const MemoryArgs &args) {
  if (!args.dot) {
    std::cerr << "kwb: kwb memory graph writes Graphviz text: give --dot (and render it with dot -Tsvg)\n";
    return 2;
  }
  auto store = openStore(args);
  if (!store) return 2;
  try {
    std::cout << store->graphDot(args.task);
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

int memoryImportCommand(const MemoryArgs &args, bool asJson) {
  const auto path = args.workspace.empty() ? kwb::userDataDir() / "workspace.kwb" : std::filesystem::path(args.workspace);
  std::unique_ptr<kwb::Workspace> workspace;
  try {
    workspace = kwb::Workspace::openExisting(path);
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return 2;
  }
  auto store = openStore(args);
  if (!store) return 2;
  SyncReport report;
  try {
    report = syncWorkspace(*store, *workspace);
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return 1;
  }
  for (const auto &p : report.problems) std::cerr << "kwb: " << p << "\n";
  if (asJson)
    std::cout << json{{"workspace", path.string()}, {"added", report.added}, {"known", report.known}, {"not_run", report.notRun}, {"problems", report.problems}}
                     .dump(2, ' ', false, json::error_handler_t::replace)
              << "\n";
  else
    std::cout << report.added << " Cases recorded from " << path.string() << " (" << report.known
              << " already in the memory; " << report.notRun << " compiled only, not recorded)\n";
  return report.problems.empty() ? 0 : 1;
}
