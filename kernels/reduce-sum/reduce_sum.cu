// Starting point for optimization: one element per thread, a shared-memory tree with
// sequential addressing (no divergence, no bank conflicts), one atomicAdd per block into out
// (out is restored to 0 before every launch). BLOCK comes from the task's tunables
// (-DBLOCK=<value>, a power of two); grid ceil_div(n, BLOCK).
#ifndef BLOCK
#define BLOCK 256
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_sum(const float *__restrict__ x, float *__restrict__ out, long long n) {
  __shared__ float sdata[BLOCK];
  const unsigned tid = threadIdx.x;
  const long long i = (long long)blockIdx.x * BLOCK + tid;
  sdata[tid] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(out, sdata[0]);
}
