// Step 6 of 6 — row cached in registers
// Adds: x is read from DRAM once: each thread loads its share of the row (up to VPT float4, or
//   4 * VPT scalars on the cols % 4 != 0 path) into registers, folds them into its Welford
//   state, and after the row reduction normalises straight from the registers (gamma and beta
//   are 2 x 32 KB at most and stay in L1/L2). 8 bytes of DRAM traffic per element, the copy
//   minimum, instead of 12. Capacity: 32 floats per thread, so warp rows up to WARP_COLS = 1024
//   and block rows up to 256 x 32 = 8192; longer rows fall back to step 5's streaming code.
//   Launch as step 5: grid = ceil_div(rows, 8) when cols <= 1024, else rows; block = 256.
//   H200: h200 16384x8192 262 us = 4.10 TB/s, 98% of cudaMemcpy D2D of the same bytes (256 us)
//   and faster than a float4 copy kernel (273 us); small 7.5 us. Expected slightly SLOWER on
//   narrow (measured 49.7 us vs step 5's 45.5): its 1 KB rows were re-read from L1 already, so
//   no DRAM traffic is saved, and 80 registers allow 3 blocks/SM instead of 5; pays when rows
//   are too long to stay in L1 between the two passes. Also slower on odd 1000x1001 (16.1 us vs
//   13.9: scalar path, only 1000 warps in flight, each lane issuing 32 scalar loads up front).
// Relies on: step 5 (warp per short row, block per long row), step 4 (float4 access),
//   step 3 (warp-shuffle Welford merge), step 2 (Welford).
#define ROWS_PER_BLOCK 8                 // warp-per-row mode: 8 warps = 8 rows per block
#define THREADS (32 * ROWS_PER_BLOCK)    // blockDim.x, both modes
#define WARP_COLS 1024                   // rows up to this length take one warp
#define VPT 8                            // float4 registers per thread (32 floats)

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

__device__ __forceinline__ float4 normalise4(float4 v, float4 g, float4 b, float mean, float rstd) {
  v.x = fmaf((v.x - mean) * rstd, g.x, b.x);
  v.y = fmaf((v.y - mean) * rstd, g.y, b.y);
  v.z = fmaf((v.z - mean) * rstd, g.z, b.z);
  v.w = fmaf((v.w - mean) * rstd, g.w, b.w);
  return v;
}

// NT threads reduce one row: a warp (NT == 32) or the whole block (NT == THREADS). Every one of
// the NT threads gets the row's (mean, M2), lane 0's value broadcast.
template <int NT>
__device__ __forceinline__ void row_welford(float &n, float &mean, float &m2, float *pn, float *pmean, float *pm2) {
  warp_welford(n, mean, m2);
  if (NT > 32) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
      pn[warp] = n;
      pmean[warp] = mean;
      pm2[warp] = m2;
    }
    __syncthreads();
    const bool have = lane < NT / 32;
    n = have ? pn[lane] : 0.0f;
    mean = have ? pmean[lane] : 0.0f;
    m2 = have ? pm2[lane] : 0.0f;
    warp_welford(n, mean, m2);
  }
  mean = __shfl_sync(FULL_MASK, mean, 0);
  m2 = __shfl_sync(FULL_MASK, m2, 0);
}

// One row, by NT threads; t is this thread's index among them (step 4's row code).
template <int NT>
__device__ __forceinline__ void layernorm_row(const float *__restrict__ in, const float *__restrict__ gamma,
                                              const float *__restrict__ beta, float *__restrict__ out,
                                              long long cols, bool vec, int t, float *pn, float *pmean, float *pm2) {
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  if (vec) {
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const long long n4 = cols >> 2;
    for (long long i = t; i < n4; i += NT) welford_push4(n, mean, m2, in4[i]);
  } else {
    for (long long c = t; c < cols; c += NT) welford_push(n, mean, m2, in[c]);
  }
  row_welford<NT>(n, mean, m2, pn, pmean, pm2);
  const float rstd = rsqrtf(m2 / (float)cols + 1e-5f);

  if (vec) {
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const float4 *g4 = reinterpret_cast<const float4 *>(gamma);
    const float4 *b4 = reinterpret_cast<const float4 *>(beta);
    float4 *out4 = reinterpret_cast<float4 *>(out);
    const long long n4 = cols >> 2;
    for (long long i = t; i < n4; i += NT) out4[i] = normalise4(in4[i], g4[i], b4[i], mean, rstd);
  } else {
    for (long long c = t; c < cols; c += NT) out[c] = fmaf((in[c] - mean) * rstd, gamma[c], beta[c]);
  }
}

// One row held in registers by NT threads: thread t owns float4 number t + i * NT (vector path)
// or column t + i * NT (scalar path), i < VPT resp. 4 * VPT. Needs cols <= NT * 4 * VPT.
template <int NT>
__device__ __forceinline__ void layernorm_row_regs(const float *__restrict__ in, const float *__restrict__ gamma,
                                                   const float *__restrict__ beta, float *__restrict__ out,
                                                   int cols, bool vec, int t, float *pn, float *pmean, float *pm2) {
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  if (vec) {
    const float4 *in4 = reinterpret_cast<const float4 *>(in);
    const int n4 = cols >> 2;
    float4 v[VPT];
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int idx = t + i * NT;
      if (idx < n4) v[i] = in4[idx];  // all loads issued before any use
    }
#pragma unroll
    for (int i = 0; i < VPT; ++i)
      if (t + i * NT < n4) welford_push4(n, mean, m2, v[i]);
    row_welford<NT>(n, mean, m2, pn, pmean, pm2);
    const float rstd = rsqrtf(m2 / (float)cols + 1e-5f);
    const float4 *g4 = reinterpret_cast<const float4 *>(gamma);
    const float4 *b4 = reinterpret_cast<const float4 *>(beta);
    float4 *out4 = reinterpret_cast<float4 *>(out);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int idx = t + i * NT;
      if (idx < n4) out4[idx] = normalise4(v[i], g4[idx], b4[idx], mean, rstd);
    }
  } else {
    float v[4 * VPT];
#pragma unroll
    for (int i = 0; i < 4 * VPT; ++i) {
      const int c = t + i * NT;
      if (c < cols) v[i] = in[c];
    }
#pragma unroll
    for (int i = 0; i < 4 * VPT; ++i)
      if (t + i * NT < cols) welford_push(n, mean, m2, v[i]);
    row_welford<NT>(n, mean, m2, pn, pmean, pm2);
    const float rstd = rsqrtf(m2 / (float)cols + 1e-5f);
#pragma unroll
    for (int i = 0; i < 4 * VPT; ++i) {
      const int c = t + i * NT;
      if (c < cols) out[c] = fmaf((v[i] - mean) * rstd, gamma[c], beta[c]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS)
layernorm(const float *__restrict__ x, const float *__restrict__ gamma, const float *__restrict__ beta,
          float *__restrict__ y, long long rows, long long cols) {
  __shared__ float pn[32], pmean[32], pm2[32];
  const unsigned long long addrs = reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y) |
                                   reinterpret_cast<unsigned long long>(gamma) |
                                   reinterpret_cast<unsigned long long>(beta);
  const bool vec = (cols & 3) == 0 && (addrs & 15) == 0;
  if (cols <= WARP_COLS) {  // one warp per row (WARP_COLS <= 32 * 4 * VPT); grid = ceil_div(rows, 8)
    const long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) return;  // whole warps leave; nothing below synchronises the block
    layernorm_row_regs<32>(x + row * cols, gamma, beta, y + row * cols, (int)cols, vec, threadIdx.x & 31, pn, pmean,
                           pm2);
  } else {  // one block per row; grid = rows
    const long long row = blockIdx.x;
    if (row >= rows) return;
    if (cols <= (long long)THREADS * 4 * VPT)
      layernorm_row_regs<THREADS>(x + row * cols, gamma, beta, y + row * cols, (int)cols, vec, threadIdx.x, pn,
                                  pmean, pm2);
    else  // too long for the registers: stream it twice (step 5)
      layernorm_row<THREADS>(x + row * cols, gamma, beta, y + row * cols, cols, vec, threadIdx.x, pn, pmean, pm2);
  }
}
