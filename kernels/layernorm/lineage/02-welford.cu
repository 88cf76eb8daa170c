// Step 2 of 6 — fused single-pass Welford statistics
// Adds: the mean and the variance in ONE read of x: each thread runs Welford's update
//   (count, mean, M2 = sum of squared deviations) over its elements, and the shared-memory tree
//   merges (count, mean, M2) triples with Chan's rule. Numerically as safe as two passes (no
//   E[x^2] - E[x]^2 cancellation), but x is read twice (statistics, normalise) instead of three
//   times, and there is one block reduction instead of two.
//   H200: h200 305 us (the saved pass was an L1/L2 hit: no change); narrow 269 us (from 399),
//   small 10.8 us (from 14.4): half the barriers.
// Relies on: step 1 (block per row, shared-memory tree reductions).
#ifndef BLOCK
#define BLOCK 512  // lineage.toml sets BLOCK = 512
#endif

// Welford: add one value to (n, mean, m2).
__device__ __forceinline__ void welford_push(float &n, float &mean, float &m2, float v) {
  n += 1.0f;
  const float d = v - mean;
  mean += __fdividef(d, n);
  m2 = fmaf(d, v - mean, m2);
}

// Chan et al.: merge (nb, meanb, m2b) into (n, mean, m2). Either side may be empty (count 0).
__device__ __forceinline__ void welford_merge(float &n, float &mean, float &m2, float nb, float meanb, float m2b) {
  const float nn = n + nb;
  const float fb = nn > 0.0f ? __fdividef(nb, nn) : 0.0f;  // 0 for two empty sides
  const float d = meanb - mean;
  mean = fmaf(d, fb, mean);
  m2 = m2 + m2b + d * d * n * fb;
  n = nn;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm(const float *__restrict__ x, const float *__restrict__ gamma, const float *__restrict__ beta,
          float *__restrict__ y, long long rows, long long cols) {
  __shared__ float sn[BLOCK], smean[BLOCK], sm2[BLOCK];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;
  const int t = threadIdx.x;

  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  for (long long c = t; c < cols; c += BLOCK) welford_push(n, mean, m2, in[c]);
  sn[t] = n;
  smean[t] = mean;
  sm2[t] = m2;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (t < s) {
      welford_merge(n, mean, m2, sn[t + s], smean[t + s], sm2[t + s]);
      sn[t] = n;
      smean[t] = mean;
      sm2[t] = m2;
    }
    __syncthreads();
  }
  const float rowMean = smean[0];
  const float rstd = rsqrtf(sm2[0] / (float)cols + 1e-5f);

  for (long long c = t; c < cols; c += BLOCK) out[c] = fmaf((in[c] - rowMean) * rstd, gamma[c], beta[c]);
}
