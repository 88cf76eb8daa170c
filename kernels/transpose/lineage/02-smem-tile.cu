// Step 2 of 5 — shared-memory 32x32 tile
// Adds: a 32x32 tile staged through shared memory by a 32x32 block: each warp reads a row segment of
//   `in` and writes a row segment of `out`, so both global reads and global writes are coalesced.
// Relies on: step 1 (same one-element-per-thread mapping, now through a tile)
#define TDIM 32

extern "C" __global__ void __launch_bounds__(TDIM * TDIM)
transpose_smem(const float *__restrict__ in, float *__restrict__ out, long long rows, long long cols) {
  __shared__ float tile[TDIM][TDIM];
  const long long r0 = (long long)blockIdx.y * TDIM, c0 = (long long)blockIdx.x * TDIM;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (r0 + ty < rows && c0 + tx < cols) tile[ty][tx] = in[(r0 + ty) * cols + c0 + tx];
  __syncthreads();
  // Row c0 + ty of `out` is column c0 + ty of `in`; its elements r0 + tx are rows of `in`.
  // tile[tx][ty]: 32 lanes read one column of the tile, all in the same bank (32-way conflict).
  if (c0 + ty < cols && r0 + tx < rows) out[(c0 + ty) * rows + r0 + tx] = tile[tx][ty];
}
