#include "core/lineage/lineage_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/lineage/kernel_features.h"
#include "core/lineage/lineage_build.h"
#include "core/store/database.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"
#include "core/text/line_diff.h"
#include "core/text/printable.h"

namespace kwb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string joined(const std::vector<std::string> &parts, const std::string &separator) {
  std::string out;
  for (const auto &p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::string joined(const std::set<std::string> &parts, const std::string &separator) {
  return joined(std::vector<std::string>(parts.begin(), parts.end()), separator);
}

// "03-smem-tiles.cu" -> "smem tiles"
std::string titleFromFileName(const fs::path &file) {
  std::string stem = file.stem().string();
  std::size_t i = 0;
  while (i < stem.size() && (std::isdigit(static_cast<unsigned char>(stem[i])) || stem[i] == '-' || stem[i] == '_')) ++i;
  if (i < stem.size()) stem = stem.substr(i);
  std::replace(stem.begin(), stem.end(), '-', ' ');
  std::replace(stem.begin(), stem.end(), '_', ' ');
  return stem;
}

double kernelFigure(const json &kernels, const std::string &kernel, const char *key) {
  for (const auto &k : kernels)
    if (k.value("name", std::string()) == kernel || kernels.size() == 1) return k.value(key, 0.0);
  return 0;
}

// The source with its opening comment block (the step's "Adds:"/"Relies on:" header) blanked,
// line for line: the carrier shows the code that changed, at its own line numbers.
std::string withoutHeader(const std::string &source) {
  std::string out;
  std::size_t pos = 0;
  bool header = true;
  while (pos < source.size()) {
    std::size_t end = source.find('\n', pos);
    if (end == std::string::npos) end = source.size();
    const std::string line = source.substr(pos, end - pos);
    const auto first = line.find_first_not_of(" \t");
    if (header && first != std::string::npos && line.compare(first, 2, "//") == 0) {
      out += "\n";
    } else {
      header = false;
      out += line + (end < source.size() ? "\n" : "");
    }
    pos = end + 1;
  }
  return out;
}

std::string oneLine(const std::string &text, std::size_t max) {
  std::string s = text;
  if (const auto end = s.find(". "); end != std::string::npos) s = s.substr(0, end + 1);
  if (s.size() <= max) return s;
  auto cut = s.rfind(' ', max);
  if (cut == std::string::npos || cut < max / 2) cut = max;
  return s.substr(0, cut) + " ...";
}

}  // namespace

std::vector<std::string> stepSources(const std::vector<LineageStep> &steps) {
  std::vector<std::string> sources;
  for (const auto &step : steps) {
    SourceReadOptions o;
    o.what = "lineage step";
    sources.push_back(readSourceFile(step.file, o));
  }
  return sources;
}

std::vector<LineageStep> versionsOf(const Task &task, const fs::path &folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw ManifestError(folder.string(), 0, "", "not a folder of kernel versions (expected *.cu files, and optionally lineage.toml)");
  if (fs::is_regular_file(folder / kLineageFileName, ec)) return loadLineageFrom(task, folder).steps;
  std::vector<fs::path> files;
  for (const auto &entry : fs::directory_iterator(folder, ec))
    if (entry.path().extension() == ".cu" && entry.is_regular_file(ec)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (files.size() < 2)
    throw ManifestError(folder.string(), 0, "",
                        "a lineage needs at least two versions (*.cu files, taken in name order); found " +
                            std::to_string(files.size()));
  std::vector<LineageStep> steps;
  for (const auto &file : files) {
    LineageStep step;
    step.index = static_cast<int>(steps.size()) + 1;
    step.file = fs::absolute(file);
    step.title = titleFromFileName(file);
    SourceReadOptions o;
    o.what = "kernel version";
    const std::string source = readSourceFile(step.file, o);
    readStepHeader(source, step, false);
    step.hostLauncher = detectSourceForm(source) == SourceForm::HostLauncher;
    steps.push_back(std::move(step));
  }
  return steps;
}

bool passesGate(const EvaluationResult &r, std::string *why) {
  auto fail = [&](const std::string &w) {
    if (why) *why = w;
    return false;
  };
  if (r.outcome != Outcome::Correct) return fail(toString(r.outcome) + (r.message.empty() ? "" : ": " + r.message));
  if (r.configs.empty()) return fail("no configuration ran");
  for (const auto &c : r.configs) {
    if (c.outcome != Outcome::Correct) return fail(c.config + ": " + toString(c.outcome) + (c.message.empty() ? "" : ": " + c.message));
    if (!c.timing) return fail(c.config + ": not timed (a lineage step must be measured; run it on a GPU)");
    if (!c.timing->ok) return fail(c.config + ": not timed: " + c.timing->error);
    if (c.timing->suspicious) return fail(c.config + ": " + c.timing->suspiciousReason);
  }
  return true;
}

LineageRecord recordLineage(const Task &task, const std::vector<LineageStep> &steps,
                            const std::vector<std::string> &sources, const std::vector<EvaluationResult> &results,
                            const std::string &name, const std::string &origin) {
  LineageRecord l;
  l.name = name;
  l.task = task.name;
  l.taskFolder = task.folder.string();
  l.origin = origin;
  l.builtAt = utcTimestamp();
  l.steps.reserve(steps.size());  // `previous` points into it
  const LineageStepRecord *previous = nullptr;  // the last accepted step
  std::map<std::string, double> previousMs;
  for (std::size_t i = 0; i < steps.size() && i < results.size() && i < sources.size(); ++i) {
    const auto &step = steps[i];
    const auto &r = results[i];
    if (l.device.empty()) l.device = r.device;
    if (l.arch.empty()) l.arch = r.arch;
    LineageStepRecord s;
    s.position = step.index;
    s.title = step.title;
    s.sourceName = step.file.filename().string();
    s.source = sources[i];
    s.adds = step.adds;
    s.reliesOn = step.reliesOn;
    s.risks = step.risks;
    const Task stepTask = taskForStep(task, step);
    s.kernel = stepTask.launch ? stepTask.launch->kernel : task.reference.launch.kernel;
    if (step.launch) {
      s.launch["kernel"] = step.launch->kernel;
      for (const auto &g : step.launch->grid) s.launch["grid"].push_back(g.text());
      for (const auto &b : step.launch->block) s.launch["block"].push_back(b.text());
      s.launch["shared_bytes"] = step.launch->sharedBytes.text();
      s.launch["args"] = step.launch->args;
    }
    if (!step.tunables.empty()) s.launch["tunables"] = step.tunables;
    s.outcome = toString(r.outcome);
    s.accepted = passesGate(r, &s.reason);
    // Every step pays (KLineage): read forward, a step must be faster than its parent at the
    // configuration the lineage targets; one that is not is rejected with its numbers (and
    // becomes risk evidence of its parent's card, not a card).
    if (s.accepted && previous) {
      const std::string target = largestConfiguration(task);
      double ms = 0;
      for (const auto &c : r.configs)
        if (c.config == target && c.timing && c.timing->ok) ms = c.timing->candidate.median;
      const auto parent = previousMs.find(target);
      if (ms > 0 && parent != previousMs.end() && parent->second > 0 && !(ms < parent->second)) {
        s.accepted = false;
        char text[256];
        std::snprintf(text, sizeof text,
                      "does not pay: %.4g ms at %s against %.4g ms of step %d, its parent (x%.2f); a lineage step must "
                      "be faster than its parent at the configuration the lineage targets",
                      ms, target.c_str(), parent->second, previous->position, parent->second / ms);
        s.reason = text;
      }
    }
    s.kernels = json(r.candidate.kernels);
    for (const auto &c : r.configs) {
      StepFigures f;
      f.config = c.config;
      if (c.timing && c.timing->ok) {
        f.medianMs = c.timing->candidate.median;
        f.relativeSpread = c.timing->candidate.relativeSpread;
        f.speedupVsReference = c.timing->speedup;
        if (const auto *config = task.config(c.config); config && f.medianMs > 0) {
          f.gflops = static_cast<double>(task.flops.evaluate(config->values)) / (f.medianMs * 1e-3) / 1e9;
          f.gbytesPerS = static_cast<double>(task.bytes.evaluate(config->values)) / (f.medianMs * 1e-3) / 1e9;
        }
        if (s.accepted && previousMs.count(c.config) && f.medianMs > 0) f.speedupVsPrevious = previousMs[c.config] / f.medianMs;
      }
      s.figures.push_back(f);
    }
    // The kernel's own figures against the previous accepted step's.
    if (previous && s.accepted) {
      for (const char *key : {"registers", "shared_static_bytes", "spill_store_bytes", "spill_load_bytes"}) {
        const double before = kernelFigure(previous->kernels, previous->kernel, key);
        const double after = kernelFigure(s.kernels, s.kernel, key);
        if (before != after) s.deltas.push_back(MetricDelta{key, before, after});
      }
      for (const auto &f : s.figures)
        for (const auto &p : previous->figures)
          if (p.config == f.config && p.gflops > 0 && f.gflops > 0)
            s.deltas.push_back(MetricDelta{"gflops:" + f.config, p.gflops, f.gflops});
    }
    l.steps.push_back(std::move(s));
    if (l.steps.back().accepted) {
      previous = &l.steps.back();
      previousMs.clear();
      for (const auto &f : previous->figures) previousMs[f.config] = f.medianMs;
    }
  }
  return l;
}

std::string operatorClassOf(const Task &task) {
  std::string name = task.name;
  for (auto &c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char *known : {"gemm", "conv", "attention", "softmax", "layernorm", "rmsnorm", "reduce", "transpose",
                            "histogram", "scan", "blur", "topk", "sort"})
    if (name.find(known) != std::string::npos) return known;
  return name;
}

Carrier carrierOf(const std::string &before, const std::string &after, std::size_t context, std::size_t maxLines) {
  Carrier c;
  const auto edits = lineDiff(before, after);
  // Which edits to show: every change and `context` unchanged lines on either side.
  std::vector<bool> shown(edits.size(), false);
  for (std::size_t i = 0; i < edits.size(); ++i) {
    if (edits[i].kind == LineEdit::Kind::Same) continue;
    const std::size_t from = i >= context ? i - context : 0;
    const std::size_t to = std::min(edits.size(), i + context + 1);
    for (std::size_t k = from; k < to; ++k) shown[k] = true;
    if (edits[i].newLine) {
      if (!c.firstChangedLine) c.firstChangedLine = static_cast<int>(edits[i].newLine);
      c.lastChangedLine = static_cast<int>(edits[i].newLine);
    }
  }
  std::size_t beforeLines = 0, afterLines = 0, hiddenBefore = 0, hiddenAfter = 0;
  bool gap = false;
  for (std::size_t i = 0; i < edits.size(); ++i) {
    if (!shown[i]) {
      gap = true;
      continue;
    }
    if (gap && (beforeLines || afterLines)) {
      if (beforeLines < maxLines) c.before += "// ...\n", ++beforeLines;
      if (afterLines < maxLines) c.after += "// ...\n", ++afterLines;
    }
    gap = false;
    const auto &e = edits[i];
    if (e.kind != LineEdit::Kind::Added) {
      if (beforeLines < maxLines) c.before += e.text + "\n", ++beforeLines;
      else ++hiddenBefore;
    }
    if (e.kind != LineEdit::Kind::Removed) {
      if (afterLines < maxLines) c.after += e.text + "\n", ++afterLines;
      else ++hiddenAfter;
    }
  }
  // Blank lines that open a snippet (a header left out) say nothing.
  for (auto *snippet : {&c.before, &c.after}) {
    const auto first = snippet->find_first_not_of('\n');
    snippet->erase(0, first == std::string::npos ? snippet->size() : first);
  }
  if (hiddenBefore) c.before += "// ... (" + std::to_string(hiddenBefore) + " more lines)\n";
  if (hiddenAfter) c.after += "// ... (" + std::to_string(hiddenAfter) + " more lines)\n";
  return c;
}

namespace {

std::string dataTypes(const Task &task) {
  std::vector<std::string> in, out;
  for (const auto &t : task.tensors) {
    const std::string item = t.name + " " + std::string(dtypeName(t.dtype));
    (t.role == TensorRole::In ? in : out).push_back(item);
  }
  return "Measured with " + joined(in, ", ") + " in and " + joined(out, ", ") +
         " out (the task's tensors); other types were not tried.";
}

std::string layout(const Task &task, const LineageStepRecord &step) {
  std::vector<std::string> shapes;
  for (const auto &t : task.tensors) {
    std::vector<std::string> dims;
    for (const auto &d : t.shape) dims.push_back(d.text());
    shapes.push_back(t.name + "[" + joined(dims, ", ") + "]");
  }
  std::string text = "The task's tensors, contiguous and row-major: " + joined(shapes, ", ") + ".";
  static const char *kWords[] = {"layout", "row-major", "column", "contiguous", "stride", "align", "divisib",
                                 "multiple of", "%", "transpos", "coalesc"};
  for (const char *w : kWords)
    if (step.reliesOn.find(w) != std::string::npos) return text + " The step relies on: " + step.reliesOn;
  return text;
}

std::string storage(const LineageStepRecord &before, const LineageStepRecord &after) {
  auto figure = [](const LineageStepRecord &s, const char *key) {
    return static_cast<long long>(kernelFigure(s.kernels, s.kernel, key));
  };
  return "After the step " + after.kernel + " uses " + std::to_string(figure(after, "shared_static_bytes")) +
         " B of static shared memory and " + std::to_string(figure(after, "registers")) + " registers per thread (" +
         std::to_string(figure(after, "spill_store_bytes")) + " B spilled); before, " +
         std::to_string(figure(before, "shared_static_bytes")) + " B and " + std::to_string(figure(before, "registers")) +
         " registers. A device or a launch with less of either does not fit the same blocks.";
}

std::string pipeline(const std::set<std::string> &provides, const std::set<std::string> &requires_,
                     const LineageStepRecord &step) {
  static const char *kWords[] = {"sync", "barrier", "stage", "pipelin", "async", "overlap", "buffer", "latency"};
  std::string text = provides.empty() ? std::string("The step adds no feature the code shows; it tunes what is there.")
                                      : "The step adds " + joined(provides, ", ") + ".";
  if (!requires_.empty()) text += " It builds on " + joined(requires_, ", ") + ".";
  for (const char *w : kWords)
    if (step.reliesOn.find(w) != std::string::npos || step.adds.find(w) != std::string::npos)
      return text + " In its header's words: " + step.adds;
  return text;
}

std::string hardware(const std::set<std::string> &afterFeatures, const LineageRecord &lineage) {
  const std::string minimum = minimumArchitecture(afterFeatures);
  std::set<std::string> binding;  // the features that need that architecture
  for (const auto &f : afterFeatures)
    if (const auto *k = kernelFeature(f); k && minimum == k->minimumArch) binding.insert(f);
  return (minimum.empty() ? std::string("Any CUDA GPU for the features it uses")
                          : "Needs " + minimum + " or newer (" + joined(binding, ", ") + ")") +
         "; measured on " + (lineage.device.empty() ? std::string("an unknown device") : lineage.device) + " (" +
         lineage.arch + ").";
}

std::string exampleTable(const LineageStepRecord &before, const LineageStepRecord &after) {
  std::string t = "| configuration | before ms | after ms | speedup |\n|---|---|---|---|\n";
  for (const auto &f : after.figures)
    for (const auto &p : before.figures)
      if (p.config == f.config && p.medianMs > 0 && f.medianMs > 0)
        t += "| " + f.config + " | " + fixed(p.medianMs, 4) + " | " + fixed(f.medianMs, 4) + " | " +
             fixed(p.medianMs / f.medianMs, 2) + "x |\n";
  return t + "\n";
}

CardEvidence evidenceOf(const char *kind, const LineageRecord &lineage, const LineageStepRecord &step) {
  CardEvidence e;
  e.kind = kind;
  e.lineage = lineage.name;
  e.step = step.position;
  e.task = lineage.task;
  e.device = lineage.device;
  e.arch = lineage.arch;
  e.at = lineage.builtAt;
  return e;
}

}  // namespace

namespace {

// Whether the features a step adds name it: not when it adds none, nor when all it adds is
// incidental to any rewrite (an unroll pragma, a fast intrinsic, launch bounds, __restrict__) and
// its title and header do not speak of it: the Welford step that happens to use __fdividef is
// not a fast-math card, and the per-warp bins with a #pragma unroll not a loop-unrolling one.
bool namesTheStep(const std::set<std::string> &provides, const LineageStepRecord &step) {
  static const std::set<std::string> incidental = {"loop-unrolling", "fast-math", "launch-bounds", "read-only-cache"};
  if (provides.empty()) return false;
  if (std::any_of(provides.begin(), provides.end(), [](const std::string &f) { return !incidental.count(f); })) return true;
  return !featuresNamedIn(step.title + "\n" + step.adds, provides).empty();
}

}  // namespace

std::vector<SkillCard> liftCards(const LineageRecord &lineage, const Task &task) {
  std::vector<SkillCard> cards;
  const LineageStepRecord *previous = nullptr;
  for (std::size_t i = 0; i < lineage.steps.size(); ++i) {
    const auto &step = lineage.steps[i];
    if (!step.accepted) continue;
    if (!previous) {
      previous = &step;
      continue;
    }
    const auto &before = *previous;
    const auto beforeFeatures = detectFeatures(before.source), afterFeatures = detectFeatures(step.source);
    // What the step adds is what the card provides. What it takes away (wgmma replacing mma.sync)
    // is not a conflict: the card is how a kernel with it moves on. It is kept as `replaces`; the
    // card's conflicts are left to a reviewer, as nothing measured says two features clash.
    std::set<std::string> provides, replaces;
    std::set_difference(afterFeatures.begin(), afterFeatures.end(), beforeFeatures.begin(), beforeFeatures.end(),
                        std::inserter(provides, provides.end()));
    std::set_difference(beforeFeatures.begin(), beforeFeatures.end(), afterFeatures.begin(), afterFeatures.end(),
                        std::inserter(replaces, replaces.end()));
    const auto requires_ = featuresNamedIn(step.reliesOn, beforeFeatures);

    SkillCard card;
    card.id = skillIdFrom(namesTheStep(provides, step) ? principalFeature(provides) : step.title);
    card.intent = step.title + (step.adds.empty() ? "" : ": " + oneLine(step.adds, 140));
    const Carrier carrier = carrierOf(withoutHeader(before.source), withoutHeader(step.source));
    card.anchor = step.kernel + ": lines " + std::to_string(carrier.firstChangedLine) + "-" +
                  std::to_string(carrier.lastChangedLine) + " of " + step.sourceName;
    card.preconditions = {"Data types: " + dataTypes(task), "Layout: " + layout(task, step),
                          "Storage: " + storage(before, step), "Pipeline: " + pipeline(provides, requires_, step),
                          "Hardware: " + hardware(afterFeatures, lineage)};
    // Where it helps (KLineage: a gain is per configuration): the best configuration and the
    // median over all, so a card that pays only at large sizes says so.
    {
      std::vector<std::pair<double, std::string>> gains;
      for (const auto &f : step.figures)
        for (const auto &p : before.figures)
          if (p.config == f.config && p.medianMs > 0 && f.medianMs > 0) gains.emplace_back(p.medianMs / f.medianMs, f.config);
      if (!gains.empty()) {
        // The best as SkillCard::declaredGain picks it (on a tie the later, larger configuration).
        std::pair<double, std::string> best = gains.front();
        for (const auto &g : gains)
          if (g.first >= best.first) best = g;
        std::vector<double> sorted;
        for (const auto &g : gains) sorted.push_back(g.first);
        std::sort(sorted.begin(), sorted.end());
        const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                                : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
        std::string sizes;
        if (const auto *config = task.config(best.second))
          for (const auto &[name, value] : config->values) sizes += (sizes.empty() ? "" : ", ") + name + "=" + std::to_string(value);
        char text[256];
        std::snprintf(text, sizeof text, "Sizes: helps most at %s (%s): x%.2f; x%.2f median over %zu configuration(s)",
                      best.second.c_str(), sizes.c_str(), best.first, median, gains.size());
        card.preconditions.push_back(text);
      }
    }
    card.scope.cases = {operatorClassOf(task)};
    card.scope.languages = {"cuda"};
    card.scope.platforms = {lineage.arch.empty() ? std::string("*") : lineage.arch};
    card.requiredFeatures.assign(requires_.begin(), requires_.end());
    card.providedFeatures.assign(provides.begin(), provides.end());
    if (!replaces.empty()) card.extra["replaces"] = std::vector<std::string>(replaces.begin(), replaces.end());
    for (const auto &f : step.figures)
      for (const auto &p : before.figures)
        if (p.config == f.config && p.medianMs > 0 && f.medianMs > 0) {
          CardEvidence e = evidenceOf("lineage-step", lineage, step);
          e.config = f.config;
          e.beforeMs = p.medianMs;
          e.afterMs = f.medianMs;
          e.speedup = p.medianMs / f.medianMs;
          card.evidence.push_back(e);
        }
    // Steps after this one that failed the gate, up to the next accepted one: what broke.
    std::vector<std::string> risks;
    nlohmann::json proposedConflicts = nlohmann::json::array();
    for (std::size_t k = i + 1; k < lineage.steps.size() && !lineage.steps[k].accepted; ++k) {
      const auto &rejected = lineage.steps[k];
      risks.push_back("- " + rejected.title + " (" + rejected.sourceName + ") was rejected: " + rejected.reason);
      CardEvidence e = evidenceOf("rejected-step", lineage, rejected);
      e.success = false;
      e.note = rejected.reason;
      card.evidence.push_back(e);
      // Made the kernel slower after this technique: what it added may clash with it. Proposed
      // for a reviewer (a measurement, not proof: kwb skills edit moves one into `conflicts`).
      if (rejected.reason.rfind("does not pay", 0) == 0 && !rejected.source.empty()) {
        const auto rejectedFeatures = detectFeatures(rejected.source);
        for (const auto &f : rejectedFeatures)
          if (!afterFeatures.count(f))
            proposedConflicts.push_back({{"feature", f},
                                         {"why", rejected.title + " (" + rejected.sourceName + ") added it after this step and " +
                                                     rejected.reason.substr(0, rejected.reason.find(';'))}});
      }
    }
    if (!proposedConflicts.empty()) card.extra["proposed_conflicts"] = proposedConflicts;
    // What a de-optimization found breaks around the kernel this step produces.
    for (const auto &risk : step.risks) {
      risks.push_back("- " + risk);
      CardEvidence e = evidenceOf("rejected-step", lineage, step);
      e.success = false;
      e.note = risk;
      card.evidence.push_back(e);
    }
    card.verification.push_back(lineage.builtAt + ": lifted from step " + std::to_string(step.position) + " of lineage " +
                                lineage.name + " (gate: compiled, correct on every configuration and seed, timed); "
                                "preconditions derived from the task, the kernels and the header, not yet reviewed");
    card.setSection("Overview", "\n" + (step.adds.empty() ? step.title : step.adds) + "\n\nLifted from step " +
                                    std::to_string(step.position) + " of the " + lineage.name + " lineage (" +
                                    before.sourceName + " -> " + step.sourceName + ").\n\n");
    card.setSection("Example configuration", "\n" + exampleTable(before, step));
    card.setSection("Precondition", "\n" + (step.reliesOn.empty() ? std::string("(for the reviewer)") : "Relies on: " + step.reliesOn) + "\n\n");
    card.setSection("Scope", "\nMeasured on " + lineage.task + (task.description.empty() ? "" : " (" + task.description + ")") + ".\n\n");
    card.setSection("Code Change Snippet", "\nThe lines that change from " + before.sourceName + " to " + step.sourceName +
                                               ", with context; \"// ...\" marks lines left out.\n\n");
    card.setSection("Before", "\n" + fencedCode(carrier.before) + "\n");
    card.setSection("After", "\n" + fencedCode(carrier.after) + "\n");
    card.setSection("Risk", "\n" + (risks.empty() ? std::string("No rejected step recorded: what breaks when a precondition "
                                                                "fails is not known from evidence yet.")
                                                  : joined(risks, "\n")) + "\n");
    cards.push_back(std::move(card));
    previous = &step;
  }
  // Transitions of the same kind within one lineage merge here as they would in the library.
  std::vector<SkillCard> merged;
  for (auto &c : cards) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](const SkillCard &m) { return m.id == c.id; });
    if (it == merged.end()) {
      merged.push_back(std::move(c));
      continue;
    }
    it->evidence.insert(it->evidence.end(), c.evidence.begin(), c.evidence.end());
    it->verification.insert(it->verification.end(), c.verification.begin(), c.verification.end());
  }
  return merged;
}

}  // namespace kwb
