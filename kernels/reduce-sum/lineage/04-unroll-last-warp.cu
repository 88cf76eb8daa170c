// Step 4 of 7 — unrolled last warp
// Adds: once 64 partial sums remain, only warp 0 is working, so the last six levels run without
// __syncthreads (and without the loop test): warp 0 alone folds 64 -> 1 through volatile shared
// memory, separated by __syncwarp (cheap, warp-wide) instead of block-wide barriers.
// Relies on: step 3 (two elements per thread added during the load, sequential-addressing tree).
#define THREADS 512  // a power of two >= 64

extern "C" __global__ void __launch_bounds__(THREADS)
reduce_unroll_warp(const float *__restrict__ x, float *__restrict__ out, long long n) {
  __shared__ float sdata[THREADS];
  const unsigned tid = threadIdx.x;
  const long long i = (long long)blockIdx.x * (2 * THREADS) + tid;
  const float a = i < n ? x[i] : 0.0f;
  const float b = i + THREADS < n ? x[i + THREADS] : 0.0f;
  sdata[tid] = a + b;
  __syncthreads();
  for (unsigned s = THREADS / 2; s > 32; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid < 32) {  // the whole of warp 0: __syncwarp() with the full mask is valid
    volatile float *v = sdata;
    float sum = v[tid] + v[tid + 32];
#pragma unroll
    for (unsigned s = 16; s > 0; s >>= 1) {
      __syncwarp();
      v[tid] = sum;   // every lane publishes its partial ...
      __syncwarp();
      sum += v[tid + s];  // ... then lane t adds lane t + s's (lanes >= s compute garbage, unused)
    }
    if (tid == 0) atomicAdd(out, sum);
  }
}
