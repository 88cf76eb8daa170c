// Step 3 of 7 — first add during load
// Adds: each block covers 2 * 512 elements and each thread adds its two elements (tid and
// tid + 512) while loading: half as many blocks (and block-sum atomics) for the same data, each
// thread has two loads in flight instead of one, and no tree level starts with idle threads.
// Relies on: step 2 (sequential-addressing tree, one atomicAdd per block).
#define THREADS 512

extern "C" __global__ void __launch_bounds__(THREADS)
reduce_first_add(const float *__restrict__ x, float *__restrict__ out, long long n) {
  __shared__ float sdata[THREADS];
  const unsigned tid = threadIdx.x;
  const long long i = (long long)blockIdx.x * (2 * THREADS) + tid;
  const float a = i < n ? x[i] : 0.0f;
  const float b = i + THREADS < n ? x[i + THREADS] : 0.0f;
  sdata[tid] = a + b;
  __syncthreads();
  for (unsigned s = THREADS / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(out, sdata[0]);
}
