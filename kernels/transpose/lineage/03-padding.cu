// Step 3 of 5 — padded tile against bank conflicts
// Adds: pads each tile row to 33 floats, so the 32 elements of a tile column fall in 32 different
//   banks: the transposed shared-memory read is one wavefront instead of 32.
// Relies on: step 2 (the 32x32 shared-memory tile, one element per thread)
#define TDIM 32

extern "C" __global__ void __launch_bounds__(TDIM * TDIM)
transpose_padded(const float *__restrict__ in, float *__restrict__ out, long long rows, long long cols) {
  __shared__ float tile[TDIM][TDIM + 1];
  const long long r0 = (long long)blockIdx.y * TDIM, c0 = (long long)blockIdx.x * TDIM;
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (r0 + ty < rows && c0 + tx < cols) tile[ty][tx] = in[(r0 + ty) * cols + c0 + tx];
  __syncthreads();
  if (c0 + ty < cols && r0 + tx < rows) out[(c0 + ty) * rows + r0 + tx] = tile[tx][ty];
}
