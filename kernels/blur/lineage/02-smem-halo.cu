// Step 2 of 8 — shared-memory halo tile
// Adds: each 32x16 block loads its output tile plus the 4-pixel border (40x24 pixels, clamped at the
//   image edges) into shared memory once, coalesced; the 81 taps per pixel then read shared memory
//   instead of issuing 81 global loads (about 1.9 global loads per pixel instead of 81).
// Relies on: step 1 (the direct 81-tap sum, one thread per pixel)
#define R 4
#define TILE_W 32
#define TILE_H 16

extern "C" __global__ void __launch_bounds__(TILE_W * TILE_H)
blur_halo(const float *__restrict__ img, const float *__restrict__ wx, const float *__restrict__ wy,
          float *__restrict__ out, long long H, long long W) {
  __shared__ float s[TILE_H + 2 * R][TILE_W + 2 * R];
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
  const long long x = x0 + tx, y = y0 + ty;
  if (x >= W || y >= H) return;
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i <= 2 * R; ++i)
#pragma unroll
    for (int j = 0; j <= 2 * R; ++j) acc += wy[i] * wx[j] * s[ty + i][tx + j];
  out[y * W + x] = acc;
}
