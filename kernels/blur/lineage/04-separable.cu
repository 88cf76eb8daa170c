// Step 4 of 8 — separable passes in one kernel
// Adds: the 9x9 product is factored: a horizontal 9-tap pass over every row of the halo tile writes
//   a 24x32 intermediate to shared memory, then a vertical 9-tap pass produces the output: 18 + 6
//   multiply-adds and shared reads per pixel instead of 81 (the 8 extra halo rows cost the 6).
// Relies on: step 3 (halo tile in shared memory, weights in constant memory, host launcher)
#include <cuda_runtime.h>

#define R 4
#define TILE_W 32
#define TILE_H 16

static __constant__ float c_wx[2 * R + 1];
static __constant__ float c_wy[2 * R + 1];

static __global__ void __launch_bounds__(TILE_W * TILE_H)
blur_separable(const float *__restrict__ img, float *__restrict__ out, long long H, long long W) {
  __shared__ float s[TILE_H + 2 * R][TILE_W + 2 * R];  // input tile with its border
  __shared__ float h[TILE_H + 2 * R][TILE_W];          // horizontal pass: every tile row, output columns only
  const long long x0 = (long long)blockIdx.x * TILE_W, y0 = (long long)blockIdx.y * TILE_H;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int idx = ty * TILE_W + tx; idx < (TILE_H + 2 * R) * (TILE_W + 2 * R); idx += TILE_W * TILE_H) {
    const int r = idx / (TILE_W + 2 * R), c = idx % (TILE_W + 2 * R);
    long long gy = y0 + r - R, gx = x0 + c - R;
    gy = gy < 0 ? 0 : (gy > H - 1 ? H - 1 : gy);
    gx = gx < 0 ? 0 : (gx > W - 1 ? W - 1 : gx);
    s[r][c] = img[gy * W + gx];
  }
  __syncthreads();
  for (int r = ty; r < TILE_H + 2 * R; r += TILE_H) {
    float a = 0.0f;
#pragma unroll
    for (int j = 0; j <= 2 * R; ++j) a += c_wx[j] * s[r][tx + j];
    h[r][tx] = a;
  }
  __syncthreads();
  const long long x = x0 + tx, y = y0 + ty;
  if (x >= W || y >= H) return;
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i <= 2 * R; ++i) acc += c_wy[i] * h[ty + i][tx];
  out[y * W + x] = acc;
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
  const long long gx = (W + TILE_W - 1) / TILE_W, gy = (H + TILE_H - 1) / TILE_H;
  if (gx > 0x7fffffffLL || gy > 65535) return cudaErrorInvalidValue;
  cudaError_t e = cudaMemcpyToSymbolAsync(c_wx, wx, sizeof(c_wx), 0, cudaMemcpyDeviceToDevice, stream);
  if (e != cudaSuccess) return e;
  e = cudaMemcpyToSymbolAsync(c_wy, wy, sizeof(c_wy), 0, cudaMemcpyDeviceToDevice, stream);
  if (e != cudaSuccess) return e;
  blur_separable<<<dim3((unsigned)gx, (unsigned)gy), dim3(TILE_W, TILE_H), 0, stream>>>(img, out, H, W);
  return cudaGetLastError();
}
