// Step 1 of 5 — naive
// Adds: nothing yet: one thread per element, out[c, r] = in[r, c]. Threads along x walk columns of
//   `in`, so each warp reads 128 contiguous bytes but writes 32 floats `rows` apart (32 sectors per store).
// Relies on: nothing
extern "C" __global__ void __launch_bounds__(256)
transpose_naive(const float *__restrict__ in, float *__restrict__ out, long long rows, long long cols) {
  const long long c = (long long)blockIdx.x * 32 + threadIdx.x;
  const long long r = (long long)blockIdx.y * 8 + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}
