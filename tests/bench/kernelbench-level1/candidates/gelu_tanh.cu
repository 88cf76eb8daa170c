// gelu_tanh.cu: a simple, correct candidate for problems/gelu_tanh.py,
// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), computed in double per element.
// One thread per element of out; args = x, out, batch_size, dim.
extern "C" __global__ void gelu_tanh_kernel(const float *__restrict__ x, float *__restrict__ out,
                                            long long batch_size, long long dim) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= batch_size * dim) return;
  const double v = x[i];
  const double k = sqrt(2.0 / 3.14159265358979323846);
  out[i] = (float)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
}
