// Step 6 of 8 — vectorized loads
// Adds: 128-bit global memory accesses: each thread fetches its share of the A and B tiles with
// one float4 load each (instead of 4 + 4 scalar loads) and writes C with float4 stores. The A tile
// is stored transposed in shared memory (As[k][m]) so that a thread's 8 A values for one k are two
// float4 reads that a warp serves without bank conflicts (nvcc already merges step 5's shared
// reads into 128-bit loads, but along k, where the two rows a warp reads, 256 bytes apart, share
// banks). The float4 path needs the block's whole 128 x 128 tile inside C, K % 8 == 0,
// N % 4 == 0 and 16-byte aligned pointers; a block-uniform test picks it, so interior blocks run
// with no bounds checks at all, while edge blocks and other shapes (all of the odd config, whose
// K % 8 == 4) take a guarded scalar path that zero-fills.
// Relies on: step 5 (128 x 128 x 8 block tile, 8 x 8 outputs per thread as outer products).
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#define NT ((BM / TM) * (BN / TN))  // 256 threads

// One block's 128 x 128 tile of C. EDGE: some of the tile or of a K tile lies outside the matrices,
// or the shape is not float4-aligned: every access is guarded and scalar.
template <bool EDGE>
__device__ __forceinline__ void vectorized_tile(const float *__restrict__ A, const float *__restrict__ B,
                                                float *__restrict__ C, long long M, long long N, long long K,
                                                float (*As)[BM], float (*Bs)[BN]) {
  const int tid = threadIdx.x;
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
  // This thread's outputs: rows trow*TM .. +TM-1, columns tcol*TN .. +TN-1 of the tile.
  const int tcol = tid % (BN / TN), trow = tid / (BN / TN);
  // Tile loads, one float4 each: A (128 x 8) row ar, columns ac..ac+3; B (8 x 128) row br, columns bc..bc+3.
  const int ar = tid / (BK / 4), ac = (tid % (BK / 4)) * 4;
  const int br = tid / (BN / 4), bc = (tid % (BN / 4)) * 4;
  // Edge path: the rows and columns of this block's tile that lie inside C (1..128 each).
  const int rowsIn = (int)(M - m0 < BM ? M - m0 : BM), colsIn = (int)(N - n0 < BN ? N - n0 : BN);
  // &A[m0 + ar][k0 + ac] and &B[k0 + br][n0 + bc], advanced per K tile (the A row clamped into
  // the matrix); on the edge path only dereferenced where the element exists.
  const float *Ap = A + (m0 + (EDGE && ar >= rowsIn ? 0 : ar)) * K + ac;
  const float *Bp = B + br * N + n0 + bc;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  float regM[TM], regN[TN];

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
      const float4 m01 = *reinterpret_cast<const float4 *>(&As[k][trow * TM]);
      const float4 m23 = *reinterpret_cast<const float4 *>(&As[k][trow * TM + 4]);
      const float4 n01 = *reinterpret_cast<const float4 *>(&Bs[k][tcol * TN]);
      const float4 n23 = *reinterpret_cast<const float4 *>(&Bs[k][tcol * TN + 4]);
      regM[0] = m01.x; regM[1] = m01.y; regM[2] = m01.z; regM[3] = m01.w;
      regM[4] = m23.x; regM[5] = m23.y; regM[6] = m23.z; regM[7] = m23.w;
      regN[0] = n01.x; regN[1] = n01.y; regN[2] = n01.z; regN[3] = n01.w;
      regN[4] = n23.x; regN[5] = n23.y; regN[6] = n23.z; regN[7] = n23.w;
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += regM[i] * regN[j];
    }
    __syncthreads();
  }

  float *Cp = C + (m0 + trow * TM) * N + n0 + tcol * TN;  // &C[row of acc[0]][column of acc[.][0]]
#pragma unroll
  for (int i = 0; i < TM; ++i, Cp += N) {
    if (!EDGE) {
      reinterpret_cast<float4 *>(Cp)[0] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
      reinterpret_cast<float4 *>(Cp)[1] = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    } else {
#pragma unroll
      for (int j = 0; j < TN; ++j)
        if (trow * TM + i < rowsIn && tcol * TN + j < colsIn) Cp[j] = acc[i][j];
    }
  }
}

extern "C" __global__ void __launch_bounds__(NT, 2)
sgemm_vectorized(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                 long long M, long long N, long long K) {
  __shared__ __align__(16) float As[BK][BM];  // transposed: [k][m]
  __shared__ __align__(16) float Bs[BK][BN];  // [k][n]
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;
  // Block-uniform: every tile of this block is whole and every float4 access is 16-byte aligned.
  const bool interior = m0 + BM <= M && n0 + BN <= N && K % BK == 0 && N % 4 == 0 &&
                        (((unsigned long long)A | (unsigned long long)B | (unsigned long long)C) % 16) == 0;
  if (interior)
    vectorized_tile<false>(A, B, C, M, N, K, As, Bs);
  else
    vectorized_tile<true>(A, B, C, M, N, K, As, Bs);
}
