// Starting point for optimization: a BX x BY output tile per block, one output per thread; the
// tile and its 4-pixel border (clamped at the image edges) are loaded once into shared memory,
// then each thread sums the 81 taps from there. Radius R = 4 is fixed by the task.
// BX and BY come from the task's tunables as -DBX=<v> -DBY=<v>.
#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#define R 4

extern "C" __global__ void __launch_bounds__(BX * BY)
blur(const float *__restrict__ img, const float *__restrict__ wx, const float *__restrict__ wy,
     float *__restrict__ out, long long H, long long W) {
  __shared__ float s[BY + 2 * R][BX + 2 * R];
  const long long x0 = (long long)blockIdx.x * BX, y0 = (long long)blockIdx.y * BY;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int idx = ty * BX + tx; idx < (BY + 2 * R) * (BX + 2 * R); idx += BX * BY) {
    const int r = idx / (BX + 2 * R), c = idx % (BX + 2 * R);
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
