// Step 1 of 12 — naive
// Adds: nothing yet: one thread per element of C on the CUDA cores, an f32 dot product of bf16
// values over K read straight from global memory (A row broadcast within a warp, B rows strided).
// Relies on: nothing
#include <cuda_bf16.h>

extern "C" __global__ void gemm_bf16_naive(const __nv_bfloat16 *__restrict__ A,
                                           const __nv_bfloat16 *__restrict__ B,
                                           float *__restrict__ C, long long M, long long N,
                                           long long K) {
  const long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long m = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  const __nv_bfloat16 *a = A + m * K;
  const __nv_bfloat16 *b = B + n * K;
  float acc = 0.0f;
  for (long long k = 0; k < K; ++k) acc = fmaf(__bfloat162float(a[k]), __bfloat162float(b[k]), acc);
  C[m * N + n] = acc;
}
