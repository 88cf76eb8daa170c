// Checks and times one gemm-bf16 host-launcher step beside cuBLAS, in one process, on one stream:
// the step's kwb_launch against cublasGemmEx (bf16 in, f32 out and compute), correctness with the
// task's tolerance (rtol 1e-3, atol 5e-3), then the median of 20 (200 below 2^36 MACs) event-timed
// runs of each after 3 warm-up runs. A quick loop while writing a step; the lineage's own figures
// come from `kwb lineage build` (tests/gpu/issue18-check.sh), which gates every seed and config.
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o check \
//        bench/experiments/gemm_bf16_step_vs_cublas.cu kernels/gemm-bf16/lineage/12-warp-specialized.cu -lcublas
//   ./check [M N K]...      (default: 1024³, 1000x1100x296, 8192³)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>

extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream);

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

__global__ void fill(__nv_bfloat16 *p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed * 0x9e3779b9u;
    x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16;
    p[i] = __float2bfloat16((x >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

int main(int argc, char **argv) {
  std::vector<long long> shapes = {1024, 1024, 1024, 1000, 1100, 296, 8192, 8192, 8192};
  if (argc > 1) { shapes.clear(); for (int i = 1; i < argc; ++i) shapes.push_back(std::atoll(argv[i])); }
  cublasHandle_t h; cublasCreate(&h);
  cudaStream_t stream; CHECK(cudaStreamCreate(&stream)); cublasSetStream(h, stream);
  int bad = 0;
  for (size_t s = 0; s + 2 < shapes.size(); s += 3) {
    long long M = shapes[s], N = shapes[s + 1], K = shapes[s + 2];
    __nv_bfloat16 *A, *B; float *C, *R;
    CHECK(cudaMalloc(&A, M * K * 2)); CHECK(cudaMalloc(&B, N * K * 2));
    CHECK(cudaMalloc(&C, M * N * 4)); CHECK(cudaMalloc(&R, M * N * 4));
    fill<<<1024, 256>>>(A, M * K, 1); fill<<<1024, 256>>>(B, N * K, 2);
    CHECK(cudaMemset(C, 0xff, M * N * 4));
    const float one = 1, zero = 0;
    // Row-major C[M,N] = A B^T is column-major C^T[N,M] = B A^T: B and A are column-major [K,N] and [K,M].
    auto cublas = [&] {
      return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one, B, CUDA_R_16BF, (int)K, A, CUDA_R_16BF,
                          (int)K, &zero, R, CUDA_R_32F, (int)N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    void *args[6] = {&A, &B, &C, &M, &N, &K};
    if (cublas() != CUBLAS_STATUS_SUCCESS) { std::printf("cublas failed\n"); return 1; }
    CHECK(kwb_launch(args, stream));
    CHECK(cudaStreamSynchronize(stream));
    std::vector<float> c(M * N), r(M * N);
    CHECK(cudaMemcpy(c.data(), C, M * N * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(r.data(), R, M * N * 4, cudaMemcpyDeviceToHost));
    long long wrong = 0, first = -1; double worst = 0;
    for (long long i = 0; i < M * N; ++i) {
      const double e = std::fabs((double)c[i] - r[i]);
      if (!(e <= 5e-3 + 1e-3 * std::fabs(r[i]))) { if (first < 0) first = i; ++wrong; }
      if (e > worst || std::isnan(c[i])) worst = std::isnan(c[i]) ? INFINITY : e;
    }
    auto timeit = [&](auto &&fn) {
      cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
      std::vector<float> ms;
      for (int w = 0; w < 3; ++w) fn();
      const int reps = M * N * K > (1LL << 36) ? 20 : 200;
      for (int i = 0; i < reps; ++i) { cudaEventRecord(a, stream); fn(); cudaEventRecord(b, stream); cudaEventSynchronize(b); float t; cudaEventElapsedTime(&t, a, b); ms.push_back(t); }
      std::sort(ms.begin(), ms.end());
      return ms[ms.size() / 2];
    };
    const float tc = timeit([&] { kwb_launch(args, stream); });
    const float tr = timeit([&] { cublas(); });
    const double flop = 2.0 * M * N * K;
    std::printf("%lldx%lldx%lld: %s (%lld wrong%s, worst |diff| %.2e)  step %.1f us %.0f TFLOP/s  cuBLAS %.1f us %.0f TFLOP/s  %.1f%% of cuBLAS\n",
                M, N, K, wrong ? "WRONG" : "correct", wrong, wrong ? (" first at row " + std::to_string(first / N) + " col " + std::to_string(first % N)).c_str() : "",
                worst, tc * 1e3, flop / tc / 1e9, tr * 1e3, flop / tr / 1e9, 100.0 * tr / tc);
    if (wrong && first >= 0) std::printf("   got %.4f want %.4f\n", c[first], r[first]);
    bad += wrong != 0;
    cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(R);
  }
  return bad ? 1 : 0;
}
