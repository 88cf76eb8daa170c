// mean_last_dim.cu: a simple, correct candidate for problems/mean_last_dim.py
// (torch.mean(x, dim=-1) of x [batch_size, dim1, dim2], out [batch_size, dim1]).
// One thread per element of out, each averaging its row of dim2 values in double.
// args = x, out, batch_size, dim1, dim2.
extern "C" __global__ void mean_last_dim_kernel(const float *__restrict__ x, float *__restrict__ out,
                                                long long batch_size, long long dim1, long long dim2) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= batch_size * dim1) return;
  const float *row = x + i * dim2;
  double sum = 0.0;
  for (long long k = 0; k < dim2; ++k) sum += row[k];
  out[i] = (float)(sum / (double)dim2);
}
