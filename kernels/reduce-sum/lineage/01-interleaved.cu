// Step 1 of 7 — interleaved addressing
// Adds: the textbook starting point: one element per thread, loaded into shared memory and
// summed by a tree in which thread tid adds sdata[tid + s] when tid % (2s) == 0; one atomicAdd of
// the block's sum into out. Correct but slow: the modulo test leaves most threads of every warp
// idle (divergence), the modulo itself is expensive, and the strided indices conflict in banks.
// Relies on: nothing (out is restored to 0 before every launch; the task declares it inout).
// Blocks of 512 threads, grid ceil_div(n, 512): ~524k blocks, and as many atomics on one address.
#define THREADS 512

extern "C" __global__ void __launch_bounds__(THREADS)
reduce_interleaved(const float *__restrict__ x, float *__restrict__ out, long long n) {
  __shared__ float sdata[THREADS];
  const unsigned tid = threadIdx.x;
  const long long i = (long long)blockIdx.x * THREADS + tid;
  sdata[tid] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned s = 1; s < THREADS; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(out, sdata[0]);
}
