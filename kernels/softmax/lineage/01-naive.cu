// Step 1 of 5 — naive
// Adds: the baseline: one block of BLOCK threads per row, three passes over the row in global
//   memory (row max, sum of exponentials, normalise and write), each reduction a shared-memory
//   tree with a __syncthreads per level. Reads x three times (the re-reads mostly hit in L1/L2),
//   writes y once. H200, BLOCK = 512, 8192x8192: 154 us (3.5 TB/s of useful traffic).
// Relies on: nothing
#ifndef BLOCK
#define BLOCK 512  // lineage.toml sets BLOCK = 512
#endif

#define NEG_INF __int_as_float(0xff800000)  // -inf (NVRTC has no math.h macros)

extern "C" __global__ void
softmax(const float *__restrict__ x, float *__restrict__ y, long long rows, long long cols) {
  __shared__ float scratch[BLOCK];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;

  // Pass 1: row maximum.
  float m = NEG_INF;
  for (long long c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, in[c]);
  scratch[threadIdx.x] = m;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  const float rowMax = scratch[0];
  __syncthreads();  // everyone has read scratch[0] before it is overwritten

  // Pass 2: sum of exp(x - max).
  float sum = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += BLOCK) sum += __expf(in[c] - rowMax);
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / scratch[0];

  // Pass 3: normalise.
  for (long long c = threadIdx.x; c < cols; c += BLOCK) out[c] = __expf(in[c] - rowMax) * inv;
}
