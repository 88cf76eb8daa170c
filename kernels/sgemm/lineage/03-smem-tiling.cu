// Step 3 of 8 — shared-memory tiling
// Adds: cache blocking: the block stages a TS x TS tile of A and of B in shared memory per step
// of K and every thread reads its operands from there, so each global element is loaded once
// per block instead of once per thread (TS = 32 times less global/L2 traffic).
// Relies on: step 2 (coalesced mapping: threadIdx.x walks columns, so tile loads are coalesced).
#define TS 32  // tile edge; the block is TS x TS threads, one output each

extern "C" __global__ void __launch_bounds__(TS * TS)
sgemm_smem(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
           long long M, long long N, long long K) {
  __shared__ float As[TS][TS];
  __shared__ float Bs[TS][TS];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long row = (long long)blockIdx.y * TS + ty;
  const long long col = (long long)blockIdx.x * TS + tx;
  float acc = 0.0f;
  for (long long k0 = 0; k0 < K; k0 += TS) {
    // Out-of-range elements are zero-filled, so the tail tiles need no special inner loop.
    const long long ka = k0 + tx, kb = k0 + ty;
    As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    Bs[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TS; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
