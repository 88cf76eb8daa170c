// Step 3 of 5 — one-pass online max and sum
// Adds: the max and the sum of exponentials in ONE pass: each thread keeps a running max m and a
//   sum s of exp(x - m), rescaling s by exp(m_old - m_new) when the max grows; the block merges
//   (m, s) pairs with the same rule in one warp-shuffle reduction. x is read twice (statistics,
//   then normalise) instead of three times, and one block reduction replaces two.
//   Expected SLOWER on the H200 at these sizes (measured 162 us vs 148 us at 8192x8192): the
//   pass it saves is a re-read that hits in L1/L2 there, while the running rescale costs a
//   compare and a dependent exp chain per element. Pays only when the re-read passes miss in
//   cache (rows too long or too many in flight for L1/L2); it is kept because the single
//   (max, sum) merge is what steps 4 and 5 build on.
// Relies on: step 2 (warp-shuffle reductions), step 1 (block per row).
#ifndef BLOCK
#define BLOCK 512  // lineage.toml sets BLOCK = 512
#endif

#define NEG_INF __int_as_float(0xff800000)
#define FULL_MASK 0xffffffffu

// Add one element to a running (max, sum of exp(x - max)).
__device__ __forceinline__ void online_push(float &m, float &s, float v) {
  if (v > m) {  // the max grows: rescale what was summed so far (s is 0 while m is -inf)
    s *= __expf(m - v);
    m = v;
  }
  s += __expf(v - m);
}

// Merge (om, os) into (m, s). A side with max -inf has sum 0; its factor is forced to 0 so that
// -inf - -inf never produces NaN.
__device__ __forceinline__ void online_merge(float &m, float &s, float om, float os) {
  const float nm = fmaxf(m, om);
  const float a = m == NEG_INF ? 0.0f : __expf(m - nm);
  const float b = om == NEG_INF ? 0.0f : __expf(om - nm);
  s = s * a + os * b;
  m = nm;
}

__device__ __forceinline__ void warp_merge(float &m, float &s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(FULL_MASK, m, o);
    const float os = __shfl_xor_sync(FULL_MASK, s, o);
    online_merge(m, s, om, os);
  }
}

// Every thread gets the block's (max, sum). The merge is not bitwise symmetric (FMA contraction),
// so lane 0's result is broadcast: all threads use identical statistics.
__device__ __forceinline__ void block_merge(float &m, float &s, float *pm, float *ps) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  warp_merge(m, s);
  if (lane == 0) {
    pm[warp] = m;
    ps[warp] = s;
  }
  __syncthreads();
  m = lane < BLOCK / 32 ? pm[lane] : NEG_INF;
  s = lane < BLOCK / 32 ? ps[lane] : 0.0f;
  warp_merge(m, s);
  m = __shfl_sync(FULL_MASK, m, 0);
  s = __shfl_sync(FULL_MASK, s, 0);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax(const float *__restrict__ x, float *__restrict__ y, long long rows, long long cols) {
  __shared__ float pm[BLOCK / 32];
  __shared__ float ps[BLOCK / 32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;

  float m = NEG_INF, s = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += BLOCK) online_push(m, s, in[c]);
  block_merge(m, s, pm, ps);
  const float inv = 1.0f / s;

  for (long long c = threadIdx.x; c < cols; c += BLOCK) out[c] = __expf(in[c] - m) * inv;
}
