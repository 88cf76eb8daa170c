// Step 1 of 8 — naive
// Adds: nothing yet: one thread per element of C, a plain dot product over K. threadIdx.x walks
// ROWS of C, so the 32 threads of a warp read A at a stride of K floats and write C at a stride
// of N floats: every access is its own 32-byte sector (uncoalesced), and B is a broadcast.
// Relies on: nothing.
#define BS 32  // the block is BS x BS threads

extern "C" __global__ void __launch_bounds__(BS * BS)
sgemm_naive(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
            long long M, long long N, long long K) {
  const long long row = (long long)blockIdx.x * BS + threadIdx.x;  // x -> row: uncoalesced
  const long long col = (long long)blockIdx.y * BS + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (long long k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
