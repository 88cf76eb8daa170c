// Step 3 of 6 — warp-shuffle reductions
// Adds: the (count, mean, M2) merge through __shfl_xor_sync: each warp merges its 32 triples in
//   registers (5 rounds, no shared memory, no barriers), warp leaders write one triple each, one
//   __syncthreads, then every warp merges the <= 32 partials. One barrier instead of
//   log2(BLOCK)+1, and 3 x 32 floats of shared memory instead of 3 x BLOCK.
//   H200: h200 304 us (unchanged: long rows are bandwidth-bound). Expected SLOWER on short rows
//   (narrow 361 us vs 269, small 12.3 vs 10.8 us): every thread, and every warp again in the
//   second level, runs all 10 merges, where the tree's work halves at every level;
//   with 256 floats per 512-thread row the merges dominate. Pays only when rows are long enough
//   (cols >> BLOCK) for the barriers, not the merges, to be the reduction's cost; step 5 then
//   gives short rows one warp each, where this shuffle merge is the whole reduction.
// Relies on: step 2 (single-pass Welford statistics, Chan merge), step 1 (block per row).
#ifndef BLOCK
#define BLOCK 512  // lineage.toml sets BLOCK = 512
#endif

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ void welford_push(float &n, float &mean, float &m2, float v) {
  n += 1.0f;
  const float d = v - mean;
  mean += __fdividef(d, n);
  m2 = fmaf(d, v - mean, m2);
}

__device__ __forceinline__ void welford_merge(float &n, float &mean, float &m2, float nb, float meanb, float m2b) {
  const float nn = n + nb;
  const float fb = nn > 0.0f ? __fdividef(nb, nn) : 0.0f;  // 0 for two empty sides
  const float d = meanb - mean;
  mean = fmaf(d, fb, mean);
  m2 = m2 + m2b + d * d * n * fb;
  n = nn;
}

__device__ __forceinline__ void warp_welford(float &n, float &mean, float &m2) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float nb = __shfl_xor_sync(FULL_MASK, n, o);
    const float meanb = __shfl_xor_sync(FULL_MASK, mean, o);
    const float m2b = __shfl_xor_sync(FULL_MASK, m2, o);
    welford_merge(n, mean, m2, nb, meanb, m2b);
  }
}

// Every thread gets the block's (mean, M2). The merge is not symmetric, so lanes may differ in
// the last bit after the butterfly: lane 0's result is broadcast.
__device__ __forceinline__ void block_welford(float &n, float &mean, float &m2, float *pn, float *pmean, float *pm2) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  warp_welford(n, mean, m2);
  if (lane == 0) {
    pn[warp] = n;
    pmean[warp] = mean;
    pm2[warp] = m2;
  }
  __syncthreads();
  const bool have = lane < BLOCK / 32;
  n = have ? pn[lane] : 0.0f;
  mean = have ? pmean[lane] : 0.0f;
  m2 = have ? pm2[lane] : 0.0f;
  warp_welford(n, mean, m2);
  mean = __shfl_sync(FULL_MASK, mean, 0);
  m2 = __shfl_sync(FULL_MASK, m2, 0);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm(const float *__restrict__ x, const float *__restrict__ gamma, const float *__restrict__ beta,
          float *__restrict__ y, long long rows, long long cols) {
  __shared__ float pn[32], pmean[32], pm2[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;

  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += BLOCK) welford_push(n, mean, m2, in[c]);
  block_welford(n, mean, m2, pn, pmean, pm2);
  const float rstd = rsqrtf(m2 / (float)cols + 1e-5f);

  for (long long c = threadIdx.x; c < cols; c += BLOCK) out[c] = fmaf((in[c] - mean) * rstd, gamma[c], beta[c]);
}
