// leaky_relu.cu: a simple, correct candidate for problems/leaky_relu.py (F.leaky_relu(x, negative_slope)).
// One thread per element of out; the parameters are exactly those `kwb import kernelbench` writes:
// args = x, out, batch_size, dim, negative_slope (an f32 [params] entry, passed as float).
extern "C" __global__ void leaky_relu_kernel(const float *__restrict__ x, float *__restrict__ out,
                                             long long batch_size, long long dim, float negative_slope) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= batch_size * dim) return;
  const float v = x[i];
  out[i] = v > 0.0f ? v : v * negative_slope;
}
