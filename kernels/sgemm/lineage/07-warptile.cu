// Step 7 of 8 — warp tiling
// Adds: a block -> warp -> thread hierarchy: the 8 warps each own a 32 x 64 warp tile (4 x 2 warps),
// and each thread's 8 x 8 outputs are four 4 x 4 sub-tiles spaced 16 rows and 32 columns apart
// within its warp tile. Per k a warp's float4 shared loads then cover 64 contiguous bytes of As and
// 128 contiguous bytes of Bs (in step 6 its Bs loads cover 512 bytes, with 2-way bank conflicts
// among each 8 lanes), so fewer shared-memory wavefronts feed the same FMAs, and each float4 store
// of C writes 128 contiguous bytes per 8 lanes.
// Relies on: step 6 (float4 tile loads, transposed A tile, float4 shared loads, interior/edge split).
#define BM 128
#define BN 128
#define BK 8
#define WM 32   // warp tile rows
#define WN 64   // warp tile columns
#define NT 256  // 8 warps: (BM / WM) x (BN / WN) = 4 x 2

// One block's 128 x 128 tile of C. EDGE: some of the tile or of a K tile lies outside the matrices,
// or the shape is not float4-aligned: every global access is guarded and scalar.
template <bool EDGE>
__device__ __forceinline__ void warptile_tile(const float *__restrict__ A, const float *__restrict__ B,
                                              float *__restrict__ C, long long M, long long N, long long K,
                                              float (*As)[BM], float (*Bs)[BN]) {
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

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  for (long long k0 = 0; k0 < K; k0 += BK, Ap += BK, Bp += BK * N) {
    float4 a, b;
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
    As[ac + 0][ar] = a.x;
    As[ac + 1][ar] = a.y;
    As[ac + 2][ar] = a.z;
    As[ac + 3][ar] = a.w;
    *reinterpret_cast<float4 *>(&Bs[br][bc]) = b;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 m0v = *reinterpret_cast<const float4 *>(&As[k][mBase]);
      const float4 m1v = *reinterpret_cast<const float4 *>(&As[k][mBase + 16]);
      const float4 n0v = *reinterpret_cast<const float4 *>(&Bs[k][nBase]);
      const float4 n1v = *reinterpret_cast<const float4 *>(&Bs[k][nBase + 32]);
      const float am[8] = {m0v.x, m0v.y, m0v.z, m0v.w, m1v.x, m1v.y, m1v.z, m1v.w};
      const float bn[8] = {n0v.x, n0v.y, n0v.z, n0v.w, n1v.x, n1v.y, n1v.z, n1v.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += am[i] * bn[j];
    }
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
sgemm_warptile(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
               long long M, long long N, long long K) {
  __shared__ __align__(16) float As[BK][BM];  // transposed: [k][m]
  __shared__ __align__(16) float Bs[BK][BN];  // [k][n]
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
  // Block-uniform: every tile of this block is whole and every float4 access is 16-byte aligned.
  const bool interior = m0 + BM <= M && n0 + BN <= N && K % BK == 0 && N % 4 == 0 &&
                        (((unsigned long long)A | (unsigned long long)B | (unsigned long long)C) % 16) == 0;
  if (interior)
    warptile_tile<false>(A, B, C, M, N, K, As, Bs);
  else
    warptile_tile<true>(A, B, C, M, N, K, As, Bs);
}
