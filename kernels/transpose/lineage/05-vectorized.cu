// Step 5 of 5 — vectorized float4 loads and stores
// Adds: tiles are moved with 16-byte accesses: each of 128 threads loads 2 float4 from `in` and
//   stores 2 float4 to `out` (4 consecutive rows of `in` gathered from shared memory), so a quarter of
//   the memory instructions carry the same bytes. The tile's float4 chunks are XOR-swizzled (chunk q
//   of row r stored at q ^ ((r / 4) % 8)) instead of padded, which keeps the float4 shared stores
//   aligned and both shared-memory phases free of bank conflicts. Tiles not fully inside the matrix,
//   or a matrix whose rows/cols are not multiples of 4 or whose pointers are not 16-byte aligned, take
//   a bounds-checked scalar path through the same tile (the "odd" configuration runs only that path).
// Measured on an H200 (16384^2): TDIM 32 x 128 threads beat 64x64 tiles (256 threads: 71% of copy).
// Pays on large aligned matrices only (suite 2026-11-30: 588 us against 614 us at 16384^2). The odd
// configuration runs only the scalar path, now with 128 threads and 8 elements each per tile where
// step 4 had 256 threads and 4 each: 5.2 us against 3.1 us; small (1024^2) 3.4 us against 3.2 us.
// Relies on: step 4 (a shared-memory tile, several elements per thread)
#define TDIM 32       // the tile is TDIM x TDIM floats: TDIM rows of TDIM / 4 float4 chunks
#define THREADS 128
#define CPR (TDIM / 4)                              // float4 chunks per tile row
#define LOADS (TDIM * CPR / THREADS)                // float4 loads (and stores) per thread
#define UNITS (CPR * (TDIM / 32) / (THREADS / 32))  // store-phase warp units per warp

// Word offset of element (r, c) of the tile: row r, float4 chunk (c / 4) swizzled, lane c % 4.
__device__ __forceinline__ int swz(int r, int c) {
  return r * TDIM + 4 * ((c >> 2) ^ ((r >> 2) & 7)) + (c & 3);
}

extern "C" __global__ void __launch_bounds__(THREADS)
transpose_vec4(const float *__restrict__ in, float *__restrict__ out, long long rows, long long cols) {
  __shared__ __align__(16) float s[TDIM * TDIM];
  const long long r0 = (long long)blockIdx.y * TDIM, c0 = (long long)blockIdx.x * TDIM;
  const int t = threadIdx.x;
  const bool vec = r0 + TDIM <= rows && c0 + TDIM <= cols && ((rows | cols) & 3) == 0 &&
                   (((unsigned long long)in | (unsigned long long)out) & 15) == 0;
  if (vec) {
    // Load: a warp reads whole row segments of the tile (TDIM * 4 bytes each) per instruction.
    float4 v[LOADS];
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      const int idx = i * THREADS + t, r = idx / CPR, q = idx % CPR;
      v[i] = __ldg(reinterpret_cast<const float4 *>(in + (r0 + r) * cols + c0) + q);
    }
#pragma unroll
    for (int i = 0; i < LOADS; ++i) {
      // A quarter-warp stores 8 chunks of one row; the XOR permutes them within their group of 8.
      const int idx = i * THREADS + t, r = idx / CPR, q = idx % CPR;
      *reinterpret_cast<float4 *>(&s[swz(r, 4 * q)]) = v[i];
    }
  } else {
    // Scalar: a warp reads 32 consecutive columns of one row.
#pragma unroll 4
    for (int i = 0; i < TDIM * TDIM / THREADS; ++i) {
      const int idx = i * THREADS + t, r = idx / TDIM, c = idx % TDIM;
      if (r0 + r < rows && c0 + c < cols) s[swz(r, c)] = in[(r0 + r) * cols + c0 + c];
    }
  }
  __syncthreads();
  if (vec) {
    // Store: out row c0 + j (column j of the tile) gets rows 4p..4p+3 of the tile as one float4.
    // A warp unit covers tile columns 4*jg..4*jg+3 (lane % 4) and row groups p = 8*pg + lane / 4:
    // 4 out rows x 128 contiguous bytes. The 32 lanes' scalar shared reads hit banks
    // 4 * ((jg ^ p) % 8) + lane % 4: all different.
    const int lane = t & 31, warp = t >> 5;
#pragma unroll
    for (int i = 0; i < UNITS; ++i) {
      const int w = i * (THREADS / 32) + warp, jg = w / (TDIM / 32), pg = w % (TDIM / 32);
      const int j = 4 * jg + (lane & 3), p = 8 * pg + (lane >> 2);
      float4 o;
      o.x = s[swz(4 * p + 0, j)];
      o.y = s[swz(4 * p + 1, j)];
      o.z = s[swz(4 * p + 2, j)];
      o.w = s[swz(4 * p + 3, j)];
      *reinterpret_cast<float4 *>(out + (c0 + j) * rows + r0 + 4 * p) = o;
    }
  } else {
#pragma unroll 4
    for (int i = 0; i < TDIM * TDIM / THREADS; ++i) {
      const int idx = i * THREADS + t, j = idx / TDIM, r = idx % TDIM;
      if (c0 + j < cols && r0 + r < rows) out[(c0 + j) * rows + r0 + r] = s[swz(r, j)];
    }
  }
}
