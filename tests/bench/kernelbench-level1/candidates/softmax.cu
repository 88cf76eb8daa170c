// softmax.cu: a simple, correct candidate for problems/softmax.py (torch.softmax(x, dim=1),
// x and out [batch_size, dim]). One thread per element of out; each recomputes its row's maximum
// and sum of exponentials (slow, O(dim) per element, but correct), the sum in double.
// args = x, out, batch_size, dim.
extern "C" __global__ void softmax_kernel(const float *__restrict__ x, float *__restrict__ out,
                                          long long batch_size, long long dim) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= batch_size * dim) return;
  const float *row = x + (i / dim) * dim;
  float m = row[0];
  for (long long k = 1; k < dim; ++k) m = fmaxf(m, row[k]);
  double sum = 0.0;
  for (long long k = 0; k < dim; ++k) sum += (double)expf(row[k] - m);
  out[i] = (float)((double)expf(x[i] - m) / sum);
}
