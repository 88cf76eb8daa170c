// Step 8 of 8 — double buffering
// Adds: two shared-memory buffers per operand with a register prefetch: the global loads of
// K tile t+1 are issued while the FMAs on tile t run and are stored into the other buffer
// afterwards, so one __syncthreads per K tile replaces two and no warp waits on global memory
// between tiles. Costs 8 KB more shared memory per block (16 KB) and 8 registers of prefetch;
// still at most 128 registers (no spills), two blocks (16 warps) per SM.
// Relies on: step 7 (warp tiling, 128 x 128 x 8 block tile, float4 loads, interior/edge split).
#define BM 128
#define BN 128
#define BK 8
#define WM 32   // warp tile rows
#define WN 64   // warp tile columns
#define NT 256  // 8 warps: (BM / WM) x (BN / WN) = 4 x 2

// One block's 128 x 128 tile of C. EDGE: some of the tile or of a K tile lies outside the matrices,
// or the shape is not float4-aligned: every global access is guarded and scalar.
template <bool EDGE>
__device__ __forceinline__ void double_buffer_tile(const float *__restrict__ A, const float *__restrict__ B,
                                                   float *__restrict__ C, long long M, long long N, long long K,
                                                   float (*As)[BK][BM], float (*Bs)[BK][BN]) {
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int wm = warp / (BN / WN), wn = warp % (BN / WN);  // warp tile position
  const int ty = lane / 8, tx = lane % 8;                   // lane position: 4 x 8 lanes
  // This thread's rows: wm*WM + {0, 16} + ty*4 + 0..3; columns: wn*WN + {0, 32} + tx*4 + 0..3.
  const int mBase = wm * WM + ty * 4, nBase = wn * WN + tx * 4;
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
  // Tile loads, one float4 each: A (128 x 8) row ar, columns ac..ac+3; B (8 x 128) row br, columns bc..bc+3.
  const int ar = tid / (BK / 4), ac = (tid % (BK / 4)) * 4;
  const int br = tid / (BN / 4), bc = (tid % (BN / 4)) * 4;
  // Edge path: the rows and columns of this block's tile that lie inside C (1..128 each).
  const int rowsIn = (int)(M - m0 < BM ? M - m0 : BM), colsIn = (int)(N - n0 < BN ? N - n0 : BN);
  // &A[m0 + ar][k0 + ac] and &B[k0 + br][n0 + bc], advanced per K tile (the A row clamped into
  // the matrix); on the edge path only dereferenced where the element exists.
  const float *Ap = A + (m0 + (EDGE && ar >= rowsIn ? 0 : ar)) * K + ac;
  const float *Bp = B + br * N + n0 + bc;

  // Global -> registers: this thread's share of the K tile at k0, then advance to the next tile.
  auto loadTile = [&](long long k0, float4 &a, float4 &b) {
    if (!EDGE) {
      a = *reinterpret_cast<const float4 *>(Ap);
      b = *reinterpret_cast<const float4 *>(Bp);
    } else {
      const int kIn = (int)(K - k0 < BK ? K - k0 : BK);  // columns of A / rows of B in this K tile
      const bool aOk = ar < rowsIn, bOk = br < kIn;
      a.x = (aOk && ac + 0 < kIn) ? Ap[0] : 0.0f;
      a.y = (aOk && ac + 1 < kIn) ? Ap[1] : 0.0f;
      a.z = (aOk && ac + 2 < kIn) ? Ap[2] : 0.0f;
      a.w = (aOk && ac + 3 < kIn) ? Ap[3] : 0.0f;
      b.x = (bOk && bc + 0 < colsIn) ? Bp[0] : 0.0f;
      b.y = (bOk && bc + 1 < colsIn) ? Bp[1] : 0.0f;
      b.z = (bOk && bc + 2 < colsIn) ? Bp[2] : 0.0f;
      b.w = (bOk && bc + 3 < colsIn) ? Bp[3] : 0.0f;
    }
    Ap += BK;
    Bp += BK * N;
  };
  // Registers -> shared buffer s.
  auto storeTile = [&](int s, const float4 &a, const float4 &b) {
    As[s][ac + 0][ar] = a.x;
    As[s][ac + 1][ar] = a.y;
    As[s][ac + 2][ar] = a.z;
    As[s][ac + 3][ar] = a.w;
    *reinterpret_cast<float4 *>(&Bs[s][br][bc]) = b;
  };

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  float4 a, b;
  loadTile(0, a, b);
  storeTile(0, a, b);
  __syncthreads();
  int s = 0;  // the buffer holding the tile at k0
  for (long long k0 = 0; k0 < K; k0 += BK, s ^= 1) {
    const bool more = k0 + BK < K;      // block-uniform
    if (more) loadTile(k0 + BK, a, b);  // in flight during the FMAs below
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 m0v = *reinterpret_cast<const float4 *>(&As[s][k][mBase]);
      const float4 m1v = *reinterpret_cast<const float4 *>(&As[s][k][mBase + 16]);
      const float4 n0v = *reinterpret_cast<const float4 *>(&Bs[s][k][nBase]);
      const float4 n1v = *reinterpret_cast<const float4 *>(&Bs[s][k][nBase + 32]);
      const float am[8] = {m0v.x, m0v.y, m0v.z, m0v.w, m1v.x, m1v.y, m1v.z, m1v.w};
      const float bn[8] = {n0v.x, n0v.y, n0v.z, n0v.w, n1v.x, n1v.y, n1v.z, n1v.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += am[i] * bn[j];
    }
    // Buffer s ^ 1 was last read in the previous iteration, which every thread finished before
    // the barrier that ended it; the barrier below publishes it for the next iteration.
    if (more) storeTile(s ^ 1, a, b);
    __syncthreads();
  }

  // acc[i][j] is C[m0 + mBase + (i / 4) * 16 + i % 4][n0 + nBase + (j / 4) * 32 + j % 4].
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = mBase + (i / 4) * 16 + i % 4;  // row within the block tile
    float *Cp = C + (m0 + r) * N + n0 + nBase;
    if (!EDGE) {
      *reinterpret_cast<float4 *>(Cp) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
      *reinterpret_cast<float4 *>(Cp + 32) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int c = (j / 4) * 32 + j % 4;  // column offset from nBase
        if (r < rowsIn && nBase + c < colsIn) Cp[c] = acc[i][j];
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(NT, 2)
sgemm_double_buffer(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                    long long M, long long N, long long K) {
  __shared__ __align__(16) float As[2][BK][BM];  // transposed: [buffer][k][m]
  __shared__ __align__(16) float Bs[2][BK][BN];  // [buffer][k][n]
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
  // Block-uniform: every tile of this block is whole and every float4 access is 16-byte aligned.
  const bool interior = m0 + BM <= M && n0 + BN <= N && K % BK == 0 && N % 4 == 0 &&
                        (((unsigned long long)A | (unsigned long long)B | (unsigned long long)C) % 16) == 0;
  if (interior)
    double_buffer_tile<false>(A, B, C, M, N, K, As, Bs);
  else
    double_buffer_tile<true>(A, B, C, M, N, K, As, Bs);
}
