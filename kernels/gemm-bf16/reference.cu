// Reference BF16 GEMM: C[M, N] = A[M, K] · B[N, K]^T, one thread per element of C.
// A plain f32 dot product of __bfloat162float values over K (each product of two bf16 values is
// exact in f32, so only the order of the sum differs from a tensor-core kernel). Trusted; not fast.
#include <cuda_bf16.h>

extern "C" __global__ void gemm_bf16_reference(const __nv_bfloat16 *__restrict__ A,
                                               const __nv_bfloat16 *__restrict__ B,
                                               float *__restrict__ C, long long M, long long N,
                                               long long K) {
  const long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  const __nv_bfloat16 *a = A + row * K;
  const __nv_bfloat16 *b = B + col * K;
  float acc = 0.0f;
  for (long long k = 0; k < K; ++k) acc += __bfloat162float(a[k]) * __bfloat162float(b[k]);
  C[row * N + col] = acc;
}
