// Step 7 of 7 — vectorized float4 loads
// Adds: the grid-stride loop reads float4s (16 bytes per load, two per iteration: 32 bytes in
// flight per thread instead of 8), so a quarter as many load instructions keep four times the
// bytes in flight per SM — what it takes to approach the HBM3e read bandwidth. A scalar tail
// sums the last n % 4 elements (or all of x if it were not 16-byte aligned).
// Relies on: step 6 (fixed grid, grid-stride loop, shuffle reductions, one atomicAdd per block).
// Launch: grid min(ceil_div(n, 4096), 528), i.e. at most 4 blocks of 512 per SM on an H200.
#define THREADS 512  // a multiple of 32, at most 1024

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float hsum(float4 a) { return (a.x + a.y) + (a.z + a.w); }

extern "C" __global__ void __launch_bounds__(THREADS)
reduce_float4(const float *__restrict__ x, float *__restrict__ out, long long n) {
  __shared__ float warp_sums[THREADS / 32];
  const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // cudaMalloc'd tensors are 256-byte aligned; the check keeps any other pointer correct.
  const bool aligned = (reinterpret_cast<unsigned long long>(x) & 15) == 0;
  const long long n4 = aligned ? n / 4 : 0;  // float4s in the vector part
  const float4 *__restrict__ x4 = reinterpret_cast<const float4 *>(x);

  float sum = 0.0f;
  const long long stride = (long long)gridDim.x * (2 * THREADS);
  long long i = (long long)blockIdx.x * (2 * THREADS) + tid;
  for (; i + THREADS < n4; i += stride) {
    const float4 a = x4[i], b = x4[i + THREADS];
    sum += hsum(a) + hsum(b);
  }
  if (i < n4) sum += hsum(x4[i]);
  // Scalar tail: elements 4 * n4 .. n - 1 (fewer than 4 when aligned), over all threads.
  const long long tail_stride = (long long)gridDim.x * THREADS;
  for (long long j = 4 * n4 + (long long)blockIdx.x * THREADS + tid; j < n; j += tail_stride) sum += x[j];

  sum = warp_sum(sum);
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < THREADS / 32 ? warp_sums[lane] : 0.0f;
    sum = warp_sum(sum);
    if (lane == 0) atomicAdd(out, sum);
  }
}
