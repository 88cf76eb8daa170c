// Step 6 of 8 — float4 vectorization
// Adds: every access moves 4 adjacent pixels: float4 global loads of the halo tile and float4 global
//   stores, and in the horizontal pass each thread reads 3 float4 (12 pixels) from shared memory to
//   produce 4 adjacent outputs (3 shared words per output instead of 9); the vertical pass holds
//   4-wide columns in registers. A thread now covers 4 columns x 4 rows of a 64x32 tile. Halo chunks
//   that cross the image edge, a width that is not a multiple of 4, or unaligned pointers take scalar
//   (clamped, bounds-checked) loads and stores; shared-memory accesses stay float4 in every case.
// Relies on: step 5 (separable passes with register blocking, constant weights, host launcher)
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
#define TH (TY * V)           // tile height
#define NT (TXC * TY)         // threads per block
#define SW (TW + 2 * R)       // halo row: 72 floats = 18 float4 chunks, 16-byte aligned rows
#define SROWS (TH + 2 * R)
#define SMEM_BYTES ((SROWS * SW + SROWS * TW) * 4)

static __constant__ float c_wx[2 * R + 1];
static __constant__ float c_wy[2 * R + 1];

static __device__ __forceinline__ long long clampll(long long v, long long hi) {
  return v < 0 ? 0 : (v > hi ? hi : v);
}

static __global__ void __launch_bounds__(NT)
blur_vec4(const float *__restrict__ img, float *__restrict__ out, long long H, long long W) {
  extern __shared__ __align__(16) unsigned char smem[];
  float *s = reinterpret_cast<float *>(smem);  // [SROWS][SW]: input tile with its border
  float *h = s + SROWS * SW;                   // [SROWS][TW]: horizontal pass
  const long long x0 = (long long)blockIdx.x * TW, y0 = (long long)blockIdx.y * TH;
  const int tid = threadIdx.x;
  const bool vin = (W & 3) == 0 && ((unsigned long long)img & 15) == 0;

  // Halo tile: SROWS rows x 18 chunks; chunk k of row r holds pixels x0 - R + 4k .. +3.
  for (int idx = tid; idx < SROWS * (SW / 4); idx += NT) {
    const int r = idx / (SW / 4), k = idx - r * (SW / 4);
    const float *row = img + clampll(y0 + r - R, H - 1) * W;
    const long long gx = x0 - R + 4 * k;
    float4 v;
    if (vin && gx >= 0 && gx + 3 < W) {
      v = __ldg(reinterpret_cast<const float4 *>(row + gx));
    } else {
      v.x = row[clampll(gx + 0, W - 1)];
      v.y = row[clampll(gx + 1, W - 1)];
      v.z = row[clampll(gx + 2, W - 1)];
      v.w = row[clampll(gx + 3, W - 1)];
    }
    *reinterpret_cast<float4 *>(s + r * SW + 4 * k) = v;
  }
  __syncthreads();

  // Horizontal pass: outputs 4m..4m+3 of row r need s[r][4m .. 4m + 11]: three aligned float4.
  for (int idx = tid; idx < SROWS * TXC; idx += NT) {
    const int r = idx / TXC, m = idx - r * TXC;
    const float4 *p = reinterpret_cast<const float4 *>(s + r * SW + 4 * m);
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
    *reinterpret_cast<float4 *>(h + r * TW + 4 * m) = make_float4(o[0], o[1], o[2], o[3]);
  }
  __syncthreads();

  // Vertical pass: thread (m, g) produces rows g*V .. g*V+V-1, columns 4m .. 4m+3 of the tile.
  const int m = tid % TXC, g = tid / TXC;
  float4 col[V + 2 * R];
#pragma unroll
  for (int k = 0; k < V + 2 * R; ++k)
    col[k] = *reinterpret_cast<const float4 *>(h + (g * V + k) * TW + 4 * m);
  const long long x = x0 + 4 * m;
  if (x >= W) return;
  const bool vout = (W & 3) == 0 && ((unsigned long long)out & 15) == 0;  // then x + 3 < W too
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const long long y = y0 + g * V + v;
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

// args: img, wx, wy, out, H, W (the task's args order).
extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {
  const float *img = *static_cast<const float *const *>(args[0]);
  const float *wx = *static_cast<const float *const *>(args[1]);
  const float *wy = *static_cast<const float *const *>(args[2]);
  float *out = *static_cast<float *const *>(args[3]);
  const long long H = *static_cast<const long long *>(args[4]);
  const long long W = *static_cast<const long long *>(args[5]);
  if (H <= 0 || W <= 0) return cudaSuccess;
  const long long gx = (W + TW - 1) / TW, gy = (H + TH - 1) / TH;
  if (gx > 0x7fffffffLL || gy > 65535) return cudaErrorInvalidValue;
  cudaError_t e = cudaFuncSetAttribute(blur_vec4, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
  if (e != cudaSuccess) return e;
  e = cudaMemcpyToSymbolAsync(c_wx, wx, sizeof(c_wx), 0, cudaMemcpyDeviceToDevice, stream);
  if (e != cudaSuccess) return e;
  e = cudaMemcpyToSymbolAsync(c_wy, wy, sizeof(c_wy), 0, cudaMemcpyDeviceToDevice, stream);
  if (e != cudaSuccess) return e;
  blur_vec4<<<dim3((unsigned)gx, (unsigned)gy), dim3(NT), SMEM_BYTES, stream>>>(img, out, H, W);
  return cudaGetLastError();
}
