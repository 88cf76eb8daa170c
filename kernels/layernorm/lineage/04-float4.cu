// Step 4 of 6 — vectorized float4 access
// Adds: 16-byte loads and stores of x, gamma, beta and y when cols % 4 == 0 and the four tensors
//   are 16-byte aligned (then every row is); each float4 is folded into the running Welford
//   state as one chunk (its own mean and M2, one Chan merge). A quarter of the memory
//   instructions and 4x the bytes in flight per load. Otherwise (cols % 4 != 0: rows start at
//   every 4-byte offset, and gamma/beta cannot be read in step with them) the row takes the
//   scalar path of step 3.
//   H200: h200 272 us (from 304); narrow 355 us (unchanged: merge-bound, see step 3). Slower on
//   odd (1000x1001: 11.4 us against 10.1 us, suite 2026-11-30): cols % 4 != 0 takes the scalar
//   path, which this step does not speed up; it pays only on rows that take the float4 path.
// Relies on: step 3 (warp-shuffle Welford merge), step 2 (single-pass Welford statistics).
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

// Four values as one chunk: chunk mean and M2 exactly, then a Chan merge with count 4.
__device__ __forceinline__ void welford_push4(float &n, float &mean, float &m2, float4 v) {
  const float cm = ((v.x + v.y) + (v.z + v.w)) * 0.25f;
  const float dx = v.x - cm, dy = v.y - cm, dz = v.z - cm, dw = v.w - cm;
  const float cm2 = (dx * dx + dy * dy) + (dz * dz + dw * dw);
  const float n0 = n;
  n += 4.0f;
  const float fb = __fdividef(4.0f, n);
  const float d = cm - mean;
  mean = fmaf(d, fb, mean);
  m2 = m2 + cm2 + d * d * n0 * fb;
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

__device__ __forceinline__ float4 normalise4(float4 v, float4 g, float4 b, float mean, float rstd) {
  v.x = fmaf((v.x - mean) * rstd, g.x, b.x);
  v.y = fmaf((v.y - mean) * rstd, g.y, b.y);
  v.z = fmaf((v.z - mean) * rstd, g.z, b.z);
  v.w = fmaf((v.w - mean) * rstd, g.w, b.w);
  return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm(const float *__restrict__ x, const float *__restrict__ gamma, const float *__restrict__ beta,
          float *__restrict__ y, long long rows, long long cols) {
  __shared__ float pn[32], pmean[32], pm2[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;
  const unsigned long long addrs = reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y) |
                                   reinterpret_cast<unsigned long long>(gamma) |
                                   reinterpret_cast<unsigned long long>(beta);
  const bool vec = (cols & 3) == 0 && (addrs & 15) == 0;

  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  if (vec) {
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const long long n4 = cols >> 2;
    for (long long i = threadIdx.x; i < n4; i += BLOCK) welford_push4(n, mean, m2, in4[i]);
  } else {
    for (long long c = threadIdx.x; c < cols; c += BLOCK) welford_push(n, mean, m2, in[c]);
  }
  block_welford(n, mean, m2, pn, pmean, pm2);
  const float rstd = rsqrtf(m2 / (float)cols + 1e-5f);

  if (vec) {
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const float4 *g4 = reinterpret_cast<const float4 *>(gamma);
    const float4 *b4 = reinterpret_cast<const float4 *>(beta);
    float4 *out4 = reinterpret_cast<float4 *>(out);
    const long long n4 = cols >> 2;
    for (long long i = threadIdx.x; i < n4; i += BLOCK) out4[i] = normalise4(in4[i], g4[i], b4[i], mean, rstd);
  } else {
    for (long long c = threadIdx.x; c < cols; c += BLOCK) out[c] = fmaf((in[c] - mean) * rstd, gamma[c], beta[c]);
  }
}
