// Step 4 of 12 — mma.sync m16n8k16 with ldmatrix from a swizzled shared layout
// Adds: the WMMA calls give way to inline PTX: ldmatrix.x4 loads four 8x8 bf16 matrices per
// instruction from shared memory laid out with an XOR swizzle (bank-conflict free for both the
// 16-byte stores and ldmatrix), mma.sync.m16n8k16 accumulates in registers whose layout is known,
// so C is stored straight from registers (no shared round trip) with bounds checks.
// Relies on: step 3 (128x128x32 block tiles, 8 warps of 64x32, register-staged 16-byte loads)
//
// Shared layout: a tile row is BK = 32 bf16 = 64 bytes = 4 chunks of 16 bytes; chunk c of row r is
// stored at chunk c ^ ((r >> 1) & 3). Any 8 consecutive rows (r0 % 8 == 0) reading the same logical
// chunk then hit 8 distinct 16-byte bank groups, which is what one ldmatrix 8x8 matrix reads.
#include <cuda_bf16.h>

#define BM 128
#define BN 128
#define BK 32
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
gemm_bf16_mma(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
              float *__restrict__ C, long long M, long long N, long long K) {
  __shared__ __align__(128) __nv_bfloat16 sA[BM * BK];
  __shared__ __align__(128) __nv_bfloat16 sB[BN * BK];

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

  for (long long k0 = 0; k0 < K; k0 += BK) {
    uint4 ra[2], rb[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int id = tid + i * THREADS, r = id / 4, c = id % 4;
      const long long k = k0 + c * 8, gm = m0 + r, gn = n0 + r;
      ra[i] = (gm < M && k < K) ? *reinterpret_cast<const uint4 *>(A + gm * K + k) : make_uint4(0, 0, 0, 0);
      rb[i] = (gn < N && k < K) ? *reinterpret_cast<const uint4 *>(B + gn * K + k) : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int id = tid + i * THREADS, r = id / 4, c = id % 4;
      *reinterpret_cast<uint4 *>(&sA[swz(r, c)]) = ra[i];
      *reinterpret_cast<uint4 *>(&sB[swz(r, c)]) = rb[i];
    }
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < BK / 16; ++ks) {
      unsigned a[4][4], b[4][2];
      // A 16x16: lanes 0-15 address rows 0-15 at k-chunk 0, lanes 16-31 the same rows at k-chunk 1
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ldmatrix_x4(a[i], smem_u32(&sA[swz(wm * 64 + i * 16 + (lane & 15), ks * 2 + (lane >> 4))]));
      // B two n8 tiles x k16: matrices (n0-7,k0-7) (n0-7,k8-15) (n8-15,k0-7) (n8-15,k8-15)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        unsigned t[4];
        ldmatrix_x4(t, smem_u32(&sB[swz(wn * 32 + j * 16 + ((lane >> 4) << 3) + (lane & 7),
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
