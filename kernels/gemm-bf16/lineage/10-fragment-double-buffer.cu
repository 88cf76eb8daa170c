// Step 10 of 12 — register double-buffered fragments
// Adds: the ldmatrix loads for k16-step s+1 are issued before the 32 mma.sync of step s, from a
// second set of fragment registers, and the wait/barrier for the next K-tile moves into the last
// k16-step, so the fragments of the next tile's first step load while the last step's mma run:
// the tensor cores no longer wait on shared-memory latency at every step and every tile boundary.
// Relies on: step 9 (128x256x64 tiles, 4-stage cp.async pipeline, swizzled layout, block order)
//
// The second fragment set costs 32 registers; to stay at 255 without spilling, shared addresses are
// 32-bit byte offsets precomputed per lane (the swizzle of every row a lane touches depends on the
// lane only), stages are tracked as byte offsets and global pointers advance by BK per K-tile.
// shared_bytes = STAGES * (BM + BN) * BK * 2 = 196608.
#include <cuda_bf16.h>

#define BM 128
#define BN 256
#define BK 64
#define CPR (BK / 8)  // 16-byte chunks per tile row
#define KS (BK / 16)  // k16-steps per K-tile
#define GROUP_M 8     // block rows per group of the block order
#define STAGES 4
#define THREADS 256   // 8 warps: 2 along M x 4 along N, each 64x64 = 4 x 8 mma tiles of 16x8

__device__ __forceinline__ unsigned smem_u32(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
// element offset of chunk c (8 bf16) of row r in a swizzled [rows][BK] tile
__device__ __forceinline__ int swz(int r, int c) { return r * BK + ((c ^ ((r / (8 / CPR)) % CPR)) << 3); }

__device__ __forceinline__ void ldmatrix_x4(unsigned (&d)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(addr));
}
__device__ __forceinline__ void cp_async16(unsigned dst, const void *src, bool in_range) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(in_range ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}
__device__ __forceinline__ void mma_bf16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// C[row, col] and C[row, col + 1] (col is even), bounds-checked; float2 when N is even (aligned)
__device__ __forceinline__ void store_pair(float *C, long long row, long long col, float v0, float v1,
                                           long long M, long long N) {
  if (row >= M) return;
  float *p = C + row * N + col;
  if ((N & 1) == 0 && col + 1 < N) {
    *reinterpret_cast<float2 *>(p) = make_float2(v0, v1);
  } else {
    if (col < N) p[0] = v0;
    if (col + 1 < N) p[1] = v1;
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_bf16_expert(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
                 float *__restrict__ C, long long M, long long N, long long K) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr unsigned STAGE_A = BM * BK * 2, STAGE_B = BN * BK * 2;  // bytes per stage
  const unsigned sA0 = smem_u32(smem), sB0 = sA0 + STAGES * STAGE_A;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / 4, wn = warp % 4;  // warp tile: rows wm*64, cols wn*64
  // grouped block order (step 8)
  const unsigned tiles_n = gridDim.x, tiles_m = gridDim.y;
  const unsigned id = blockIdx.y * tiles_n + blockIdx.x;
  const unsigned group = id / (GROUP_M * tiles_n), first_m = group * GROUP_M;
  const unsigned rows_in_group = min(tiles_m - first_m, (unsigned)GROUP_M);
  const unsigned in_group = id - group * (GROUP_M * tiles_n);
  const unsigned tile_m = first_m + in_group % rows_in_group, tile_n = in_group / rows_in_group;
  const long long m0 = (long long)tile_m * BM, n0 = (long long)tile_n * BN;

  float acc[4][8][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // copies: thread tid moves chunk tid % CPR of rows tid / CPR + RPP * i (A: 4 rows, B: 8 rows).
  // Rows lr + RPP * i all have the swizzle of row lr (RPP is a multiple of 8).
  constexpr int RPP = THREADS / CPR;
  const int lr = tid / CPR, lc = tid % CPR;
  const __nv_bfloat16 *gA = A + (m0 + lr) * K + lc * 8;  // advance by BK per issued K-tile
  const __nv_bfloat16 *gB = B + (n0 + lr) * K + lc * 8;
  const long long strideR = (long long)RPP * K;
  const unsigned dA = sA0 + swz(lr, lc) * 2, dB = sB0 + swz(lr, lc) * 2;
  long long kload = lc * 8;  // k of this thread's chunk in the next K-tile to issue
  auto load_tile = [&](unsigned st_a, unsigned st_b) {
    const bool kin = kload < K;
#pragma unroll
    for (int i = 0; i < BM / RPP; ++i) {
      const bool ok = kin && m0 + lr + RPP * i < M;
      cp_async16(dA + st_a + i * RPP * BK * 2, ok ? gA + i * strideR : A, ok);
    }
#pragma unroll
    for (int i = 0; i < BN / RPP; ++i) {
      const bool ok = kin && n0 + lr + RPP * i < N;
      cp_async16(dB + st_b + i * RPP * BK * 2, ok ? gB + i * strideR : B, ok);
    }
    gA += BK; gB += BK; kload += BK;
  };

  // ldmatrix addresses of this lane in stage 0 for each k16-step (first 16 rows of A / of B);
  // the i-th / j-th 16-row slice is 16 * BK * 2 bytes further on
  unsigned aL[KS], bL[KS];
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    aL[ks] = sA0 + swz(wm * 64 + (lane & 15), ks * 2 + (lane >> 4)) * 2;
    bL[ks] = sB0 + swz(wn * 64 + ((lane >> 4) << 3) + (lane & 7), ks * 2 + ((lane >> 3) & 1)) * 2;
  }
  unsigned fa[2][4][4], fb[2][8][2];  // two sets of fragments
  auto load_frags = [&](int buf, unsigned st_a, unsigned st_b, int ks) {
#pragma unroll
    for (int i = 0; i < 4; ++i) ldmatrix_x4(fa[buf][i], aL[ks] + st_a + i * 16 * BK * 2);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      unsigned t[4];
      ldmatrix_x4(t, bL[ks] + st_b + j * 16 * BK * 2);
      fb[buf][2 * j][0] = t[0]; fb[buf][2 * j][1] = t[1];
      fb[buf][2 * j + 1][0] = t[2]; fb[buf][2 * j + 1][1] = t[3];
    }
  };

  const long long ktiles = (K + BK - 1) / BK;
  // prologue: K-tiles 0 .. STAGES-2 in flight (one commit group each, empty past the end)
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_tile(s * STAGE_A, s * STAGE_B);
    cp_async_commit();
  }
  cp_async_wait<STAGES - 2>();
  __syncthreads();
  load_frags(0, 0u, 0u, 0);
  unsigned ra = 0, rb = 0;                                            // stage being read
  unsigned wa = (STAGES - 1) * STAGE_A, wb = (STAGES - 1) * STAGE_B;  // stage being refilled
  for (long long kt = 0; kt < ktiles; ++kt) {
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      if (ks == KS - 1) {
        // K-tile kt+1 must be in shared memory before its first fragments are loaded below:
        // groups 0..kt+1 complete, and all warps are past their reads of K-tile kt-1's stage
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        ra += STAGE_A; rb += STAGE_B;
        if (ra == STAGES * STAGE_A) { ra = 0; rb = 0; }
      }
      // fragments of the next k16-step (the next K-tile's first one at ks == KS-1; on the very
      // last tile that reads a stale stage whose values are never used)
      load_frags((ks + 1) & 1, ra, rb, (ks + 1) % KS);
      if (ks == 0) {
        // refill the stage K-tile kt-1 used (every warp passed the barrier after reading it)
        if (kt + STAGES - 1 < ktiles) load_tile(wa, wb);
        cp_async_commit();
        wa += STAGE_A; wb += STAGE_B;
        if (wa == STAGES * STAGE_A) { wa = 0; wb = 0; }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) mma_bf16(acc[i][j], fa[ks & 1][i], fb[ks & 1][j][0], fb[ks & 1][j][1]);
    }
  }

  // accumulator layout of m16n8: c0,c1 at (lane/4, 2*(lane%4) + {0,1}), c2,c3 eight rows below
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const long long row = m0 + wm * 64 + i * 16 + (lane >> 2);
      const long long col = n0 + wn * 64 + j * 8 + (lane & 3) * 2;
      store_pair(C, row, col, acc[i][j][0], acc[i][j][1], M, N);
      store_pair(C, row + 8, col, acc[i][j][2], acc[i][j][3], M, N);
    }
}
