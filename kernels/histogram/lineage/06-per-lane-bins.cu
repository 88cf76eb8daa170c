// Step 6 of 6 — bank-conflict-free per-lane sub-histograms
// Adds: the block keeps 32 copies of the bins, one per lane index, interleaved so that lane l's
// counter for bin b is word b * 32 + l: it always lies in bank l, so the 32 atomics of a warp
// instruction never collide in a bank or on a word, whatever the data (the per-warp bins of
// step 4 still collide: among 32 random bins the busiest bank typically serves 3-4 lanes).
// 32 KiB per block of 512 threads, 4 blocks per SM; the merge sums each bin's 32 copies (rotated
// by the bin so a warp's reads hit 32 banks) before one global atomicAdd.
// Relies on: step 4 (sub-histograms per group of threads, 16-byte loads, scalar tail, global
// merge); not step 5: warp aggregation does not pay on this task's uniform data.
// Launch: grid min(ceil_div(n, 8192), 528) (4 resident blocks per H200 SM), block 512.
#define THREADS 512

__device__ __forceinline__ void count4(int *h, unsigned w) {  // h = local + lane
  atomicAdd(&h[(w & 0xffu) * 32], 1);
  atomicAdd(&h[((w >> 8) & 0xffu) * 32], 1);
  atomicAdd(&h[((w >> 16) & 0xffu) * 32], 1);
  atomicAdd(&h[(w >> 24) * 32], 1);
}

extern "C" __global__ void __launch_bounds__(THREADS)
histogram_lane_bins(const unsigned char *__restrict__ data, int *__restrict__ bins, long long n) {
  __shared__ int local[256 * 32];  // [bin][lane]
  for (int k = threadIdx.x; k < 256 * 32; k += THREADS) local[k] = 0;
  __syncthreads();
  const unsigned lane = threadIdx.x & 31;
  int *h = local + lane;
  const bool aligned = (reinterpret_cast<unsigned long long>(data) & 15) == 0;
  const long long n16 = aligned ? n / 16 : 0;
  const uint4 *__restrict__ d4 = reinterpret_cast<const uint4 *>(data);
  const long long gtid = (long long)blockIdx.x * THREADS + threadIdx.x;
  const long long stride = (long long)gridDim.x * THREADS;
  for (long long i = gtid; i < n16; i += stride) {
    const uint4 v = d4[i];
    count4(h, v.x);
    count4(h, v.y);
    count4(h, v.z);
    count4(h, v.w);
  }
  for (long long j = 16 * n16 + gtid; j < n; j += stride) atomicAdd(&h[data[j] * 32], 1);  // tail
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += THREADS) {
    int total = 0;
#pragma unroll 8
    for (int l = 0; l < 32; ++l) total += local[b * 32 + ((l + b) & 31)];
    if (total) atomicAdd(&bins[b], total);
  }
}
