// Step 6 of 7 — warp shuffles
// Adds: the block's sum is reduced in registers with __shfl_down_sync (five shuffles per warp),
// then the 16 warp sums go through shared memory once and warp 0 shuffles them down: one
// __syncthreads instead of four, and no shared-memory traffic for the tree. One atomicAdd per block.
// Relies on: step 5 (fixed grid, grid-stride loop with two loads per iteration); replaces the
// shared-memory tree and the volatile last warp of steps 2-4.
// On the H200 this step does not change the time measurably: after step 5 the tree runs once
// per ~1000 elements per thread, and the loop is bound by the bytes each SM keeps in flight
// (step 7); shuffles are the idiomatic, shorter form that step 7 builds on.
#define THREADS 512  // a multiple of 32, at most 1024

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;  // lane 0 holds the warp's sum
}

extern "C" __global__ void __launch_bounds__(THREADS)
reduce_shuffle(const float *__restrict__ x, float *__restrict__ out, long long n) {
  __shared__ float warp_sums[THREADS / 32];
  const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long stride = (long long)gridDim.x * (2 * THREADS);
  long long i = (long long)blockIdx.x * (2 * THREADS) + tid;
  float sum = 0.0f;
  for (; i + THREADS < n; i += stride) sum += x[i] + x[i + THREADS];
  if (i < n) sum += x[i];

  sum = warp_sum(sum);
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < THREADS / 32 ? warp_sums[lane] : 0.0f;
    sum = warp_sum(sum);
    if (lane == 0) atomicAdd(out, sum);
  }
}
