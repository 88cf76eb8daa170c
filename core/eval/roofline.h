#pragma once
// The roofline of one GPU, measured, and where a candidate sits under it. The ceilings are
// measured once per device by the worker (`ceilings`, core/worker/PROTOCOL.md): device-to-device
// copy bandwidth (read + write, like the tasks' byte counts), an FMA-bound kernel's f32 rate, and
// the bf16 tensor-core rate through mma.sync (what candidates written with mma.sync or WMMA can
// reach; Hopper's wgmma goes higher) where the architecture has it. They are cached per device
// (name, PCI bus, driver version) in a JSON file. No Qt.
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/eval/evaluator.h"
#include "core/task/task.h"

namespace kwb {

struct DeviceCeilings {
  std::string device;         // "NVIDIA H200"
  std::string key;            // name | PCI bus id | driver version: what the cache is keyed by
  double copyBytesPerS = 0;   // read + write
  double fp32FlopsPerS = 0;   // FMA = 2 flops
  double tensorFlopsPerS = 0; // bf16 in, f32 accumulate, mma.sync; 0 when not measured
  std::string measuredAt;     // UTC
  nlohmann::json toJson() const;
  static DeviceCeilings fromJson(const nlohmann::json &j);
};

// Where a candidate sits: its arithmetic intensity and achieved rates against the ceilings.
struct RooflinePlacement {
  double intensity = 0;        // flops per byte
  double achievedFlopsPerS = 0;
  double achievedBytesPerS = 0;
  std::string bound;           // "memory" or "compute": which ceiling is lower at this intensity
  double floorSeconds = 0;     // the least time the ceilings allow
  double fractionOfBound = 0;  // floor / measured time (1 = at the roofline)
  double headroom = 0;         // measured / floor
  std::string words;           // "at 71% of the memory bound; 1.4x headroom"
  nlohmann::json toJson() const;
};

// The compute ceiling a task's flops are judged against: "tensor-core" when an input is bf16 or
// f16, else "f32". The one rule behind both the placement below and the timing's floor.
std::string computeCeiling(const Task &task);
// That ceiling's rate on `c`; 0 where it was not measured (no tensor cores).
double computeCeilingRate(const DeviceCeilings &c, const std::string &compute);

// `tensor`: the kernel's flops run on tensor cores (the compute ceiling is the tensor rate).
// nullopt when time, bytes and flops give nothing to place (all zero) or the ceilings are unknown.
std::optional<RooflinePlacement> placeOnRoofline(double flops, double bytes, double seconds, const DeviceCeilings &c,
                                                 bool tensor = false);

// The ceilings' kernels (CUDA C++, device-only): `kwb_ceiling_fma` and, for sm_80 and later,
// `kwb_ceiling_mma`. Compiled by the client and sent to the worker.
const char *ceilingKernelsSource();

// The cache: $XDG_CACHE_HOME/kernel-workbench/ceilings.json (or ~/.cache/...).
std::filesystem::path ceilingsCachePath();
std::optional<DeviceCeilings> cachedCeilings(const std::string &key, const std::filesystem::path &file = ceilingsCachePath());
void storeCeilings(const DeviceCeilings &c, const std::filesystem::path &file = ceilingsCachePath());

// The ceilings of `device`: from the cache, else measured by a worker on it (about a second) and
// cached. nullopt with `problem` when there is no such device or the measurement failed.
std::optional<DeviceCeilings> deviceCeilings(const EvaluatorSettings &settings, int device, std::string &problem,
                                             bool remeasure = false);
// The same on an evaluator's worker and device (an EvaluatorPool's, through submitWork).
std::optional<DeviceCeilings> deviceCeilings(Evaluator &evaluator, std::string &problem, bool remeasure = false);

}  // namespace kwb
