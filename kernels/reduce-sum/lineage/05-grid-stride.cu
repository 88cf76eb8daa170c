// Step 5 of 7 — grid-stride loop
// Adds: a fixed grid of min(ceil_div(n, 1024), 528) blocks (528 = 4 resident blocks of 512 on
// each of the H200's 132 SMs) in which every thread walks the array with a grid-sized stride,
// summing ~1000 elements in a register before the tree: the tree, the barriers and the atomic
// are paid once per 512 threads x ~1000 elements instead of once per 1024 elements.
// Relies on: step 4 (two loads per thread per iteration, tree with an unrolled last warp).
// Precision: each thread sums ~n / 270k elements in f32 (about 1000 at n = 2^28): its rounding
// error is ~1e-7 relative and independent between threads, far inside the task's rtol.
#define THREADS 512  // a power of two >= 64

extern "C" __global__ void __launch_bounds__(THREADS)
reduce_grid_stride(const float *__restrict__ x, float *__restrict__ out, long long n) {
  __shared__ float sdata[THREADS];
  const unsigned tid = threadIdx.x;
  const long long stride = (long long)gridDim.x * (2 * THREADS);
  long long i = (long long)blockIdx.x * (2 * THREADS) + tid;
  float sum = 0.0f;
  // Both elements in bounds: the two loads issue back to back, then the adds.
  for (; i + THREADS < n; i += stride) sum += x[i] + x[i + THREADS];
  // At most one element is left for this thread (i + THREADS >= n, and i + stride > i + THREADS).
  if (i < n) sum += x[i];
  sdata[tid] = sum;
  __syncthreads();
  for (unsigned s = THREADS / 2; s > 32; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid < 32) {
    volatile float *v = sdata;
    float w = v[tid] + v[tid + 32];
#pragma unroll
    for (unsigned s = 16; s > 0; s >>= 1) {
      __syncwarp();
      v[tid] = w;
      __syncwarp();
      w += v[tid + s];
    }
    if (tid == 0) atomicAdd(out, w);
  }
}
