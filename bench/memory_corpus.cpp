#include "bench/memory_corpus.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <tuple>

namespace kwb::bench {

namespace {

const std::vector<std::string> kBundled{"softmax", "layernorm", "reduce-sum", "sgemm", "gemm-bf16", "transpose", "blur", "histogram"};
const std::vector<std::string> kOperators{"reduction", "normalization", "reduction", "gemm", "gemm", "transpose", "stencil", "histogram"};
const std::vector<std::string> kGpus{"NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S"};
const std::vector<std::string> kArchs{"sm_90", "sm_80", "sm_89"};
const std::vector<std::string> kFeedback{
    "mismatch at out[1043]: 0.4121 expected 0.4093 (tolerance 1e-3)",
    "error: identifier \"__shfl_xor\" is undefined (did you mean __shfl_xor_sync?)",
    "CUDA_ERROR_ILLEGAL_ADDRESS in the launch at configuration large",
    "too many resources requested for launch: 96 KiB shared memory per block",
    "timed out after 5 s at configuration h200"};

std::string kernelText(std::size_t id, const std::string &task, const std::string &idea) {
  // Unique per Case (as real candidates are), about 1.2 KB.
  std::string body = "// " + task + ": " + idea + "\n#include <cuda_runtime.h>\n\nextern \"C\" __global__ void kernel_" +
                     std::to_string(id) + "(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {\n";
  body += "  const int row = blockIdx.x * " + std::to_string(1 + id % 8) + " + threadIdx.y;\n  if (row >= rows) return;\n";
  body += "  float acc = 0.f;\n  for (int c = threadIdx.x; c < cols; c += " + std::to_string(32 << (id % 4)) + ") {\n";
  body += "    const float v = x[row * cols + c];\n    acc += v * v;\n  }\n";
  for (int o = 16; o > 0; o /= 2) body += "  acc += __shfl_xor_sync(0xffffffff, acc, " + std::to_string(o) + ");\n";
  body += "  __shared__ float partial[" + std::to_string(32 + id % 64) + "];\n  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;\n";
  body += "  __syncthreads();\n  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[row * cols + c] = x[row * cols + c] * rsqrtf(partial[0] / cols + 1e-5f);\n}\n";
  while (body.size() < 1200) body += "// padding " + std::to_string(id) + "\n";
  return body;
}

}  // namespace

const std::vector<std::string> &corpusIdeas() {
  static const std::vector<std::string> ideas{
      "one warp per row with warp shuffle reductions", "vectorized float4 loads", "shared memory tiling",
      "register blocking 8x8", "double buffering with cp.async", "online softmax in one pass",
      "welford variance in one pass", "loop unrolling by four", "launch bounds for occupancy",
      "bank conflict free padding", "tensor core mma.sync", "TMA bulk copies with mbarrier",
      "persistent blocks over rows", "fused epilogue", "fast math intrinsics", "coalesced column access",
      "per lane private bins", "block reduction through shared memory", "grid stride loop", "split k reduction"};
  return ideas;
}

std::vector<std::string> corpusTasks(std::size_t n) {
  std::vector<std::string> tasks = kBundled;
  for (std::size_t k = tasks.size(); k < std::max<std::size_t>(8, n / 250); ++k) tasks.push_back("task-" + std::to_string(k));
  return tasks;
}

CorpusSummary fillMemory(kwb::memory::ExperienceStore &store, std::size_t n, unsigned seed) {
  const auto start = std::chrono::steady_clock::now();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::lognormal_distribution<double> step(0.04, 0.18);
  const auto tasks = corpusTasks(n);
  const auto &ideas = corpusIdeas();
  CorpusSummary out;
  out.tasks = tasks.size();
  std::size_t made = 0, ref = 0;
  // A Case under `parent` (speedup `base`); returns its id and speedup (0 when incorrect).
  auto add = [&](std::size_t t, const std::string &source, const std::string &session, std::optional<std::int64_t> parent,
                 double base, const std::string &before) {
    kwb::memory::Case c;
    c.source = source;
    c.sourceRef = "bench#" + std::to_string(++ref);
    c.task = tasks[t];
    c.operatorClass = kOperators[t % kOperators.size()];
    const std::size_t g = (t + ref / 997) % kGpus.size();
    c.gpu = kGpus[g];
    c.arch = kArchs[g];
    c.idea = ideas[rng() % ideas.size()] + (u(rng) < 0.3 ? " and " + ideas[rng() % ideas.size()] : "");
    c.ideaKind = source == "lineage" ? "step" : source == "session" ? "intent" : "edit";
    c.session = session;
    c.before = before;
    c.after = kernelText(ref, c.task, c.idea);
    c.correct = u(rng) > 0.2;
    c.outcome = c.correct ? "correct" : (u(rng) < 0.5 ? "incorrect" : "compile-error");
    c.speedup = c.correct ? std::max(0.05, base * step(rng)) : 0;
    c.relativeSpread = c.correct ? 0.005 + 0.05 * u(rng) : 0;
    c.feedback = c.correct ? "" : kFeedback[rng() % kFeedback.size()];
    c.journal = c.idea + (c.correct ? " gave " + std::to_string(c.speedup).substr(0, 4) + "x" : " failed");
    c.bottleneck = u(rng) < 0.6 ? "memory" : u(rng) < 0.5 ? "compute" : "latency";
    c.intensity = std::pow(10.0, -1 + 3 * u(rng));
    c.shape = "rows=" + std::to_string(1024 << (rng() % 4)) + ",cols=" + std::to_string(256 << (rng() % 6));
    // Spread over 90 days, oldest first.
    const long minute = static_cast<long>(90.0 * 24 * 60 * static_cast<double>(made) / static_cast<double>(n));
    char when[32];
    std::snprintf(when, sizeof when, "2026-09-%02ldT%02ld:%02ld:00.000Z", 1 + (minute / 1440) % 30, (minute / 60) % 24, minute % 60);
    c.createdAt = when;
    c.parent = parent;
    ++made;
    const std::string code = c.after;
    const double speedup = c.correct ? c.speedup : 0.0;
    const auto id = store.record(std::move(c));
    return std::make_tuple(id, speedup, code);
  };
  while (made < n) {
    store.transaction([&] {
      const std::size_t until = std::min(n, made + 1000);
      while (made < until) {
        const std::size_t t = rng() % tasks.size();
        const double kind = u(rng);
        ++out.trees;
        auto [root, speed, code] = add(t, kind < 0.3 ? "lineage" : kind < 0.7 ? "session" : "editor", "", std::nullopt, 0.3 + u(rng), "");
        if (speed == 0) speed = 0.5;
        if (kind < 0.3) {  // a lineage: a chain
          for (int s = 0, steps = 4 + static_cast<int>(rng() % 11); s < steps && made < until; ++s) {
            auto [id, sp, c2] = add(t, "lineage", "", root, speed, code);
            if (sp > 0) std::tie(root, speed, code) = std::make_tuple(id, sp, c2);
          }
        } else if (kind < 0.7) {  // a session: turns of four candidates from the best so far
          const std::string session = "session-" + std::to_string(out.trees);
          for (int turn = 0, turns = 3 + static_cast<int>(rng() % 4); turn < turns && made < until; ++turn) {
            auto best = std::make_tuple(root, speed, code);
            for (int k = 0; k < 4 && made < until; ++k) {
              auto [id, sp, c2] = add(t, "session", session, root, speed, code);
              if (sp > std::get<1>(best)) best = std::make_tuple(id, sp, c2);
            }
            std::tie(root, speed, code) = best;
          }
        } else {  // editor runs, each from the last
          for (int s = 0, runs = static_cast<int>(rng() % 30); s < runs && made < until; ++s) {
            auto [id, sp, c2] = add(t, "editor", "", root, speed, code);
            root = id;
            code = c2;
            if (sp > 0) speed = sp;
          }
        }
      }
    });
  }
  out.cases = made;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kwb::bench
