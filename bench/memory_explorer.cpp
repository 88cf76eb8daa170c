// kwb-bench-memory-explorer (issue 19, "Measure"): the experience graph explorer on synthetic
// memories (bench/memory_corpus.h) of 1,000 and 10,000 Cases in a real library file, in the real
// Experience view (offscreen unless a display is given). For each size:
//   read        the memory read on its thread (refresh() to loaded())
//   layout      Graphviz's layout on its thread (ForestLayout::milliseconds)  target: <= 2 s at 10k
//   to drawn    refresh() to every node in the scene (shown())
//   GUI stall   the longest the GUI thread's event loop was kept from running meanwhile and for
//               half a second after (a 5 ms probe timer)                        target: <= 50 ms
//   pan         frames while panning in 24 px steps, each step the whole viewport repainted
//               synchronously: at 100 % zoom (nodes legible) and zoomed to fit (every node
//               visible)                                                        target: >= 30 fps
// Prints a table and writes JSON. Needs no GPU.
//
//   QT_QPA_PLATFORM=offscreen kwb-bench-memory-explorer [--sizes 1000,10000] [--out F]
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QScrollBar>
#include <QTimer>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include "bench/bench_report.h"
#include "bench/memory_corpus.h"
#include "ui/services/memory_service.h"
#include "ui/views/experience_graph_view.h"
#include "ui/views/experience_panel.h"

namespace fs = std::filesystem;
namespace kb = kwb::bench;
using nlohmann::json;

namespace {

constexpr const char *kProgram = "kwb-bench-memory-explorer";

struct Frames {
  double median = 0, p95 = 0, fps = 0;
};

// `steps` pan steps of 24 px (right and down, back at the edges), each repainted at once.
Frames pan(kwb::ui::ExperienceGraphView &view, int steps) {
  std::vector<double> ms;
  QElapsedTimer clock;
  int dx = 24, dy = 12;
  for (int i = 0; i < steps; ++i) {
    auto *h = view.horizontalScrollBar();
    auto *v = view.verticalScrollBar();
    if (h->value() + dx > h->maximum() || h->value() + dx < h->minimum()) dx = -dx;
    if (v->value() + dy > v->maximum() || v->value() + dy < v->minimum()) dy = -dy;
    clock.start();
    h->setValue(h->value() + dx);
    v->setValue(v->value() + dy);
    view.viewport()->repaint();
    ms.push_back(static_cast<double>(clock.nsecsElapsed()) / 1e6);
  }
  const auto spread = kb::spreadOf(ms);
  Frames f;
  f.median = spread.median;
  f.p95 = spread.p95;
  f.fps = f.median > 0 ? 1000.0 / f.median : 0;
  return f;
}

}  // namespace

int main(int argc, char **argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY"))
    qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication qapp(argc, argv);
  CLI::App app{"The experience graph explorer's layout, drawing and panning (issue 19)"};
  std::vector<std::size_t> sizes{1000, 10000};
  std::string out;
  int steps = 120;
  app.add_option("--sizes", sizes, "Cases in each memory")->delimiter(',');
  app.add_option("--steps", steps, "pan steps measured at each zoom")->check(CLI::PositiveNumber);
  app.add_option("--out", out, "the JSON file to write");
  CLI11_PARSE(app, argc, argv);

  const fs::path folder = fs::temp_directory_path() / ("kwb-bench-explorer-" + std::to_string(::getpid()));
  fs::create_directories(folder);
  kb::Table table({"Cases", "trees", "read", "layout", "to drawn", "GUI stall", "pan 100% (median/p95)", "fps",
                   "pan fit (median/p95)", "fps"});
  json rows = json::array();
  for (const auto n : sizes) {
    const fs::path db = folder / ("memory-" + std::to_string(n) + ".sqlite");
    kb::CorpusSummary corpus;
    {
      auto store = kwb::memory::ExperienceStore::open(db);
      corpus = kb::fillMemory(*store, n);
    }
    kwb::ui::MemoryService service(QString::fromStdString(db.string()));
    kwb::ui::ExperiencePanel panel;
    panel.attach(&service);
    panel.resize(1600, 900);
    panel.show();
    QApplication::processEvents();

    QElapsedTimer clock;
    qint64 last = -1, worst = 0, loadedAt = 0;
    double layoutMs = 0;
    std::size_t builtin = 0;
    QTimer probe;
    probe.setInterval(5);
    QObject::connect(&probe, &QTimer::timeout, [&] {
      const qint64 now = clock.elapsed();
      if (last >= 0) worst = std::max(worst, now - last);
      last = now;
    });
    QObject::connect(&service, &kwb::ui::MemoryService::loaded, [&] { loadedAt = clock.elapsed(); });
    QObject::connect(&service, &kwb::ui::MemoryService::laidOut, [&](int, const kwb::memory::ForestLayout &l) {
      layoutMs = l.milliseconds;
      builtin = l.builtinTrees;
    });
    // Drawn once settled; the probe goes on half a second more, through the paints that follow.
    QEventLoop loop;
    qint64 drawn = 0;
    QObject::connect(&panel, &kwb::ui::ExperiencePanel::settled, &loop, [&] {
      if (drawn) return;
      drawn = clock.elapsed();
      QTimer::singleShot(500, &loop, &QEventLoop::quit);
    });
    clock.start();
    probe.start();
    panel.refresh();
    loop.exec();
    probe.stop();
    auto *graph = panel.graph();
    if (graph->nodeCount() != static_cast<int>(n)) {
      std::cerr << kProgram << ": " << graph->nodeCount() << " nodes drawn of " << n << ": " << panel.statusText().toStdString() << "\n";
      return kb::kExitFailed;
    }
    // At 100 %, from the middle; then zoomed to fit.
    graph->resetTransform();
    graph->centerOn(graph->sceneRect().center());
    const Frames legible = pan(*graph, steps);
    graph->fit();
    const Frames whole = pan(*graph, steps);
    auto ms = [](double v) { return kb::formatMs(v); };
    table.add({std::to_string(n), std::to_string(corpus.trees), ms(static_cast<double>(loadedAt)), ms(layoutMs),
               ms(static_cast<double>(drawn)), ms(static_cast<double>(worst)), ms(legible.median) + " / " + ms(legible.p95),
               kb::formatNumber(legible.fps, 0), ms(whole.median) + " / " + ms(whole.p95), kb::formatNumber(whole.fps, 0)});
    rows.push_back({{"cases", n},
                    {"trees", corpus.trees},
                    {"tasks", corpus.tasks},
                    {"builtin_trees", builtin},
                    {"read_ms", loadedAt},
                    {"layout_ms", layoutMs},
                    {"to_drawn_ms", drawn},
                    {"gui_stall_max_ms", worst},
                    {"pan_100pct", {{"median_ms", legible.median}, {"p95_ms", legible.p95}, {"fps", legible.fps}}},
                    {"pan_fit", {{"median_ms", whole.median}, {"p95_ms", whole.p95}, {"fps", whole.fps}}},
                    {"zoom_fit", graph->zoom()},
                    {"viewport", {graph->viewport()->width(), graph->viewport()->height()}}});
    std::cout << n << " Cases: " << panel.statusText().toStdString() << "\n";
  }
  std::cout << "platform " << QGuiApplication::platformName().toStdString() << "\n" << table.str();
  fs::remove_all(folder);
  if (!out.empty()) {
    json j = kb::benchMeta(kProgram, kwb::GpuInventory{});
    j["platform"] = QGuiApplication::platformName().toStdString();
    j["rows"] = rows;
    j["targets"] = "layout <= 2 s off the GUI thread at 10k nodes; no GUI-thread pause over 50 ms; pan >= 30 fps";
    if (!kb::writeJson(out, j)) return kb::kExitFailed;
  }
  return kb::kExitOk;
}
