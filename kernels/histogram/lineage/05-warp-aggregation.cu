// Step 5 of 6 — warp aggregation (pays only on skewed data)
// Adds: before each shared-memory atomic, the lanes of a warp holding the same byte value find
// each other with __match_any_sync and only the lowest of them adds the group's size (popc of
// the match mask): one atomic per distinct value per warp instead of one per lane. This pays only
// on skewed data such as images, where a warp often sees few distinct values; on this task's
// uniform random bytes a warp's 32 values are almost all distinct, so the match instructions are
// pure overhead and this step is expected to be SLOWER than step 4 on the H200 (measured ~18x
// slower at n = 2^30: 8.2 ms against 0.47 ms).
// Relies on: step 4 (per-warp shared-memory bins, 16-byte loads, scalar tail).
// Launch: grid min(ceil_div(n, 4096), 1056), block 256.
#define THREADS 256
#define WARPS (THREADS / 32)

// Counts value b (0..255) of every lane with valid set; invalid lanes pass b = 256, which
// matches no valid value, and add nothing. All 32 lanes must call this (full-mask match).
__device__ __forceinline__ void count_aggregated(int *h, unsigned b, bool valid, unsigned lane) {
  const unsigned peers = __match_any_sync(0xffffffffu, b);
  if (valid && lane == (unsigned)(__ffs(peers) - 1)) atomicAdd(&h[b], __popc(peers));
}

__device__ __forceinline__ void count4(int *h, unsigned w, bool valid, unsigned lane) {
  count_aggregated(h, valid ? (w & 0xffu) : 256u, valid, lane);
  count_aggregated(h, valid ? ((w >> 8) & 0xffu) : 256u, valid, lane);
  count_aggregated(h, valid ? ((w >> 16) & 0xffu) : 256u, valid, lane);
  count_aggregated(h, valid ? (w >> 24) : 256u, valid, lane);
}

extern "C" __global__ void __launch_bounds__(THREADS)
histogram_warp_agg(const unsigned char *__restrict__ data, int *__restrict__ bins, long long n) {
  __shared__ int local[WARPS * 256];
  for (int k = threadIdx.x; k < WARPS * 256; k += THREADS) local[k] = 0;
  __syncthreads();
  const unsigned lane = threadIdx.x & 31;
  int *h = local + (threadIdx.x / 32) * 256;
  const bool aligned = (reinterpret_cast<unsigned long long>(data) & 15) == 0;
  const long long n16 = aligned ? n / 16 : 0;
  const uint4 *__restrict__ d4 = reinterpret_cast<const uint4 *>(data);
  const long long gtid = (long long)blockIdx.x * THREADS + threadIdx.x;
  const long long stride = (long long)gridDim.x * THREADS;
  // Warp-uniform trip count (the loop runs on the warp's first index), so every lane reaches
  // every __match_any_sync; lanes past the end are invalid.
  for (long long base = gtid - lane; base < n16; base += stride) {
    const long long i = base + lane;
    const bool valid = i < n16;
    const uint4 v = valid ? d4[i] : make_uint4(0u, 0u, 0u, 0u);
    count4(h, v.x, valid, lane);
    count4(h, v.y, valid, lane);
    count4(h, v.z, valid, lane);
    count4(h, v.w, valid, lane);
  }
  for (long long j = 16 * n16 + gtid; j < n; j += stride) atomicAdd(&h[data[j]], 1);  // tail, plain
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += THREADS) {
    int total = 0;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) total += local[w * 256 + b];
    if (total) atomicAdd(&bins[b], total);
  }
}
