// transpose.cu: a simple, correct candidate for problems/transpose.py
// (torch.transpose(x, 0, 1).contiguous(), x [rows, cols], out [cols, rows]).
// One thread per element of out (out[c][r] = x[r][c]): writes coalesced, reads strided.
// args = x, out, rows, cols.
extern "C" __global__ void transpose_kernel(const float *__restrict__ x, float *__restrict__ out,
                                            long long rows, long long cols) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= cols * rows) return;
  const long long c = i / rows, r = i % rows;
  out[i] = x[r * cols + c];
}
