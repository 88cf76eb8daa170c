// Step 5 of 5 — row cached in registers
// Adds: x is read from DRAM once: each thread loads its part of the row (up to VPT float4 plus
//   one head and one tail scalar) into registers, computes its own max and sum of exp(x - m_t)
//   there, keeping the exponentials in place; one (max, sum) block merge; then it writes
//   e * exp(m_t - M) / S from registers: one __expf per element, one pass over DRAM each way
//   (8 bytes per element, the copy minimum). The launch sizes the block to the row:
//   blockDim = min(1024, 32 * ceil_div(cols, 32 * 4 * VPT)) threads, so rows up to 32768 floats
//   fit in registers; a longer row (or x and y rows of different 16-byte alignment) falls back to
//   the streaming code of step 4.
//   H200, 8192x8192 (256 threads/row): 134.5 us = 3.99 TB/s, 96% of cudaMemcpy D2D (129 us) and
//   faster than a plain float4 copy kernel (138 us); small: 7.4 us; wide: 26.7 us.
// Relies on: step 4 (float4 head/body/tail split), step 3 (online (max, sum) merge),
//   step 2 (warp-shuffle reductions).
// Slower than step 4 on `wide` (256 rows of 32768: 21.8 us vs 20.2 us with kwb lineage --time):
// 256 blocks of 1024 threads fill the 132 SMs in two uneven waves and the register-held row
// caps a block per SM; it pays where rows are many (h200: 127 us vs 134 us; small: 4.3 vs 9.8).
#define VPT 8  // float4 registers per thread: 32 floats

#define NEG_INF __int_as_float(0xff800000)
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

__device__ __forceinline__ void online_push(float &m, float &s, float v) {
  if (v > m) {
    s *= __expf(m - v);
    m = v;
  }
  s += __expf(v - m);
}

__device__ __forceinline__ void online_push4(float &m, float &s, float4 v) {
  const float mv = max4(v);
  if (mv > m) {
    s *= __expf(m - mv);
    m = mv;
  }
  s += (__expf(v.x - m) + __expf(v.y - m)) + (__expf(v.z - m) + __expf(v.w - m));
}

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

// blockDim.x is a multiple of 32 (the launch makes it so), at most 1024.
__device__ __forceinline__ void block_merge(float &m, float &s, float *pm, float *ps) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  warp_merge(m, s);
  if (blockDim.x == 32) {  // one warp per row: no shared memory, no barrier
    m = __shfl_sync(FULL_MASK, m, 0);
    s = __shfl_sync(FULL_MASK, s, 0);
    return;
  }
  if (lane == 0) {
    pm[warp] = m;
    ps[warp] = s;
  }
  __syncthreads();
  const int nwarps = blockDim.x >> 5;
  m = lane < nwarps ? pm[lane] : NEG_INF;
  s = lane < nwarps ? ps[lane] : 0.0f;
  warp_merge(m, s);
  m = __shfl_sync(FULL_MASK, m, 0);
  s = __shfl_sync(FULL_MASK, s, 0);
}

extern "C" __global__ void __launch_bounds__(1024)
softmax(const float *__restrict__ x, float *__restrict__ y, long long rows, long long cols) {
  __shared__ float pm[32];
  __shared__ float ps[32];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;
  const int tid = threadIdx.x, nthr = blockDim.x;

  const unsigned long long inAddr = reinterpret_cast<unsigned long long>(in);
  const unsigned long long outAddr = reinterpret_cast<unsigned long long>(out);
  const bool sameAlign = ((inAddr ^ outAddr) & 15) == 0;
  long long head = cols;
  if (sameAlign) {
    head = (long long)(((16 - (inAddr & 15)) & 15) >> 2);
    if (head > cols) head = cols;
  }
  const long long n4 = (cols - head) >> 2;
  const long long tail = head + 4 * n4;
  const float4 *in4 = reinterpret_cast<const float4 *>(in + head);
  float4 *out4 = reinterpret_cast<float4 *>(out + head);

  if (sameAlign && n4 <= (long long)nthr * VPT) {
    // ---- the row in registers: v[i] = body float4 number tid + i * nthr ----
    const int nb = (int)n4;
    const int nTail = (int)(cols - tail);  // 0..3
    const bool hasHead = tid < (int)head, hasTail = tid < nTail;
    float hv = 0.0f, tv = 0.0f;
    float4 v[VPT];
    float mt = NEG_INF;
    if (hasHead) {
      hv = in[tid];
      mt = hv;
    }
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int idx = tid + i * nthr;
      if (idx < nb) {
        v[i] = in4[idx];
        mt = fmaxf(mt, max4(v[i]));
      }
    }
    if (hasTail) {
      tv = in[tail + tid];
      mt = fmaxf(mt, tv);
    }
    // Thread-local sum of exp(x - mt); the exponentials stay in the registers.
    float st = 0.0f;
    if (hasHead) {
      hv = __expf(hv - mt);
      st += hv;
    }
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int idx = tid + i * nthr;
      if (idx < nb) {
        v[i].x = __expf(v[i].x - mt);
        v[i].y = __expf(v[i].y - mt);
        v[i].z = __expf(v[i].z - mt);
        v[i].w = __expf(v[i].w - mt);
        st += (v[i].x + v[i].y) + (v[i].z + v[i].w);
      }
    }
    if (hasTail) {
      tv = __expf(tv - mt);
      st += tv;
    }
    float M = mt, S = st;
    block_merge(M, S, pm, ps);
    // y = exp(x - mt) * exp(mt - M) / S. A thread with no elements (mt = -inf) stores nothing.
    const float scale = mt == NEG_INF ? 0.0f : __expf(mt - M) / S;
    if (hasHead) out[tid] = hv * scale;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int idx = tid + i * nthr;
      if (idx < nb) {
        float4 r = v[i];
        r.x *= scale;
        r.y *= scale;
        r.z *= scale;
        r.w *= scale;
        out4[idx] = r;
      }
    }
    if (hasTail) out[tail + tid] = tv * scale;
    return;
  }

  // ---- fallback for rows that do not fit (or mismatched alignment): step 4, streaming ----
  float m = NEG_INF, s = 0.0f;
  for (long long c = tid; c < head; c += nthr) online_push(m, s, in[c]);
  for (long long i = tid; i < n4; i += nthr) online_push4(m, s, in4[i]);
  for (long long c = tail + tid; c < cols; c += nthr) online_push(m, s, in[c]);
  block_merge(m, s, pm, ps);
  const float inv = 1.0f / s;
  for (long long c = tid; c < head; c += nthr) out[c] = __expf(in[c] - m) * inv;
  for (long long i = tid; i < n4; i += nthr) {
    float4 r = in4[i];
    r.x = __expf(r.x - m) * inv;
    r.y = __expf(r.y - m) * inv;
    r.z = __expf(r.z - m) * inv;
    r.w = __expf(r.w - m) * inv;
    out4[i] = r;
  }
  for (long long c = tail + tid; c < cols; c += nthr) out[c] = __expf(in[c] - m) * inv;
}
