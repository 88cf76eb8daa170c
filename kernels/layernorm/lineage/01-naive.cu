// Step 1 of 6 — naive
// Adds: the baseline: one block of BLOCK threads per row and three passes over the row in global
//   memory: the mean, the variance as the mean of (x - mean)^2 (two-pass: no cancellation), then
//   normalise and write. Each reduction is a shared-memory tree with a __syncthreads per level.
//   Reads x three times (the re-reads mostly hit in L1/L2), writes y once.
//   H200, BLOCK = 512: h200 16384x8192 306 us; narrow 65536x256 399 us.
// Relies on: nothing
#ifndef BLOCK
#define BLOCK 512  // lineage.toml sets BLOCK = 512
#endif

extern "C" __global__ void
layernorm(const float *__restrict__ x, const float *__restrict__ gamma, const float *__restrict__ beta,
          float *__restrict__ y, long long rows, long long cols) {
  __shared__ float scratch[BLOCK];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;

  float sum = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += BLOCK) sum += in[c];
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const float mean = scratch[0] / (float)cols;
  __syncthreads();

  float sq = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += BLOCK) {
    const float d = in[c] - mean;
    sq += d * d;
  }
  scratch[threadIdx.x] = sq;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const float rstd = rsqrtf(scratch[0] / (float)cols + 1e-5f);

  for (long long c = threadIdx.x; c < cols; c += BLOCK) out[c] = (in[c] - mean) * rstd * gamma[c] + beta[c];
}
