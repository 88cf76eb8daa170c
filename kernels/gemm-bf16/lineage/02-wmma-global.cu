// Step 2 of 12 — WMMA tensor cores from global memory
// Adds: tensor cores through WMMA 16x16x16 (bf16 in, f32 accumulate): each warp computes a 32x32
// tile of C as 2x2 fragments loaded straight from global memory; one mma_sync does 8192 FLOP.
// Relies on: step 1 (same mapping of C, now one warp per 32x32 tile instead of one thread per element)
//
// B^T is a K x N column-major matrix with leading dimension K: exactly WMMA's col_major matrix_b.
// WMMA loads need 32-byte aligned pointers and whole 16x16 tiles, so the direct path is taken only
// for warps whose 32x32 tile lies inside C and when K % 16 == 0 (every row then starts 32-byte
// aligned). Other warps (edges, the odd configuration) copy each 32x16 slice through a small
// per-warp shared buffer, zero-filling what lies outside A or B. C is stored through a per-warp
// 16x16 shared buffer with bounds checks (WMMA's fragment layout is opaque).
// WARPS warps sit side by side along N in one block (they share the same 32 rows of A); the
// lineage uses WARPS = 4 (the task's tunable).
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

#ifndef WARPS
#define WARPS 4
#endif

extern "C" __global__ void __launch_bounds__(32 * WARPS)
gemm_bf16_wmma(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
               float *__restrict__ C, long long M, long long N, long long K) {
  __shared__ __align__(32) __nv_bfloat16 sA[WARPS][32 * 16];   // 32 rows x 16 k, edge path only
  __shared__ __align__(32) __nv_bfloat16 sB[WARPS][32 * 16];
  __shared__ __align__(32) float sC[WARPS][16 * 16];

  const int warp = threadIdx.y, lane = threadIdx.x;
  const long long m0 = (long long)blockIdx.y * 32;
  const long long n0 = ((long long)blockIdx.x * WARPS + warp) * 32;
  if (n0 >= N) return;  // whole warp leaves; no block-wide barrier is used below

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[2];
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[2];

  const bool direct = (K % 16 == 0) && (m0 + 32 <= M) && (n0 + 32 <= N);
  const __nv_bfloat16 zero = __float2bfloat16(0.0f);

  for (long long k0 = 0; k0 < K; k0 += 16) {
    if (direct) {
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], A + (m0 + 16 * i) * K + k0, (unsigned)K);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], B + (n0 + 16 * j) * K + k0, (unsigned)K);
    } else {
      for (int e = lane; e < 32 * 16; e += 32) {
        const int r = e / 16, kk = e % 16;
        const long long k = k0 + kk, ra = m0 + r, rb = n0 + r;
        sA[warp][e] = (ra < M && k < K) ? A[ra * K + k] : zero;
        sB[warp][e] = (rb < N && k < K) ? B[rb * K + k] : zero;
      }
      __syncwarp();
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &sA[warp][16 * 16 * i], 16);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &sB[warp][16 * 16 * j], 16);
      __syncwarp();  // everyone has read the buffers before the next slice overwrites them
    }
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
  }

#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(sC[warp], acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 16 * 16; e += 32) {
        const long long r = m0 + 16 * i + e / 16, c = n0 + 16 * j + e % 16;
        if (r < M && c < N) C[r * N + c] = sC[warp][e];
      }
      __syncwarp();
    }
}
