// Step 11 of 12 — TMA tile loads and wgmma (sm_90a)
// Adds: Hopper's own data path. The tensor memory accelerator copies each 128x64 tile of A and
//   256x64 tile of B from global to shared memory in one instruction (cp.async.bulk.tensor, issued
//   by one thread, described by a CUtensorMap made on the host, 128-byte swizzle, zero fill past the
//   edges of M, N and K), an mbarrier per stage counts the bytes in, and two warpgroups run
//   wgmma.mma_async m64n256k16 straight from shared memory (no ldmatrix, no fragments in registers:
//   each warpgroup's 64x256 accumulator is 128 f32 registers a thread).
// Relies on: step 10 (128x256x64 block tiles, a 4-stage pipeline, both operands K-major); sm_90a
//   (wgmma exists only on compute capability 9.0's architecture-specific target); a host launcher
//   (the tensor maps are made on the host, by cuTensorMapEncodeTiled).
//
// Every thread waits on a stage's barrier, both warpgroups multiply, then a __syncthreads() tells
// thread 0 the stage is free to refill: simple, but the whole block stops at every K-tile.
// Shared memory: 4 stages x (128 + 256) x 64 bf16 = 192 KiB (+ 1 KiB to align to 1024 bytes,
// which the 128-byte swizzle and the wgmma descriptors assume).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#define BM 128
#define BN 256
#define BK 64         // one 128-byte swizzle row of bf16
#define GROUP_M 8     // block rows per group of the block order (step 8)
#define STAGES 4
#define THREADS 256   // two warpgroups, each 64 rows x 256 columns of C

constexpr unsigned kTileA = BM * BK * 2, kTileB = BN * BK * 2;  // bytes per stage
constexpr unsigned kSharedBytes = STAGES * (kTileA + kTileB) + STAGES * 8 + 1024;

__device__ __forceinline__ unsigned smem_u32(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}
// One box of a 2-D tensor map (c0: the K coordinate, c1: the row) into shared memory; the
// barrier's transaction count goes down by the box's bytes when it lands (zeros past the edges).
__device__ __forceinline__ void tma_load(unsigned dst, const CUtensorMap *map, unsigned bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
// A wgmma shared-memory descriptor: a K-major tile of 128-byte rows in the 128-byte swizzle, rows
// in groups of 8 (1024 bytes apart); the start may move by 32 bytes per k16-step inside a row.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads or writes of the accumulators across the asynchronous MMA.
__device__ __forceinline__ void fence_accumulators(float (&d)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// D (64x256 f32, 128 registers a thread) += A (64x16, K-major, shared) * B (256x16, K-major, shared)^T.
__device__ __forceinline__ void wgmma_64x256x16(float (&d)[128], unsigned long long desc_a, unsigned long long desc_b) {
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      " %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      " %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      " %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      " %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, 1, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b));
}

// C tile rows [m0, m0 + 128), columns [n0, n0 + 256): warpgroup wg holds rows 64 wg .. 64 wg + 63
// in the wgmma accumulator layout (per warp 16 rows; per lane rows lane/4 and lane/4 + 8, column
// pairs 2 (lane % 4) of each group of 8 columns).
__device__ __forceinline__ void store_tile(float (&d)[128], float *__restrict__ C, int M, int N, int m0, int n0, int wg) {
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  const int row0 = m0 + wg * 64 + warp * 16 + lane / 4, col0 = n0 + 2 * (lane % 4);
  const bool pairs = (N % 2) == 0;
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const int col = col0 + 8 * j;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h;
      if (row >= M || col >= N) continue;
      float *p = C + (size_t)row * N + col;
      if (pairs && col + 1 < N) {
        *reinterpret_cast<float2 *>(p) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
      } else {
        p[0] = d[4 * j + 2 * h];
        if (col + 1 < N) p[1] = d[4 * j + 2 * h + 1];
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
    gemm_bf16_tma_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                        float *__restrict__ C, int M, int N, int K) {
  extern __shared__ unsigned char shared_raw[];
  const unsigned base = (smem_u32(shared_raw) + 1023) & ~1023u;  // the swizzle repeats every 1024 bytes
  const unsigned sa = base, sb = base + STAGES * kTileA, bars = sb + STAGES * kTileB;
  const unsigned tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const unsigned id = blockIdx.y * tiles_n + blockIdx.x;
  const unsigned group = id / (GROUP_M * tiles_n), first_m = group * GROUP_M;
  const unsigned rows_in_group = min(tiles_m - first_m, (unsigned)GROUP_M);
  const unsigned in_group = id - group * (GROUP_M * tiles_n);
  const int m0 = (first_m + in_group % rows_in_group) * BM, n0 = (in_group / rows_in_group) * BN;
  const int k_tiles = (K + BK - 1) / BK;
  const int wg = threadIdx.x / 128;

  auto load = [&](int stage, int kt) {
    const unsigned bar = bars + 8 * stage;
    mbar_expect_tx(bar, kTileA + kTileB);
    tma_load(sa + stage * kTileA, &map_a, bar, kt * BK, m0);
    tma_load(sb + stage * kTileB, &map_b, bar, kt * BK, n0);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) mbar_init(bars + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int s = 0; s < STAGES && s < k_tiles; ++s) load(s, s);
  }
  __syncthreads();

  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.f;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int stage = kt % STAGES;
    mbar_wait(bars + 8 * stage, (kt / STAGES) & 1);
    const unsigned a = sa + stage * kTileA + wg * (64 * BK * 2), b = sb + stage * kTileB;
    fence_accumulators(d);
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < BK / 16; ++k) wgmma_64x256x16(d, smem_desc(a + 32 * k), smem_desc(b + 32 * k));
    wgmma_commit();
    wgmma_wait<0>();
    fence_accumulators(d);
    __syncthreads();  // both warpgroups are done with this stage: refill it
    if (threadIdx.x == 0 && kt + STAGES < k_tiles) load(stage, kt + STAGES);
  }
  store_tile(d, C, M, N, m0, n0, wg);
}

// ---- host side: tensor maps and the launch ----
static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void *p = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}
// A [rows, K] bf16 row-major matrix read in boxes of box_rows x BK, 128-byte swizzle, zeros past its edges.
static bool make_map(CUtensorMap *map, const void *ptr, long long rows, long long K, unsigned box_rows) {
  const auto encode = encode_tiled();
  if (!encode) return false;
  const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
  const cuuint64_t strides[1] = {(cuuint64_t)K * 2};
  const cuuint32_t box[2] = {BK, box_rows};
  const cuuint32_t steps[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(ptr), dims, strides, box, steps,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// args: A, B, C, M, N, K (the task's args order).
extern "C" cudaError_t kwb_launch(void *const *args, cudaStream_t stream) {
  const void *A = *static_cast<const void *const *>(args[0]);
  const void *B = *static_cast<const void *const *>(args[1]);
  float *C = *static_cast<float *const *>(args[2]);
  const long long M = *static_cast<const long long *>(args[3]);
  const long long N = *static_cast<const long long *>(args[4]);
  const long long K = *static_cast<const long long *>(args[5]);
  if (M <= 0 || N <= 0) return cudaSuccess;
  if (K <= 0) return cudaMemsetAsync(C, 0, (size_t)M * N * sizeof(float), stream);
  // TMA wants 16-byte row strides (the task's K % 8 == 0) and sizes in 32 bits.
  if (K % 8 != 0 || M > 0x7fffffffLL || N > 0x7fffffffLL || K > 0x7fffffffLL) return cudaErrorInvalidValue;
  CUtensorMap map_a, map_b;
  if (!make_map(&map_a, A, M, K, BM) || !make_map(&map_b, B, N, K, BN)) return cudaErrorInvalidValue;
  static bool configured = false;
  if (!configured) {
    const cudaError_t e = cudaFuncSetAttribute(gemm_bf16_tma_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  const dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
  if (grid.y > 65535) return cudaErrorInvalidValue;
  gemm_bf16_tma_wgmma<<<grid, THREADS, kSharedBytes, stream>>>(map_a, map_b, C, (int)M, (int)N, (int)K);
  return cudaGetLastError();
}
