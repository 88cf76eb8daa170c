// matmul.cu: a simple, correct candidate for problems/matmul.py (torch.matmul(A, B), A [M, K],
// B [K, N], out [M, N]). One thread per element of out, each a dot product over K in double.
// args = A, B, out, M, K, N.
extern "C" __global__ void matmul_kernel(const float *__restrict__ A, const float *__restrict__ B,
                                         float *__restrict__ out, long long M, long long K, long long N) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  const long long row = i / N, col = i % N;
  const float *a = A + row * K;
  const float *b = B + col;
  double acc = 0.0;
  for (long long k = 0; k < K; ++k) acc += (double)a[k] * (double)b[k * N];
  out[i] = (float)acc;
}
