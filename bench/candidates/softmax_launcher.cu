// Host-launcher form of kernels/softmax/softmax.cu (the nvcc path of bench/eval_latency.cpp):
// the same kernel, one block of BLOCK threads per row, launched by kwb_launch on the stream it
// is handed. args[i] points at the i-th argument of the task's `args` list
// ["x", "y", "rows", "cols"]: a device pointer for a tensor, a long long for a size.
// BLOCK comes from the task's tunables as -DBLOCK=<value>.
#include <cuda_runtime.h>

#ifndef BLOCK
#define BLOCK 256
#endif

static __global__ void __launch_bounds__(BLOCK)
softmax_rows(const float *__restrict__ x, float *__restrict__ y, long long rows, long long cols) {
  __shared__ float scratch[BLOCK];
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float *in = x + row * cols;
  float *out = y + row * cols;

  float m = __int_as_float(0xff800000);  // -inf
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

extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {
  const float *x = *static_cast<const float *const *>(args[0]);
  float *y = *static_cast<float *const *>(args[1]);
  const long long rows = *static_cast<const long long *>(args[2]);
  const long long cols = *static_cast<const long long *>(args[3]);
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;  // one block per row: grid.x limit
  softmax_rows<<<static_cast<unsigned>(rows), BLOCK, 0, stream>>>(x, y, rows, cols);
  return cudaGetLastError();
}
