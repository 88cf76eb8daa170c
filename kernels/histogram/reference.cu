// Reference histogram: one thread per byte, one atomicAdd on the global bins (bins start at 0).
// Trusted and simple; very slow. Launch: grid ceil_div(n, 256), block 256.
extern "C" __global__ void histogram_reference(const unsigned char *__restrict__ data, int *__restrict__ bins,
                                               long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[data[i]], 1);
}
