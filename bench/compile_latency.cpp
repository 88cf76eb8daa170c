// kwb-bench-compile-latency: what compiling untrusted device code in the sandboxed compile
// service (issue 17) costs against NVRTC in the calling process, as it was before. For each
// bundled task's starter (device-only), `--runs` compiles of distinct variants (a define changes,
// so no cache of any kind answers) through each path, with the disk cache off; the service's
// first compile (a process started, NVRTC loaded and warmed, the fence raised) is reported apart.
// Beside each round trip: the service's own figures (wall and CPU time inside it, page faults)
// and the CPU time of the compile in process, to tell the process boundary's cost apart from a
// compile that runs slower inside the limited process.
// No GPU needed. Prints a table and writes JSON.
//   kwb-bench-compile-latency [--runs N] [--arch sm_90] [--json FILE] [TASK...]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "core/compile/compile_service.h"
#include "core/compile/nvrtc_compiler.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"

namespace kb = kwb::bench;
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double cpuSecondsOfThisProcess() {
  struct rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

kwb::CompileRequest variant(const kwb::Task &task, const std::string &source, const std::string &arch, int i) {
  kwb::CompileRequest r;
  r.source = source;
  r.sourceName = task.starterSource().filename().string();
  r.arch = arch;
  r.defines.emplace_back("KWB_BENCH_VARIANT", std::to_string(i));
  r.expectedKernels.push_back(task.launch ? task.launch->kernel : task.reference.launch.kernel);
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app("Compile latency of device code: the sandboxed compile service against NVRTC in process. "
               "Prints a table and writes JSON.");
  int runs = 10;
  std::string arch = "sm_90", jsonPath;
  std::vector<std::string> tasks;
  app.add_option("--runs", runs, "Compiles per task and path")->check(CLI::Range(2, 1000));
  app.add_option("--arch", arch, "Target architecture");
  app.add_option("--json", jsonPath, "Write the results here");
  app.add_option("tasks", tasks, "Task folders (default: every bundled task)");
  CLI11_PARSE(app, argc, argv);

  const auto &nvrtc = kwb::NvrtcCompiler::shared();
  if (!nvrtc.available()) {
    std::cerr << "kwb-bench-compile-latency: NVRTC is not available: " << nvrtc.problem() << "\n";
    return 3;
  }
  if (tasks.empty()) {
    const auto kernels = kwb::bundledKernelsDir();
    if (!kernels) {
      std::cerr << "kwb-bench-compile-latency: no bundled kernels found (set KWB_KERNELS_DIR)\n";
      return 2;
    }
    for (const auto &entry : fs::directory_iterator(*kernels))
      if (fs::exists(entry.path() / "task.toml")) tasks.push_back(entry.path().string());
    std::sort(tasks.begin(), tasks.end());
  }

  auto &service = kwb::CompileService::shared();
  const auto timeLimit = std::chrono::seconds(120);
  kb::Table table({"task", "in-process median s", "in-process cpu s", "service median s", "inside service s",
                    "service cpu s", "service faults", "service / in-process", "service first s", "ok"});
  json rows = json::array();
  std::vector<double> allInProcess, allService, allInside;
  int variantNumber = 0;
  for (const auto &folder : tasks) {
    kwb::Task task;
    std::string source;
    try {
      task = kwb::loadTask(folder);
      source = kwb::readTaskFile(task, task.starterSource());
    } catch (const std::exception &e) {
      std::cerr << "kwb-bench-compile-latency: " << folder << ": " << e.what() << "\n";
      return 2;
    }
    std::vector<double> inProcess, viaService, inProcessCpu, inside, serviceCpu, serviceFaults;
    double first = -1;
    bool ok = true;
    for (int i = 0; i < runs + 1; ++i) {
      // Alternate the paths so that drift in the machine's load falls on both alike.
      const double cpuBefore = cpuSecondsOfThisProcess();
      auto start = Clock::now();
      const auto a = nvrtc.compile(variant(task, source, arch, ++variantNumber), timeLimit);
      const double inProcessSeconds = seconds(start);
      const double cpu = cpuSecondsOfThisProcess() - cpuBefore;
      const auto workBefore = service.work();
      start = Clock::now();
      const auto b = service.compile(variant(task, source, arch, ++variantNumber), timeLimit);
      const double serviceSeconds = seconds(start);
      const auto workAfter = service.work();
      ok = ok && a.result.ok && b.result.ok;
      if (i == 0 && first < 0) {
        first = serviceSeconds;  // the first compile through the service at all starts its process
        continue;
      }
      inProcess.push_back(inProcessSeconds);
      inProcessCpu.push_back(cpu);
      viaService.push_back(serviceSeconds);
      inside.push_back(workAfter.wallSeconds - workBefore.wallSeconds);
      serviceCpu.push_back(workAfter.cpuSeconds - workBefore.cpuSeconds);
      serviceFaults.push_back(static_cast<double>(workAfter.minorFaults - workBefore.minorFaults));
    }
    const double medianIn = kb::median(inProcess), medianService = kb::median(viaService);
    allInProcess.insert(allInProcess.end(), inProcess.begin(), inProcess.end());
    allService.insert(allService.end(), viaService.begin(), viaService.end());
    allInside.insert(allInside.end(), inside.begin(), inside.end());
    const std::string firstText = rows.empty() ? kb::formatNumber(first, 3) : "-";
    table.add({task.name, kb::formatNumber(medianIn, 3), kb::formatNumber(kb::median(inProcessCpu), 3),
               kb::formatNumber(medianService, 3), kb::formatNumber(kb::median(inside), 3),
               kb::formatNumber(kb::median(serviceCpu), 3), kb::formatNumber(kb::median(serviceFaults), 0),
               kb::formatNumber(medianService / medianIn, 3), firstText, ok ? "yes" : "NO"});
    rows.push_back({{"task", task.name},
                    {"in_process_s", inProcess},
                    {"in_process_cpu_s", inProcessCpu},
                    {"service_s", viaService},
                    {"inside_service_s", inside},
                    {"service_cpu_s", serviceCpu},
                    {"service_minor_faults", serviceFaults},
                    {"median_in_process_s", medianIn},
                    {"median_service_s", medianService},
                    {"service_first_s", rows.empty() ? json(first) : json(nullptr)},
                    {"ok", ok}});
  }
  const auto state = service.state();
  std::cout << "Compile latency of device-only starters (" << arch << "), " << runs
            << " distinct variants per task and path, no disk cache; commit " << kb::benchCommit() << "\n"
            << "service: sandbox " << state.sandbox << (state.sandboxReason.empty() ? "" : " (" + state.sandboxReason + ")")
            << "; fence " << state.fence << "\n"
            << table.str() << "all tasks: in-process median " << kb::formatNumber(kb::median(allInProcess), 3)
            << " s, service median " << kb::formatNumber(kb::median(allService), 3) << " s (inside the service "
            << kb::formatNumber(kb::median(allInside), 3) << " s)\n";
  const json out{{"program", "kwb-bench-compile-latency"},
                 {"commit", kb::benchCommit()},
                 {"arch", arch},
                 {"runs", runs},
                 {"nvrtc", nvrtc.identity()},
                 {"sandbox", state.sandbox},
                 {"sandbox_reason", state.sandboxReason},
                 {"fence", state.fence},
                 {"median_in_process_s", kb::median(allInProcess)},
                 {"median_service_s", kb::median(allService)},
                 {"median_inside_service_s", kb::median(allInside)},
                 {"tasks", rows}};
  if (!jsonPath.empty() && !kb::writeJson(jsonPath, out)) {
    std::cerr << "kwb-bench-compile-latency: cannot write " << jsonPath << "\n";
    return 1;
  }
  return 0;
}
