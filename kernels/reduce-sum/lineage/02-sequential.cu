// Step 2 of 7 — sequential addressing
// Adds: the tree halves the active range instead (s = 256, 128, ..., 1; thread tid < s adds
// sdata[tid + s]): the active threads are contiguous, so whole warps retire instead of diverging,
// there is no modulo, and consecutive threads touch consecutive banks (no bank conflicts).
// Relies on: step 1 (one element per thread, shared-memory tree, one atomicAdd per block).
// On the H200 the gain is small (~1-2% at n = 2^28): with one element per thread these kernels
// are bound by per-block costs (launching ~524k blocks, their barriers, and one atomicAdd per
// block on the same address), not by the tree's arithmetic; the cleaner tree pays off in step 4.
#define THREADS 512

extern "C" __global__ void __launch_bounds__(THREADS)
reduce_sequential(const float *__restrict__ x, float *__restrict__ out, long long n) {
  __shared__ float sdata[THREADS];
  const unsigned tid = threadIdx.x;
  const long long i = (long long)blockIdx.x * THREADS + tid;
  sdata[tid] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned s = THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(out, sdata[0]);
}
