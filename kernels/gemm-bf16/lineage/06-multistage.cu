// Step 6 of 12 — multi-stage cp.async pipeline
// Adds: four shared buffers instead of two (64 KB of dynamic shared memory): three K-tiles are in
// flight while one is computed, and cp.async.wait_group STAGES-2 waits only for the oldest, so the
// ~1 us of DRAM/L2 latency is covered by three tiles of tensor-core work instead of one.
// Relies on: step 5 (cp.async copies with zero-fill, the one-barrier-per-K-tile loop)
//
// Launch with shared_bytes = STAGES * (BM + BN) * BK * 2 = 65536 (over 48 KB: opt-in). Two blocks
// fit an SM (128 KB of shared memory, 2 x 256 threads under 128 registers).
#include <cuda_bf16.h>

#define BM 128
#define BN 128
#define BK 32
#define STAGES 4
#define THREADS 256  // 8 warps: 2 along M x 4 along N, each 64x32 = 4 x 4 mma tiles of 16x8

__device__ __forceinline__ unsigned smem_u32(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
// element offset of chunk c (8 bf16) of row r in a swizzled [rows][BK] tile
__device__ __forceinline__ int swz(int r, int c) { return r * BK + ((c ^ ((r >> 1) & 3)) << 3); }

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

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_bf16_stages(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
                 float *__restrict__ C, long long M, long long N, long long K) {
  extern __shared__ __align__(16) unsigned char smem[];
  __nv_bfloat16 (*sA)[BM * BK] = reinterpret_cast<__nv_bfloat16 (*)[BM * BK]>(smem);
  __nv_bfloat16 (*sB)[BN * BK] = reinterpret_cast<__nv_bfloat16 (*)[BN * BK]>(smem + STAGES * BM * BK * 2);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / 4, wn = warp % 4;  // warp tile: rows wm*64, cols wn*32
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;

  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // issue the copies of K-tile kt into stage st: 128 rows x 4 chunks of 16 bytes per operand;
  // thread tid copies chunk tid % 4 of rows tid / 4 and tid / 4 + 64 of A and of B
  const int lr = tid / 4, lc = tid % 4;
  const __nv_bfloat16 *gA = A + (m0 + lr) * K + lc * 8;
  const __nv_bfloat16 *gB = B + (n0 + lr) * K + lc * 8;
  auto load_tile = [&](int st, long long kt) {
    const bool kin = kt * BK + lc * 8 < K;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int r = lr + 64 * i;
      const bool okA = kin && m0 + r < M, okB = kin && n0 + r < N;
      cp_async16(smem_u32(&sA[st][swz(r, lc)]), okA ? gA + 64 * i * K + kt * BK : A, okA);
      cp_async16(smem_u32(&sB[st][swz(r, lc)]), okB ? gB + 64 * i * K + kt * BK : B, okB);
    }
  };

  const long long ktiles = (K + BK - 1) / BK;
  // prologue: K-tiles 0 .. STAGES-2 in flight (one commit group each, empty past the end)
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ktiles) load_tile(s, s);
    cp_async_commit();
  }
  for (long long kt = 0; kt < ktiles; ++kt) {
    const int st = (int)(kt % STAGES);
    cp_async_wait<STAGES - 2>();  // groups 0..kt complete: K-tile kt has landed (this thread's) ...
    __syncthreads();  // ... everyone's, and everyone has finished computing K-tile kt-1
    // refill the stage K-tile kt-1 used with K-tile kt+STAGES-1
    if (kt + STAGES - 1 < ktiles) load_tile((int)((kt + STAGES - 1) % STAGES), kt + STAGES - 1);
    cp_async_commit();
#pragma unroll
    for (int ks = 0; ks < BK / 16; ++ks) {
      unsigned a[4][4], b[4][2];
      // A 16x16: lanes 0-15 address rows 0-15 at k-chunk 0, lanes 16-31 the same rows at k-chunk 1
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ldmatrix_x4(a[i], smem_u32(&sA[st][swz(wm * 64 + i * 16 + (lane & 15), ks * 2 + (lane >> 4))]));
      // B two n8 tiles x k16: matrices (n0-7,k0-7) (n0-7,k8-15) (n8-15,k0-7) (n8-15,k8-15)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        unsigned t[4];
        ldmatrix_x4(t, smem_u32(&sB[st][swz(wn * 32 + j * 16 + ((lane >> 4) << 3) + (lane & 7),
                                         ks * 2 + ((lane >> 3) & 1))]));
        b[2 * j][0] = t[0]; b[2 * j][1] = t[1]; b[2 * j + 1][0] = t[2]; b[2 * j + 1][1] = t[3];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma_bf16(acc[i][j], a[i], b[j][0], b[j][1]);
    }
  }

  // accumulator layout of m16n8: c0,c1 at (lane/4, 2*(lane%4) + {0,1}), c2,c3 eight rows below
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const long long row = m0 + wm * 64 + i * 16 + (lane >> 2);
      const long long col = n0 + wn * 32 + j * 8 + (lane & 3) * 2;
      store_pair(C, row, col, acc[i][j][0], acc[i][j][1], M, N);
      store_pair(C, row + 8, col, acc[i][j][2], acc[i][j][3], M, N);
    }
}
