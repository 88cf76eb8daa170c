// Reference sum: each block of 256 threads sums one contiguous chunk of 65536 elements; thread t
// reads chunk[t], chunk[t + 256], ... (coalesced) and accumulates in double; a shared-memory
// tree in double; thread 0 adds the block's sum into out with one atomicAdd (out starts at 0).
// Trusted and simple; not fast. Launch: grid ceil_div(n, 65536), block 256.
extern "C" __global__ void reduce_sum_reference(const float *__restrict__ x, float *__restrict__ out,
                                                long long n) {
  __shared__ double partial[256];
  const long long begin = (long long)blockIdx.x * 65536;
  long long end = begin + 65536;
  if (end > n) end = n;
  double sum = 0.0;
  for (long long i = begin + threadIdx.x; i < end; i += 256) sum += (double)x[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, (float)partial[0]);
}
