// Step 1 of 8 — naive direct 81-tap
// Adds: nothing yet: one thread per pixel sums all 81 taps, each a clamped global load of img and
//   two global loads of the weights; neighbouring threads re-load the same pixels through L1/L2.
// Relies on: nothing
#define R 4

extern "C" __global__ void __launch_bounds__(256)
blur_naive(const float *__restrict__ img, const float *__restrict__ wx, const float *__restrict__ wy,
           float *__restrict__ out, long long H, long long W) {
  const long long x = (long long)blockIdx.x * 32 + threadIdx.x;
  const long long y = (long long)blockIdx.y * 8 + threadIdx.y;
  if (y >= H || x >= W) return;
  float acc = 0.0f;
  for (int i = -R; i <= R; ++i) {
    long long yy = y + i;
    yy = yy < 0 ? 0 : (yy > H - 1 ? H - 1 : yy);
    for (int j = -R; j <= R; ++j) {
      long long xx = x + j;
      xx = xx < 0 ? 0 : (xx > W - 1 ? W - 1 : xx);
      acc += wy[i + R] * wx[j + R] * img[yy * W + xx];
    }
  }
  out[y * W + x] = acc;
}
