// Step 4 of 5 — several elements per thread
// Adds: a 32x8 block moves the 32x32 tile, 4 elements per thread: a quarter of the threads, the
//   index arithmetic and the block's start-up and barrier amortized over 4 elements, and each thread
//   issues 4 independent loads before the barrier (more bytes in flight per thread).
// Relies on: step 3 (the padded 32x33 shared-memory tile)
#define TDIM 32
#define NROWS 8

extern "C" __global__ void __launch_bounds__(TDIM * NROWS)
transpose_multi(const float *__restrict__ in, float *__restrict__ out, long long rows, long long cols) {
  __shared__ float tile[TDIM][TDIM + 1];
  const long long r0 = (long long)blockIdx.y * TDIM, c0 = (long long)blockIdx.x * TDIM;
  const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
  for (int j = 0; j < TDIM; j += NROWS)
    if (r0 + ty + j < rows && c0 + tx < cols) tile[ty + j][tx] = in[(r0 + ty + j) * cols + c0 + tx];
  __syncthreads();
#pragma unroll
  for (int j = 0; j < TDIM; j += NROWS)
    if (c0 + ty + j < cols && r0 + tx < rows) out[(c0 + ty + j) * rows + r0 + tx] = tile[tx][ty + j];
}
