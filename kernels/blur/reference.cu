// Reference blur: one thread per pixel, the direct 81-tap sum with clamp-to-edge borders, R = 4:
//   out[y, x] = sum_{i, j in [-4, 4]} wy[i + 4] * wx[j + 4] * img[clamp(y + i), clamp(x + j)]
// Every tap is a global load (81 per pixel). Trusted and simple; not fast.
extern "C" __global__ void blur_reference(const float *__restrict__ img, const float *__restrict__ wx,
                                          const float *__restrict__ wy, float *__restrict__ out,
                                          long long H, long long W) {
  const long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long y = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (y >= H || x >= W) return;
  float acc = 0.0f;
  for (int i = -4; i <= 4; ++i) {
    long long yy = y + i;
    yy = yy < 0 ? 0 : (yy > H - 1 ? H - 1 : yy);
    for (int j = -4; j <= 4; ++j) {
      long long xx = x + j;
      xx = xx < 0 ? 0 : (xx > W - 1 ? W - 1 : xx);
      acc += wy[i + 4] * wx[j + 4] * img[yy * W + xx];
    }
  }
  out[y * W + x] = acc;
}
