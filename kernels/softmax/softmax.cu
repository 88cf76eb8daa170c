// Starting point for optimization: the reference algorithm with the block size as a tunable.
// BLOCK (threads per row) comes from the task's tunables as -DBLOCK=<value>.
#ifndef BLOCK
#define BLOCK 256
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax(const float *__restrict__ x, float *__restrict__ y, long long rows, long long cols) {
  __shared__ float scratch[BLOCK];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;

  float m = __int_as_float(0xff800000);  // -inf (NVRTC has no math.h macros)
  for (long long c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, in[c]);
  scratch[threadIdx.x] = m;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  const float rowMax = scratch[0];
  __syncthreads();

  float sum = 0.0f;
  for (long long c = threadIdx.x; c < cols; c += BLOCK) sum += __expf(in[c] - rowMax);
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / scratch[0];

  for (long long c = threadIdx.x; c < cols; c += BLOCK) out[c] = __expf(in[c] - rowMax) * inv;
}
