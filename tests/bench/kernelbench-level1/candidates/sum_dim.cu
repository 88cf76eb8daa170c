// sum_dim.cu: a simple, correct candidate for problems/sum_dim.py
// (torch.sum(x, dim=reduce_dim, keepdim=True) of x [batch_size, dim1, dim2]; the task's out is
// [batch_size, 1, dim2], reduce_dim = 1, but any reduce_dim of the 3-D x is summed correctly).
// One thread per element of out, each summing its reduced line in double.
// args = x, out, batch_size, dim1, dim2, reduce_dim (an integer [params] entry, passed as long long).
extern "C" __global__ void sum_dim_kernel(const float *__restrict__ x, float *__restrict__ out,
                                          long long batch_size, long long dim1, long long dim2,
                                          long long reduce_dim) {
  const long long r = reduce_dim < 0 ? reduce_dim + 3 : reduce_dim;
  // x as [outer, n, inner]: n the reduced dimension's size, outer those before it, inner those after.
  const long long n = r == 0 ? batch_size : r == 1 ? dim1 : dim2;
  const long long outer = r == 0 ? 1 : r == 1 ? batch_size : batch_size * dim1;
  const long long inner = r == 0 ? dim1 * dim2 : r == 1 ? dim2 : 1;
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= outer * inner) return;  // outer * inner: out's element count (batch_size * dim2 for reduce_dim 1)
  const long long o = i / inner, in = i % inner;
  const float *p = x + o * n * inner + in;
  double sum = 0.0;
  for (long long k = 0; k < n; ++k) sum += p[k * inner];
  out[i] = (float)sum;
}
