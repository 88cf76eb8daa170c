#include "core/export/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "core/agent/session_store.h"
#include "core/export/package_parts.h"
#include "core/lineage/lineage.h"
#include "core/lineage/lineage_builder.h"
#include "core/memory/case_sources.h"
#include "core/memory/experience_store.h"
#include "core/store/workspace.h"
#include "core/text/base64.h"
#include "core/text/content_hash.h"
#include "core/text/printable.h"

namespace kwb::exporting {

namespace fs = std::filesystem;
using namespace parts;

namespace {

// Numbers as SVG and the tables want them, whatever the C locale (the window sets the user's).
std::string f(double v, int digits) { return decimal(v, digits); }

std::string html(const std::string &text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A value for a Markdown table cell (pipes escaped, one line).
std::string cell(const std::string &text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += "\\|";
    else out += c == '\n' ? ' ' : c;
  }
  return out;
}

// One table, written as Markdown and as HTML.
struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::string markdown() const {
    std::string s = "|";
    for (const auto &h : head) s += " " + cell(h) + " |";
    s += "\n|";
    for (std::size_t i = 0; i < head.size(); ++i) s += "---|";
    s += "\n";
    for (const auto &r : rows) {
      s += "|";
      for (const auto &c : r) s += " " + cell(c) + " |";
      s += "\n";
    }
    return s + "\n";
  }
  std::string htmlText() const {
    std::string s = "<table><thead><tr>";
    for (const auto &h : head) s += "<th>" + html(h) + "</th>";
    s += "</tr></thead><tbody>\n";
    for (const auto &r : rows) {
      s += "<tr>";
      for (const auto &c : r) s += "<td>" + html(c) + "</td>";
      s += "</tr>\n";
    }
    return s + "</tbody></table>\n";
  }
};

// The report as a list of blocks, each rendered twice.
struct Block {
  enum class Kind { Heading, Paragraph, List, Table, Chart, Code } kind;
  std::string text;                  // heading, paragraph, code, the chart's caption
  std::vector<std::string> items;    // list
  Table table;
  std::string svg, file;             // chart: the document and its file under charts/
};

std::string svgText(const std::string &text) { return html(text); }

// Axes, ticks and labels for a chart of `w` x `h` with a plot area inset by the margins.
struct Frame {
  double w = 720, h = 340, left = 70, right = 20, top = 30, bottom = 50;
  double x0, x1, y0, y1;  // data ranges
  bool logX = false, logY = false;
  double px(double x) const {
    const double a = logX ? std::log10(x0) : x0, b = logX ? std::log10(x1) : x1, v = logX ? std::log10(x) : x;
    return left + (w - left - right) * (b > a ? (v - a) / (b - a) : 0.5);
  }
  double py(double y) const {
    const double a = logY ? std::log10(y0) : y0, b = logY ? std::log10(y1) : y1, v = logY ? std::log10(y) : y;
    return h - bottom - (h - top - bottom) * (b > a ? (v - a) / (b - a) : 0.5);
  }
};

std::string svgOpen(const Frame &fr, const std::string &title) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + f(fr.w, 0) + "\" height=\"" + f(fr.h, 0) +
                  "\" viewBox=\"0 0 " + f(fr.w, 0) + " " + f(fr.h, 0) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  s += "<text x=\"" + f(fr.left, 0) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" + svgText(title) + "</text>\n";
  s += "<rect x=\"" + f(fr.left, 1) + "\" y=\"" + f(fr.top, 1) + "\" width=\"" + f(fr.w - fr.left - fr.right, 1) + "\" height=\"" +
       f(fr.h - fr.top - fr.bottom, 1) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  return s;
}

std::string line(double x1, double y1, double x2, double y2, const std::string &stroke, const std::string &extra = {}) {
  return "<line x1=\"" + f(x1, 1) + "\" y1=\"" + f(y1, 1) + "\" x2=\"" + f(x2, 1) + "\" y2=\"" + f(y2, 1) + "\" stroke=\"" + stroke + "\"" +
         extra + "/>\n";
}

std::string label(double x, double y, const std::string &text, const std::string &anchor = "middle", const std::string &extra = {}) {
  return "<text x=\"" + f(x, 1) + "\" y=\"" + f(y, 1) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" + svgText(text) + "</text>\n";
}

// Short text for a number of flop/s or byte/s.
std::string si(double v, const std::string &unit) {
  const char *prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return f(v, v < 10 ? 2 : v < 100 ? 1 : 0) + " " + prefixes[i] + unit;
}

// The task's cost formulas for a configuration: FLOPs and compulsory DRAM bytes (0 when missing).
std::pair<double, double> costOf(const Task &task, const std::string &config) {
  const SizeConfig *c = task.config(config);
  if (!c) return {0, 0};
  try {
    return {static_cast<double>(task.flops.evaluate(c->values)), static_cast<double>(task.bytes.evaluate(c->values))};
  } catch (const std::exception &) {
    return {0, 0};
  }
}

// Geometric mean over the timed configurations, as the experience memory keeps it; 0: not timed.
double geomeanSpeedup(const EvaluationResult &r) { return memory::measuredOf(r, nullptr).speedup; }

}  // namespace

std::string speedupHistorySvg(const std::vector<HistoryPoint> &history) {
  Frame fr;
  std::vector<const HistoryPoint *> timed;
  for (const auto &p : history)
    if (p.speedup > 0) timed.push_back(&p);
  fr.x0 = 0;
  fr.x1 = std::max<double>(1, static_cast<double>(history.size()) - 1);
  double top = 1.0;
  for (const auto *p : timed) top = std::max(top, p->speedup);
  fr.y0 = 0;
  fr.y1 = top * 1.15;
  std::string s = svgOpen(fr, "Speedup over the reference, run by run");
  for (int i = 0; i <= 4; ++i) {
    const double v = fr.y1 * i / 4;
    s += line(fr.left, fr.py(v), fr.w - fr.right, fr.py(v), "#e5e5e5");
    s += label(fr.left - 6, fr.py(v) + 4, f(v, 2) + "x", "end");
  }
  s += line(fr.left, fr.py(1), fr.w - fr.right, fr.py(1), "#999", " stroke-dasharray=\"4 3\"");
  s += label(fr.w - fr.right - 4, fr.py(1) - 4, "the reference", "end", " fill=\"#777\"");
  s += label((fr.left + fr.w - fr.right) / 2, fr.h - 12, "runs of the task in the workspace, oldest first (" +
                                                           std::to_string(history.size()) + ")");
  // The best so far as a step line, each run as a dot; failed runs as crosses on the axis.
  std::string path;
  double best = 0;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const auto &p = history[i];
    const double x = fr.px(static_cast<double>(i));
    if (p.speedup > 0) {
      if (p.speedup > best) {
        if (best > 0) path += " L" + f(x, 1) + "," + f(fr.py(best), 1);
        best = p.speedup;
        path += (path.empty() ? "M" : " L") + f(x, 1) + "," + f(fr.py(best), 1);
      }
      s += "<circle cx=\"" + f(x, 1) + "\" cy=\"" + f(fr.py(p.speedup), 1) + "\" r=\"" + (p.exported ? "6" : "3.5") + "\" fill=\"" +
           (p.exported ? "#d62728" : "#1f77b4") + "\"><title>run " + std::to_string(p.run) + ": " + f(p.speedup, 2) + "x (" +
           svgText(p.source) + ")</title></circle>\n";
    } else {
      const double y = fr.py(0);
      s += line(x - 3, y - 3, x + 3, y + 3, "#c44") + line(x - 3, y + 3, x + 3, y - 3, "#c44");
    }
  }
  if (!path.empty()) {
    path += " L" + f(fr.px(fr.x1), 1) + "," + f(fr.py(best), 1);
    s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"1.5\"/>\n";
  }
  return s + "</svg>\n";
}

std::string rooflineSvg(const ExportInput &in) {
  struct Point {
    std::string config;
    double intensity, flops;
  };
  std::vector<Point> points;
  double bandwidth = 0, peak = 0;
  if (in.result)
    for (const auto &c : in.result->configs) {
      if (!c.timing || !c.timing->ok || !c.timing->roofline || c.timing->candidate.median <= 0) continue;
      const auto &r = *c.timing->roofline;
      const auto [flops, bytes] = costOf(in.task, c.config);
      if (flops <= 0 || bytes <= 0) continue;
      const double seconds = c.timing->candidate.median / 1e3;
      points.push_back({c.config, flops / bytes, flops / seconds});
      bandwidth = std::max(bandwidth, r.peakBandwidthBytesPerS);
      peak = std::max(peak, r.peakFlopsPerS);
    }
  Frame fr;
  fr.logX = fr.logY = true;
  if (points.empty() || bandwidth <= 0) {
    std::string s = svgOpen(fr, "Roofline");
    return s + label(fr.w / 2, fr.h / 2, "no timed configuration with a roofline (run it timed on a GPU)") + "</svg>\n";
  }
  if (peak <= 0) peak = bandwidth * 1000;  // only DRAM bandwidth known: a flat roof far above
  double iMin = points.front().intensity, iMax = iMin, fMin = points.front().flops, fMax = fMin;
  for (const auto &p : points) {
    iMin = std::min(iMin, p.intensity);
    iMax = std::max(iMax, p.intensity);
    fMin = std::min(fMin, p.flops);
    fMax = std::max(fMax, p.flops);
  }
  const double ridge = peak / bandwidth;
  fr.x0 = std::pow(10, std::floor(std::log10(std::min(iMin, ridge) / 4)));
  fr.x1 = std::pow(10, std::ceil(std::log10(std::max(iMax, ridge) * 4)));
  fr.y0 = std::pow(10, std::floor(std::log10(std::min(fMin, bandwidth * fr.x0) / 2)));
  fr.y1 = std::pow(10, std::ceil(std::log10(peak * 2)));
  std::string s = svgOpen(fr, "Roofline (" + (in.result->device.empty() ? std::string("GPU") : in.result->device) + ")");
  for (double x = fr.x0; x <= fr.x1 * 1.0001; x *= 10) {
    s += line(fr.px(x), fr.top, fr.px(x), fr.h - fr.bottom, "#eee");
    s += label(fr.px(x), fr.h - fr.bottom + 16, x >= 1 ? f(x, 0) : f(x, x >= 0.1 ? 1 : 2));
  }
  for (double y = fr.y0; y <= fr.y1 * 1.0001; y *= 10) {
    s += line(fr.left, fr.py(y), fr.w - fr.right, fr.py(y), "#eee");
    s += label(fr.left - 6, fr.py(y) + 4, si(y, "FLOP/s"), "end", " font-size=\"10\"");
  }
  s += label((fr.left + fr.w - fr.right) / 2, fr.h - 12, "arithmetic intensity (FLOP per byte of DRAM traffic)");
  // The roof: bandwidth x intensity up to the ridge, then the compute peak.
  const double xa = fr.x0, xb = std::min(ridge, fr.x1);
  s += "<path d=\"M" + f(fr.px(xa), 1) + "," + f(fr.py(std::max(fr.y0, bandwidth * xa)), 1) + " L" + f(fr.px(xb), 1) + "," +
       f(fr.py(bandwidth * xb), 1) + " L" + f(fr.px(fr.x1), 1) + "," + f(fr.py(peak), 1) +
       "\" fill=\"none\" stroke=\"#444\" stroke-width=\"2\"/>\n";
  s += label(fr.px(xa) + 8, fr.py(std::max(fr.y0, bandwidth * xa)) - 8, si(bandwidth, "B/s"), "start", " fill=\"#444\"");
  s += label(fr.w - fr.right - 6, fr.py(peak) - 6, si(peak, "FLOP/s") + " peak", "end", " fill=\"#444\"");
  std::vector<std::pair<double, double>> placed;  // labels already drawn: none overlaps another
  for (const auto &p : points) {
    const double x = fr.px(p.intensity), y = fr.py(p.flops);
    s += "<circle cx=\"" + f(x, 1) + "\" cy=\"" + f(y, 1) + "\" r=\"5\" fill=\"#d62728\"><title>" + svgText(p.config) +
         "</title></circle>\n";
    double ly = y + 4;
    for (bool moved = true; moved;) {
      moved = false;
      for (const auto &[px, py] : placed)
        if (std::fabs(px - x) < 60 && std::fabs(py - ly) < 13) {
          ly = py + 14;
          moved = true;
        }
    }
    placed.emplace_back(x, ly);
    s += label(x + 8, ly, p.config, "start");
  }
  return s + "</svg>\n";
}

ReportContext reportContextFor(const ExportInput &in, Workspace *workspace, memory::ExperienceStore *store) {
  ReportContext ctx;
  const std::string hash = contentHash(in.code);
  if (workspace) {
    std::vector<EvaluationRecord> runs;
    for (const auto &record : workspace->tasks())
      if (record.name == in.task.name)
        for (const auto &run : workspace->evaluations(record.id)) runs.push_back(run);
    std::sort(runs.begin(), runs.end(), [](const auto &a, const auto &b) { return a.id < b.id; });
    for (const auto &run : runs) {
      if (run.device.empty()) continue;  // compiled only: nothing measured
      HistoryPoint p;
      p.run = run.id;
      p.at = run.finishedAt;
      p.source = run.sourceName;
      p.outcome = run.outcome;
      if (const auto full = workspace->evaluation(run.id)) p.speedup = geomeanSpeedup(parseEvaluationResult(full->resultJson));
      p.exported = in.provenance.run ? run.id == in.provenance.run : run.sourceHash == hash;
      ctx.history.push_back(p);
    }
    if (!in.provenance.session.empty()) {
      agent::SessionStore sessions(std::shared_ptr<Workspace>(workspace, [](Workspace *) {}));
      if (const auto s = sessions.session(in.provenance.session)) {
        nlohmann::json settings = s->settings;
        settings.erase("taskFolder");
        ctx.session = "model " + s->provider + " / " + s->model + "; settings " +
                      settings.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        std::set<std::string> cards;
        for (const auto &a : sessions.sessionAttempts(in.provenance.session))
          for (const auto &c : a.cards) cards.insert(c);
        ctx.cards.assign(cards.begin(), cards.end());
      }
    }
  }
  // A step of the task's lineage: the steps that led to it, each with what it adds.
  try {
    if (hasLineage(in.task)) {
      const auto lineage = loadLineage(in.task);
      const auto sources = stepSources(lineage.steps);
      for (std::size_t i = 0; i < lineage.steps.size() && i < sources.size(); ++i)
        if (contentHash(sources[i]) == hash) {
          for (std::size_t j = 0; j <= i; ++j)
            ctx.lineage.push_back({"step " + std::to_string(lineage.steps[j].index) + ": " + lineage.steps[j].title,
                                   clippedLine(lineage.steps[j].adds, 240), 0});
          break;
        }
    }
  } catch (const std::exception &) {
    // A broken lineage.toml: the report goes without it.
  }
  if (store) {
    if (auto id = store->findByCode(in.task.name, hash)) {
      std::vector<memory::Case> chain;
      for (std::optional<std::int64_t> at = id; at && chain.size() < 50;) {
        const auto c = store->get(*at, false);
        if (!c) break;
        chain.push_back(*c);
        at = c->parent;
      }
      std::reverse(chain.begin(), chain.end());
      for (const auto &c : chain)
        ctx.experience.push_back({"Case " + std::to_string(c.id) + ", " + memory::toString(c.label) + ", x" + f(c.ratio, 2) + " (" + c.source + ")",
                                  clippedLine(c.idea.empty() ? c.journal : c.idea, 200), c.correct ? c.speedup : 0});
    }
  }
  return ctx;
}

ExportedPackage exportReport(const ExportInput &given, const ReportContext &ctx, const fs::path &dir, bool overwrite) {
  ExportInput in = prepared(given);
  const Layout l = layoutOf(in);
  in.tunables = l.tunables;
  const Task &task = in.task;
  std::vector<Block> blocks;
  auto heading = [&](const std::string &t) { blocks.push_back({Block::Kind::Heading, t, {}, {}, {}, {}}); };
  auto para = [&](const std::string &t) { blocks.push_back({Block::Kind::Paragraph, t, {}, {}, {}, {}}); };
  auto list = [&](std::vector<std::string> items) { blocks.push_back({Block::Kind::List, {}, std::move(items), {}, {}, {}}); };
  auto table = [&](Table t) { blocks.push_back({Block::Kind::Table, {}, {}, std::move(t), {}, {}}); };
  auto chart = [&](const std::string &caption, const std::string &svg, const std::string &file) {
    blocks.push_back({Block::Kind::Chart, caption, {}, {}, svg, file});
  };

  // Provenance.
  Table prov{{"provenance", ""}, {}};
  prov.rows.push_back({"exported from", in.provenance.what});
  if (!in.provenance.workspace.empty()) prov.rows.push_back({"workspace", in.provenance.workspace});
  if (!in.provenance.session.empty()) prov.rows.push_back({"session", in.provenance.session});
  if (in.provenance.run) prov.rows.push_back({"run", std::to_string(in.provenance.run)});
  prov.rows.push_back({"candidate", in.provenance.candidateHash + (in.provenance.sourceName.empty() ? "" : " (" + in.provenance.sourceName + ")")});
  prov.rows.push_back({"exported", in.provenance.exportedAt + " by Kernel Workbench " + in.provenance.workbench});
  if (!l.tunables.empty()) prov.rows.push_back({"tunables", tunablesText(l.tunables)});
  table(prov);

  heading("What it computes");
  para(task.description + ".");
  {
    std::vector<std::string> items;
    for (const auto &t : task.tensors) items.push_back(describe(t));
    list(items);
    Table sizes{{"configuration"}, {}};
    for (const auto &n : task.sizeNames) sizes.head.push_back(n);
    for (const auto &c : task.configs) {
      std::vector<std::string> row{c.name};
      for (const auto &n : task.sizeNames) row.push_back(c.values.count(n) ? std::to_string(c.values.at(n)) : "");
      sizes.rows.push_back(row);
    }
    table(sizes);
  }

  heading("Final measurements");
  if (!in.result || in.result->configs.empty()) {
    para("Not measured: no run of this code on a GPU is known (export a run, or run it first).");
  } else {
    const auto &r = *in.result;
    para("Outcome: " + std::string(kwb::toString(r.outcome)) + (r.message.empty() ? "" : " (" + r.message + ")") + ". GPU: " +
         (r.device.empty() ? "none (compiled only)" : r.device) + ". Times are medians of the samples; the spread is the "
         "interquartile range over the median.");
    Table m{{"configuration", "outcome", "kernel (ms)", "spread", "min (ms)", "samples", "reference (ms)", "speedup", "roofline floor (ms)",
             "timer"},
            {}};
    for (const auto &c : r.configs) {
      std::vector<std::string> row{c.config, kwb::toString(c.outcome)};
      if (c.timing && c.timing->ok) {
        const auto &t = *c.timing;
        row.push_back(f(t.candidate.median, 4));
        row.push_back("±" + f(t.candidate.relativeSpread * 100, 1) + "%");
        row.push_back(f(t.candidate.min, 4));
        row.push_back(std::to_string(t.candidate.count));
        row.push_back(t.referenceTimed ? f(t.reference.median, 4) : "-");
        row.push_back(t.speedup > 0 ? f(t.speedup, 2) + "x" : "-");
        row.push_back(t.roofline ? f(t.roofline->floorMs, 4) + " (" + t.roofline->bound + ")" : "-");
        row.push_back(t.timer);
      } else {
        for (int i = 0; i < 8; ++i) row.push_back(i == 0 && c.timing ? "not timed: " + c.timing->error : "-");
      }
      m.rows.push_back(row);
    }
    table(m);
    if (const double g = geomeanSpeedup(r); g > 0) para("Geometric mean speedup over the reference: " + f(g, 2) + "x.");
  }

  heading("Speedup history");
  if (ctx.history.empty()) {
    para("No runs of this task on a GPU in the workspace.");
  } else {
    chart("Each run of the task in the workspace (the exported one in red; crosses: not correct or not timed); "
          "the green line is the best so far.",
          speedupHistorySvg(ctx.history), "speedup-history.svg");
    Table h{{"run", "finished", "file", "outcome", "speedup"}, {}};
    const std::size_t from = ctx.history.size() > 15 ? ctx.history.size() - 15 : 0;
    for (std::size_t i = from; i < ctx.history.size(); ++i) {
      const auto &p = ctx.history[i];
      h.rows.push_back({std::to_string(p.run) + (p.exported ? " (exported)" : ""), p.at, p.source, p.outcome,
                        p.speedup > 0 ? f(p.speedup, 2) + "x" : "-"});
    }
    if (from) para("The last 15 of " + std::to_string(ctx.history.size()) + " runs:");
    table(h);
  }

  heading("Roofline position");
  {
    std::vector<std::string> items;
    if (in.result)
      for (const auto &c : in.result->configs) {
        if (!c.timing || !c.timing->ok || !c.timing->roofline || c.timing->candidate.median <= 0) continue;
        const auto &r = *c.timing->roofline;
        const auto [flops, bytes] = costOf(in.task, c.config);
        if (flops <= 0 || bytes <= 0) continue;
        const double s = c.timing->candidate.median / 1e3;
        std::string item = c.config + ": " + si(bytes / s, "B/s") + " of compulsory traffic";
        if (r.peakBandwidthBytesPerS > 0) item += " (" + f(100 * bytes / s / r.peakBandwidthBytesPerS, 1) + "% of DRAM's " + si(r.peakBandwidthBytesPerS, "B/s") + ")";
        item += ", " + si(flops / s, "FLOP/s");
        if (r.peakFlopsPerS > 0) item += " (" + f(100 * flops / s / r.peakFlopsPerS, 1) + "% of " + si(r.peakFlopsPerS, "FLOP/s") + ")";
        item += "; the workbench's floor for it, " + f(r.floorMs, 4) + " ms (" + r.bound + ", " + r.ceilings + " ceilings, L2 reuse counted), is " +
                f(100 * r.floorMs / c.timing->candidate.median, 0) + "% of its time";
        items.push_back(item);
      }
    if (items.empty()) para("No roofline: the task's cost formulas or a timed run are missing.");
    else {
      chart("Achieved FLOP/s against arithmetic intensity (the task's cost formulas: FLOPs over compulsory bytes), under "
            "the GPU's ceilings. A point above the memory roof reuses data from the L2 cache.",
            rooflineSvg(in), "roofline.svg");
      list(items);
    }
  }

  heading("Profiler metrics against the baseline");
  if (!ctx.profile || ctx.profile->metrics.empty()) {
    para(ctx.profile ? "Not profiled: " + ctx.profile->message
                     : "Not profiled: pass --profile on a machine with a GPU (kwb export), or export from the window after "
                       "profiling.");
  } else {
    para("The kernel and the task's starter (the baseline), profiled with CUPTI on " + ctx.profile->device + ", configuration " +
         ctx.profile->config + ".");
    Table p{{"metric", "baseline", "kernel", "change"}, {}};
    for (const auto &m : ctx.profile->metrics) {
      std::string base = "-", change = "-";
      if (ctx.baselineProfile)
        for (const auto &b : ctx.baselineProfile->metrics)
          if (b.name == m.name) {
            base = f(b.value, 2) + " " + b.unit;
            if (b.value != 0) change = (m.value >= b.value ? "+" : "") + f(100 * (m.value - b.value) / std::fabs(b.value), 1) + "%";
          }
      p.rows.push_back({m.label.empty() ? m.name : m.label, base, f(m.value, 2) + " " + m.unit, change});
    }
    table(p);
  }

  heading("What led to it");
  {
    bool any = false;
    if (!ctx.lineage.empty()) {
      para("It is step " + std::to_string(ctx.lineage.size()) + " of the task's lineage (expert versions from naive to "
           "fast, each adding one optimization):");
      std::vector<std::string> items;
      for (const auto &e : ctx.lineage) items.push_back(e.what + (e.detail.empty() ? "" : ": " + e.detail));
      list(items);
      any = true;
    }
    if (!ctx.experience.empty()) {
      para("The experience memory's Cases from the first attempt to this kernel:");
      std::vector<std::string> items;
      for (const auto &e : ctx.experience)
        items.push_back(e.what + (e.speedup > 0 ? ", " + f(e.speedup, 2) + "x the reference" : "") + ": " + e.detail);
      list(items);
      any = true;
    }
    if (!ctx.session.empty()) {
      para("Agent session " + in.provenance.session + ": " + ctx.session + ".");
      any = true;
    }
    if (!ctx.cards.empty()) {
      para("Skill cards its prompts carried: " + joined(ctx.cards, ", ") + ".");
      any = true;
    }
    if (!any) para("Nothing recorded: not a lineage step, no Case of this code in the experience memory, no agent session.");
  }

  heading("Toolkit, driver and GPU");
  {
    std::vector<std::string> items;
    if (in.result) {
      items.push_back("GPU: " + (in.result->device.empty() ? std::string("none (compiled only)") : in.result->device) + ", compiled for " +
                      in.result->arch);
      items.push_back("CUDA toolkit: " + (in.result->candidate.toolkitVersion.empty() ? std::string("not recorded") : in.result->candidate.toolkitVersion));
      items.push_back("Sandbox: " + (in.result->sandbox.empty() ? std::string("not recorded") : in.result->sandbox));
    }
    items.push_back("Driver: " + (ctx.driver.empty() ? std::string("not known") : ctx.driver));
    items.push_back("Kernel Workbench " + in.provenance.workbench);
    list(items);
  }

  heading("The kernel");
  blocks.push_back({Block::Kind::Code, in.code, {}, {}, {}, {}});

  // Render.
  const std::string title = task.name + ": optimized kernel report";
  std::string md = "# " + title + "\n\n";
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html(title) + "</title>\n<style>\n"
                     "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\n"
                     "table{border-collapse:collapse;margin:0.6em 0 1.2em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;"
                     "font-size:13px}th{background:#f2f2f2}\nh2{border-bottom:1px solid #ddd;padding-bottom:3px;margin-top:1.6em}\n"
                     "pre{background:#f7f7f7;border:1px solid #ddd;padding:8px;overflow-x:auto;font-size:12px}\n"
                     "figure{margin:0.8em 0}figcaption{color:#555;font-size:13px}\n</style></head><body>\n<h1>" + html(title) + "</h1>\n";
  std::vector<std::pair<std::string, std::string>> charts;
  for (const auto &b : blocks) {
    switch (b.kind) {
      case Block::Kind::Heading:
        md += "## " + b.text + "\n\n";
        page += "<h2>" + html(b.text) + "</h2>\n";
        break;
      case Block::Kind::Paragraph:
        md += b.text + "\n\n";
        page += "<p>" + html(b.text) + "</p>\n";
        break;
      case Block::Kind::List:
        for (const auto &i : b.items) md += "- " + i + "\n";
        md += "\n";
        page += "<ul>";
        for (const auto &i : b.items) page += "<li>" + html(i) + "</li>";
        page += "</ul>\n";
        break;
      case Block::Kind::Table:
        md += b.table.markdown();
        page += b.table.htmlText();
        break;
      case Block::Kind::Chart:
        md += "![" + b.text + "](charts/" + b.file + ")\n\n" + b.text + "\n\n";
        page += "<figure><img alt=\"" + html(b.text) + "\" src=\"data:image/svg+xml;base64," + base64Encode(b.svg) +
                "\"><figcaption>" + html(b.text) + "</figcaption></figure>\n";
        charts.emplace_back(b.file, b.svg);
        break;
      case Block::Kind::Code:
        md += "```cuda\n" + b.text + (b.text.empty() || b.text.back() == '\n' ? "" : "\n") + "```\n";
        page += "<details open><summary>" + html(in.provenance.sourceName.empty() ? "kernel.cu" : in.provenance.sourceName) +
                "</summary><pre><code>" + html(b.text) + "</code></pre></details>\n";
        break;
    }
  }
  page += "</body></html>\n";

  PackageWriter writer(dir, overwrite, in.notes);
  ExportedPackage &out = writer.package;
  auto put = [&](const std::string &name, const std::string &text) { writer.put(name, text); };
  put("report.md", md);
  put("report.html", page);
  for (const auto &[file, svg] : charts) put("charts/" + file, svg);
  put("provenance.json", provenanceJson(in));
  if (!ctx.profile) out.notes.push_back("no profiler metrics in the report (--profile, on a machine with a GPU)");
  return out;
}

}  // namespace kwb::exporting
