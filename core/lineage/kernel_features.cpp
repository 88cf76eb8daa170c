#include "core/lineage/kernel_features.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <utility>

namespace kwb {

namespace {

struct Pattern {
  const char *feature;
  const char *code;   // ECMAScript regex over the code
  const char *prose;  // ECMAScript regex over prose, case-insensitive
};

// A pattern's regexes, compiled once; whether it is looked for in inline PTX (string literals)
// too, or only outside shared-array declarations.
struct Compiled {
  std::string feature;
  std::regex code, prose;
  bool inPtx = false, outsideShared = false;
};

// Order: as a reader meets them, roughly from naive to expert.
const std::vector<Pattern> &patterns() {
  static const std::vector<Pattern> p = {
      {"grid-stride-loop", R"(gridDim\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*gridDim\.x)", R"(grid[- ]stride)"},
      {"loop-unrolling", R"(#\s*pragma\s+unroll)", R"(unroll)"},
      {"launch-bounds", R"(__launch_bounds__)", R"(launch[_ ]bounds)"},
      {"read-only-cache", R"(__ldg\s*\(|const\s+\w+\s*\*\s*__restrict__)", R"(read-only|__ldg|restrict)"},
      {"vectorized-access", R"(\b(float[24]|int[24]|uint[24]|double2|__half2|half2|__nv_bfloat162)\b)",
       R"(vector(ized)? (load|store|access)|float4|128-bit)"},
      {"shared-memory-tiles", R"(__shared__)", R"(shared[- ]memory|smem|shared tile)"},
      {"shared-memory-padding", R"(__shared__[^;]*\[[^\];]*\+\s*\d+\s*\])", R"(padd|bank conflict)"},
      {"double-buffer", R"(__shared__[^;]*\[\s*2\s*\]|\[\s*2\s*\]\s*\[[^\]]*\]\s*\[[^\]]*\]\s*;)", R"(double[- ]buffer)"},
      {"register-tiles", R"(\b(float|double|half|__half|__nv_bfloat16|int)\s+\w+\s*\[[^\]]+\]\s*\[[^\]]+\])",
       R"(register (tile|block)|per-thread tile|thread tile|outer product)"},
      {"warp-shuffle", R"(__shfl_(xor_|down_|up_)?sync)", R"(shuffle|warp[- ]level reduc)"},
      {"atomics", R"(\batomic(Add|Max|Min|CAS|Exch|And|Or|Inc)\w*\s*\()", R"(atomic)"},
      {"fast-math", R"(__expf|__fdividef|__frcp_r|__logf|__powf|\bexp2f\s*\(|__exp2)", R"(fast[- ]math|intrinsic)"},
      {"wmma", R"(\bwmma::)", R"(wmma)"},
      {"ldmatrix", R"(ldmatrix)", R"(ldmatrix)"},
      {"mma-sync", R"(\bmma\.sync)", R"(mma\.sync|mma sync)"},
      {"swizzle", R"(swizzl|\^\s*\(\s*\(?\s*\w+\s*(>>|&))", R"(swizzl)"},
      {"cp-async", R"(cp\.async\.(ca|cg)|__pipeline_memcpy_async|cuda::memcpy_async|\bcp_async)",
       R"(cp\.async|cp-async|async(hronous)? cop)"},
      {"multi-stage-pipeline", R"(\b(kStages|STAGES|NSTAGES|kNumStages|Stages)\b)", R"(multi-?stage|stages)"},
      {"tma", R"(cp\.async\.bulk\.tensor|CUtensorMap|cuTensorMapEncode)", R"(\btma\b|tensor memory accel)"},
      {"mbarrier", R"(mbarrier)", R"(mbarrier|async(hronous)? barrier)"},
      {"wgmma", R"(wgmma)", R"(wgmma|warpgroup mma)"},
      {"thread-block-clusters", R"(__cluster_dims__|cluster_ctarank|ClusterDimension|%cluster)", R"(cluster)"},
      {"warp-specialization", R"(setmaxnreg|producer|consumer)", R"(warp[- ]speciali|producer)"},
  };
  return p;
}

const std::vector<Compiled> &compiled() {
  static const std::vector<Compiled> c = [] {
    static const std::set<std::string> kPtx = {"mma-sync", "ldmatrix", "cp-async", "tma", "wgmma", "mbarrier",
                                               "thread-block-clusters"};
    std::vector<Compiled> out;
    for (const auto &p : patterns())
      out.push_back(Compiled{p.feature, std::regex(p.code), std::regex(p.prose, std::regex::ECMAScript | std::regex::icase),
                             kPtx.count(p.feature) > 0, std::string(p.feature) == "register-tiles"});
    return out;
  }();
  return c;
}

const std::vector<KernelFeature> &features() {
  static const std::vector<KernelFeature> f = {
      {"grid-stride-loop", "a grid-stride loop: any grid covers any size", ""},
      {"loop-unrolling", "loops unrolled (#pragma unroll)", ""},
      {"launch-bounds", "__launch_bounds__ caps the threads per block for register allocation", ""},
      {"read-only-cache", "loads through the read-only path (__ldg, const __restrict__)", "sm_35"},
      {"vectorized-access", "vector loads and stores (float4, half2, ...)", ""},
      {"shared-memory-tiles", "tiles staged in shared memory", ""},
      {"shared-memory-padding", "padded shared-memory rows against bank conflicts", ""},
      {"double-buffer", "two buffers: the next tile loads while this one is used", ""},
      {"register-tiles", "a tile of results per thread in registers", ""},
      {"warp-shuffle", "warp shuffles (__shfl_*_sync) instead of shared memory", "sm_30"},
      {"atomics", "atomic read-modify-write to memory", ""},
      {"fast-math", "fast approximate intrinsics (__expf, ...)", ""},
      {"wmma", "tensor cores through the wmma API", "sm_70"},
      {"ldmatrix", "ldmatrix: shared-memory fragments for mma", "sm_75"},
      {"mma-sync", "tensor cores through mma.sync", "sm_80"},
      {"swizzle", "swizzled (XOR-permuted) shared-memory layout", ""},
      {"cp-async", "asynchronous global-to-shared copies (cp.async)", "sm_80"},
      {"multi-stage-pipeline", "a software pipeline over several shared-memory stages", "sm_80"},
      {"tma", "the tensor memory accelerator (cp.async.bulk.tensor)", "sm_90"},
      {"mbarrier", "asynchronous transaction barriers (mbarrier)", "sm_90"},
      {"wgmma", "warpgroup MMA (wgmma)", "sm_90a"},
      {"thread-block-clusters", "thread-block clusters", "sm_90"},
      {"warp-specialization", "warp-specialized producer and consumer warps", "sm_90"},
  };
  return f;
}

int archRank(const std::string &arch) {
  if (arch.empty()) return -1;
  int n = 0;
  for (char c : arch)
    if (c >= '0' && c <= '9') n = n * 10 + (c - '0');
  return n * 2 + (arch.back() == 'a' ? 1 : 0);
}

}  // namespace

const std::vector<KernelFeature> &kernelFeatures() { return features(); }

const KernelFeature *kernelFeature(const std::string &name) {
  for (const auto &f : features())
    if (name == f.name) return &f;
  return nullptr;
}

namespace {

std::string withoutComments(const std::string &source, bool keepStrings) {
  std::string out;
  out.reserve(source.size());
  enum { Code, Line, Block, String, Char } state = Code;
  for (std::size_t i = 0; i < source.size(); ++i) {
    const char c = source[i], next = i + 1 < source.size() ? source[i + 1] : '\0';
    switch (state) {
      case Code:
        if (c == '/' && next == '/') state = Line, ++i;
        else if (c == '/' && next == '*') state = Block, ++i;
        else if (c == '"') state = String, out += keepStrings ? c : ' ';
        else if (c == '\'') state = Char, out += keepStrings ? c : ' ';
        else out += c;
        break;
      case Line:
        if (c == '\n') state = Code, out += '\n';
        break;
      case Block:
        if (c == '*' && next == '/') state = Code, ++i, out += ' ';
        else if (c == '\n') out += '\n';
        break;
      case String:
      case Char:
        if (keepStrings) out += c;
        if (c == '\\') {
          if (keepStrings && next) out += next;
          ++i;
        } else if ((state == String && c == '"') || (state == Char && c == '\'')) {
          state = Code;
        } else if (c == '\n' && !keepStrings) {
          out += '\n';
        }
        break;
    }
  }
  return out;
}

}  // namespace

std::string codeOnly(const std::string &source) { return withoutComments(source, false); }

std::set<std::string> detectFeatures(const std::string &source) {
  // Inline PTX is in string literals: instructions are looked for there too.
  const std::string code = codeOnly(source), withStrings = withoutComments(source, true);
  std::set<std::string> found;
  // Declarations of shared arrays are not register tiles.
  std::string withoutShared;
  {
    std::size_t pos = 0;
    while (pos < code.size()) {
      std::size_t end = code.find('\n', pos);
      if (end == std::string::npos) end = code.size();
      const std::string line = code.substr(pos, end - pos);
      if (line.find("__shared__") == std::string::npos) withoutShared += line;
      withoutShared += '\n';
      pos = end + 1;
    }
  }
  for (const auto &p : compiled()) {
    if (p.outsideShared ? std::regex_search(withoutShared, p.code)
                        : std::regex_search(code, p.code) || (p.inPtx && std::regex_search(withStrings, p.code)))
      found.insert(p.feature);
  }
  // Staged tiles imply the simpler forms: a padded or double-buffered array is a shared tile.
  if (found.count("shared-memory-padding") || found.count("double-buffer")) found.insert("shared-memory-tiles");
  return found;
}

std::set<std::string> featuresNamedIn(const std::string &prose, const std::set<std::string> &among) {
  // The words of the prose (letters, digits and '-'), lower-cased: a feature's name counts only
  // as a whole word ("stmatrix" does not name tma).
  std::set<std::string> words;
  std::string word;
  for (const char ch : prose + " ") {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) || ch == '-') word += static_cast<char>(std::tolower(u));
    else if (!word.empty()) words.insert(std::exchange(word, {}));
  }
  std::set<std::string> out;
  for (const auto &p : compiled())
    if (among.count(p.feature) && (std::regex_search(prose, p.prose) || words.count(p.feature))) out.insert(p.feature);
  return out;
}

std::string principalFeature(const std::set<std::string> &names) {
  static const char *kPriority[] = {
      "wgmma",         "tma",          "warp-specialization", "thread-block-clusters", "mbarrier",
      "cp-async", "multi-stage-pipeline", "mma-sync",        "wmma",                  "double-buffer",
      "register-tiles", "shared-memory-tiles", "warp-shuffle", "vectorized-access",   "swizzle",
      "ldmatrix",      "shared-memory-padding", "atomics",     "grid-stride-loop",      "fast-math",
      "read-only-cache", "loop-unrolling", "launch-bounds"};
  for (const char *f : kPriority)
    if (names.count(f)) return f;
  return names.empty() ? std::string() : *names.begin();
}

std::string minimumArchitecture(const std::set<std::string> &names) {
  std::string best;
  for (const auto &n : names)
    if (const auto *f = kernelFeature(n); f && archRank(f->minimumArch) > archRank(best)) best = f->minimumArch;
  return best;
}

}  // namespace kwb
