// Reference SGEMM: one thread per element of C, a plain dot product over K.
// Threads along x walk columns of C, so loads of B and stores of C are coalesced.
// Trusted and simple; not fast.
extern "C" __global__ void sgemm_reference(const float *__restrict__ A, const float *__restrict__ B,
                                           float *__restrict__ C, long long M, long long N,
                                           long long K) {
  const long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long row = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (long long k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
