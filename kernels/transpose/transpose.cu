// Starting point for optimization: a TILE x TILE tile staged through shared memory (padded by one
// column against bank conflicts), TILE x BLOCK_ROWS threads per block, each thread moving
// TILE / BLOCK_ROWS elements. Reads and writes are both coalesced.
// TILE and BLOCK_ROWS come from the task's tunables as -DTILE=<v> -DBLOCK_ROWS=<v>.
#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif

extern "C" __global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose(const float *__restrict__ in, float *__restrict__ out, long long rows, long long cols) {
  __shared__ float tile[TILE][TILE + 1];
  // Read the tile: rows r0.., columns c0.. of `in`.
  const long long r0 = (long long)blockIdx.y * TILE, c0 = (long long)blockIdx.x * TILE;
  for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
    const long long r = r0 + j, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[j][threadIdx.x] = in[r * cols + c];
  }
  __syncthreads();
  // Write it transposed: rows c0.. of `out` (columns of `in`), columns r0.. (rows of `in`).
  for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
    const long long oc = c0 + j, orow = r0 + threadIdx.x;
    if (oc < cols && orow < rows) out[oc * rows + orow] = tile[threadIdx.x][j];
  }
}
