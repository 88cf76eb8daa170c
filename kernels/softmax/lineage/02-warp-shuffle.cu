// Step 2 of 5 — warp-shuffle reductions
// Adds: block reductions through __shfl_xor_sync: each warp reduces its 32 values in registers
//   (5 shuffles, no shared memory, no barriers), warp leaders write one partial each to shared
//   memory, one __syncthreads, then every warp reduces the <= 32 partials the same way. Two
//   barriers per reduction instead of log2(BLOCK)+1; the three passes over x are unchanged.
//   H200, 8192x8192: 148 us (from 154); small 1024x1024: 10.4 us (from 13.6).
// Relies on: step 1 (same three-pass algorithm, block per row).
#ifndef BLOCK
#define BLOCK 512  // lineage.toml sets BLOCK = 512
#endif

#define NEG_INF __int_as_float(0xff800000)
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
  return v;
}

// Every thread gets the block's maximum. `partials` holds BLOCK/32 floats, used once.
__device__ __forceinline__ float block_max(float v, float *partials) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_max(v);
  if (lane == 0) partials[warp] = v;
  __syncthreads();
  v = lane < BLOCK / 32 ? partials[lane] : NEG_INF;
  return warp_max(v);  // every warp reduces the same partials: identical results
}

__device__ __forceinline__ float block_sum(float v, float *partials) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) partials[warp] = v;
  __syncthreads();
  v = lane < BLOCK / 32 ? partials[lane] : 0.0f;
  v = warp_sum(v);
  return __shfl_sync(FULL_MASK, v, 0);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax(const float *__restrict__ x, float *__restrict__ y, long long rows, long long cols) {
  // Separate buffers for the two reductions, so no barrier is needed between them.
  __shared__ float maxPartials[BLOCK / 32];
  __shared__ float sumPartials[BLOCK / 32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;

  float m = NEG_INF;
  for (long long c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, in[c]);
  const float rowMax = block_max(m, maxPartials);

  float sum = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += BLOCK) sum += __expf(in[c] - rowMax);
  const float inv = 1.0f / block_sum(sum, sumPartials);

  for (long long c = threadIdx.x; c < cols; c += BLOCK) out[c] = __expf(in[c] - rowMax) * inv;
}
