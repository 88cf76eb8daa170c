#include "core/eval/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/compile/compiler.h"
#include "core/eval/timing_statistics.h"
#include "core/paths/install_paths.h"
#include "core/store/database.h"
#include "core/text/base64.h"
#include "core/worker/commands.h"
#include "core/worker/worker_client.h"

using nlohmann::json;

namespace kwb {

namespace {

// Work per thread and iteration of the kernels below, in flops.
constexpr int kFmaChains = 8, kFmaUnroll = 16;
constexpr double kFmaFlopsPerIter = 2.0 * kFmaChains * kFmaUnroll;
constexpr int kMmaChains = 8;
// One m16n8k16 mma is 2*16*8*16 flops per warp: 128 per thread.
constexpr double kMmaFlopsPerIter = 128.0 * kMmaChains;

const char *kSource = R"CUDA(
// Ceiling kernels (core/eval/roofline.cpp): enough independent work per thread to keep the
// pipes full; the results are kept alive by a store that never happens in practice.
extern "C" __global__ void kwb_ceiling_fma(float *out, int iters) {
  float a[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) a[c] = threadIdx.x * 1e-3f + c;
  const float b = 0.9999f, d = 1e-4f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
#pragma unroll
      for (int c = 0; c < 8; ++c) a[c] = fmaf(a[c], b, d);
    }
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < 8; ++c) s += a[c];
  if (s == 1234.5f) out[threadIdx.x] = s;
}

extern "C" __global__ void kwb_ceiling_mma(float *out, int iters) {
#if __CUDA_ARCH__ >= 800
  const unsigned lane = threadIdx.x & 31;
  const unsigned x = 0x3f803f80u ^ lane;  // two bf16 near 1.0 per register
  unsigned a0 = x, a1 = x + 1, a2 = x + 2, a3 = x + 3, b0 = x + 4, b1 = x + 5;
  float acc[8][4];
#pragma unroll
  for (int c = 0; c < 8; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[c][e] = 0.0f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < 8; ++c)
      asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};\n"
          : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < 8; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  if (s == 1234.5f) out[threadIdx.x] = s;
#else
  if (iters < 0) out[threadIdx.x] = 0.0f;
#endif
}
)CUDA";

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * f);
  return buf;
}

std::string times(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fx", x);
  return buf;
}

json readJsonFile(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return json::object();
  auto j = json::parse(in, nullptr, false);
  return j.is_object() ? j : json::object();
}

}  // namespace

const char *ceilingKernelsSource() { return kSource; }

json DeviceCeilings::toJson() const {
  return {{"device", device},
          {"key", key},
          {"copy_bytes_per_s", copyBytesPerS},
          {"fp32_flops_per_s", fp32FlopsPerS},
          {"tensor_flops_per_s", tensorFlopsPerS},
          {"measured_at", measuredAt}};
}

DeviceCeilings DeviceCeilings::fromJson(const json &j) {
  DeviceCeilings c;
  c.device = j.value("device", std::string());
  c.key = j.value("key", std::string());
  c.copyBytesPerS = j.value("copy_bytes_per_s", 0.0);
  c.fp32FlopsPerS = j.value("fp32_flops_per_s", 0.0);
  c.tensorFlopsPerS = j.value("tensor_flops_per_s", 0.0);
  c.measuredAt = j.value("measured_at", std::string());
  return c;
}

json RooflinePlacement::toJson() const {
  return {{"intensity_flops_per_byte", intensity},
          {"achieved_flops_per_s", achievedFlopsPerS},
          {"achieved_bytes_per_s", achievedBytesPerS},
          {"bound", bound},
          {"floor_seconds", floorSeconds},
          {"fraction_of_bound", fractionOfBound},
          {"headroom", headroom},
          {"words", words}};
}

std::string computeCeiling(const Task &task) {
  for (const auto &t : task.tensors)
    if (t.role != TensorRole::Out && (t.dtype == DType::BF16 || t.dtype == DType::F16)) return "tensor-core";
  return "f32";
}

double computeCeilingRate(const DeviceCeilings &c, const std::string &compute) {
  return compute == "tensor-core" ? c.tensorFlopsPerS : c.fp32FlopsPerS;
}

std::optional<RooflinePlacement> placeOnRoofline(double flops, double bytes, double seconds, const DeviceCeilings &c,
                                                 bool tensor) {
  const std::string compute = tensor && c.tensorFlopsPerS > 0 ? "tensor-core" : "f32";
  const double peakFlops = computeCeilingRate(c, compute);
  if (!(seconds > 0) || (flops <= 0 && bytes <= 0) || c.copyBytesPerS <= 0 || peakFlops <= 0) return std::nullopt;
  RooflinePlacement p;
  p.intensity = bytes > 0 ? flops / bytes : 0;
  p.achievedFlopsPerS = flops / seconds;
  p.achievedBytesPerS = bytes / seconds;
  const auto bound = rooflineBound(flops, bytes, c.copyBytesPerS, peakFlops, compute);
  p.bound = bound.bound == "memory" ? "memory" : "compute";
  p.floorSeconds = bound.seconds;
  p.fractionOfBound = p.floorSeconds / seconds;
  p.headroom = seconds / p.floorSeconds;
  const std::string which = "the " + bound.bound + " bound";
  if (p.fractionOfBound > 1.0)
    p.words = "faster than " + which + " (" + times(p.fractionOfBound) + "): the data stayed in cache, or the byte count overstates the traffic";
  else
    p.words = "at " + percent(p.fractionOfBound) + " of " + which + "; " + times(p.headroom) + " headroom";
  return p;
}

std::filesystem::path ceilingsCachePath() { return userCacheDir() / "ceilings.json"; }

std::optional<DeviceCeilings> cachedCeilings(const std::string &key, const std::filesystem::path &file) {
  const json all = readJsonFile(file);
  if (!all.contains(key) || !all[key].is_object()) return std::nullopt;
  return DeviceCeilings::fromJson(all[key]);
}

void storeCeilings(const DeviceCeilings &c, const std::filesystem::path &file) {
  json all = readJsonFile(file);
  all[c.key] = c.toJson();
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const auto tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << all.dump(2) << "\n";
    if (!out) return;  // an unwritable cache is only a missed cache
  }
  std::filesystem::rename(tmp, file, ec);
}

std::optional<DeviceCeilings> deviceCeilings(const EvaluatorSettings &settings, int device, std::string &problem,
                                             bool remeasure) {
  EvaluatorSettings s = settings;
  s.device = device;
  Evaluator evaluator(s);
  return deviceCeilings(evaluator, problem, remeasure);
}

std::optional<DeviceCeilings> deviceCeilings(Evaluator &evaluator, std::string &problem, bool remeasure) {
  // Which device this is, from the worker's hello: the cache key and the architecture to compile for.
  const WorkerDevice &gpu = evaluator.device();
  if (!gpu.present) {
    problem = gpu.problem.empty() ? "no CUDA device " + std::to_string(gpu.ordinal) : gpu.problem;
    return std::nullopt;
  }
  const std::string name = gpu.name, arch = gpu.arch;
  const std::string key = name + " | " + gpu.pciBusId + " | " + std::to_string(gpu.driverVersion);
  if (!remeasure)
    if (auto c = cachedCeilings(key)) return c;

  Compiler compiler(evaluator.settings().compiler);
  CompileRequest request;
  request.source = kSource;
  request.sourceName = "kwb-ceilings.cu";
  request.arch = arch;
  request.lineInfo = false;
  request.expectedKernels = {"kwb_ceiling_fma", "kwb_ceiling_mma"};
  const auto compiled = compiler.compile(request);
  if (!compiled.ok) {
    problem = "the ceiling kernels did not compile: " + (compiled.diagnostics.empty() ? compiled.log : compiled.diagnostics.front().message);
    return std::nullopt;
  }
  const std::string cubin = base64Encode(compiled.image);
  const bool tensor = arch >= std::string("sm_80");
  worker::CeilingsRequest ceilings;
  ceilings.fma = {cubin, "kwb_ceiling_fma", 8, 256, 2048, kFmaFlopsPerIter};
  if (tensor) ceilings.mma = worker::CeilingKernel{cubin, "kwb_ceiling_mma", 4, 256, 4096, kMmaFlopsPerIter};
  worker::Reply reply;
  if (!evaluator.withWorker([&](worker::WorkerClient &client) { reply = client.call("ceilings", ceilings, std::chrono::seconds(60)); },
                            problem))
    return std::nullopt;
  if (!reply.ok) {
    problem = "measuring the ceilings failed: " + reply.error.message;
    return std::nullopt;
  }
  worker::CeilingsReply measured;
  try {
    reply.result.get_to(measured);
  } catch (const json::exception &e) {
    problem = "measuring the ceilings failed: the worker's reply does not read: " + worker::describeJsonError(e);
    return std::nullopt;
  }
  if (measured.verdict != "measured") {
    problem = "measuring the ceilings failed: " +
              (measured.message.empty() ? measured.reason.empty() ? reply.result.dump() : measured.reason
                                        : measured.message);
    return std::nullopt;
  }
  DeviceCeilings c;
  c.device = name;
  c.key = key;
  c.copyBytesPerS = measured.copyBytesPerS;
  c.fp32FlopsPerS = measured.fp32FlopsPerS;
  c.tensorFlopsPerS = measured.tensorFlopsPerS;
  c.measuredAt = utcTimestamp();
  storeCeilings(c);
  return c;
}

}  // namespace kwb
