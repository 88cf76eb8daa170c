// Kernel Workbench export: what the exported test program needs besides the kernel and the task's
// reference: inputs made as the workbench makes them (the same bytes for a seed: Philox-4x32-10
// keyed by the tensor's name, seed and seed offset; core/eval/input_generator.h has the recipe),
// the comparison with the task's tolerance, and timing with CUDA events, the L2 flushed before
// each sample. Standalone: the CUDA runtime and the C++ standard library only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

// Stops the program at a failed CUDA call, saying where and why (exit status 3).
#define KWB_CHECK(call)                                                                          \
  do {                                                                                           \
    const cudaError_t kwb_error_ = (call);                                                       \
    if (kwb_error_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                 \
                   cudaGetErrorString(kwb_error_));                                              \
      std::exit(3);                                                                              \
    }                                                                                            \
  } while (0)

namespace kwb_check {

enum class DType { F64, F32, F16, BF16, I64, I32, I8, U8, Bool };

inline std::size_t sizeOf(DType d) {
  switch (d) {
    case DType::F64: case DType::I64: return 8;
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    default: return 1;
  }
}

inline bool isFloating(DType d) { return d == DType::F64 || d == DType::F32 || d == DType::F16 || d == DType::BF16; }

enum class Kind { Uniform, Normal, RandInt, Arange, Constant };
// A structure over the last two dimensions: symmetric (element (r, c), r > c, is (c, r)), upper
// (elements with c - r < diagonal are 0: torch.triu), lower (c - r > diagonal are 0: torch.tril).
enum class Matrix { None, Symmetric, Upper, Lower };

struct Generator {
  Kind kind = Kind::Uniform;
  double a = 0, b = 1;  // uniform low/high, normal mean/std, randint low/high, arange start/step, constant value
  std::uint64_t seedOffset = 0;
  double scale = 1, shift = 0;  // every draw x becomes x * scale + shift
  Matrix matrix = Matrix::None;
  long long diagonal = 0;
};

struct Tolerance {
  bool exact = false;
  double rtol = 0, atol = 0;
};

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline std::uint64_t fnv1a64(const char *text) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (; *text; ++text) {
    h ^= static_cast<unsigned char>(*text);
    h *= 0x100000001B3ull;
  }
  return h;
}

struct Key {
  std::uint32_t k0, k1;
};

inline Key keyOf(std::uint64_t seed, std::uint64_t seedOffset, const char *name) {
  std::uint64_t x = splitmix64(fnv1a64(name));
  x = splitmix64(x ^ seed);
  x = splitmix64(x ^ seedOffset);
  return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(x >> 32)};
}

inline void philox(std::uint32_t c[4], Key key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key.k0 += 0x9E3779B9u;
      key.k1 += 0xBB67AE85u;
    }
    const std::uint64_t p0 = std::uint64_t(0xD2511F53u) * c[0];
    const std::uint64_t p1 = std::uint64_t(0xCD9E8D57u) * c[2];
    const std::uint32_t n0 = std::uint32_t(p1 >> 32) ^ c[1] ^ key.k0;
    const std::uint32_t n2 = std::uint32_t(p0 >> 32) ^ c[3] ^ key.k1;
    c[0] = n0;
    c[1] = std::uint32_t(p1);
    c[2] = n2;
    c[3] = std::uint32_t(p0);
  }
}

inline double unit(std::uint32_t high, std::uint32_t low) {
  return double(std::int64_t(((std::uint64_t(high) << 32) | low) >> 11)) * 0x1p-53;
}

// floor(r * n / 2^128) for the 128-bit r = w0:w1:w2:w3.
inline std::uint64_t scaled(const std::uint32_t w[4], std::uint64_t n) {
  __extension__ typedef unsigned __int128 U128;
  const std::uint64_t hi = (std::uint64_t(w[0]) << 32) | w[1], lo = (std::uint64_t(w[2]) << 32) | w[3];
  return std::uint64_t((U128(hi) * n + ((U128(lo) * n) >> 64)) >> 64);
}

template <typename Int>
Int saturate(double x) {
  if (std::isnan(x)) return 0;
  x = std::floor(x);
  const double lowest = double(std::numeric_limits<Int>::lowest());
  const double beyond = double(std::numeric_limits<Int>::max() / 2 + 1) * 2.0;
  if (x <= lowest) return std::numeric_limits<Int>::lowest();
  if (x >= beyond) return std::numeric_limits<Int>::max();
  return Int(x);
}

// Element i of a buffer of dtype d, as a double.
inline double load(const unsigned char *p, DType d, std::size_t i) {
  switch (d) {
    case DType::F64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DType::F32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::F16: { __half v; std::memcpy(&v, p + 2 * i, 2); return double(__half2float(v)); }
    case DType::BF16: { __nv_bfloat16 v; std::memcpy(&v, p + 2 * i, 2); return double(__bfloat162float(v)); }
    case DType::I64: { std::int64_t v; std::memcpy(&v, p + 8 * i, 8); return double(v); }
    case DType::I32: { std::int32_t v; std::memcpy(&v, p + 4 * i, 4); return double(v); }
    case DType::I8: return double(static_cast<std::int8_t>(p[i]));
    default: return double(p[i]);
  }
}

// Stores x as dtype d stores a generated value: floats rounded to nearest, integers toward
// negative infinity and saturated, bool as x != 0.
inline void store(unsigned char *p, DType d, std::size_t i, double x) {
  switch (d) {
    case DType::F64: std::memcpy(p + 8 * i, &x, 8); return;
    case DType::F32: { const float v = float(x); std::memcpy(p + 4 * i, &v, 4); return; }
    case DType::F16: { const __half v = __double2half(x); std::memcpy(p + 2 * i, &v, 2); return; }
    case DType::BF16: { const __nv_bfloat16 v = __double2bfloat16(x); std::memcpy(p + 2 * i, &v, 2); return; }
    case DType::I64: { const auto v = saturate<std::int64_t>(x); std::memcpy(p + 8 * i, &v, 8); return; }
    case DType::I32: { const auto v = saturate<std::int32_t>(x); std::memcpy(p + 4 * i, &v, 4); return; }
    case DType::I8: p[i] = static_cast<unsigned char>(saturate<std::int8_t>(x)); return;
    case DType::U8: p[i] = saturate<std::uint8_t>(x); return;
    case DType::Bool: p[i] = x != 0.0 ? 1 : 0; return;
  }
}

// A stored float at or above `high` (half-open generators) becomes the next value below it (NaN
// is left alone).
inline void keepBelow(unsigned char *p, DType d, std::size_t i, double high) {
  if (!isFloating(d) || !(load(p, d, i) >= high)) return;
  if (d == DType::F64) store(p, d, i, std::nextafter(load(p, d, i), -INFINITY));
  else if (d == DType::F32) { const float v = std::nextafter(float(load(p, d, i)), -INFINITY); std::memcpy(p + 4 * i, &v, 4); }
  else {
    std::uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    bits = (bits & 0x7fff) == 0 ? 0x8001 : (bits & 0x8000) ? std::uint16_t(bits + 1) : std::uint16_t(bits - 1);
    std::memcpy(p + 2 * i, &bits, 2);
  }
}

__extension__ typedef __int128 Int128;

// An exact integer stored in dtype d: saturated for integers, rounded once for floats.
inline void storeInteger(unsigned char *p, DType d, std::size_t i, Int128 k) {
  auto clamp = [](Int128 v, Int128 lo, Int128 hi) { return v < lo ? lo : v > hi ? hi : v; };
  switch (d) {
    case DType::I64: { const auto v = std::int64_t(clamp(k, INT64_MIN, INT64_MAX)); std::memcpy(p + 8 * i, &v, 8); return; }
    case DType::I32: { const auto v = std::int32_t(clamp(k, INT32_MIN, INT32_MAX)); std::memcpy(p + 4 * i, &v, 4); return; }
    case DType::I8: p[i] = static_cast<unsigned char>(std::int8_t(clamp(k, INT8_MIN, INT8_MAX))); return;
    case DType::U8: p[i] = static_cast<unsigned char>(clamp(k, 0, UINT8_MAX)); return;
    case DType::Bool: p[i] = k != 0 ? 1 : 0; return;
    default: store(p, d, i, double(k)); return;
  }
}

inline std::int64_t ceilToInt64(double x) {
  x = std::ceil(x);
  if (!(x > -0x1p62)) return -(std::int64_t(1) << 62);  // NaN too
  if (x > 0x1p62) return std::int64_t(1) << 62;
  return std::int64_t(x);
}

inline bool isWholeInt64(double x) { return std::isfinite(x) && std::floor(x) == x && x >= -0x1p63 && x < 0x1p63; }

// Stores element `index`'s own value at slot j of p.
inline void storeElement(unsigned char *p, DType d, std::size_t j, const Generator &g, Key key, std::uint64_t index) {
  // Scale and shift where they change the draw; only without them do the stored-value rules apply.
  const bool transforms = g.scale != 1.0 || g.shift != 0.0;
  const auto real = [&](double x) { store(p, d, j, transforms ? x * g.scale + g.shift : x); };
  const auto integer = [&](Int128 k) {
    if (transforms) store(p, d, j, double(k) * g.scale + g.shift);
    else storeInteger(p, d, j, k);
  };
  std::uint32_t w[4] = {std::uint32_t(index), std::uint32_t(index >> 32), 0, 0};
  switch (g.kind) {
    case Kind::Uniform: {
      philox(w, key);
      double x = g.a + (g.b - g.a) * unit(w[0], w[1]);
      if (x >= g.b) x = std::nextafter(g.b, -INFINITY);
      real(x);
      if (!transforms) keepBelow(p, d, j, g.b);
      break;
    }
    case Kind::Normal: {
      philox(w, key);
      const double u1 = 1.0 - unit(w[0], w[1]), u2 = unit(w[2], w[3]);
      real(g.a + g.b * (std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2)));
      break;
    }
    case Kind::RandInt: {
      philox(w, key);
      const std::int64_t low = ceilToInt64(g.a), high = ceilToInt64(g.b);
      const std::uint64_t n = high > low ? std::uint64_t(high) - std::uint64_t(low) : 0;
      integer(n ? Int128(low) + Int128(scaled(w, n)) : Int128(low));
      if (!transforms) keepBelow(p, d, j, double(high));
      break;
    }
    case Kind::Arange: {
      if (!isFloating(d) && isWholeInt64(g.a) && isWholeInt64(g.b))
        integer(Int128(std::int64_t(g.a)) + Int128(index) * Int128(std::int64_t(g.b)));
      else
        real(g.a + double(index) * g.b);
      break;
    }
    case Kind::Constant: real(g.a); break;
  }
}

// Fills `count` elements of dtype d from the generator, for `seed` and the tensor's name; `rows`
// and `cols`, the tensor's last two dimensions, for a generator with a matrix structure.
inline std::vector<unsigned char> generate(DType d, std::size_t count, const Generator &g, std::uint64_t seed,
                                           const char *name, std::size_t rows = 0, std::size_t cols = 0) {
  std::vector<unsigned char> out(count * sizeOf(d));
  unsigned char *p = out.data();
  const Key key = keyOf(seed, g.seedOffset, name);
  for (std::size_t i = 0; i < count; ++i) storeElement(p, d, i, g, key, i);
  if (g.matrix == Matrix::None || count == 0) return out;
  if (rows == 0 || cols == 0 || count % (rows * cols) != 0 || (g.matrix == Matrix::Symmetric && rows != cols)) {
    std::fprintf(stderr, "%s: %zu elements are not whole %zu x %zu matrices for its generator's structure\n", name, count,
                 rows, cols);
    std::exit(2);
  }
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t within = i % (rows * cols), r = within / cols, c = within % cols;
    if (g.matrix == Matrix::Symmetric) {
      if (r > c) storeElement(p, d, i, g, key, i - within + c * cols + r);  // the mirror (c, r)
    } else {
      const long long offset = static_cast<long long>(c) - static_cast<long long>(r);
      if (g.matrix == Matrix::Upper ? offset < g.diagonal : offset > g.diagonal) store(p, d, i, 0.0);
    }
  }
  return out;
}

struct Comparison {
  std::size_t checked = 0, mismatches = 0, nanInGot = 0, nanInReference = 0;
  double maxAbsError = 0;
  std::size_t first = 0;  // the first mismatching element
  double firstGot = 0, firstWant = 0;
  bool passed() const { return mismatches == 0 && nanInReference == 0; }
};

// As the workbench compares: |got - want| <= atol + rtol * |want| (floats), equality (integers,
// bool, an exact tolerance); a NaN in the candidate's output never passes; one in the
// reference's means the reference is broken; an infinity passes only against the same one.
inline Comparison compare(const unsigned char *got, const unsigned char *want, DType d, std::size_t count,
                          const Tolerance &t) {
  Comparison c;
  c.checked = count;
  const std::size_t size = sizeOf(d);
  for (std::size_t i = 0; i < count; ++i) {
    const double g = load(got, d, i), w = load(want, d, i);
    if (!isFloating(d)) {  // integers and bool: the stored values, exactly (i64 beyond 2^53 too)
      if (std::memcmp(got + i * size, want + i * size, size) != 0) {
        if (c.mismatches == 0) {
          c.first = i;
          c.firstGot = g;
          c.firstWant = w;
        }
        ++c.mismatches;
      }
      continue;
    }
    bool ok;
    if (std::isnan(w)) {
      ++c.nanInReference;
      continue;
    }
    if (std::isnan(g)) {
      ++c.nanInGot;
      ok = false;
    } else if (t.exact || std::isinf(g) || std::isinf(w)) {
      ok = g == w;
    } else {
      const double e = std::fabs(g - w);
      c.maxAbsError = std::max(c.maxAbsError, e);
      ok = e <= t.atol + t.rtol * std::fabs(w);
    }
    if (!ok) {
      if (c.mismatches == 0) {
        c.first = i;
        c.firstGot = g;
        c.firstWant = w;
      }
      ++c.mismatches;
    }
  }
  return c;
}

// The median of `samples` timings of launch() in milliseconds (CUDA events on `stream`), each after
// a write over `flushBytes` of `flush` that evicts the L2, after `warmups` untimed calls.
template <typename Launch>
double medianMs(Launch launch, cudaStream_t stream, void *flush, std::size_t flushBytes, int samples, int warmups = 3) {
  for (int i = 0; i < warmups; ++i) launch();
  KWB_CHECK(cudaStreamSynchronize(stream));
  cudaEvent_t start, stop;
  KWB_CHECK(cudaEventCreate(&start));
  KWB_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < samples; ++i) {
    if (flush) KWB_CHECK(cudaMemsetAsync(flush, i & 0xff, flushBytes, stream));
    KWB_CHECK(cudaEventRecord(start, stream));
    launch();
    KWB_CHECK(cudaEventRecord(stop, stream));
    KWB_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    KWB_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  KWB_CHECK(cudaEventDestroy(start));
  KWB_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : ms[ms.size() / 2];
}

// A device buffer that frees itself.
struct DeviceBuffer {
  void *p = nullptr;
  std::size_t bytes = 0;
  explicit DeviceBuffer(std::size_t n) : bytes(n) { KWB_CHECK(cudaMalloc(&p, n ? n : 1)); }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

}  // namespace kwb_check
