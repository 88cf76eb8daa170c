// Host emulation of the CUDA runtime, for checking kwb_starter.py's launchers on a machine with
// no GPU: the starter's .cu is compiled by g++ with this folder first on the include path, after
// check_starter.py rewrote each `kernel<<<blocks, threads, 0, stream>>>(args)` launch into
// `kwb_emulate_launch(blocks, threads, kernel, args)`. Kernels run one emulated thread after
// another, which is exact for the starter's kernels: none uses shared memory, __syncthreads or
// atomics (each thread writes only its own outputs). Memory is host memory: the test passes host
// pointers where the GPU would take device pointers.
#pragma once
#include <math.h>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

struct dim3 {
  unsigned int x, y, z;
};

inline thread_local dim3 blockIdx = {0, 0, 0};
inline thread_local dim3 threadIdx = {0, 0, 0};
inline thread_local dim3 blockDim = {1, 1, 1};
inline thread_local dim3 gridDim = {1, 1, 1};

typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 };
typedef struct kwb_emulated_stream *cudaStream_t;

inline cudaError_t cudaMallocAsync(void **ptr, size_t bytes, cudaStream_t) {
  // Fresh allocations hold NaN patterns so a kernel that reads what nobody wrote shows.
  *ptr = std::malloc(bytes ? bytes : 1);
  if (!*ptr) return cudaErrorMemoryAllocation;
  std::memset(*ptr, 0xff, bytes);
  return cudaSuccess;
}

inline cudaError_t cudaFreeAsync(void *ptr, cudaStream_t) {
  std::free(ptr);
  return cudaSuccess;
}

inline cudaError_t cudaGetLastError() { return cudaSuccess; }

template <typename... P, typename... A>
void kwb_emulate_launch(unsigned int blocks, unsigned int threads, void (*kernel)(P...), A... args) {
  gridDim = {blocks, 1, 1};
  blockDim = {threads, 1, 1};
  for (unsigned int b = 0; b < blocks; ++b)
    for (unsigned int t = 0; t < threads; ++t) {
      blockIdx = {b, 0, 0};
      threadIdx = {t, 0, 0};
      kernel(args...);
    }
}
