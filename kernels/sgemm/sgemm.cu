// Starting point for optimization: shared-memory tiling, TILE×TILE threads per block,
// one output element per thread. TILE comes from the task's tunables as -DTILE=<value>.
#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
      long long M, long long N, long long K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const long long row = (long long)blockIdx.y * TILE + threadIdx.y;
  const long long col = (long long)blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (long long k0 = 0; k0 < K; k0 += TILE) {
    const long long ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
