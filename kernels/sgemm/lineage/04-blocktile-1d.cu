// Step 4 of 8 — 1D register blocking
// Adds: each thread computes TM = 8 outputs down one column of C instead of one: the B value it
// reads from shared memory is kept in a register and reused for all 8 rows, so shared-memory
// loads per FMA drop from 2 to about 1.1 and the block tile grows to 64 x 64 (less traffic to L2).
// Relies on: step 3 (shared-memory tiles, zero-filled at the edges).
// Pays at large sizes only: at 512^3 the 64 x 64 tiles give 64 blocks for 132 SMs, so on the
// H200 it is slower than step 3 there (59.9 us vs 37.2 us); at 4096^3 it is 1.87x faster
// (8.99 ms vs 16.8 ms). Measured with kwb lineage --time (tests/bench/results/*-lineage-sgemm.json).
#define BM 64
#define BN 64
#define BK 8
#define TM 8
#define NT ((BM / TM) * BN)  // 512 threads

extern "C" __global__ void __launch_bounds__(NT)
sgemm_blocktile_1d(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                   long long M, long long N, long long K) {
  __shared__ float As[BM * BK];  // [m][k]
  __shared__ float Bs[BK * BN];  // [k][n]
  const int tid = threadIdx.x;
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
  // This thread's outputs: rows trow*TM .. +TM-1 of the tile, column tcol.
  const int tcol = tid % BN, trow = tid / BN;
  // Tile loads: one element of A (64 x 8) and one of B (8 x 64) per thread.
  const int ar = tid / BK, ac = tid % BK;
  const int br = tid / BN, bc = tid % BN;
  const long long arow = m0 + ar, bcol = n0 + bc;

  float acc[TM];
#pragma unroll
  for (int i = 0; i < TM; ++i) acc[i] = 0.0f;

  for (long long k0 = 0; k0 < K; k0 += BK) {
    As[ar * BK + ac] = (arow < M && k0 + ac < K) ? A[arow * K + k0 + ac] : 0.0f;
    Bs[br * BN + bc] = (k0 + br < K && bcol < N) ? B[(k0 + br) * N + bcol] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k * BN + tcol];
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[(trow * TM + i) * BK + k] * b;
    }
    __syncthreads();
  }

  const long long col = n0 + tcol;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const long long row = m0 + trow * TM + i;
    if (row < M && col < N) C[row * N + col] = acc[i];
  }
}
