// rmsnorm.cu: a simple, correct candidate for problems/rmsnorm.py
// (x / sqrt(mean(x ** 2, dim=1, keepdim=True) + eps), x and out [batch_size, features, dim1, dim2]).
// One thread per element of out; each recomputes the mean square of its column over `features`
// (slow but correct), in double.
// args = x, out, batch_size, features, dim1, dim2, num_features, eps: num_features is Model's
// constructor argument (an integer [params] entry, long long; the size `features` already holds the
// value, so it is unused here), eps an f32 [params] entry passed as float.
extern "C" __global__ void rmsnorm_kernel(const float *__restrict__ x, float *__restrict__ out,
                                          long long batch_size, long long features, long long dim1,
                                          long long dim2, long long num_features, float eps) {
  (void)num_features;
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long spatial = dim1 * dim2;
  if (i >= batch_size * features * spatial) return;
  const long long b = i / (features * spatial), s = i % spatial;
  const float *column = x + b * features * spatial + s;
  double squares = 0.0;
  for (long long f = 0; f < features; ++f) {
    const double v = column[f * spatial];
    squares += v * v;
  }
  const double rms = sqrt(squares / (double)features + (double)eps);
  out[i] = (float)((double)x[i] / rms);
}
