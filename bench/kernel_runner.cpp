// kwb-bench-kernel-runner: a task's kernels launched N times with one size configuration, and
// nothing else, so that Nsight Compute can time them for comparison with our own figure:
//
//   ncu --clock-control none --metrics gpu__time_duration.sum --csv
//       kwb-bench-kernel-runner kernels/softmax --config small --launches 20
//
// The candidate (the task's starter, or CANDIDATE) and the reference are compiled by
// kwb::Compiler for the device's architecture with the same requests the Evaluator makes, the
// inputs are generated and uploaded as the worker does (core/eval/input_generator.h, seed 1;
// `out` tensors zeroed), and each kernel is launched --warmup times, then --launches times,
// candidate and reference interleaved, each launch preceded (by default) by the same L2 flush as
// the worker's timing (a memset of max(2 × L2, 64 MiB)). The runner's own CUDA-event times are
// printed too (meaningless under a profiler). It uses the dlopen'd driver (core/gpu/cuda_driver.h).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "core/compile/compiler.h"
#include "core/eval/evaluator.h"
#include "core/eval/input_generator.h"
#include "core/gpu/cuda_driver.h"
#include "core/gpu/device_info.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"

namespace fs = std::filesystem;
using nlohmann::json;
namespace kb = kwb::bench;

namespace {

constexpr const char *kProgram = "kwb-bench-kernel-runner";

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Kernel {
  std::string who;  // "candidate" | "reference"
  const kwb::Launch *launch = nullptr;
  kwb::LaunchDims dims;
  kwb::CompileResult compiled;
  kwb::CUmodule module = nullptr;
  kwb::CUfunction function = nullptr;
  std::vector<kwb::CUdeviceptr> pointers;
  std::vector<long long> sizes;
  std::vector<void *> params;
  std::vector<double> eventMs;
};

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"Launch a task's candidate and reference kernels N times with one size configuration (for\n"
               "ncu --metrics gpu__time_duration.sum). Exit status: 0 ran, 1 failed, 2 usage, 3 no CUDA device.",
               kProgram};
  std::string taskArg, candidateArg, configName, which = "both", outPath, archArg;
  std::vector<std::string> sets;
  int launches = 20, warmup = 5, device = 0;
  std::uint64_t seed = 1;
  bool noFlush = false;
  app.add_option("TASK", taskArg, "Task folder, its task.toml, or a bundled task's name")->required();
  app.add_option("CANDIDATE", candidateArg, "Device-only candidate .cu (default: the task's starter)");
  app.add_option("--config", configName, "Size configuration (default: the task's first)");
  app.add_option("--which", which, "candidate, reference or both (default both)")
      ->check(CLI::IsMember({"candidate", "reference", "both"}));
  app.add_option("--set", sets, "Tunable NAME=VALUE (repeatable; default: each tunable's first value)");
  app.add_option("--launches", launches, "Measured launches per kernel (default 20)")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup, "Launches per kernel before the measured ones (default 5)")->check(CLI::Range(0, 100000));
  app.add_option("--seed", seed, "Input seed (default 1, as the worker's timing)");
  app.add_option("--arch", archArg, "Compile for sm_XY (default: the device's)");
  app.add_option("--device", device, "CUDA device ordinal");
  app.add_flag("--no-flush", noFlush, "Do not flush L2 before each launch");
  app.add_option("--json", outPath, "Also write what ran (kernels, launches, event times) to this JSON file");
  CLI11_PARSE(app, argc, argv);

  const auto inventory = kwb::probeGpus();
  const kwb::DeviceInfo *gpu = kb::requireDevice(kProgram, inventory, device);
  if (!gpu) return kb::kExitNoDevice;
  const std::string arch = archArg.empty() ? kb::archOf(*gpu) : archArg;

  kwb::Task task;
  try {
    std::error_code ec;
    fs::path path = taskArg;
    if (!fs::exists(path, ec))
      if (auto kernels = kwb::bundledKernelsDir()) path = *kernels / taskArg;
    task = kwb::loadTask(path);
  } catch (const std::exception &e) {
    std::cerr << kProgram << ": " << taskArg << ": " << e.what() << "\n";
    return kb::kExitUsage;
  }
  const kwb::SizeConfig *config = configName.empty() ? &task.configs.front() : task.config(configName);
  if (!config) {
    std::cerr << kProgram << ": task '" << task.name << "' has no size configuration '" << configName << "'\n";
    return kb::kExitUsage;
  }
  std::map<std::string, std::int64_t> given;
  for (const auto &s : sets) {
    const auto eq = s.find('=');
    try {
      if (eq == std::string::npos || eq == 0) throw std::invalid_argument(s);
      given[s.substr(0, eq)] = std::stoll(s.substr(eq + 1));
    } catch (const std::exception &) {
      std::cerr << kProgram << ": --set expects NAME=INTEGER, not '" << s << "'\n";
      return kb::kExitUsage;
    }
  }
  std::map<std::string, std::int64_t> tunables;
  try {
    tunables = kwb::effectiveTunables(task, given);
  } catch (const std::exception &e) {
    std::cerr << kProgram << ": " << e.what() << "\n";
    return kb::kExitUsage;
  }

  // Compile, as the Evaluator does.
  const fs::path candidatePath = candidateArg.empty() ? task.folder / task.starterSource() : fs::path(candidateArg);
  kwb::Compiler compiler;
  std::vector<Kernel> kernels;
  try {
    const kwb::Launch &candidateLaunch = task.launch ? *task.launch : task.reference.launch;
    if (which != "reference") {
      Kernel k;
      k.who = "candidate";
      k.launch = &candidateLaunch;
      const std::string source = kb::readText(candidatePath);
      const auto request = kwb::requestFor(task, source, candidatePath.string(), arch, tunables);
      if (request.form != kwb::SourceForm::DeviceOnly) {
        std::cerr << kProgram << ": " << candidatePath.string()
                  << " is a host launcher (kwb_launch); this runner launches device-only kernels\n";
        return kb::kExitUsage;
      }
      k.compiled = compiler.compile(request);
      k.dims = kwb::evaluateLaunch(candidateLaunch, *config, tunables);
      kernels.push_back(std::move(k));
    }
    if (which != "candidate") {
      Kernel k;
      k.who = "reference";
      k.launch = &task.reference.launch;
      kwb::CompileRequest request;
      request.source = kb::readText(task.folder / task.reference.source);
      request.sourceName = task.reference.source.string();
      request.arch = arch;
      request.expectedKernels = {task.reference.launch.kernel};
      k.compiled = compiler.compile(request);
      k.dims = kwb::evaluateLaunch(task.reference.launch, *config, tunables);
      kernels.push_back(std::move(k));
    }
  } catch (const std::exception &e) {
    std::cerr << kProgram << ": " << e.what() << "\n";
    return kb::kExitUsage;
  }
  for (const auto &k : kernels)
    if (!k.compiled.ok) {
      std::cerr << kProgram << ": the " << k.who << " does not compile:\n" << k.compiled.log << "\n";
      return kb::kExitFailed;
    }

  kwb::CudaDriver cu;
  if (!cu.load()) {
    std::cerr << kProgram << ": no CUDA device (" << cu.problem() << ")\n";
    return kb::kExitNoDevice;
  }
  auto check = [&cu](kwb::CUresult r, const std::string &what) {
    if (r != kwb::cu::SUCCESS) throw CudaError(what + ": " + cu.describe(r));
  };

  struct TensorBuffer {
    const kwb::Tensor *tensor = nullptr;
    std::vector<std::int64_t> shape;
    std::uint64_t count = 1;
    std::size_t bytes = 0;
    kwb::CUdeviceptr device = 0;
  };
  std::vector<TensorBuffer> tensors;
  json ran = {{"meta", kb::benchMeta(kProgram, inventory, device)},
              {"task", task.name},
              {"config", config->name},
              {"arch", arch},
              {"tunables", tunables},
              {"seed", seed},
              {"warmup", warmup},
              {"launches", launches},
              {"l2_flush", !noFlush},
              {"kernels", json::array()}};
  try {
    check(cu.cuInit(0), "cuInit");
    kwb::CUdevice dev = 0;
    check(cu.cuDeviceGet(&dev, device), "cuDeviceGet");
    kwb::CUcontext context = nullptr;
    check(cu.cuDevicePrimaryCtxRetain(&context, dev), "creating a context");
    check(cu.cuCtxSetCurrent(context), "using the context");

    std::map<std::string, std::size_t> tensorIndex;
    for (const auto &t : task.tensors) {
      TensorBuffer b{&t};
      for (const auto &dim : t.shape) {
        b.shape.push_back(dim.evaluate(config->values));
        b.count *= static_cast<std::uint64_t>(b.shape.back());
      }
      b.bytes = static_cast<std::size_t>(b.count * kwb::dtypeSize(t.dtype));
      tensorIndex[t.name] = tensors.size();
      tensors.push_back(b);
    }
    for (auto &t : tensors) {
      if (!t.bytes) continue;
      check(cu.cuMemAlloc(&t.device, t.bytes), "allocating tensor '" + t.tensor->name + "'");
      if (t.tensor->role == kwb::TensorRole::Out) {
        check(cu.cuMemsetD8(t.device, 0, t.bytes), "clearing '" + t.tensor->name + "'");
      } else {
        const auto input = kwb::generateInput(*t.tensor, t.shape, seed);
        check(cu.cuMemcpyHtoD(t.device, input.data(), t.bytes), "copying input '" + t.tensor->name + "'");
      }
    }
    int l2 = 0;
    cu.cuDeviceGetAttribute(&l2, kwb::cu::ATTR_L2_CACHE_SIZE, dev);
    const std::size_t flushBytes = std::max<std::size_t>(2 * static_cast<std::size_t>(std::max(l2, 0)), std::size_t{64} << 20);
    kwb::CUdeviceptr flush = 0;
    if (!noFlush) check(cu.cuMemAlloc(&flush, flushBytes), "allocating the L2 flush buffer");

    for (auto &k : kernels) {
      check(cu.cuModuleLoadData(&k.module, k.compiled.image.data()), "loading the " + k.who + " module");
      check(cu.cuModuleGetFunction(&k.function, k.module, k.launch->kernel.c_str()),
            "the " + k.who + " module has no kernel '" + k.launch->kernel + "'");
      if (k.dims.sharedBytes > 48 * 1024)
        cu.cuFuncSetAttribute(k.function, kwb::cu::FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              static_cast<int>(k.dims.sharedBytes));
      k.pointers.reserve(k.launch->args.size());
      k.sizes.reserve(k.launch->args.size());
      for (const auto &a : k.launch->args) {
        if (auto it = tensorIndex.find(a); it != tensorIndex.end()) {
          k.pointers.push_back(tensors[it->second].device);
          k.params.push_back(&k.pointers.back());
        } else {
          k.sizes.push_back(static_cast<long long>(config->values.at(a)));
          k.params.push_back(&k.sizes.back());
        }
      }
    }

    kwb::CUevent start = nullptr, stop = nullptr;
    check(cu.cuEventCreate(&start, 0), "creating an event");
    check(cu.cuEventCreate(&stop, 0), "creating an event");
    unsigned flushValue = 0;
    auto launch = [&](Kernel &k, bool record) {
      if (!noFlush)
        check(cu.cuMemsetD8(flush, static_cast<unsigned char>((++flushValue & 1) ? 0xA5 : 0x5A), flushBytes),
              "flushing L2");
      check(cu.cuEventRecord(start, nullptr), "recording an event");
      const auto &d = k.dims;
      check(cu.cuLaunchKernel(k.function, static_cast<unsigned>(d.grid[0]), static_cast<unsigned>(d.grid[1]),
                              static_cast<unsigned>(d.grid[2]), static_cast<unsigned>(d.block[0]),
                              static_cast<unsigned>(d.block[1]), static_cast<unsigned>(d.block[2]),
                              static_cast<unsigned>(d.sharedBytes), nullptr, k.params.data(), nullptr),
            "launching " + k.who + " kernel '" + k.launch->kernel + "'");
      check(cu.cuEventRecord(stop, nullptr), "recording an event");
      check(cu.cuEventSynchronize(stop), k.who + " kernel '" + k.launch->kernel + "'");
      float ms = 0;
      check(cu.cuEventElapsedTime(&ms, start, stop), "reading the event timer");
      if (record) k.eventMs.push_back(ms);
    };
    // Warm-up per kernel (so the SM clock has risen), then the measured launches interleaved,
    // as the worker's timing does.
    for (auto &k : kernels)
      for (int i = 0; i < warmup; ++i) launch(k, false);
    for (int i = 0; i < launches; ++i)
      for (auto &k : kernels) launch(k, true);
    check(cu.cuCtxSynchronize(), "synchronising");
  } catch (const std::exception &e) {
    std::cerr << kProgram << ": " << e.what() << "\n";
    return kb::kExitFailed;
  }

  kb::Table table({"kernel", "role", "grid", "block", "launches", "event median", "event min"});
  auto dims = [](const std::array<std::int64_t, 3> &d) {
    return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
  };
  for (const auto &k : kernels) {
    const double med = kb::median(k.eventMs);
    const double mn = k.eventMs.empty() ? 0 : *std::min_element(k.eventMs.begin(), k.eventMs.end());
    table.add({k.launch->kernel, k.who, dims(k.dims.grid), dims(k.dims.block), std::to_string(k.eventMs.size()),
               kb::formatMs(med), kb::formatMs(mn)});
    ran["kernels"].push_back({{"role", k.who},
                              {"kernel", k.launch->kernel},
                              {"grid", k.dims.grid},
                              {"block", k.dims.block},
                              {"shared_bytes", k.dims.sharedBytes},
                              {"cache_hit", k.compiled.cacheHit},
                              {"event_median_ms", med},
                              {"event_min_ms", mn},
                              {"event_ms", k.eventMs}});
  }
  std::cout << task.name << " " << config->name << " on " << gpu->name << " (" << arch << "): " << warmup
            << " warm-up + " << launches << " measured launches per kernel"
            << (noFlush ? "" : ", L2 flushed before each") << "\n"
            << table.str();
  if (!outPath.empty() && !kb::writeJson(outPath, ran)) return kb::kExitFailed;
  return kb::kExitOk;
}
