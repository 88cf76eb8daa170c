// kwb-bench-memory-retrieval (issue 19, "Measure"): the experience memory's retrieval latency and
// size on disk, on a synthetic memory (bench/memory_corpus.h) of 10,000 and 100,000 Cases in a
// real SQLite file. Queries, each asked 50 times with different tasks and words:
//   filtered+text  task + label + two words (FTS5, BM25)          target: <= 50 ms at 100k Cases
//   filtered       task + architecture, no text
//   cross-task     any of the words, other tasks, with features     (what a session's cold tier asks)
//   stats          the summary `kwb memory stats` prints
//   all Cases      every Case without code (what the explorer reads)
// Prints a table and writes JSON. Needs no GPU.
//
//   kwb-bench-memory-retrieval [--sizes 10000,100000] [--dir D] [--out F]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "bench/bench_report.h"
#include "bench/memory_corpus.h"
#include "core/memory/experience_store.h"

namespace fs = std::filesystem;
namespace kb = kwb::bench;
using nlohmann::json;

namespace {

constexpr const char *kProgram = "kwb-bench-memory-retrieval";

struct Figures {
  double median = 0, p95 = 0, max = 0;
  std::size_t hits = 0;  // results of the last query
};

Figures timeIt(int repeats, const std::function<std::size_t(int)> &query) {
  std::vector<double> ms;
  Figures f;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f.hits = query(i);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  const auto spread = kb::spreadOf(ms);
  f.median = spread.median;
  f.p95 = spread.p95;
  f.max = spread.max;
  return f;
}

std::uintmax_t sizeOnDisk(const fs::path &db) {
  std::uintmax_t total = 0;
  for (const char *suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    const auto s = fs::file_size(db.string() + suffix, ec);
    if (!ec) total += s;
  }
  return total;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"The experience memory's retrieval latency and size on disk (issue 19)"};
  std::vector<std::size_t> sizes{10000, 100000};
  std::string dir, out;
  int repeats = 50;
  app.add_option("--sizes", sizes, "Cases in each memory")->delimiter(',');
  app.add_option("--dir", dir, "where the library files go (default: a temporary folder, removed)");
  app.add_option("--repeats", repeats, "times each query is asked")->check(CLI::PositiveNumber);
  app.add_option("--out", out, "the JSON file to write");
  CLI11_PARSE(app, argc, argv);

  const fs::path folder = dir.empty() ? fs::temp_directory_path() / ("kwb-bench-memory-" + std::to_string(::getpid())) : fs::path(dir);
  fs::create_directories(folder);
  kb::Table table({"Cases", "query", "median", "p95", "max", "hits"});
  json rows = json::array(), memories = json::array();
  for (const auto n : sizes) {
    const fs::path db = folder / ("memory-" + std::to_string(n) + ".sqlite");
    fs::remove(db);
    kb::CorpusSummary corpus;
    {
      auto store = kwb::memory::ExperienceStore::open(db);
      corpus = kb::fillMemory(*store, n);
    }  // closed: the WAL checkpointed into the file
    const auto bytes = sizeOnDisk(db);
    std::cout << n << " Cases (" << corpus.trees << " trees, " << corpus.tasks << " tasks) recorded in "
              << kb::formatNumber(corpus.seconds, 1) << " s; " << kb::formatNumber(static_cast<double>(bytes) / 1e6, 1)
              << " MB on disk, " << kb::formatNumber(static_cast<double>(bytes) / 1e6 * 10000.0 / static_cast<double>(n), 1)
              << " MB per 10k Cases\n";
    memories.push_back({{"cases", n}, {"trees", corpus.trees}, {"tasks", corpus.tasks}, {"record_seconds", corpus.seconds},
                        {"bytes", bytes}, {"mb_per_10k_cases", static_cast<double>(bytes) / 1e6 * 10000.0 / static_cast<double>(n)}});

    auto store = kwb::memory::ExperienceStore::open(db);
    const auto tasks = kb::corpusTasks(n);
    const auto &ideas = kb::corpusIdeas();
    // Two words of an idea, the first and the last: "warp reductions", "float4 loads", ...
    auto words = [&ideas](int i) {
      const std::string &idea = ideas[static_cast<std::size_t>(i) % ideas.size()];
      return idea.substr(0, idea.find(' ')) + " " + idea.substr(idea.rfind(' ') + 1);
    };
    const std::vector<std::pair<std::string, std::function<std::size_t(int)>>> queries{
        {"filtered+text",
         [&](int i) {
           kwb::memory::MemoryQuery q;
           q.task = tasks[static_cast<std::size_t>(i) % tasks.size()];
           q.label = i % 2 ? kwb::memory::Label::Effective : kwb::memory::Label::Partial;
           q.text = words(i);
           return store->query(q).size();
         }},
        {"filtered",
         [&](int i) {
           kwb::memory::MemoryQuery q;
           q.task = tasks[static_cast<std::size_t>(i) % tasks.size()];
           q.arch = i % 2 ? "sm_90" : "sm_80";
           return store->query(q).size();
         }},
        {"cross-task",
         [&](int i) {
           kwb::memory::MemoryQuery q;
           q.text = ideas[static_cast<std::size_t>(i) % ideas.size()];
           q.anyWord = true;
           q.correct = true;
           q.bottleneck = "memory";
           q.intensity = 2;
           return store->query(q).size();
         }},
        {"stats", [&](int) { return static_cast<std::size_t>(store->stats().cases); }},
        {"all Cases", [&](int) { return store->cases().size(); }},
    };
    for (const auto &[name, query] : queries) {
      const int times = name == "all Cases" || name == "stats" ? std::max(5, repeats / 10) : repeats;
      const auto f = timeIt(times, query);
      table.add({std::to_string(n), name, kb::formatMs(f.median), kb::formatMs(f.p95), kb::formatMs(f.max), std::to_string(f.hits)});
      rows.push_back({{"cases", n}, {"query", name}, {"repeats", times}, {"median_ms", f.median}, {"p95_ms", f.p95},
                      {"max_ms", f.max}, {"hits_last", f.hits}});
    }
  }
  std::cout << table.str();
  if (dir.empty()) fs::remove_all(folder);
  if (!out.empty()) {
    json j = kb::benchMeta(kProgram, kwb::GpuInventory{});
    j["memories"] = memories;
    j["queries"] = rows;
    j["target"] = "filtered+text <= 50 ms at 100k Cases";
    if (!kb::writeJson(out, j)) return kb::kExitFailed;
  }
  return kb::kExitOk;
}
