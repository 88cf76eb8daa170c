// Step 7 of 8 — cp.async double buffering down a column strip
// Adds: each block walks TPB tiles down its 64-column strip and copies the next tile's halo into a
//   second shared buffer with cp.async (16-byte global-to-shared copies that need no registers)
//   while it computes the current one: loads stay in flight during both passes instead of each
//   block idling through a load, barrier, compute sequence. Edge chunks and unaligned images fall back
//   to synchronous scalar (clamped) loads into the same buffer.
// Measured on an H200 (8192^2): 0.190 ms against step 6's 0.227 ms; more tiles per block were
// slower (TPB 8: 0.208 ms, 32: 0.276 ms), as was a first shared-memory-free variant that streamed
// rows through registers and warp shuffles (0.37 ms or more; step 8 does that well). Slower than
// step 6 on the small and odd images (suite 2026-11-30: 10.1 us against 6.5 us on 1024^2): each
// block walks two tiles, so there are half as many blocks for 132 SMs. Pays on large images.
// Relies on: step 6 (float4 halo tile, float4 horizontal pass, 4x4 outputs per thread)
#include <cuda_runtime.h>

#define R 4
#define TW 64                 // tile width: 16 float4 chunks, one per thread along x
#define TXC (TW / 4)
#ifndef TY
#define TY 8                  // threads along y
#endif
#ifndef V
#define V 4                   // rows per thread (each a float4 of 4 columns)
#endif
#ifndef TPB
#define TPB 2                 // tiles per block, walked top to bottom (2, 3, 4, 8 measured; 2 best)
#endif
#define TH (TY * V)           // tile height
#define NT (TXC * TY)         // threads per block
#define SW (TW + 2 * R)       // halo row: 72 floats = 18 float4 chunks, 16-byte aligned rows
#define SROWS (TH + 2 * R)
#define SBUF (SROWS * SW)     // one halo buffer, in floats
#define SMEM_BYTES ((2 * SBUF + SROWS * TW) * 4)

static __constant__ float c_wx[2 * R + 1];
static __constant__ float c_wy[2 * R + 1];

static __device__ __forceinline__ long long clampll(long long v, long long hi) {
  return v < 0 ? 0 : (v > hi ? hi : v);
}

// Issue the loads of the halo tile whose first output row is ty0 into buffer s.
static __device__ __forceinline__ void load_tile(float *s, const float *__restrict__ img, long long x0,
                                                 long long ty0, long long H, long long W, bool vin) {
  for (int idx = threadIdx.x; idx < SROWS * (SW / 4); idx += NT) {
    const int r = idx / (SW / 4), k = idx - r * (SW / 4);
    const float *row = img + clampll(ty0 + r - R, H - 1) * W;
    const long long gx = x0 - R + 4 * k;
    float *dst = s + r * SW + 4 * k;
    if (vin && gx >= 0 && gx + 3 < W) {
      const unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(row + gx) : "memory");
    } else {
      float4 v;
      v.x = row[clampll(gx + 0, W - 1)];
      v.y = row[clampll(gx + 1, W - 1)];
      v.z = row[clampll(gx + 2, W - 1)];
      v.w = row[clampll(gx + 3, W - 1)];
      *reinterpret_cast<float4 *>(dst) = v;
    }
  }
}

static __global__ void __launch_bounds__(NT)
blur_pipelined(const float *__restrict__ img, float *__restrict__ out, long long H, long long W) {
  extern __shared__ __align__(16) unsigned char smem[];
  float *sbuf = reinterpret_cast<float *>(smem);  // 2 x [SROWS][SW]: halo tiles, double-buffered
  float *h = sbuf + 2 * SBUF;                     // [SROWS][TW]: horizontal pass
  const long long x0 = (long long)blockIdx.x * TW, yb = (long long)blockIdx.y * (TH * TPB);
  const int tid = threadIdx.x;
  const bool vin = (W & 3) == 0 && ((unsigned long long)img & 15) == 0;
  const bool vout = (W & 3) == 0 && ((unsigned long long)out & 15) == 0;  // then x + 3 < W too
  const long long left = (H - yb + TH - 1) / TH;                          // >= 1: yb < H
  const int ntiles = left < TPB ? (int)left : TPB;
  const int m = tid % TXC, g = tid / TXC;
  const long long x = x0 + 4 * m;

  load_tile(sbuf, img, x0, yb, H, W, vin);
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  for (int t = 0; t < ntiles; ++t) {
    const float *s = sbuf + (t & 1) * SBUF;
    // Buffer (t+1)&1 was last read by tile t-1's horizontal pass, which a barrier has closed.
    if (t + 1 < ntiles) load_tile(sbuf + ((t + 1) & 1) * SBUF, img, x0, yb + (long long)(t + 1) * TH, H, W, vin);
    asm volatile("cp.async.commit_group;\n" ::: "memory");  // possibly empty: keeps the count uniform
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");   // tile t's copies have landed
    __syncthreads();

    // Horizontal pass: outputs 4mm..4mm+3 of row r need s[r][4mm .. 4mm + 11]: three aligned float4.
    for (int idx = tid; idx < SROWS * TXC; idx += NT) {
      const int r = idx / TXC, mm = idx - r * TXC;
      const float4 *p = reinterpret_cast<const float4 *>(s + r * SW + 4 * mm);
      const float4 a = p[0], b = p[1], c = p[2];
      const float w[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w};
      float o[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j <= 2 * R; ++j) acc += c_wx[j] * w[e + j];
        o[e] = acc;
      }
      *reinterpret_cast<float4 *>(h + r * TW + 4 * mm) = make_float4(o[0], o[1], o[2], o[3]);
    }
    __syncthreads();

    // Vertical pass: thread (m, g) produces rows g*V .. g*V+V-1, columns 4m .. 4m+3 of the tile.
    float4 col[V + 2 * R];
#pragma unroll
    for (int k = 0; k < V + 2 * R; ++k)
      col[k] = *reinterpret_cast<const float4 *>(h + (g * V + k) * TW + 4 * m);
    if (x < W) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const long long y = yb + (long long)t * TH + g * V + v;
        float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int i = 0; i <= 2 * R; ++i) {
          o.x += c_wy[i] * col[v + i].x;
          o.y += c_wy[i] * col[v + i].y;
          o.z += c_wy[i] * col[v + i].z;
          o.w += c_wy[i] * col[v + i].w;
        }
        if (y >= H) break;
        float *dst = out + y * W + x;
        if (vout) {
          *reinterpret_cast<float4 *>(dst) = o;
        } else {
          dst[0] = o.x;
          if (x + 1 < W) dst[1] = o.y;
          if (x + 2 < W) dst[2] = o.z;
          if (x + 3 < W) dst[3] = o.w;
        }
      }
    }
  }
}

// args: img, wx, wy, out, H, W (the task's args order).
extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {
  const float *img = *static_cast<const float *const *>(args[0]);
  const float *wx = *static_cast<const float *const *>(args[1]);
  const float *wy = *static_cast<const float *const *>(args[2]);
  float *out = *static_cast<float *const *>(args[3]);
  const long long H = *static_cast<const long long *>(args[4]);
  const long long W = *static_cast<const long long *>(args[5]);
  if (H <= 0 || W <= 0) return cudaSuccess;
  const long long gx = (W + TW - 1) / TW, gy = (H + TH * TPB - 1) / (TH * TPB);
  if (gx > 0x7fffffffLL || gy > 65535) return cudaErrorInvalidValue;
  cudaError_t e = cudaFuncSetAttribute(blur_pipelined, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
  if (e != cudaSuccess) return e;
  e = cudaMemcpyToSymbolAsync(c_wx, wx, sizeof(c_wx), 0, cudaMemcpyDeviceToDevice, stream);
  if (e != cudaSuccess) return e;
  e = cudaMemcpyToSymbolAsync(c_wy, wy, sizeof(c_wy), 0, cudaMemcpyDeviceToDevice, stream);
  if (e != cudaSuccess) return e;
  blur_pipelined<<<dim3((unsigned)gx, (unsigned)gy), dim3(NT), SMEM_BYTES, stream>>>(img, out, H, W);
  return cudaGetLastError();
}
