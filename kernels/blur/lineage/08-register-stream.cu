// Step 8 of 8 — rows streamed through registers, no shared memory
// Adds: each warp owns a 128-column strip (lanes 1..30 write 4 columns each; lanes 0 and 31 only
//   load the 4-column halo either side) and walks SEG rows down it, 8 rows at a time. A row's
//   horizontal pass takes the neighbours' columns by warp shuffles; the vertical pass keeps the
//   last 8 horizontal results in registers as a sliding window, so every input row is loaded once
//   per warp (the 8 rows above the segment are the only vertical halo) and there is no shared
//   memory and no barrier. The next 8 rows' loads are issued before the current 8 are computed.
//   The weights, now read once per thread into registers, no longer need a per-launch copy to
//   __constant__ memory.
// Measured on an H200 (CUPTI kernel time, suite table 2026-11-30-h200x2-0ab4a3a): 8192^2 in 0.152 ms
//   against step 7's 0.180 ms (3.54 TB/s, 83% of the device-to-device copy bandwidth). On the small
//   and odd images (1024^2, 1000x999) it takes 0.017 ms against step 7's 0.010-0.011 ms: too few
//   strips to fill 132 SMs, so this step pays on large images only. Variants (same day, 8192^2,
//   tests/bench/results/2026-11-30-h200x2-blur-step8-variants.txt): streaming cache hints cost
//   3-10 us (__ldcs loads, __stcs stores), dropping the prefetch of the next rows 5 us, 128-row
//   segments tie at 8192^2 but are 1.6x slower on the odd image.
// Relies on: step 6 (float4 loads and stores, 4 adjacent outputs per thread, register blocking
//   down a column) and step 4 (separable passes)
#include <cuda_runtime.h>

#define R 4
#define U 8           // rows per batch: equal to the vertical window (2R), which the indexing assumes
#define SEG 64        // output rows per warp
#define WPB 4         // warps per block, side by side along x
#define OUTW 120      // output columns per warp

static __device__ __forceinline__ long long clampll(long long v, long long hi) {
  return v < 0 ? 0 : (v > hi ? hi : v);
}

// Columns xl .. xl + 3 of row y, clamped to the image.
static __device__ __forceinline__ float4 load4(const float *__restrict__ img, long long y, long long xl,
                                               long long H, long long W, bool vin) {
  const float *row = img + clampll(y, H - 1) * W;
  if (vin && xl >= 0 && xl + 3 < W) return __ldg(reinterpret_cast<const float4 *>(row + xl));
  return make_float4(row[clampll(xl, W - 1)], row[clampll(xl + 1, W - 1)], row[clampll(xl + 2, W - 1)],
                     row[clampll(xl + 3, W - 1)]);
}

// Horizontal pass of one row: this lane's 4 columns plus the 4 either side from lanes -1 and +1.
static __device__ __forceinline__ float4 hpass(float4 v, const float (&wx)[2 * R + 1]) {
  const float p[12] = {__shfl_up_sync(~0u, v.x, 1),   __shfl_up_sync(~0u, v.y, 1),
                       __shfl_up_sync(~0u, v.z, 1),   __shfl_up_sync(~0u, v.w, 1),
                       v.x, v.y, v.z, v.w,
                       __shfl_down_sync(~0u, v.x, 1), __shfl_down_sync(~0u, v.y, 1),
                       __shfl_down_sync(~0u, v.z, 1), __shfl_down_sync(~0u, v.w, 1)};
  float o[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j <= 2 * R; ++j) acc += wx[j] * p[e + j];
    o[e] = acc;
  }
  return make_float4(o[0], o[1], o[2], o[3]);
}

static __global__ void __launch_bounds__(WPB * 32)
blur_stream(const float *__restrict__ img, const float *__restrict__ wxg, const float *__restrict__ wyg,
            float *__restrict__ out, long long H, long long W) {
  float wx[2 * R + 1], wy[2 * R + 1];
#pragma unroll
  for (int j = 0; j <= 2 * R; ++j) {
    wx[j] = __ldg(wxg + j);
    wy[j] = __ldg(wyg + j);
  }
  const int lane = threadIdx.x & 31;
  const long long strip = (long long)blockIdx.x * WPB + (threadIdx.x >> 5);
  const long long xl = strip * OUTW - R + 4 * lane;  // this lane's first column (lane 0: the halo)
  const long long yb = (long long)blockIdx.y * SEG;
  const long long yend = yb + SEG < H ? yb + SEG : H;
  const bool vin = (W & 3) == 0 && ((unsigned long long)img & 15) == 0;
  const bool vout = (W & 3) == 0 && ((unsigned long long)out & 15) == 0;
  const bool writer = lane >= 1 && lane <= 30 && xl < W;

  float4 win[2 * R], next[U];  // win: horizontal results of the 8 rows above the batch
#pragma unroll
  for (int k = 0; k < U; ++k) next[k] = load4(img, yb - R + k, xl, H, W, vin);
#pragma unroll
  for (int k = 0; k < U; ++k) win[k] = hpass(next[k], wx);
#pragma unroll
  for (int k = 0; k < U; ++k) next[k] = load4(img, yb + R + k, xl, H, W, vin);
  for (long long y = yb; y < yend; y += U) {
    float4 cur[U], hn[U];
#pragma unroll
    for (int k = 0; k < U; ++k) cur[k] = next[k];
    if (y + U < yend) {  // the next batch's rows are in flight while this one is computed
#pragma unroll
      for (int k = 0; k < U; ++k) next[k] = load4(img, y + U + R + k, xl, H, W, vin);
    }
#pragma unroll
    for (int k = 0; k < U; ++k) hn[k] = hpass(cur[k], wx);
#pragma unroll
    for (int k = 0; k < U; ++k) {  // output row y + k: horizontal rows y + k - 4 .. y + k + 4
      float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
      for (int i = 0; i <= 2 * R; ++i) {
        const float4 h = k + i < 2 * R ? win[k + i] : hn[k + i - 2 * R];
        o.x += wy[i] * h.x;
        o.y += wy[i] * h.y;
        o.z += wy[i] * h.z;
        o.w += wy[i] * h.w;
      }
      if (writer && y + k < yend) {
        float *dst = out + (y + k) * W + xl;
        if (vout) {
          *reinterpret_cast<float4 *>(dst) = o;
        } else {
          dst[0] = o.x;
          if (xl + 1 < W) dst[1] = o.y;
          if (xl + 2 < W) dst[2] = o.z;
          if (xl + 3 < W) dst[3] = o.w;
        }
      }
    }
#pragma unroll
    for (int k = 0; k < U; ++k) win[k] = hn[k];
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
  const long long strips = (W + OUTW - 1) / OUTW;
  const long long gx = (strips + WPB - 1) / WPB, gy = (H + SEG - 1) / SEG;
  if (gx > 0x7fffffffLL || gy > 65535) return cudaErrorInvalidValue;
  blur_stream<<<dim3((unsigned)gx, (unsigned)gy), dim3(WPB * 32), 0, stream>>>(img, wx, wy, out, H, W);
  return cudaGetLastError();
}
