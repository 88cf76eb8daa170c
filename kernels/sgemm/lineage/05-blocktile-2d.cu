// Step 5 of 8 — 2D register blocking
// Adds: each thread computes a TM x TN = 8 x 8 block of C as outer products: per k it loads 8
// values of A and 8 of B from shared memory into registers and does 64 FMAs with them
// (16 shared loads per 64 FMAs instead of ~72), and the block tile grows to 128 x 128.
// __launch_bounds__(256, 2) holds the 64 accumulators and operands to 128 registers, so two
// blocks fit per SM.
// Relies on: step 4 (register blocking along one dimension, shared-memory tiles).
// Pays at large sizes only: at 512^3 the 128 x 128 tiles give 16 blocks for 132 SMs, so on the
// H200 it is slower than step 4 there (113 us vs 59.9 us); at 4096^3 it is 1.89x faster
// (4.76 ms vs 8.99 ms). Steps 6 to 8 keep these tiles and win back the small size partly.
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NT ((BM / TM) * (BN / TN))  // 256 threads

extern "C" __global__ void __launch_bounds__(NT, 2)
sgemm_blocktile_2d(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                   long long M, long long N, long long K) {
  __shared__ float As[BM * BK];  // [m][k]
  __shared__ float Bs[BK * BN];  // [k][n]
  const int tid = threadIdx.x;
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
  // This thread's outputs: rows trow*TM .. +TM-1, columns tcol*TN .. +TN-1 of the tile.
  const int tcol = tid % (BN / TN), trow = tid / (BN / TN);
  // Tile loads: A is 128 x 8 (4 elements per thread, rows ar + 32 i), B is 8 x 128 (rows br + 2 i).
  const int ar = tid / BK, ac = tid % BK;
  const int br = tid / BN, bc = tid % BN;
  const long long bcol = n0 + bc;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  float regM[TM], regN[TN];

  for (long long k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int o = 0; o < BM; o += NT / BK) {
      const long long arow = m0 + ar + o;
      As[(ar + o) * BK + ac] = (arow < M && k0 + ac < K) ? A[arow * K + k0 + ac] : 0.0f;
    }
#pragma unroll
    for (int o = 0; o < BK; o += NT / BN) {
      const long long bk = k0 + br + o;
      Bs[(br + o) * BN + bc] = (bk < K && bcol < N) ? B[bk * N + bcol] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) regM[i] = As[(trow * TM + i) * BK + k];
#pragma unroll
      for (int j = 0; j < TN; ++j) regN[j] = Bs[k * BN + tcol * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const long long row = m0 + trow * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const long long col = n0 + tcol * TN + j;
      if (row < M && col < N) C[row * N + col] = acc[i][j];
    }
  }
}
