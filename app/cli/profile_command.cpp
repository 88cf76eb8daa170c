#include "app/cli/profile_command.h"

#include "app/cli/candidate_input.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/profile/cupti_profiler.h"
#include "core/profile/metric_catalog.h"
#include "core/profile/metric_sets.h"
#include "core/profile/profiler.h"
#include "core/task/manifest_parser.h"

namespace fs = std::filesystem;
using nlohmann::json;
namespace prof = kwb::profile;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitInvalid = 2;
constexpr int kExitNotRun = 3;

std::vector<std::string> splitCommas(const std::string &text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

std::string formatValue(double v, const std::string &unit) {
  char buf[64];
  if (unit == "ns" && v >= 1000.0) std::snprintf(buf, sizeof buf, "%.4g us", v / 1000.0);
  else if (unit == "%") std::snprintf(buf, sizeof buf, "%.2f %%", v);
  else std::snprintf(buf, sizeof buf, "%.4g%s%s", v, unit.empty() ? "" : " ", unit.c_str());
  return buf;
}

int listMetrics(const ProfileArgs &args, bool asJson) {
  const std::string chip = args.chip.empty() ? prof::kDefaultChip : args.chip;
  try {
    const auto library = prof::CuptiProfilerLibrary::open();
    prof::MetricCatalog catalog(library, chip);
    json list = json::array();
    std::size_t shown = 0;
    for (const auto &base : catalog.baseMetrics()) {
      if (!args.filter.empty() && base.name.find(args.filter) == std::string::npos) continue;
      ++shown;
      const auto p = catalog.properties(base.name);
      if (asJson) {
        json j = {{"name", base.name},
                  {"type", prof::toString(base.type)},
                  {"hardware_unit", p ? p->hardwareUnit : ""},
                  {"dimension_unit", p ? p->dimensionUnit : ""},
                  {"description", p ? p->description : ""}};
        if (!args.filter.empty()) j["sub_metrics"] = catalog.subMetrics(base.name);
        list.push_back(j);
      } else {
        std::cout << base.name << "  [" << prof::toString(base.type) << (p && !p->dimensionUnit.empty() ? ", " + p->dimensionUnit : "")
                  << "]  " << (p ? p->description : "") << "\n";
        if (!args.filter.empty()) {
          std::string subs;
          for (const auto &s : catalog.subMetrics(base.name)) subs += (subs.empty() ? "" : " ") + s;
          std::cout << "    sub-metrics: " << subs << "\n";
        }
      }
    }
    if (asJson) {
      std::cout << json{{"chip", chip}, {"cupti", library->path()}, {"metrics", list}}.dump(2) << "\n";
    } else {
      std::cout << shown << " base metric(s) on " << chip << (args.filter.empty() ? "" : " containing '" + args.filter + "'")
                << "; a full name is a base name plus a sub-metric, e.g. dram__throughput.avg.pct_of_peak_sustained_elapsed"
                << (args.filter.empty() ? " (--filter TEXT shows the sub-metrics)" : "") << "\n";
      std::cout << "metric sets on " << chip << ":";
      for (const auto &name : prof::metricSetNames()) {
        std::cout << (name == "default" ? " " : ", ") << name << " ";
        try {
          const auto set = *prof::metricSet(name, catalog);
          std::cout << "(" << set.size() << " metrics, " << catalog.configure(set).passes << " passes)";
        } catch (const prof::ProfileError &e) {
          std::cout << "(not available: " << e.what() << ")";
        }
      }
      std::cout << "\n";
    }
    return kExitOk;
  } catch (const prof::ProfileError &e) {
    std::cerr << "kwb profile: " << e.what() << "\n";
    return e.reason() == "unknown-chip" ? kExitInvalid : kExitFailed;
  }
}

}  // namespace

CLI::App *addProfileSubcommand(CLI::App &app, ProfileArgs &args, bool &asJson) {
  auto *profile = app.add_subcommand(
      "profile",
      "GPU metrics of a candidate kernel through CUPTI (Nsight Compute's metric names): DRAM throughput,\n"
      "achieved occupancy, L1 and L2 hit rates and duration by default (2 replay passes on an H100/H200);\n"
      "--set detailed adds SM throughput and the warp stall breakdown (14 passes). Collected in passes of\n"
      "their own, the launch replayed once per pass with its inputs restored. Without a CUDA device the\n"
      "metrics and their pass count (for --chip, default GH100) are still shown.\n"
      "Exit status: 0 profiled (or --list-metrics); 1 compile/load/runtime error, timeout or not profiled\n"
      "(no permission for GPU counters, another profiler attached, unsupported device, no CUPTI);\n"
      "2 usage error (bad task, candidate, option or metric name); 3 not run (no CUDA device).");
  profile->add_option("TASK", args.task, "Task folder or its task.toml (not needed with --list-metrics)");
  profile->add_option("CANDIDATE", args.candidate, "Candidate .cu file (default: the task's starter)");
  profile->add_option("--metrics", args.metrics, "Metric names, comma-separated (instead of a set)");
  profile->add_option("--set", args.set, "Metric set: default (cheap) or detailed (default: default)");
  profile->add_option("--config", args.config, "Size configuration to profile (default: the task's first)");
  profile->add_option("--chip", args.chip,
                      "Chip for the catalogue and pass counts without a GPU (default GH100; a GPU's own chip is used on it)");
  profile->add_option("--tunable", args.tunables, "Tunable value NAME=VALUE (repeatable; default: each tunable's first)");
  profile->add_option("--seed", args.seed, "Input seed (default 1)");
  profile->add_option("--arch", args.arch, "Compile for sm_XY (default: the device's, else sm_90)");
  profile->add_option("--time-limit", args.timeLimit, "Seconds before the profiling run is stopped (default 120)")
      ->check(CLI::PositiveNumber);
  profile->add_flag("--list-metrics", args.listMetrics, "List the chip's metrics (CUPTI host API; no GPU needed)");
  profile->add_option("--filter", args.filter, "With --list-metrics: only names containing TEXT, with their sub-metrics");
  profile->add_flag("--no-gpu", args.noGpu, "Compile and show the metrics and passes only, as on a machine without a GPU");
  profile->add_flag("--json", asJson, "Machine-readable output");
  return profile;
}

int profileCommand(const ProfileArgs &args, bool asJson) {
  if (args.listMetrics) return listMetrics(args, asJson);
  if (args.task.empty()) {
    std::cerr << "kwb profile: name a task (kwb profile TASK [CANDIDATE]), or use --list-metrics\n";
    return kExitInvalid;
  }
  // The metrics: named, or a set.
  std::vector<std::string> metrics;
  if (!args.metrics.empty()) {
    metrics = splitCommas(args.metrics);
    if (metrics.empty()) {
      std::cerr << "kwb profile: --metrics names no metric\n";
      return kExitInvalid;
    }
  } else if (auto set = prof::metricSet(args.set)) {
    metrics = *set;
  } else {
    std::cerr << "kwb profile: unknown metric set '" << args.set << "'; known sets: default, detailed\n";
    return kExitInvalid;
  }

  auto input = loadCandidate(args.task, args.candidate, "kwb profile");
  if (!input) return kExitInvalid;
  const kwb::Task &task = input->task;
  const fs::path &candidatePath = input->path;

  prof::ProfileOptions options;
  options.config = args.config;
  options.metrics = args.metrics.empty() ? std::vector<std::string>{} : metrics;
  options.set = args.set;
  options.arch = args.arch;
  options.seed = args.seed;
  options.sourceName = candidatePath.string();
  options.timeLimit = std::chrono::milliseconds(static_cast<long long>(args.timeLimit * 1000));
  options.tunables = input->tunables;
  if (!parseTunableValues(args.tunables, options.tunables, "--tunable", "kwb profile")) return kExitInvalid;

  // Host side, no GPU needed: the names checked and the passes counted on --chip (GH100).
  // (On a GPU the worker resolves a set for the device's own chip.)
  const std::string hostChip = args.chip.empty() ? prof::kDefaultChip : args.chip;
  json host = {{"chip", hostChip}};
  std::string hostNote;
  std::unique_ptr<prof::MetricCatalog> catalog;  // for labels and units too
  try {
    catalog = std::make_unique<prof::MetricCatalog>(prof::CuptiProfilerLibrary::open(), hostChip);
    if (args.metrics.empty()) metrics = *prof::metricSet(args.set, *catalog);
    const auto configured = catalog->configure(metrics);
    host["passes"] = configured.passes;
    host["config_image_bytes"] = configured.configImage.size();
  } catch (const prof::ProfileError &e) {
    if (e.reason() == "unknown-metric" || e.reason() == "unknown-chip") {
      std::cerr << "kwb profile: " << e.what() << "\n";
      return kExitInvalid;
    }
    hostNote = e.what();
    host["problem"] = hostNote;
  }

  kwb::EvaluatorSettings settings;
  settings.useDevice = !args.noGpu;
  prof::ProfileResult result;
  try {
    result = prof::profileCandidate(task, input->text, options, settings);
  } catch (const std::invalid_argument &e) {
    std::cerr << "kwb profile: " << e.what() << "\n";
    return kExitInvalid;
  }

  if (asJson) {
    json j = result;
    j["task"] = task.name;
    j["candidate"] = candidatePath.string();
    j["set"] = args.metrics.empty() ? args.set : "custom";
    json planned = json::array();
    for (const auto &m : metrics) {
      const auto d = prof::metricDisplay(m, catalog.get());
      planned.push_back({{"name", m}, {"label", d.label}, {"unit", d.unit}});
    }
    j["requested"] = planned;
    j["host"] = host;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << task.name << ": " << candidatePath.string() << ", configuration " << result.config << ", "
              << (args.metrics.empty() ? "set " + args.set : "custom metrics") << "\n";
    if (host.contains("passes"))
      std::cout << metrics.size() << " metric(s), " << host["passes"].get<std::size_t>() << " replay pass(es) on "
                << hostChip << " (CUPTI host API)\n";
    else
      std::cout << metrics.size() << " metric(s); pass count unknown: " << hostNote << "\n";
    if (result.outcome == kwb::Outcome::Profiled) {
      std::cout << "device: " << result.device << " (" << result.chip << "), " << result.passes << " pass(es)\n";
      std::size_t width = 0;
      for (const auto &m : result.metrics) width = std::max(width, m.label.size());
      for (const auto &m : result.metrics)
        std::cout << "  " << m.label << std::string(width - m.label.size() + 2, ' ') << formatValue(m.value, m.unit)
                  << "   " << m.name << "\n";
    } else {
      std::vector<std::string> heads;
      std::size_t width = 0;
      for (const auto &m : metrics) {
        const auto d = prof::metricDisplay(m, catalog.get());
        heads.push_back(d.label + " [" + d.unit + "]");
        width = std::max(width, heads.back().size());
      }
      for (std::size_t i = 0; i < metrics.size(); ++i)
        std::cout << "  " << heads[i] << std::string(width - heads[i].size() + 2, ' ') << metrics[i] << "\n";
    }
    if (result.outcome == kwb::Outcome::NotRun)
      std::cout << result.message << "\n";  // "not run: no CUDA device (...)"
    else
      std::cout << kwb::toString(result.outcome) << (result.reason.empty() ? "" : " (" + result.reason + ")") << ": "
                << result.message << "\n";
  }
  if (result.outcome == kwb::Outcome::Profiled) return kExitOk;
  if (result.outcome == kwb::Outcome::NotRun) return kExitNotRun;
  return kExitFailed;
}
