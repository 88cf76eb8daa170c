// Step 5 of 6 — one warp per row for short rows
// Adds: a second mapping of rows to threads, chosen from cols inside one kernel: rows of at most
//   WARP_COLS (1024) floats get one warp each (8 rows per 256-thread block, the reduction is
//   shuffles only: no shared memory, no __syncthreads), longer rows keep one 256-thread block
//   each. Short rows no longer leave most of a block idle or wait on block barriers, and 8x
//   fewer blocks are launched. The launch must agree with the kernel:
//   grid = ceil_div(rows, 8) when cols <= 1024, else rows; block = 256 (lineage.toml).
//   H200: narrow 65536x256 45.5 us (from 355: 7.8x), small 8.1 us (from 11.0). Expected SLOWER
//   for long rows: they run step 4's code with the block fixed at 256 threads instead of 512
//   (h200 300 us vs 272; a 512-thread variant measured 285 us); pays only when cols <= 1024.
// Relies on: step 4 (float4 access), step 3 (warp-shuffle Welford merge), step 2 (Welford).
#define ROWS_PER_BLOCK 8                 // warp-per-row mode: 8 warps = 8 rows per block
#define THREADS (32 * ROWS_PER_BLOCK)    // blockDim.x, both modes
#define WARP_COLS 1024                   // rows up to this length take one warp

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

extern "C" __global__ void __launch_bounds__(THREADS)
layernorm(const float *__restrict__ x, const float *__restrict__ gamma, const float *__restrict__ beta,
          float *__restrict__ y, long long rows, long long cols) {
  __shared__ float pn[32], pmean[32], pm2[32];
  const unsigned long long addrs = reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y) |
                                   reinterpret_cast<unsigned long long>(gamma) |
                                   reinterpret_cast<unsigned long long>(beta);
  const bool vec = (cols & 3) == 0 && (addrs & 15) == 0;
  if (cols <= WARP_COLS) {  // one warp per row; grid = ceil_div(rows, ROWS_PER_BLOCK)
    const long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= rows) return;  // whole warps leave; nothing below synchronises the block
    layernorm_row<32>(x + row * cols, gamma, beta, y + row * cols, cols, vec, threadIdx.x & 31, pn, pmean, pm2);
  } else {  // one block per row; grid = rows
    const long long row = blockIdx.x;
    if (row >= rows) return;
    layernorm_row<THREADS>(x + row * cols, gamma, beta, y + row * cols, cols, vec, threadIdx.x, pn, pmean, pm2);
  }
}
