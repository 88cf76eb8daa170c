// kwb: the command-line twin of the workbench. Every command takes --json for scripts.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/lineage_command.h"
#include "app/cli/export_command.h"
#include "app/cli/import_command.h"
#include "app/cli/suite_command.h"
#include "app/cli/memory_command.h"
#include "app/cli/skills_command.h"
#include "app/cli/tune_command.h"
#include "app/cli/asm_command.h"
#include "app/cli/candidate_input.h"
#include "app/cli/profile_command.h"
#include "app/cli/llm_command.h"
#include "app/cli/optimize_command.h"
#include "app/cli/workers_option.h"
#include "app/cli/task_report.h"
#include "core/compile/diagnostics.h"
#include "core/eval/evaluator.h"
#include "core/eval/roofline.h"
#include "core/gpu/device_info.h"
#include "core/gpu/device_report.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"
#include "core/task/task_catalog.h"
#include "core/task/task_json.h"
#include "kwb/version.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kExitInvalid = 2;

json errorJson(const kwb::ManifestError &e) {
  return {{"file", e.file()}, {"line", e.line()}, {"field", e.field()}, {"message", e.detail()},
          {"text", e.what()}};
}

int devicesCommand(const std::string &workers, bool asJson) {
  kwb::EvaluatorSettings settings;
  if (!applyWorkers(workers, settings)) return 2;
  if (settings.launcher.remote() || !settings.hosts.empty()) return remoteDevicesCommand(settings, asJson);
  const auto inventory = kwb::probeGpus();
  if (asJson) std::cout << json(inventory).dump(2) << "\n";
  else std::cout << kwb::formatInventory(inventory);
  return 0;
}

int tasksListCommand(const std::string &dirArg, bool asJson) {
  fs::path dir = dirArg;
  if (dir.empty()) {
    auto bundled = kwb::bundledKernelsDir();
    if (!bundled) {
      std::cerr << "kwb: no bundled kernels folder found; name a folder: kwb tasks list DIR\n";
      return 1;
    }
    dir = *bundled;
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::cerr << "kwb: " << dir.string() << ": not a folder\n";
    return 1;
  }
  const auto entries = kwb::listTasks(dir);
  if (asJson) {
    json out = json::array();
    for (const auto &e : entries) {
      json row = {{"folder", e.folder.string()}, {"valid", e.task.has_value()}};
      if (e.task) {
        row["name"] = e.task->name;
        row["description"] = e.task->description;
        row["configs"] = e.task->configs.size();
      } else {
        row["error"] = e.error;
      }
      out.push_back(row);
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (entries.empty()) {
    std::cout << "No tasks in " << dir.string() << "\n";
    return 0;
  }
  std::size_t width = 4;
  for (const auto &e : entries)
    width = std::max(width, e.task ? e.task->name.size() : e.folder.filename().string().size());
  for (const auto &e : entries) {
    if (e.task)
      std::cout << e.task->name << std::string(width + 2 - e.task->name.size(), ' ')
                << e.task->description << "\n";
    else
      std::cout << e.folder.filename().string()
                << std::string(width + 2 - e.folder.filename().string().size(), ' ')
                << "INVALID: " << e.error << "\n";
  }
  return 0;
}

int taskCommand(const std::string &path, bool asJson, bool validateOnly) {
  try {
    const auto task = kwb::loadTask(path);
    if (validateOnly) {
      if (asJson)
        std::cout << json{{"valid", true}, {"name", task.name}, {"manifest", task.manifestPath.string()}}.dump(2)
                  << "\n";
      else
        std::cout << task.manifestPath.string() << ": valid (" << task.name << ": "
                  << task.configs.size() << " size configurations, " << task.tensors.size()
                  << " tensors)\n";
      return 0;
    }
    if (asJson) std::cout << kwb::taskToJson(task).dump(2) << "\n";
    else std::cout << kwb::formatTask(task);
    return 0;
  } catch (const kwb::ManifestError &e) {
    if (asJson) std::cout << json{{"valid", false}, {"error", errorJson(e)}}.dump(2) << "\n";
    std::cerr << e.what() << "\n";
    return kExitInvalid;
  } catch (const std::exception &e) {
    if (asJson) std::cout << json{{"valid", false}, {"error", {{"text", e.what()}}}}.dump(2) << "\n";
    std::cerr << "kwb: " << path << ": " << e.what() << "\n";
    return kExitInvalid;
  }
}

// kwb eval's exit statuses (documented in its --help).
constexpr int kExitCorrect = 0;
constexpr int kExitFailed = 1;
constexpr int kExitNotRun = 3;

struct EvalArgs {
  std::string task;
  std::string candidate;
  std::vector<std::string> configs;
  std::vector<std::uint64_t> seeds;
  std::vector<std::string> sets;
  std::string arch;
  double timeLimit = 60.0;
  bool noGpu = false;
  bool time = false;
  double timeCap = 3.0;
  std::uint64_t permutationSeed = 0;
  bool sanitize = false;
  std::string sanitizerTools;
  std::string reference;  // "", "cuda", "pytorch"
  bool noTorch = false;
  bool noTorchCompile = false;
  std::string python;
  std::string workers;  // --workers: where the worker runs (empty: this machine)
};

// "PyTorch eager 2.1 ms ±0.3% (n=40): 1.71×; torch.compile 1.9 ms ±0.5% (n=35): 1.55×"
std::string formatTorch(const kwb::TorchBaseline &b) {
  auto side = [](const char *name, double ms, double spread, std::size_t n, double speedup, const std::string &error) {
    if (ms <= 0) return std::string(name) + ": " + (error.empty() ? "not measured" : error);
    char x[32];
    std::snprintf(x, sizeof x, "%.2f", speedup);
    char s[96];
    std::snprintf(s, sizeof s, "%.3g ms \u00b1%.1f%% (n=%zu)", ms, spread * 100.0, n);
    return std::string(name) + " " + s + ": candidate " + x + "\u00d7 faster";
  };
  return side("PyTorch eager", b.eagerMs, b.eagerSpread, b.eagerSamples, b.speedupEager, b.eagerError) + "; " +
         side("torch.compile", b.compiledMs, b.compiledSpread, b.compiledSamples, b.speedupCompiled, b.compiledError);
}

// "1.23 ms": milliseconds, three significant digits.
std::string formatMs(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  return buf;
}

std::string formatPercent(double fraction) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
  return buf;
}

// "candidate 1.23 ms ±0.4% (n=37), reference 2.46 ms ±0.3%, speedup 2.00×"
std::string formatTiming(const kwb::TimingOutcome &t) {
  if (!t.ok) return "not timed: " + t.error;
  char speedup[64];
  std::snprintf(speedup, sizeof speedup, "%.2f", t.speedup);
  std::string line = "candidate " + formatMs(t.candidate.median) + " \u00b1" + formatPercent(t.candidate.relativeSpread) +
                     " (n=" + std::to_string(t.candidate.count) + ")";
  if (t.referenceTimed)
    line += ", reference " + formatMs(t.reference.median) + " \u00b1" + formatPercent(t.reference.relativeSpread) +
            ", speedup " + speedup + "\u00d7";
  if (t.suspicious) line += "  SUSPICIOUS: " + t.suspiciousReason;
  return line;
}

std::string formatDims(const std::array<std::int64_t, 3> &d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
}

// Each tool's run, then each finding as "FILE:LINE: error: TOOL: WHAT" (as compilers write them,
// so editors jump to the line), with the rest of the report indented below.
void printSanitize(const kwb::SanitizeResult &s) {
  if (!s.problem.empty()) {
    std::cout << "sanitize: not run: " << s.problem << "\n";
    return;
  }
  std::cout << "sanitize: configuration " << s.config << ", seed " << s.seed << " (" << s.program << ")\n";
  for (const auto &r : s.reports) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f s", r.seconds);
    std::cout << "  " << kwb::sanitizerToolName(r.tool) << ": "
              << (!r.problem.empty() ? r.problem
                                     : std::to_string(r.candidateErrors()) + " error(s) in the candidate's code, " +
                                           std::to_string(r.findings.size()) + " finding(s) in all")
              << " (" << seconds << (r.evaluation.empty() ? "" : "; the run under it: " + r.evaluation) << ")\n";
    for (const auto &f : r.findings) {
      const std::string where = f.where();
      std::cout << "    " << (where.empty() ? "" : where + ": ") << (f.warning ? "warning: " : "error: ")
                << kwb::sanitizerToolName(f.tool) << ": " << f.what;
      if (f.hazards) std::cout << " [" << f.hazards << " hazards]";
      if (f.occurrences > 1) std::cout << " (reported " << f.occurrences << " times; first: thread " << f.thread << " of block " << f.block << ")";
      if (f.origin != kwb::SanitizerOrigin::Candidate)
        std::cout << " (in the " << kwb::sanitizerOriginName(f.origin) << "'s code: not the candidate's)";
      std::cout << "\n";
      std::size_t start = f.details.find('\n');
      while (start != std::string::npos) {
        const auto end = f.details.find('\n', start + 1);
        std::cout << "        " << f.details.substr(start + 1, end == std::string::npos ? end : end - start - 1) << "\n";
        start = end;
      }
    }
    for (const auto &note : r.notes) std::cout << "    note: " << note << "\n";
    // A run under the tool that ended neither right nor wrong: what the worker said last.
    if (!r.evaluation.empty() && r.evaluation.rfind("correct", 0) != 0 && r.evaluation.rfind("incorrect", 0) != 0)
      for (const auto &line : r.workerLog) std::cout << "    worker: " << line << "\n";
  }
}

int evalCommand(const EvalArgs &args, bool asJson) {
  auto input = loadCandidate(args.task, args.candidate);
  if (!input) return kExitInvalid;
  const kwb::Task &task = input->task;
  const fs::path &candidatePath = input->path;

  kwb::EvaluationOptions options;
  options.configs = args.configs;
  options.seeds = args.seeds;
  options.arch = args.arch;
  options.sourceName = candidatePath.string();
  options.timeLimit = std::chrono::milliseconds(static_cast<long long>(args.timeLimit * 1000));
  options.time = args.time;
  options.timingCap = std::chrono::milliseconds(static_cast<long long>(args.timeCap * 1000));
  options.permutationSeed = args.permutationSeed;
  options.reference = args.reference;
  options.timeTorch = !args.noTorch;
  options.timeTorchCompiled = !args.noTorchCompile;
  options.tunables = input->tunables;
  if (!parseTunableValues(args.sets, options.tunables, "--set")) return kExitInvalid;
  if (!asJson) options.onProgress = [](const std::string &line) { std::cerr << line << "\n"; };

  kwb::SanitizeOptions sanitize;
  if (args.sanitize || !args.sanitizerTools.empty()) {
    try {
      sanitize.tools = kwb::parseSanitizerTools(args.sanitizerTools);
    } catch (const std::invalid_argument &e) {
      std::cerr << "kwb: --sanitizer-tools: " << e.what() << "\n";
      return kExitInvalid;
    }
    if (args.seeds.size() == 1) sanitize.seed = args.seeds.front();
    if (args.configs.size() == 1) sanitize.config = args.configs.front();
    options.sanitize = sanitize;
  }

  kwb::EvaluatorSettings settings;
  settings.useDevice = !args.noGpu;
  settings.torch.python = args.python;
  if (!applyWorkers(args.workers, settings)) return kExitInvalid;
  kwb::EvaluationResult result;
  kwb::Evaluator evaluator(settings);  // its worker measures the ceilings too
  try {
    result = evaluator.evaluate(task, input->text, options);
  } catch (const std::invalid_argument &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return kExitInvalid;
  }

  // Where each timed configuration sits under this GPU's measured roofline (measured once per
  // GPU, then cached), against the compute ceiling of the task's data type (kwb::computeCeiling).
  std::map<std::string, kwb::RooflinePlacement> placements;
  std::optional<kwb::DeviceCeilings> ceilings;
  bool anyTimed = false;
  for (const auto &c : result.configs) anyTimed = anyTimed || (c.timing && c.timing->ok);
  if (anyTimed && result.deviceOrdinal >= 0) {
    std::string problem;
    if (!asJson) std::cerr << "roofline: this GPU's measured ceilings (measured once, then cached)\n";
    ceilings = kwb::deviceCeilings(evaluator, problem);
    if (!ceilings && !asJson) std::cerr << "roofline: not available: " << problem << "\n";
    const bool tensor = kwb::computeCeiling(task) == "tensor-core";
    for (const auto &c : result.configs) {
      const auto *config = task.config(c.config);
      if (!ceilings || !config || !c.timing || !c.timing->ok) continue;
      if (auto p = kwb::placeOnRoofline(static_cast<double>(task.flops.evaluate(config->values)),
                                        static_cast<double>(task.bytes.evaluate(config->values)),
                                        c.timing->candidate.median * 1e-3, *ceilings, tensor))
        placements[c.config] = *p;
    }
  }

  if (asJson) {
    nlohmann::json j = result;
    if (ceilings) j["ceilings"] = ceilings->toJson();
    for (auto &cj : j["configs"])
      if (auto it = placements.find(cj.value("config", std::string())); it != placements.end())
        cj["roofline_placement"] = it->second.toJson();
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << task.name << ": " << candidatePath.string() << " for " << result.arch
              << (result.device.empty() ? "" : " on " + result.device)
              << (result.sandbox.empty() ? "" : result.sandbox == "none" ? " (UNSANDBOXED: no isolation could be made)" : " (sandbox: " + result.sandbox + ")") << "\n";
    for (const auto &d : result.candidate.diagnostics) std::cout << kwb::formatDiagnostic(d) << "\n";
    for (const auto &d : result.referenceDiagnostics) std::cout << kwb::formatDiagnostic(d) << "\n";
    for (const auto &k : result.candidate.kernels)
      std::cout << "resources: " << k.name << ": " << k.registers << " registers, " << k.sharedStaticBytes
                << " B static shared, " << k.stackFrameBytes << " B stack, " << k.spillStoreBytes << "/"
                << k.spillLoadBytes << " B spill stores/loads\n";
    for (const auto &c : result.configs) {
      std::cout << "config " << c.config << ": grid " << formatDims(c.candidateLaunch.grid) << " block "
                << formatDims(c.candidateLaunch.block);
      if (c.candidateLaunch.sharedBytes) std::cout << " shared " << c.candidateLaunch.sharedBytes << " B";
      std::cout << "\n";
      if (c.occupancy)
        std::cout << "  occupancy: "
                  << (c.occupancy->launchable() ? c.occupancy->explanation : "not launchable: " + c.occupancy->error)
                  << "\n";
      for (const auto &s : c.seeds)
        std::cout << "  " << c.config << " seed " << s.seed << ": " << (s.passed ? "PASS" : "FAIL") << "  "
                  << s.summary << "\n";
      if (c.outcome != kwb::Outcome::Correct && c.outcome != kwb::Outcome::Incorrect)
        std::cout << "  " << kwb::toString(c.outcome) << (c.errorName.empty() ? "" : " " + c.errorName) << ": "
                  << c.message << "\n";
      if (c.timing) std::cout << "  " << c.config << " timing: " << formatTiming(*c.timing) << "\n";
      if (c.torch) std::cout << "  " << c.config << " vs PyTorch: " << formatTorch(*c.torch) << "\n";
      if (c.timing && result.reference == "pytorch" && !c.timing->timerNote.empty() && c.timing->timer != "host-wall-clock")
        std::cout << "    timer: " << c.timing->timerNote << "\n";
      // What a host launcher's figure is made of (its process's round trip, the prime, the
      // reference timed alone), where a user reads the figure.
      if (c.timing && c.timing->timer == "host-wall-clock" && !c.timing->timerNote.empty())
        std::cout << "    timer: " << c.timing->timerNote << "\n";
      if (auto it = placements.find(c.config); it != placements.end())
        std::cout << "  " << c.config << " roofline: " << it->second.words << "\n";
    }
    if (result.reference == "pytorch")
      std::cout << "reference: the PyTorch module " << task.reference.python.string()
                << (result.torchVersion.empty() ? "" : " (torch " + result.torchVersion + ")") << "\n";
    if (!result.torchProblem.empty()) std::cout << "PyTorch not timed: " << result.torchProblem << "\n";
    if (args.time && result.outcome != kwb::Outcome::Correct)
      std::cout << "timing skipped: only a candidate correct on every configuration is timed\n";
    if (result.freshSeed)
      std::cout << "fresh seed " << result.freshSeed << " beside the task's (repeat this run with --seed "
                << result.freshSeed << ")\n";
    if (result.sanitize) printSanitize(*result.sanitize);
    std::cout << kwb::toString(result.outcome) << ": " << result.message << "\n";
    if (result.sanitize) std::cout << "sanitizer: " << result.sanitize->summary() << "\n";
  }
  if (result.sanitize && result.outcome == kwb::Outcome::Correct) {
    if (result.sanitize->candidateErrors() > 0) return kExitFailed;
    if (!result.sanitize->complete()) return kExitNotRun;
  }
  switch (result.outcome) {
    case kwb::Outcome::Correct: return kExitCorrect;
    case kwb::Outcome::NotRun: return kExitNotRun;
    default: return kExitFailed;
  }
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kwb: Kernel Workbench on the command line: tasks, devices, evaluation, tuning, profiling, the optimize loop, lineages, skill cards, the experience memory, exports and KernelBench imports",
               "kwb"};
  app.set_version_flag("--version", std::string("kwb ") + kwb::kVersion + " (" + kwb::kProjectName + ")");
  app.require_subcommand(1);
  bool asJson = false;

  auto *devices = app.add_subcommand("devices", "List CUDA devices and the CUDA libraries found");
  devices->add_flag("--json", asJson, "Machine-readable output");
  std::string devicesWorkers;
  addWorkersOption(devices, devicesWorkers);

  auto *tasks = app.add_subcommand("tasks", "Work with collections of tasks");
  tasks->require_subcommand(1);
  std::string listDir;
  auto *tasksList = tasks->add_subcommand("list", "List the tasks in DIR (default: the bundled kernels)");
  tasksList->add_option("DIR", listDir, "Folder whose subfolders hold tasks");
  tasksList->add_flag("--json", asJson, "Machine-readable output");

  auto *task = app.add_subcommand("task", "Work with one task folder");
  task->require_subcommand(1);
  std::string showPath, validatePath;
  auto *taskShow = task->add_subcommand("show", "Show a task: sizes, tensors, launch, cost per configuration");
  taskShow->add_option("PATH", showPath, "Task folder or its task.toml")->required();
  taskShow->add_flag("--json", asJson, "Machine-readable output");
  auto *taskValidate = task->add_subcommand("validate", "Check a task's manifest; exit 0 when valid, 2 when not");
  taskValidate->add_option("PATH", validatePath, "Task folder or its task.toml")->required();
  taskValidate->add_flag("--json", asJson, "Machine-readable output");

  EvalArgs evalArgs;
  auto *eval = app.add_subcommand(
      "eval",
      "Check a candidate kernel for correctness on the GPU: every size configuration x seed, outputs\n"
      "poisoned, inputs checked unmodified, run twice for races. Without a CUDA device it compiles and\n"
      "reports resources and occupancy only.\n"
      "Exit status: 0 correct; 1 incorrect, compile error, load/runtime error or timeout, or (with\n"
      "--sanitize) an error the sanitizer found in the candidate's code; 2 usage error (bad task,\n"
      "candidate or option); 3 not run (no CUDA device; with --sanitize: a tool did not run to its end).");
  eval->add_option("TASK", evalArgs.task, "Task folder or its task.toml")->required();
  eval->add_option("CANDIDATE", evalArgs.candidate, "Candidate .cu file (default: the task's starter)");
  eval->add_option("--config", evalArgs.configs, "Size configuration to run (repeatable; default: all)");
  eval->add_option("--seed", evalArgs.seeds,
                   "Seed (repeatable; default: the task's seeds and one fresh random seed, printed with the result)");
  eval->add_option("--set", evalArgs.sets, "Tunable value NAME=VALUE (repeatable; default: each tunable's first)");
  eval->add_option("--arch", evalArgs.arch, "Compile for sm_XY (default: the device's, else sm_90)");
  eval->add_option("--time-limit", evalArgs.timeLimit, "Seconds per configuration before the run is stopped (default 60)")
      ->check(CLI::PositiveNumber);
  eval->add_flag("--time", evalArgs.time,
                 "When correct, time each configuration against the reference (CUPTI kernel records on every\n"
                 "stream; a host launcher: the clock around the whole call; L2 flushed, interleaved, adaptive\n"
                 "until IQR/median < 1% or the time cap)");
  eval->add_option("--time-cap", evalArgs.timeCap, "Seconds of sampling per configuration with --time (default 3)")
      ->check(CLI::PositiveNumber);
  eval->add_option("--permutation-seed", evalArgs.permutationSeed,
                   "With --time: the timed samples' fresh inputs and re-checks; a result's "
                   "timing.permutation_seed repeats that run (default: a new one)");
  eval->add_flag("--sanitize", evalArgs.sanitize,
                 "Also run the candidate under compute-sanitizer's memcheck, racecheck, initcheck and synccheck\n"
                 "(one worker per tool, in the sandbox; the smallest configuration and the first seed unless\n"
                 "one --config / --seed is given); findings as FILE:LINE with the kernel and thread");
  eval->add_option("--sanitizer-tools", evalArgs.sanitizerTools,
                   "The sanitizer's tools, comma-separated (implies --sanitize; default all: memcheck,racecheck,initcheck,synccheck)");
  eval->add_flag("--no-gpu", evalArgs.noGpu, "Compile and report only, as on a machine without a GPU");
  eval->add_option("--reference", evalArgs.reference,
                   "What the candidate is checked against: cuda (the task's CUDA reference) or pytorch (its PyTorch\n"
                   "module's outputs, [reference] python); default: the CUDA reference where the task has one")
      ->check(CLI::IsMember({"cuda", "pytorch"}));
  eval->add_flag("--no-torch", evalArgs.noTorch, "With --time: do not time the task's PyTorch module");
  eval->add_flag("--no-torch-compile", evalArgs.noTorchCompile, "With --time: time the PyTorch module eagerly only");
  addWorkersOption(eval, evalArgs.workers);
  eval->add_option("--python", evalArgs.python,
                   "The Python interpreter with PyTorch (default: $KWB_PYTHON, else python3 on PATH)");
  eval->add_flag("--json", asJson, "Machine-readable output");

  LineageArgs lineageArgs;
  auto *lineage = app.add_subcommand(
      "lineage",
      "Check (and with --time, time) every step of a task's lineage: its versions from naive to expert,\n"
      "each adding one optimization (TASK/lineage/lineage.toml). Steps are spread over the GPUs; each\n"
      "timed step shows its speedup over the step before. Without a CUDA device each step is compiled only.\n"
      "Exit status: 0 every step correct; 1 a step failed; 2 usage error or a malformed lineage; 3 not run.");
  lineage->add_option("TASK", lineageArgs.task, "Task folder or its task.toml (required unless a subcommand is given)");
  lineage->add_option("--step", lineageArgs.steps, "Step number (repeatable; default: all)");
  lineage->add_option("--config", lineageArgs.configs, "Size configuration (repeatable; default: all)");
  lineage->add_option("--seed", lineageArgs.seeds, "Seed (repeatable; default: the task's seeds)");
  lineage->add_option("--arch", lineageArgs.arch, "Compile for sm_XY (default: the device's, else sm_90)");
  lineage->add_option("--gpu", lineageArgs.gpus, "CUDA device to use (repeatable; default: every visible one)");
  addWorkersOption(lineage, lineageArgs.workers);
  lineage->add_flag("--time", lineageArgs.time, "Time every correct step against the reference");
  lineage->add_option("--time-cap", lineageArgs.timeCap, "Seconds of sampling per configuration with --time (default 3)")
      ->check(CLI::PositiveNumber);
  lineage->add_option("--time-limit", lineageArgs.timeLimit, "Seconds per configuration before a run is stopped (default 120)")
      ->check(CLI::PositiveNumber);
  lineage->add_flag("--no-gpu", lineageArgs.noGpu, "Compile and report only, as on a machine without a GPU");
  lineage->add_flag("--json", asJson, "Machine-readable output");
  LineageBuildArgs buildArgs;
  auto *lineageBuild = lineage->add_subcommand(
      "build",
      "Build a stored lineage: every version gated on the GPUs (compiled, correct on every configuration\n"
      "and seed, timed), kept in the skill library with its speedups and kernel figures, and each\n"
      "accepted step read forward lifted into a skill card (proposed, or merged into the card of its kind).\n"
      "Every accepted step is profiled (CUPTI, the default metric set) at one configuration; the metrics\n"
      "and their changes from the previous step are stored with it.\n"
      "Exit status: 0 every step accepted; 1 a step rejected (the rest stored); 2 usage error or a\n"
      "malformed lineage; 3 no GPU (nothing stored; with --deoptimize the versions are still written).");
  lineageBuild->add_option("TASK", buildArgs.task, "Task folder or its task.toml")->required();
  lineageBuild->add_option("--from-versions", buildArgs.fromVersions,
                           "A folder of versions: its lineage.toml, or every *.cu in name order with the task's launch "
                           "(default: the task's bundled lineage)");
  lineageBuild->add_option("--deoptimize", buildArgs.deoptimize,
                           "An expert kernel: a model takes out one technique at a time (each answer gated), the versions "
                           "are written forward to --out and built from there");
  lineageBuild->add_option("--provider", buildArgs.provider, "With --deoptimize: a configured provider's name, or a base URL");
  lineageBuild->add_option("--format", buildArgs.format, "With --deoptimize: the wire format of a base URL (openai, anthropic, ollama)");
  lineageBuild->add_option("--model", buildArgs.model, "With --deoptimize: the model (default: the provider's)");
  lineageBuild->add_option("--out", buildArgs.out, "With --deoptimize: where the versions go (default: ./EXPERT-deoptimized)");
  lineageBuild->add_option("--max-steps", buildArgs.maxSteps, "With --deoptimize: requests at most (default 15)")
      ->check(CLI::PositiveNumber);
  lineageBuild->add_option("--max-tokens", buildArgs.maxTokens, "With --deoptimize: most tokens per answer (default 8192)")
      ->check(CLI::PositiveNumber);
  lineageBuild->add_option("--name", buildArgs.name, "The lineage's name in the library (default: the task's, or TASK@FOLDER)");
  lineageBuild->add_option("--library", buildArgs.library,
                           "The skill library (default: $KWB_LIBRARY, else ~/.local/share/kernel-workbench/library.sqlite)");
  lineageBuild->add_option("--config", buildArgs.configs, "Size configuration (repeatable; default: all)");
  lineageBuild->add_option("--arch", buildArgs.arch, "Compile for sm_XY (default: the device's)");
  lineageBuild->add_option("--gpu", buildArgs.gpus, "CUDA device to use (repeatable; default: every visible one)");
  addWorkersOption(lineageBuild, buildArgs.workers);
  lineageBuild->add_option("--time-cap", buildArgs.timeCap, "Seconds of sampling per configuration (default 1)")
      ->check(CLI::PositiveNumber);
  lineageBuild->add_option("--profile-config", buildArgs.profileConfig,
                           "The configuration each accepted step is profiled at (default: the largest, by the task's bytes and FLOPs)");
  lineageBuild->add_flag("--no-profile", buildArgs.noProfile, "Do not profile the steps (only their timings and kernel figures)");
  lineageBuild->add_flag("--json", asJson, "Machine-readable output");

  SkillsArgs skillsArgs;
  auto *skills = app.add_subcommand("skills", "The skill cards of the library: list, show, review, import and export SKILL.md");
  skills->require_subcommand(1);
  const std::string libraryHelp = "The skill library (default: $KWB_LIBRARY, else ~/.local/share/kernel-workbench/library.sqlite)";
  auto *skillsList = skills->add_subcommand("list", "List the cards, with status, measured gain and evidence");
  auto *skillsShow = skills->add_subcommand("show", "Show a card as SKILL.md, with its audit trail");
  auto *skillsImport = skills->add_subcommand(
      "import", "Import SKILL.md cards: a file, FOLDER/SKILL.md or FOLDER/*/SKILL.md; all are checked first, and\n"
                "a folder with any malformed file imports nothing (exit 2, each problem as FILE:LINE: what).\n"
                "A new card enters as proposed: a file never sets a status or evidence (review and the gate do)");
  auto *skillsExport = skills->add_subcommand("export", "Write each card to FOLDER/<skill_id>/SKILL.md");
  auto *skillsApprove = skills->add_subcommand("approve", "Approve a card as its reviewer (recorded with who and when; the gate alone admits)");
  auto *skillsReject = skills->add_subcommand("reject", "Reject a card, with the reason (recorded with who and when)");
  auto *skillsApply = skills->add_subcommand(
      "apply", "Have a model apply a card to a kernel, and gate the result (a failure rejects a proposed card; success on\n"
      "enough tasks it was not lifted from admits it)");
  skillsApply->add_option("ID", skillsArgs.id, "The card's skill_id")->required();
  skillsApply->add_option("TASK", skillsArgs.task, "Task folder (or its task.toml)")->required();
  skillsApply->add_option("KERNEL", skillsArgs.kernel, "The kernel to apply it to (default: the task's starter)");
  skillsApply->add_option("--provider", skillsArgs.provider, "A configured provider's name, or a base URL")->required();
  skillsApply->add_option("--format", skillsArgs.format, "Wire format for a base URL: openai, anthropic, ollama");
  skillsApply->add_option("--model", skillsArgs.model, "Model (default: the provider's)");
  skillsApply->add_option("--time-cap", skillsArgs.timeCap, "Seconds of timing per configuration, each side (default 0.5)");
  skillsApply->add_option("--max-tokens", skillsArgs.maxTokens, "Most tokens of the model's answer (default 8192)")
      ->check(CLI::PositiveNumber);
  skillsApply->add_option("--tasks-to-admit", skillsArgs.tasksToAdmit,
                          "Tasks besides those it was lifted from a card must be reproduced on before the gate admits it "
                          "(default 2)")
      ->check(CLI::Range(1, 100));
  for (auto *sub : {skillsList, skillsShow, skillsImport, skillsExport, skillsApprove, skillsReject, skillsApply}) {
    sub->add_option("--library", skillsArgs.library, libraryHelp);
    sub->add_flag("--json", asJson, "Machine-readable output");
  }
  for (auto *sub : {skillsShow, skillsApprove, skillsReject}) sub->add_option("ID", skillsArgs.id, "The card's skill_id")->required();
  for (auto *sub : {skillsImport, skillsExport}) sub->add_option("FOLDER", skillsArgs.folder, "Folder of cards")->required();
  skillsImport->add_flag("--replace", skillsArgs.replace,
                         "A card whose skill_id the library holds takes the file's text and keeps its status, evidence "
                         "and verification log (without --replace such an import is refused)");
  for (auto *sub : {skillsList, skillsExport}) {
    sub->add_option("--status", skillsArgs.status, "Only cards in this status: proposed, admitted, rejected");
    sub->add_option("--case", skillsArgs.scopeCase, "Only cards whose scope covers this operator class (gemm, softmax, ...)");
    sub->add_option("--text", skillsArgs.text, "Only cards with this text in their id, intent or anchor");
  }
  for (auto *sub : {skillsApprove, skillsReject}) {
    sub->add_option("--by", skillsArgs.by, "Who reviews (default: $USER)");
    sub->add_option("--why", skillsArgs.why, "Why (required to reject)");
  }

  MemoryArgs memoryArgs;
  auto *memory = app.add_subcommand(
      "memory", "The experience memory (KOPE): every evaluation as a Case, linked to the Case it started from");
  memory->require_subcommand(1);
  auto *memoryStats = memory->add_subcommand("stats", "Cases, labels, sources, GPUs and the best Case per task");
  auto *memoryQuery = memory->add_subcommand(
      "query", "Cases ranked as the agent sees them: by label, then downstream score x confidence");
  memoryQuery->add_option("TEXT", memoryArgs.text, "Words, all of which must appear (idea, journal, feedback, task)");
  memoryQuery->add_option("--task", memoryArgs.task, "Only this task's Cases");
  memoryQuery->add_option("--label", memoryArgs.label, "Only this label: effective, partial, ineffective, negative");
  memoryQuery->add_option("--idea", memoryArgs.idea, "Only Cases whose idea contains this text");
  memoryQuery->add_option("--limit", memoryArgs.limit, "At most this many (default 20; 0: all)");
  auto *memoryExport = memory->add_subcommand("export", "Every Case, code included, to standard output");
  memoryExport->add_option("--format", memoryArgs.format, "jsonl (one JSON object per line)");
  auto *memoryGraph = memory->add_subcommand("graph", "The experience forest as Graphviz text (a cluster per task)");
  memoryGraph->add_flag("--dot", memoryArgs.dot, "Graphviz's language (render: kwb memory graph --dot | dot -Tsvg)");
  memoryGraph->add_option("--task", memoryArgs.task, "Only this task's Cases");
  auto *memoryImport = memory->add_subcommand(
      "import", "Record a workspace's run history as Cases (once: what is already there is not recorded again)");
  memoryImport->add_option("WORKSPACE", memoryArgs.workspace, "Workspace file (default: the workbench's)");
  for (auto *sub : {memoryStats, memoryQuery, memoryExport, memoryGraph, memoryImport})
    sub->add_option("--library", memoryArgs.library, libraryHelp);
  for (auto *sub : {memoryStats, memoryQuery, memoryImport}) sub->add_flag("--json", asJson, "Machine-readable output");

  TuneArgs tuneArgs;
  auto *tune = app.add_subcommand(
      "tune",
      "Search a task's tunable parameters ([tunables]) for the fastest correct configuration of a\n"
      "candidate: every point checked on the chosen configurations and timed (objective: the geometric\n"
      "mean of their median kernel times), spread over the GPUs, the next points compiled ahead on CPU\n"
      "threads. Exhaustive when the budget covers the space, else random sampling plus local search.\n"
      "Results are cached (resumable: run it again to continue); Ctrl+C stops the search.\n"
      "Exit status: 0 a best point found; 1 none correct, or stopped; 2 usage error; 3 not run (no CUDA device:\n"
      "every point is compiled and its launch checked only).");
  tune->add_option("TASK", tuneArgs.task, "Task folder or its task.toml")->required();
  tune->add_option("CANDIDATE", tuneArgs.candidate, "Candidate .cu file (default: the task's starter)");
  tune->add_option("--budget", tuneArgs.budget, "Points to evaluate (default 64; exhaustive when the space is smaller)");
  tune->add_option("--strategy", tuneArgs.strategy, "auto (default), exhaustive or random-local");
  tune->add_option("--search-seed", tuneArgs.searchSeed, "Seed of the random sampling (default 1)");
  tune->add_option("--config", tuneArgs.configs, "Size configuration to check and time (repeatable; default: all)");
  tune->add_option("--seed", tuneArgs.seeds, "Input seed (repeatable; default: the task's seeds)");
  tune->add_option("--arch", tuneArgs.arch, "Compile for sm_XY (default: the device's, else sm_90)");
  tune->add_option("--gpu", tuneArgs.gpus, "CUDA device to use (repeatable; default: every visible one)");
  addWorkersOption(tune, tuneArgs.workers);
  tune->add_option("--time-cap", tuneArgs.timeCap, "Seconds of sampling per configuration (default 1)")->check(CLI::PositiveNumber);
  tune->add_option("--time-limit", tuneArgs.timeLimit, "Seconds per configuration before a run is stopped (default 120)")
      ->check(CLI::PositiveNumber);
  tune->add_option("--cache", tuneArgs.cacheFile, "The tuning cache file (default ~/.cache/kernel-workbench/tune.sqlite)");
  tune->add_flag("--no-cache", tuneArgs.noCache, "Neither read nor write the tuning cache");
  tune->add_flag("--no-memory", tuneArgs.noMemory,
                 "Do not record the measured points as Cases in the experience memory (kwb memory)");
  tune->add_flag("--fresh", tuneArgs.fresh, "Forget this task and candidate's cached points first");
  tune->add_flag("--no-compile-ahead", tuneArgs.noCompileAhead, "Compile each point only when it is evaluated");
  tune->add_flag("--no-gpu", tuneArgs.noGpu, "Compile every point and check its launches only");
  tune->add_flag("--json", asJson, "Machine-readable output");

  AsmArgs asmArgs;
  auto *asmCmd = app.add_subcommand(
      "asm",
      "Show a candidate's SASS (or PTX) as the evaluator compiles it, each instruction with the line of\n"
      "the source it came from; only one source line's instructions (--line); or the diff of two\n"
      "candidates' listings, without the addresses and encodings that shift (--diff).");
  asmCmd->add_option("TASK", asmArgs.task, "Task folder or its task.toml")->required();
  asmCmd->add_option("CANDIDATE", asmArgs.candidate, "Candidate .cu file (default: the task's starter)");
  asmCmd->add_flag("--ptx", asmArgs.ptx, "PTX instead of SASS");
  asmCmd->add_option("--line", asmArgs.line, "Only the instructions of this source line");
  asmCmd->add_option("--diff", asmArgs.diffWith, "Another candidate: print the listing diff");
  asmCmd->add_option("--set", asmArgs.sets, "Tunable value NAME=VALUE (repeatable)");
  asmCmd->add_option("--arch", asmArgs.arch, "Compile for sm_XY (default sm_90)");
  asmCmd->add_flag("--json", asJson, "Machine-readable output");

  ProfileArgs profileArgs;
  auto *profile = addProfileSubcommand(app, profileArgs, asJson);

  LlmArgs llmArgs;
  auto *llm = app.add_subcommand("llm", "LLM providers: the configured ones, their models, a test request");
  llm->require_subcommand(1);
  auto *llmList = llm->add_subcommand("list", "List the configured providers (never their keys)");
  llmList->add_flag("--json", asJson, "Machine-readable output");
  auto *llmModels = llm->add_subcommand("models", "List the models a provider (or a base URL) serves");
  llmModels->add_option("PROVIDER", llmArgs.target, "A configured provider's name, or a base URL such as http://127.0.0.1:8080/v1")->required();
  llmModels->add_option("--format", llmArgs.format, "Wire format for a base URL: openai (default), anthropic or ollama");
  llmModels->add_flag("--json", asJson, "Machine-readable output");
  auto *llmTest = llm->add_subcommand(
      "test", "Send a tiny request and report latency, the first tokens and usage.\n"
              "Exit status: 0 answered; 1 failed (the message says why); 2 usage error.");
  llmTest->add_option("PROVIDER", llmArgs.target, "A configured provider's name, or a base URL such as http://127.0.0.1:8080/v1")->required();
  llmTest->add_option("--format", llmArgs.format, "Wire format for a base URL: openai (default), anthropic or ollama");
  llmTest->add_option("--model", llmArgs.model, "Model (default: the provider's, else the server's first)");
  llmTest->add_option("--prompt", llmArgs.prompt, "The user message (default: a greeting)");
  llmTest->add_option("--max-tokens", llmArgs.maxTokens, "Most tokens to generate (default 32)")->check(CLI::PositiveNumber);
  llmTest->add_flag("--no-stream", llmArgs.noStream, "Ask for the whole answer at once instead of a stream");
  llmTest->add_option("--workspace", llmArgs.workspace, "Record the exchange (key redacted) in this workspace's transcripts");
  llmTest->add_option("--session", llmArgs.session, "The session to record it under (default: none)");
  llmTest->add_flag("--json", asJson, "Machine-readable output");
  auto *llmTranscripts = llm->add_subcommand("transcripts", "List the LLM exchanges stored in a workspace for a session");
  llmTranscripts->add_option("--workspace", llmArgs.workspace, "Workspace file (default: the workbench's)");
  llmTranscripts->add_option("--session", llmArgs.session, "Session (default: none, the connection tests)");
  llmTranscripts->add_flag("--json", asJson, "Machine-readable output, with the request bodies");
  auto *llmReplay = llm->add_subcommand("replay", "Decode a stored answer again from its raw bytes and compare it with the stored text");
  llmReplay->add_option("ID", llmArgs.id, "The transcript's id (kwb llm transcripts)")->required();
  llmReplay->add_option("--workspace", llmArgs.workspace, "Workspace file (default: the workbench's)");
  llmReplay->add_option("--session", llmArgs.session, "Session (default: none)");
  llmReplay->add_flag("--json", asJson, "Machine-readable output");
  auto *llmDiscover = llm->add_subcommand("discover", "Find LLM servers on this machine's usual ports (Ollama, llama.cpp, vLLM, LM Studio, SGLang, and packaging/run-local-llm.sh's 8089)");
  llmDiscover->add_flag("--json", asJson, "Machine-readable output");

  ExportArgs exportArgs;
  auto *exportCmd = app.add_subcommand(
      "export",
      "Write an optimized kernel out for use elsewhere: a CUDA source package (the kernel with its tunables baked in,\n"
      "a typed launcher, a CMake library and a test against the task's reference), a PyTorch extension (its test\n"
      "times it beside the PyTorch operation it replaces), or a report (Markdown and one self-contained HTML file).\n"
      "Exit status: 0 written; 1 a store could not be read; 2 usage error (bad source, task, folder or format).");
  exportCmd->add_option("SOURCE", exportArgs.source,
                        "A candidate file, run:N (the workspace's run N), session:ID (a session's best), case:N (a Case "
                        "of the experience memory)")
      ->required();
  exportCmd->add_option("--task", exportArgs.task, "The task (its folder)")->required();
  exportCmd->add_option("--to", exportArgs.to, "The folder to write (made if missing; it must be empty unless --force)")
      ->required();
  exportCmd->add_option("--format", exportArgs.format, "cuda (default), torch or report");
  exportCmd->add_option("--set", exportArgs.set, "NAME=V: a tunable's value to bake in (repeatable)");
  exportCmd->add_option("--workspace", exportArgs.workspace, "Workspace file (default: the workbench's)");
  exportCmd->add_option("--library", exportArgs.library, libraryHelp);
  exportCmd->add_flag("--force", exportArgs.force, "Write into a folder that has files in it");
  exportCmd->add_flag("--profile", exportArgs.profile,
                      "report: profile the kernel and the task's starter (the baseline) on this machine's GPU");
  exportCmd->add_flag("--json", asJson, "Machine-readable output");

  ImportArgs importArgs;
  auto *importCmd = app.add_subcommand("import", "Make tasks from other benchmarks' problem files");
  importCmd->require_subcommand(1);
  auto *importKernelBench = importCmd->add_subcommand(
      "kernelbench",
      "Make a task folder DIR/NAME from each KernelBench problem file (class Model, get_inputs, get_init_inputs):\n"
      "task.toml (the problem's sizes, a small and a large configuration, its tensors: forward's inputs, the\n"
      "module's weights and buffers, the outputs; its constructor arguments), reference.py (the problem, the\n"
      "task's PyTorch reference) and NAME.cu (the starter: naive kernels, one per step of forward, where they\n"
      "can be written, else a kernel to fill in). The module is built and forward run on PyTorch's meta device\n"
      "(the weights' values on the CPU, at the small sizes): the problem's code runs, in the Python that --python\n"
      "names.\n"
      "Exit status: 0 every problem imported; 1 one or more could not be (each says why); 2 usage error.");
  auto *importTorch = importCmd->add_subcommand(
      "torch",
      "Make a task folder DIR/NAME from your own PyTorch module: a file in KernelBench's shape (a class Model(nn.Module)\n"
      "whose forward is the operator, get_inputs() returning forward's arguments, get_init_inputs() Model's), made\n"
      "into a task exactly as `kwb import kernelbench` makes one.\n"
      "Exit status: 0 every module imported; 1 one or more could not be (each says why); 2 usage error.");
  for (auto *sub : {importKernelBench, importTorch}) {
    const bool torch = sub == importTorch;
    sub->add_option("PROBLEM", importArgs.problems, torch ? "Module files (.py), one or more" : "KernelBench problem files (.py), one or more");
    sub->add_option("--to", importArgs.to, "The folder the task folders are made in (required)");
    sub->add_flag("--force", importArgs.force, "Write into a task folder that already holds files");
    sub->add_option("--python", importArgs.python,
                    "The Python interpreter with PyTorch (default: $KWB_PYTHON, else the venv packaging/install-torch.sh "
                    "makes, else python3 on PATH)");
    sub->add_flag("--json", asJson, "Machine-readable output: an array of the outcomes");
    sub->allow_extras();  // an unknown option naming a file (--no-torch.py) is a problem file: import_command
  }

  SuiteArgs suiteArgs;
  auto *suiteCmd = app.add_subcommand(
      "suite",
      "Evaluate every task folder in TASKS with its candidate CANDIDATES/NAME.cu over the GPU pool, timed\n"
      "against the task's PyTorch module, and report KernelBench's metrics: the correctness rate and fast_p\n"
      "(the fraction of tasks whose candidate is correct and faster than PyTorch by more than p), p = 1, 1.5, 2,\n"
      "over PyTorch eager and torch.compile; a task without a candidate counts as not correct.\n"
      "Exit status: 0 the suite ran; 2 usage error; 3 no CUDA device.");
  suiteCmd->add_option("TASKS", suiteArgs.tasks, "The folder of task folders")->required();
  suiteCmd->add_option("--candidates", suiteArgs.candidates, "The folder of candidates, NAME.cu per task (not with --agent)");
  // --agent: the ablation runner (issue 47, 7).
  AgentSuiteArgs agentSuite;
  bool agentMode = false;
  suiteCmd->add_flag("--agent", agentMode,
                     "Instead of candidates: run an agent session on every task, once per --ablate arm, and report per arm\n"
                     "solve rate, fast_p, LLM calls, tokens and GPU evaluations (each arm from its own copy of the library)");
  suiteCmd->add_option("--ablate", agentSuite.ablate,
                       "With --agent: an arm, the part switched off: none (everything on), memory, skills or dcp (repeatable; "
                       "default none)")
      ->check(CLI::IsMember({"none", "memory", "skills", "dcp"}));
  suiteCmd->add_option("--provider", agentSuite.session.provider, "With --agent: a configured provider's name, or a base URL");
  suiteCmd->add_option("--format", agentSuite.session.format, "With --agent: wire format for a base URL");
  suiteCmd->add_option("--model", agentSuite.session.model, "With --agent: model (default: the provider's)");
  suiteCmd->add_option("-G", agentSuite.session.candidates, "With --agent: candidates per group (default 4)")->check(CLI::Range(1, 16));
  suiteCmd->add_option("-K,--turns", agentSuite.session.turns, "With --agent: turns per group, K (default 3)")->check(CLI::Range(1, 10));
  suiteCmd->add_option("--groups", agentSuite.session.groups, "With --agent: groups per session (default 1)")->check(CLI::Range(1, 1000));
  suiteCmd->add_option("--max-tokens", agentSuite.session.maxTokens, "With --agent: most tokens per answer (default 4096)")
      ->check(CLI::PositiveNumber);
  suiteCmd->add_option("--budget-tokens", agentSuite.session.tokens, "With --agent: tokens per session at most")->check(CLI::PositiveNumber);
  suiteCmd->add_flag("--no-gpu", agentSuite.session.noGpu, "With --agent: compile every answer and check its launch only");
  suiteCmd->add_option("--workspace", agentSuite.session.workspace, "With --agent: the workspace the sessions are kept in");
  suiteCmd->add_option("--config", suiteArgs.configs,
                       "Configuration to run where a task has it (repeatable; default: every configuration)");
  suiteCmd->add_option("--device", suiteArgs.devices, "CUDA device (repeatable; default: every device)");
  addWorkersOption(suiteCmd, suiteArgs.workers);
  suiteCmd->add_option("--time-cap", suiteArgs.timeCap, "Seconds of sampling per configuration (default 1)")
      ->check(CLI::PositiveNumber);
  suiteCmd->add_option("--time-limit", suiteArgs.timeLimit, "Seconds per configuration's evaluation (default 120)")
      ->check(CLI::PositiveNumber);
  suiteCmd->add_option("--out", suiteArgs.out, "Also write the JSON to this file");
  suiteCmd->add_option("--python", suiteArgs.python,
                       "The Python interpreter with PyTorch (default: $KWB_PYTHON, else python3 on PATH)");
  suiteCmd->add_flag("--no-torch-compile", suiteArgs.noTorchCompile, "Time PyTorch eagerly only");
  suiteCmd->add_flag("--json", asJson, "Machine-readable output");

  OptimizeArgs optimizeArgs;
  SessionsArgs sessionsArgs;
  const SessionCommands sessionCommands = addSessionCommands(app, optimizeArgs, sessionsArgs, asJson);

  // CLI11 reports a mistyped command as "A subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const auto *sub : app.get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found = found || sub->get_name() == argv[1];
    }
    if (!found) {
      std::cerr << "kwb: unknown command '" << argv[1] << "'; expected one of: " << known << "\n"
                << "Run with --help for more information.\n";
      return kExitInvalid;
    }
  }
  CLI11_PARSE(app, argc, argv);

  if (*devices) return devicesCommand(devicesWorkers, asJson);
  if (*exportCmd) return exportCommand(exportArgs, asJson);
  if (*importKernelBench || *importTorch) {
    importArgs.command = *importTorch ? "torch" : "kernelbench";
    importArgs.extras = (*importTorch ? importTorch : importKernelBench)->remaining();
    return importKernelBenchCommand(importArgs, asJson);
  }
  if (*suiteCmd && agentMode) {
    agentSuite.tasks = suiteArgs.tasks;
    agentSuite.out = suiteArgs.out;
    agentSuite.session.configs = suiteArgs.configs;
    agentSuite.session.gpus = suiteArgs.devices;
    agentSuite.session.workers = suiteArgs.workers;
    agentSuite.session.timeCap = suiteArgs.timeCap;
    agentSuite.session.timeLimit = suiteArgs.timeLimit;
    return agentSuiteCommand(agentSuite, asJson);
  }
  if (*suiteCmd && suiteArgs.candidates.empty()) {
    std::cerr << "kwb: suite needs --candidates DIR (or --agent --provider P)\n";
    return 2;
  }
  if (*suiteCmd) return suiteCommand(suiteArgs, asJson);
  if (*tasksList) return tasksListCommand(listDir, asJson);
  if (*taskShow) return taskCommand(showPath, asJson, false);
  if (*taskValidate) return taskCommand(validatePath, asJson, true);
  if (*eval) return evalCommand(evalArgs, asJson);
  if (*lineageBuild) return lineageBuildCommand(buildArgs, asJson);
  if (*lineage) {
    if (lineageArgs.task.empty()) {
      std::cerr << "kwb lineage: TASK is required (or: kwb lineage build TASK)\n";
      return kExitInvalid;
    }
    return lineageCommand(lineageArgs, asJson);
  }
  if (*skillsList) return skillsListCommand(skillsArgs, asJson);
  if (*skillsShow) return skillsShowCommand(skillsArgs, asJson);
  if (*skillsImport) return skillsImportCommand(skillsArgs, asJson);
  if (*skillsExport) return skillsExportCommand(skillsArgs, asJson);
  if (*skillsApprove) return skillsReviewCommand(skillsArgs, true, asJson);
  if (*skillsReject) return skillsReviewCommand(skillsArgs, false, asJson);
  if (*skillsApply) return skillsApplyCommand(skillsArgs, asJson);
  if (*memoryStats) return memoryStatsCommand(memoryArgs, asJson);
  if (*memoryQuery) return memoryQueryCommand(memoryArgs, asJson);
  if (*memoryExport) return memoryExportCommand(memoryArgs);
  if (*memoryGraph) return memoryGraphCommand(memoryArgs);
  if (*memoryImport) return memoryImportCommand(memoryArgs, asJson);
  if (*tune) return tuneCommand(tuneArgs, asJson);
  if (*asmCmd) return asmCommand(asmArgs, asJson);
  if (*profile) return profileCommand(profileArgs, asJson);
  if (*llmList) return llmListCommand(asJson);
  if (*llmModels) return llmModelsCommand(llmArgs, asJson);
  if (*llmTest) return llmTestCommand(llmArgs, asJson);
  if (*llmDiscover) return llmDiscoverCommand(asJson);
  if (*llmTranscripts) return llmTranscriptsCommand(llmArgs, asJson);
  if (*llmReplay) return llmReplayCommand(llmArgs, asJson);
  if (*sessionCommands.optimize) return optimizeCommand(optimizeArgs, asJson);
  if (*sessionCommands.sessions) return sessionsCommand(sessionsArgs, asJson);
  if (*sessionCommands.trajectoriesExport) return trajectoriesExportCommand(sessionsArgs);
  return 1;
}
