// Step 3 of 12 — shared-memory block tiles
// Adds: a block of 256 threads (8 warps) stages 128x32 slices of A and B in shared memory with
// 16-byte vector loads, and every warp computes a 64x32 tile of the block's 128x128 C tile with WMMA
// from there: each element of A and B is read from global memory once per block instead of once per warp.
// Slower than step 2 at 1024^3 on the H200 (suite 2026-11-30: 58.6 us against 43.2 us): 128x128
// tiles make 64 blocks for 132 SMs there, where step 2's 32x128 tiles made 256. Pays at large sizes
// (8192^3: 7.2 ms against 18.7 ms) and on the odd 1000x1100x296 (20.2 us against 56.8 us).
// Relies on: step 2 (WMMA 16x16x16 fragments, per-warp staged and bounds-checked stores of C)
//
// Shared rows are padded to 40 bf16 (80 bytes): 16-byte chunks stay aligned, fragments at k = 0 and
// 16 stay 32-byte aligned, and rows shift banks. Rows of A or B outside the matrix and the K tail
// (K % 8 == 0, so an 8-element chunk is either wholly inside or wholly outside) are zero-filled.
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

#define BM 128
#define BN 128
#define BK 32
#define LDS 40       // padded shared row, in bf16
#define THREADS 256  // 8 warps: 2 along M x 4 along N, each 64x32

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_bf16_smem(const __nv_bfloat16 *__restrict__ A, const __nv_bfloat16 *__restrict__ B,
               float *__restrict__ C, long long M, long long N, long long K) {
  __shared__ __align__(128) __nv_bfloat16 sA[BM * LDS];
  __shared__ __align__(128) __nv_bfloat16 sB[BN * LDS];
  __shared__ __align__(32) float sC[THREADS / 32][16 * 16];

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / 4, wn = warp % 4;  // warp's 64x32 tile: rows wm*64, cols wn*32
  const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[4];
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[2];

  for (long long k0 = 0; k0 < K; k0 += BK) {
    // global -> registers: 128 rows x 4 chunks of 8 bf16 per operand, 2 chunks per thread each
    uint4 ra[2], rb[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int id = tid + i * THREADS, r = id / 4, c = id % 4;
      const long long k = k0 + c * 8, gm = m0 + r, gn = n0 + r;
      ra[i] = (gm < M && k < K) ? *reinterpret_cast<const uint4 *>(A + gm * K + k) : make_uint4(0, 0, 0, 0);
      rb[i] = (gn < N && k < K) ? *reinterpret_cast<const uint4 *>(B + gn * K + k) : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();  // every warp has finished reading the previous tile
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int id = tid + i * THREADS, r = id / 4, c = id % 4;
      *reinterpret_cast<uint4 *>(&sA[r * LDS + c * 8]) = ra[i];
      *reinterpret_cast<uint4 *>(&sB[r * LDS + c * 8]) = rb[i];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
#pragma unroll
      for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(a[i], &sA[(wm * 64 + i * 16) * LDS + kk], LDS);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &sB[(wn * 32 + j * 16) * LDS + kk], LDS);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }

#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(sC[warp], acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 16 * 16; e += 32) {
        const long long r = m0 + wm * 64 + i * 16 + e / 16, c = n0 + wn * 32 + j * 16 + e % 16;
        if (r < M && c < N) C[r * N + c] = sC[warp][e];
      }
      __syncwarp();
    }
}
