// max_dim.cu: a simple, correct candidate for problems/max_dim.py
// (torch.max(x, dim=dim)[0] of x [batch_size, dim1, dim2]; the task's out is [batch_size, dim2],
// dim = 1, but any dim of the 3-D x is reduced correctly). One thread per element of out.
// args = x, out, batch_size, dim1, dim2, dim (an integer [params] entry, passed as long long;
// named after Model.__init__'s parameter, since get_init_inputs returns a bare literal).
extern "C" __global__ void max_dim_kernel(const float *__restrict__ x, float *__restrict__ out,
                                          long long batch_size, long long dim1, long long dim2, long long dim) {
  const long long r = dim < 0 ? dim + 3 : dim;
  // x as [outer, n, inner]: n the reduced dimension's size, outer those before it, inner those after.
  const long long n = r == 0 ? batch_size : r == 1 ? dim1 : dim2;
  const long long outer = r == 0 ? 1 : r == 1 ? batch_size : batch_size * dim1;
  const long long inner = r == 0 ? dim1 * dim2 : r == 1 ? dim2 : 1;
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= outer * inner) return;  // outer * inner: out's element count (batch_size * dim2 for dim 1)
  const long long o = i / inner, in = i % inner;
  const float *p = x + o * n * inner + in;
  float m = p[0];
  for (long long k = 1; k < n; ++k) m = fmaxf(m, p[k * inner]);
  out[i] = m;
}
