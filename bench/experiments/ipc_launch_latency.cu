// Where does a host launcher's extra time go? (issue 15's note: the same softmax kernel read about
// 0.2 ms more from kwb_launch in its own process than as device code in the worker.)
//
// A parent process (the worker's role) owns x and y and an L2 flush buffer; a forked child (the
// host launcher's process) maps x and y through CUDA IPC or uses buffers of its own, and on each
// request launches a kernel between two CUDA events on its stream, synchronises, and answers with
// its event time and its own host time. The parent times the round trip on its clock after a
// flush kernel of its own, as the worker's time command does. Variants:
//   ipc      the kernel reads x, writes y through the IPC mappings (the worker's case)
//   own      the same kernel on the child's own buffers
//   empty    an empty kernel (the clean launcher's case)
//   ipc-noflush  as ipc, without the parent's flush kernel before each request
//   ipc-gated    as ipc, but the GPU is switched to the child's context before the clock starts
//                without running the child: after each answer the child leaves a stream wait on
//                a word of shared host memory (cuStreamWaitValue32) and a write of another word
//                after it; the parent, after its flush, opens the gate with a store and spins
//                until the child's context has written the acknowledgement, then times the
//                request as for ipc. The child process is stopped (SIGSTOP) between requests
//                here, as the worker stops a host launcher's process, so only the GPU works
//                during the gate. Its "gate" column is the parent's spin, untimed in the figure.
// Prints a table (medians over 200 samples, microseconds) and writes it as JSON to argv[1].
//   nvcc -O2 -o ipc_launch_latency ipc_launch_latency.cu -lcuda && ./ipc_launch_latency out.json
#include <cuda.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t kElements = 1 << 21;  // 8 MiB of floats, softmax's "small"
constexpr int kSamples = 200, kWarmup = 20;

__global__ void scale(const float *x, float *y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] = 2.0f * x[i];
}
__global__ void empty() {}
__global__ void flushL2(const int4 *buf, size_t n, int *sink) {
  int acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const int4 v = __ldcg(buf + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678) *sink = acc;
}

void check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

bool readAll(int fd, void *p, size_t n) {
  auto *c = static_cast<char *>(p);
  while (n) {
    const ssize_t r = ::read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}
bool writeAll(int fd, const void *p, size_t n) {
  const auto *c = static_cast<const char *>(p);
  while (n) {
    const ssize_t r = ::write(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

struct Request { int variant; unsigned next; };  // 0 ipc, 1 own, 2 empty, 3 ipc then gate `next`; -1 quit
// Host memory shared by both processes (mapped before the fork), registered in each: the gate the
// parent opens and the acknowledgement the child's context writes.
struct Gate { volatile unsigned open, ack; };
Gate *gate = nullptr;

void check(CUresult e, const char *what) {
  if (e != CUDA_SUCCESS) {
    const char *text = nullptr;
    cuGetErrorString(e, &text);
    std::fprintf(stderr, "%s: %s\n", what, text ? text : "?");
    std::exit(1);
  }
}
struct Answer { float eventMs; double hostMs; };  // the child's event time and own host time

void child(int in, int out) {
  cudaIpcMemHandle_t hx, hy;
  if (!readAll(in, &hx, sizeof hx) || !readAll(in, &hy, sizeof hy)) std::exit(2);
  check(cudaSetDevice(0), "child device");
  float *x = nullptr, *y = nullptr, *ox = nullptr, *oy = nullptr;
  check(cudaIpcOpenMemHandle(reinterpret_cast<void **>(&x), hx, cudaIpcMemLazyEnablePeerAccess), "open x");
  check(cudaIpcOpenMemHandle(reinterpret_cast<void **>(&y), hy, cudaIpcMemLazyEnablePeerAccess), "open y");
  check(cudaMalloc(&ox, kElements * sizeof(float)), "own x");
  check(cudaMalloc(&oy, kElements * sizeof(float)), "own y");
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  check(cudaHostRegister((void *)gate, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable), "child register gate");
  CUdeviceptr openWord = 0, ackWord = 0;
  {
    void *d = nullptr;
    check(cudaHostGetDevicePointer(&d, (void *)gate, 0), "child gate pointer");
    openWord = reinterpret_cast<CUdeviceptr>(d) + offsetof(Gate, open);
    ackWord = reinterpret_cast<CUdeviceptr>(d) + offsetof(Gate, ack);
  }
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  const char ready = 'r';
  writeAll(out, &ready, 1);
  Request rq;
  while (readAll(in, &rq, sizeof rq) && rq.variant >= 0) {
    const auto t0 = std::chrono::steady_clock::now();
    cudaEventRecord(a, s);
    if (rq.variant == 0 || rq.variant == 3) scale<<<264, 256, 0, s>>>(x, y, kElements);
    else if (rq.variant == 1) scale<<<264, 256, 0, s>>>(ox, oy, kElements);
    else empty<<<1, 32, 0, s>>>();
    cudaEventRecord(b, s);
    check(cudaDeviceSynchronize(), "child sync");
    Answer an{};
    cudaEventElapsedTime(&an.eventMs, a, b);
    an.hostMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (rq.variant == 3) {  // the next request's gate, left on the stream before answering
      check(cuStreamWaitValue32(reinterpret_cast<CUstream>(s), openWord, rq.next, CU_STREAM_WAIT_VALUE_GEQ), "wait value");
      check(cuStreamWriteValue32(reinterpret_cast<CUstream>(s), ackWord, rq.next, CU_STREAM_WRITE_VALUE_DEFAULT), "write value");
    }
    writeAll(out, &an, sizeof an);
  }
  std::exit(0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
  int toChild[2], toParent[2];
  if (pipe(toChild) || pipe(toParent)) return 1;
  gate = static_cast<Gate *>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (gate == MAP_FAILED) return 1;
  gate->open = gate->ack = 0;
  const pid_t pid = fork();  // before any CUDA call in this process
  if (pid == 0) {
    close(toChild[1]);
    close(toParent[0]);
    child(toChild[0], toParent[1]);
  }
  close(toChild[0]);
  close(toParent[1]);
  check(cudaSetDevice(0), "device");
  float *x = nullptr, *y = nullptr;
  int4 *flush = nullptr;
  int *sink = nullptr;
  const size_t flushVectors = (size_t(256) << 20) / sizeof(int4);
  check(cudaMalloc(&x, kElements * sizeof(float)), "x");
  check(cudaMalloc(&y, kElements * sizeof(float)), "y");
  check(cudaMalloc(&flush, flushVectors * sizeof(int4)), "flush");
  check(cudaMalloc(&sink, sizeof(int)), "sink");
  check(cudaMemset(x, 0, kElements * sizeof(float)), "x");
  check(cudaMemset(flush, 0, flushVectors * sizeof(int4)), "flush");
  cudaIpcMemHandle_t hx, hy;
  check(cudaIpcGetMemHandle(&hx, x), "handle x");
  check(cudaIpcGetMemHandle(&hy, y), "handle y");
  writeAll(toChild[1], &hx, sizeof hx);
  writeAll(toChild[1], &hy, sizeof hy);
  char ready = 0;
  if (!readAll(toParent[0], &ready, 1)) return 1;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);

  // The same kernel in this process, timed with events after a flush: device code's case.
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<double> local;
  for (int i = 0; i < kWarmup + kSamples; ++i) {
    flushL2<<<4 * sms, 512>>>(flush, flushVectors, sink);
    cudaDeviceSynchronize();
    cudaEventRecord(a);
    scale<<<264, 256>>>(x, y, kElements);
    cudaEventRecord(b);
    cudaDeviceSynchronize();
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (i >= kWarmup) local.push_back(ms * 1e3);
  }

  check(cudaHostRegister((void *)gate, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable), "register gate");
  struct Row { const char *name; int variant; bool flushFirst; double roundTrip, event, host, gate; };
  std::vector<Row> rows = {{"ipc", 0, true}, {"own", 1, true}, {"empty", 2, true}, {"ipc-noflush", 0, false},
                           {"ipc-gated", 3, true}};
  unsigned sequence = 0;
  bool gated = false;  // the child has left a gate for `sequence` on its stream
  for (auto &row : rows) {
    std::vector<double> trip, event, host, gateUs;
    for (int i = 0; i < kWarmup + kSamples; ++i) {
      if (row.flushFirst) flushL2<<<4 * sms, 512>>>(flush, flushVectors, sink);
      cudaDeviceSynchronize();
      double gateMs = 0;
      if (gated) {  // open it; the child process is stopped meanwhile
        const auto g0 = std::chrono::steady_clock::now();
        __sync_synchronize();
        gate->open = sequence;
        __sync_synchronize();
        while (gate->ack != sequence) {
          if (std::chrono::steady_clock::now() - g0 > std::chrono::seconds(5)) {
            std::fprintf(stderr, "the gate was not acknowledged within 5 s\n");
            return 1;
          }
        }
        gateMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g0).count();
      }
      kill(pid, SIGCONT);
      const auto t0 = std::chrono::steady_clock::now();
      Request rq{row.variant, sequence + 1};
      Answer an{};
      if (!writeAll(toChild[1], &rq, sizeof rq) || !readAll(toParent[0], &an, sizeof an)) return 1;
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      kill(pid, SIGSTOP);
      gated = row.variant == 3;
      if (gated) ++sequence;
      if (i < kWarmup) continue;
      trip.push_back(ms * 1e3);
      event.push_back(an.eventMs * 1e3);
      host.push_back(an.hostMs * 1e3);
      gateUs.push_back(gateMs * 1e3);
    }
    row.roundTrip = median(trip);
    row.event = median(event);
    row.host = median(host);
    row.gate = median(gateUs);
  }
  if (gated) {  // let the child's stream past its last gate
    gate->open = sequence;
    __sync_synchronize();
  }
  kill(pid, SIGCONT);
  Request quit{-1, 0};
  writeAll(toChild[1], &quit, sizeof quit);
  waitpid(pid, nullptr, 0);

  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s, %zu floats, medians of %d samples (us)\n", prop.name, kElements, kSamples);
  std::printf("%-12s %12s %12s %12s %12s\n", "variant", "round trip", "child event", "child host", "gate");
  std::printf("%-12s %12s %12.1f %12s %12s\n", "in-process", "-", median(local), "-", "-");
  for (const auto &r : rows)
    std::printf("%-12s %12.1f %12.1f %12.1f %12.1f\n", r.name, r.roundTrip, r.event, r.host, r.gate);
  if (argc > 1) {
    if (FILE *f = std::fopen(argv[1], "w")) {
      std::fprintf(f, "{\"gpu\": \"%s\", \"elements\": %zu, \"samples\": %d, \"in_process_event_us\": %.2f, \"rows\": [",
                   prop.name, kElements, kSamples, median(local));
      for (size_t i = 0; i < rows.size(); ++i)
        std::fprintf(f, "%s{\"variant\": \"%s\", \"round_trip_us\": %.2f, \"child_event_us\": %.2f, \"child_host_us\": %.2f, "
                        "\"gate_us\": %.2f}",
                     i ? ", " : "", rows[i].name, rows[i].roundTrip, rows[i].event, rows[i].host, rows[i].gate);
      std::fprintf(f, "]}\n");
      std::fclose(f);
    }
  }
  return 0;
}
