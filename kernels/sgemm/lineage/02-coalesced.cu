// Step 2 of 8 — global-memory coalescing
// Adds: swaps the thread mapping so threadIdx.x walks COLUMNS of C: a warp now reads 32
// consecutive floats of B and writes 32 consecutive floats of C (one 128-byte line each), and its
// A element is one broadcast load. Same arithmetic, several times less memory traffic.
// Relies on: step 1 (one thread per output element).
#define BS 32  // the block is BS x BS threads

extern "C" __global__ void __launch_bounds__(BS * BS)
sgemm_coalesced(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                long long M, long long N, long long K) {
  const long long col = (long long)blockIdx.x * BS + threadIdx.x;  // x -> column: coalesced
  const long long row = (long long)blockIdx.y * BS + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (long long k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
  C[row * N + col] = acc;
}
