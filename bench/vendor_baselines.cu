// kwb-bench-vendor-baselines: what the suite's experts are measured against (issue 4), timed
// the way the evaluator times kernels: L2 flushed before every sample by reading a buffer twice
// its size (clean lines, as the worker's flush), CUDA events around each call, median of N.
//
//   cuBLAS SGEMM (row-major C = A·B through the column-major identity C^T = B^T·A^T) and cuBLAS
//   bf16 GEMM (C f32 = A·B^T with A [M,K], B [N,K], the gemm-bf16 task's layout), at the sizes
//   given; device-to-device copy bandwidth (cudaMemcpyAsync, bytes read + written) at the
//   sizes given. Prints a table; --out writes JSON.
//
// Built with nvcc and linked to cuBLAS; the GPU machine's toolkit provides libcublas.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

namespace {

#define CHECK(x)                                                                            \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "kwb-bench-vendor-baselines: %s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)
#define CHECK_BLAS(x)                                                                           \
  do {                                                                                          \
    cublasStatus_t s_ = (x);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
      std::fprintf(stderr, "kwb-bench-vendor-baselines: %s: cuBLAS status %d\n", #x, int(s_)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

__global__ void readFlush(const float4 *buffer, size_t n, float *sink) {
  float4 acc = make_float4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float4 v = __ldcg(buffer + i);
    acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
  }
  if (acc.x + acc.y + acc.z + acc.w == 12345.678f) *sink = acc.x;  // keeps the loads
}

__global__ void fillUniform(float *x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed * 40503u;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    x[i] = (h & 0xffffff) / float(0x800000) - 1.0f;
  }
}

__global__ void toBf16(const float *x, __nv_bfloat16 *y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(x[i]);
}

struct Flusher {
  float4 *buffer = nullptr;
  size_t n = 0;
  float *sink = nullptr;
  explicit Flusher(size_t l2Bytes) {
    n = std::max<size_t>(2 * l2Bytes, 64u << 20) / sizeof(float4);
    CHECK(cudaMalloc(&buffer, n * sizeof(float4)));
    CHECK(cudaMemset(buffer, 0, n * sizeof(float4)));
    CHECK(cudaMalloc(&sink, sizeof(float)));
  }
  void operator()(cudaStream_t s) const { readFlush<<<1024, 256, 0, s>>>(buffer, n, sink); }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median milliseconds of `samples` calls of `work`, each after an L2 flush, after `warmup` calls.
template <class F>
double timeMs(const Flusher &flush, cudaStream_t s, int warmup, int samples, F work) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < warmup; ++i) work();
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    flush(s);
    CHECK(cudaEventRecord(a, s));
    work();
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return median(ms);
}

struct Row {
  std::string what, size;
  double ms, rate;
  std::string unit;
};

std::vector<long long> parseDims(const std::string &s) {
  std::vector<long long> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    out.push_back(std::atoll(s.substr(at, comma - at).c_str()));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<std::string> sgemm, bf16, copies;
  std::string out;
  int samples = 30;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kwb-bench-vendor-baselines: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--sgemm") sgemm.push_back(next());
    else if (a == "--bf16") bf16.push_back(next());
    else if (a == "--copy-mib") copies.push_back(next());
    else if (a == "--samples") samples = std::atoi(next().c_str());
    else if (a == "--out") out = next();
    else {
      std::fprintf(stderr,
                   "usage: kwb-bench-vendor-baselines [--sgemm M,N,K]... [--bf16 M,N,K]... [--copy-mib N]... "
                   "[--samples N] [--out FILE.json]\n");
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "kwb-bench-vendor-baselines: no CUDA device\n");
    return 3;
  }
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  cublasHandle_t h;
  CHECK_BLAS(cublasCreate(&h));
  CHECK_BLAS(cublasSetStream(h, s));
  const Flusher flush(size_t(prop.l2CacheSize));
  std::vector<Row> rows;

  for (const auto &spec : copies) {
    const size_t bytes = size_t(std::atoll(spec.c_str())) << 20;
    void *a = nullptr, *b = nullptr;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMemset(a, 1, bytes));
    const double ms = timeMs(flush, s, 3, samples, [&] { CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s)); });
    rows.push_back({"copy (cudaMemcpy D2D)", spec + " MiB", ms, 2.0 * bytes / (ms * 1e-3) / 1e9, "GB/s (read+write)"});
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
  }
  for (const auto &spec : sgemm) {
    const auto d = parseDims(spec);
    if (d.size() != 3) return 2;
    const long long M = d[0], N = d[1], K = d[2];
    float *A, *B, *C;
    CHECK(cudaMalloc(&A, sizeof(float) * M * K));
    CHECK(cudaMalloc(&B, sizeof(float) * K * N));
    CHECK(cudaMalloc(&C, sizeof(float) * M * N));
    fillUniform<<<1024, 256, 0, s>>>(A, size_t(M * K), 1);
    fillUniform<<<1024, 256, 0, s>>>(B, size_t(K * N), 2);
    const float one = 1, zero = 0;
    // Row-major C[M,N] = A[M,K]·B[K,N] is column-major C^T[N,M] = B^T[N,K]·A^T[K,M].
    const double ms = timeMs(flush, s, 5, samples, [&] {
      CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one, B, int(N), A, int(K), &zero, C, int(N)));
    });
    rows.push_back({"cuBLAS SGEMM", spec, ms, 2.0 * M * N * K / (ms * 1e-3) / 1e12, "TFLOP/s"});
    CHECK(cudaFree(A));
    CHECK(cudaFree(B));
    CHECK(cudaFree(C));
  }
  for (const auto &spec : bf16) {
    const auto d = parseDims(spec);
    if (d.size() != 3) return 2;
    const long long M = d[0], N = d[1], K = d[2];
    float *tmp, *C;
    __nv_bfloat16 *A, *B;
    CHECK(cudaMalloc(&tmp, sizeof(float) * std::max(M, N) * K));
    CHECK(cudaMalloc(&A, 2 * M * K));
    CHECK(cudaMalloc(&B, 2 * N * K));
    CHECK(cudaMalloc(&C, sizeof(float) * M * N));
    fillUniform<<<1024, 256, 0, s>>>(tmp, size_t(M * K), 1);
    toBf16<<<1024, 256, 0, s>>>(tmp, A, size_t(M * K));
    fillUniform<<<1024, 256, 0, s>>>(tmp, size_t(N * K), 2);
    toBf16<<<1024, 256, 0, s>>>(tmp, B, size_t(N * K));
    const float one = 1, zero = 0;
    // Row-major C[M,N] = A[M,K]·B[N,K]^T is column-major C^T[N,M] = (B stored [K,N] col-major)^T... :
    // column-major B is K x N with ld K (its rows are our B's rows), so op(B) = B^T gives N x K.
    const double ms = timeMs(flush, s, 5, samples, [&] {
      CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(M), int(K), &one, B, CUDA_R_16BF, int(K), A,
                              CUDA_R_16BF, int(K), &zero, C, CUDA_R_32F, int(N), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
    });
    rows.push_back({"cuBLAS bf16 GEMM (f32 out)", spec, ms, 2.0 * M * N * K / (ms * 1e-3) / 1e12, "TFLOP/s"});
    CHECK(cudaFree(tmp));
    CHECK(cudaFree(A));
    CHECK(cudaFree(B));
    CHECK(cudaFree(C));
  }

  std::printf("%s, %d SMs, L2 %d MiB; median of %d samples, L2 flushed before each\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, samples);
  std::printf("%-28s %-16s %12s %12s\n", "what", "size", "ms", "rate");
  for (const auto &r : rows)
    std::printf("%-28s %-16s %12.4f %12.2f %s\n", r.what.c_str(), r.size.c_str(), r.ms, r.rate, r.unit.c_str());
  if (!out.empty()) {
    std::ofstream f(out);
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    const char *commit = std::getenv("KWB_BENCH_COMMIT");
    f << "{\n  \"program\": \"kwb-bench-vendor-baselines\",\n  \"date\": \"" << date << "\",\n  \"commit\": \""
      << (commit ? commit : "unknown") << "\",\n  \"gpu\": \"" << prop.name << "\",\n  \"cublas_version\": ";
    int version = 0;
    cublasGetVersion(h, &version);
    f << version << ",\n  \"samples\": " << samples << ",\n  \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i)
      f << "    {\"what\": \"" << rows[i].what << "\", \"size\": \"" << rows[i].size << "\", \"median_ms\": " << rows[i].ms
        << ", \"rate\": " << rows[i].rate << ", \"unit\": \"" << rows[i].unit << "\"}" << (i + 1 < rows.size() ? ",\n" : "\n");
    f << "  ]\n}\n";
  }
  cublasDestroy(h);
  return 0;
}
