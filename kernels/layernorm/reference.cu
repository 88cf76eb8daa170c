// Reference layer normalisation: one block of 256 threads per row; the mean, then the biased
// variance as the mean of (x - mean)^2 (two passes, no cancellation), both accumulated in double;
// then y = (x - mean) / sqrt(var + 1e-5) * gamma + beta, evaluated in double and rounded once.
// Trusted and simple; not fast.
extern "C" __global__ void layernorm_reference(const float *__restrict__ x, const float *__restrict__ gamma,
                                               const float *__restrict__ beta, float *__restrict__ y,
                                               long long rows, long long cols) {
  __shared__ double scratch[256];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;

  double sum = 0.0;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) sum += (double)in[c];
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const double mean = scratch[0] / (double)cols;
  __syncthreads();  // everyone has read scratch[0] before it is overwritten

  double sq = 0.0;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
    const double d = (double)in[c] - mean;
    sq += d * d;
  }
  scratch[threadIdx.x] = sq;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const double var = scratch[0] / (double)cols;
  const double rstd = 1.0 / sqrt(var + 1e-5);

  for (long long c = threadIdx.x; c < cols; c += blockDim.x)
    out[c] = (float)(((double)in[c] - mean) * rstd * (double)gamma[c] + (double)beta[c]);
}
