// Reference row softmax: one block of 256 threads per row, three passes over the row
// (max, sum of exponentials, normalise), block reductions through shared memory.
// Trusted and simple; not fast.
extern "C" __global__ void softmax_reference(const float *__restrict__ x, float *__restrict__ y,
                                             long long rows, long long cols) {
  __shared__ float scratch[256];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;

  float m = __int_as_float(0xff800000);  // -inf (NVRTC has no math.h macros)
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
  scratch[threadIdx.x] = m;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  const float rowMax = scratch[0];
  __syncthreads();

  float sum = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(in[c] - rowMax);
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / scratch[0];

  for (long long c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - rowMax) * inv;
}
