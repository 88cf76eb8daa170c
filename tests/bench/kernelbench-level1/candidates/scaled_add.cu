// scaled_add.cu: a simple, correct candidate for problems/scaled_add.py (x + alpha * y).
// One thread per element of out; args = x, y, out, batch_size, dim, alpha (f32, passed as float).
extern "C" __global__ void scaled_add_kernel(const float *__restrict__ x, const float *__restrict__ y,
                                             float *__restrict__ out, long long batch_size, long long dim,
                                             float alpha) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= batch_size * dim) return;
  out[i] = x[i] + alpha * y[i];
}
