// Step 1 of 6 — global atomics
// Adds: the naive histogram with a fixed grid: min(ceil_div(n, 256), 1056) blocks of 256 threads
// (1056 = 8 resident blocks per H200 SM) walk the bytes with a grid-sized stride and add 1 to
// bins[data[i]] with an atomicAdd in global memory for every byte. Every element is an atomic on
// one of 256 hot L2 lines, so the L2's atomic units, not HBM, set the speed.
// Relies on: nothing (bins is inout, restored to 0 before every launch).
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS)
histogram_global(const unsigned char *__restrict__ data, int *__restrict__ bins, long long n) {
  const long long stride = (long long)gridDim.x * THREADS;
  for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n; i += stride)
    atomicAdd(&bins[data[i]], 1);
}
