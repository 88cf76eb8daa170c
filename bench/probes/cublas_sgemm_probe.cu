// Where a cuBLAS SGEMM's time goes, measured the ways kwb could time it (issue 15, gap 8): back to
// back (what "cublasSgemm alone" measures), one call after an L2 flush (events), the host clock
// from the call to the stream's completion, with cublasSetStream each time, and an empty sync.
//   nvcc -O2 -arch=sm_90 -o cublas_sgemm_probe bench/probes/cublas_sgemm_probe.cu -lcublas
//   ./cublas_sgemm_probe 512; ./cublas_sgemm_probe 4096
// Results: tests/bench/results/2026-12-02-h200-cublas-sgemm-probe.txt
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cublas_v2.h>
static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 512;
  float *A, *B, *C, *flush;
  size_t bytes = size_t(n) * n * 4, flushBytes = 256 << 20;
  cudaMalloc(&A, bytes); cudaMalloc(&B, bytes); cudaMalloc(&C, bytes); cudaMalloc(&flush, flushBytes);
  cudaMemset(A, 0, bytes); cudaMemset(B, 0, bytes);
  cudaStream_t s; cudaStreamCreate(&s);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const float one = 1, zero = 0;
  auto t0 = std::chrono::steady_clock::now();
  cublasHandle_t h; cublasCreate(&h);
  double createUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  cublasSetStream(h, s);
  t0 = std::chrono::steady_clock::now();
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n); cudaStreamSynchronize(s);
  double firstUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  // (a) back to back, events around 100 calls
  cudaEventRecord(e0, s);
  for (int i = 0; i < 100; ++i) cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n);
  cudaEventRecord(e1, s); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  double backToBackUs = ms * 1000 / 100;
  // (b) one call after an L2 flush, events; (c) host clock call -> sync; (d) empty round trip
  std::vector<double> ev, host, hostSetStream, empty;
  for (int i = 0; i < 50; ++i) {
    cudaMemsetAsync(flush, i, flushBytes, s); cudaStreamSynchronize(s);
    cudaEventRecord(e0, s);
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n);
    cudaEventRecord(e1, s); cudaEventSynchronize(e1); cudaEventElapsedTime(&ms, e0, e1); ev.push_back(ms * 1000);
    cudaMemsetAsync(flush, i, flushBytes, s); cudaStreamSynchronize(s);
    auto a = std::chrono::steady_clock::now();
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n); cudaStreamSynchronize(s);
    host.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
    cudaMemsetAsync(flush, i, flushBytes, s); cudaStreamSynchronize(s);
    a = std::chrono::steady_clock::now();
    cublasSetStream(h, s);
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, B, n, A, n, &zero, C, n); cudaStreamSynchronize(s);
    hostSetStream.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
    a = std::chrono::steady_clock::now();
    cudaStreamSynchronize(s);
    empty.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count());
  }
  printf("n=%d cublasCreate %.1f us, first call+sync %.1f us, back-to-back %.2f us/call,\n"
         "  after flush (events) median %.2f us, host clock call->sync median %.2f us, with setStream %.2f us, empty sync %.2f us\n",
         n, createUs, firstUs, backToBackUs, median(ev), median(host), median(hostSetStream), median(empty));
  return 0;
}
