#include "core/worker/server/compile_server.h"

#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compile/compile_wire.h"
#include "core/compile/nvrtc_compiler.h"
#include "core/sandbox/library_fence.h"
#include "core/worker/server/line_io.h"
#include "kwb/version.h"

namespace kwb::worker {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
namespace wire = kwb::compile_wire;

constexpr rlim_t kMinFileBytes = 256ull << 20;

// The line a signal handler writes for the request in progress: prepared before each compile,
// because a handler may only write and exit.
char gCpuReply[1024];
char gCrashReply[1024];
int gOut = -1;


extern "C" void onCpuLimit(int) {
  writeAll(gOut, gCpuReply, std::strlen(gCpuReply));
  ::_exit(3);
}

extern "C" void onCrash(int) {
  writeAll(gOut, gCrashReply, std::strlen(gCrashReply));
  ::_exit(4);
}

// Deep recursion in the compiler overflows the stack: the crash handler runs on a stack of its own.
alignas(16) char gHandlerStack[64 * 1024];

void installHandlers() {
  stack_t stack{};
  stack.ss_sp = gHandlerStack;
  stack.ss_size = sizeof gHandlerStack;
  ::sigaltstack(&stack, nullptr);
  struct sigaction action{};
  sigemptyset(&action.sa_mask);
  action.sa_handler = onCpuLimit;
  ::sigaction(SIGXCPU, &action, nullptr);
  action.sa_handler = onCrash;
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (int s : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) ::sigaction(s, &action, nullptr);
}

std::string mebibytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, bytes % (1u << 20) == 0 ? "%.0f MiB" : "%.1f MiB", bytes / 1048576.0);
  return text;
}

std::string memoryNote(const CompileServerConfig &c) {
  return c.memoryBytes ? "memory is limited to " + mebibytes(c.memoryBytes) +
                             " per compile (KWB_COMPILE_MEMORY_MB), which a source that needs more reaches first"
                       : "no memory limit was set";
}

void prepareFatalReplies(std::uint64_t id, const CompileServerConfig &c) {
  const json cpu{{"id", id},
                 {"fatal", "the compile used more than " + std::to_string(c.cpuSeconds) +
                               " s of CPU time (the limit per compile, KWB_COMPILE_CPU_S) and was stopped"},
                 {"limit", "cpu"}};
  const json crash{{"id", id},
                   {"fatal", "the compiler stopped abnormally (a fatal signal) while compiling this source; " + memoryNote(c)},
                   {"limit", "memory"}};
  std::snprintf(gCpuReply, sizeof gCpuReply, "%s\n", cpu.dump().c_str());
  std::snprintf(gCrashReply, sizeof gCrashReply, "%s\n", crash.dump().c_str());
}

void setLimit(int resource, rlim_t soft, rlim_t hard) {
  struct rlimit limit{soft, hard};
  ::setrlimit(resource, &limit);
}

double cpuSeconds(const struct rusage &usage) {
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

struct rusage usageNow() {
  struct rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage;
}

double cpuSecondsUsed() { return cpuSeconds(usageNow()); }

// What one request cost this process, for the client's CompileServiceWork.
json workSince(const struct rusage &before, std::chrono::steady_clock::time_point start) {
  const auto after = usageNow();
  return json{{"wall_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()},
              {"cpu_s", cpuSeconds(after) - cpuSeconds(before)},
              {"sys_s", (after.ru_stime.tv_sec - before.ru_stime.tv_sec) + (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6},
              {"minor_faults", after.ru_minflt - before.ru_minflt},
              {"major_faults", after.ru_majflt - before.ru_majflt},
              {"voluntary_switches", after.ru_nvcsw - before.ru_nvcsw},
              {"involuntary_switches", after.ru_nivcsw - before.ru_nivcsw}};
}

// The CPU time this compile may use from now: the soft limit (SIGXCPU, answered above) moved to
// what the process has used plus the allowance; the hard one (SIGKILL) a little past it.
void allowCpuFor(std::uint64_t seconds) {
  if (seconds == 0) return;
  const auto soft = static_cast<rlim_t>(std::ceil(cpuSecondsUsed())) + seconds;
  setLimit(RLIMIT_CPU, soft, soft + 5);
}


std::string lineOf(const json &reply) { return reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

void send(int out, const json &reply) { writeAll(out, lineOf(reply)); }

// A failure of the compile itself that names the limit it ran into, where NVRTC said so.
void nameMemoryLimit(std::vector<Diagnostic> &diagnostics, const CompileServerConfig &c) {
  for (auto &d : diagnostics)
    if (d.message.find("OUT_OF_MEMORY") != std::string::npos || d.message.find("out of memory") != std::string::npos)
      d.message += " (" + memoryNote(c) + ")";
}

json answer(const wire::Request &request, const CompileServerConfig &c) {
  const auto start = std::chrono::steady_clock::now();
  const auto before = usageNow();
  const auto &nvrtc = NvrtcCompiler::shared();
  json reply{{"id", request.id}};
  if (request.target == wire::Target::Ptx) {
    auto text = nvrtc.ptx(request.request, request.timeLimit);
    nameMemoryLimit(text.diagnostics, c);
    reply["text"] = wire::toJson(text);
  } else {
    auto outcome = nvrtc.compile(request.request, request.timeLimit);
    nameMemoryLimit(outcome.result.diagnostics, c);
    reply["outcome"] = wire::toJson(outcome);
  }
  reply["work"] = workSince(before, start);
  return reply;
}

// Loads NVRTC's builtins with a first compile, so that the fence needs to leave no library open.
void warmUp() {
  const auto &nvrtc = NvrtcCompiler::shared();
  if (!nvrtc.available()) return;
  const auto archs = nvrtc.supportedArchitectures();
  if (archs.empty()) return;
  CompileRequest warm;
  warm.source = "extern \"C\" __global__ void kwb_warm_up(float *x) { x[threadIdx.x] *= 2.0f; }\n";
  warm.sourceName = "warm-up.cu";
  warm.arch = archs.back();
  nvrtc.compile(warm, std::chrono::seconds(60));
}

}  // namespace

int runCompileServer(int in, int out, const CompileServerConfig &config) {
  gOut = out;
  setLimit(RLIMIT_CORE, 0, 0);
  if (config.memoryBytes) setLimit(RLIMIT_DATA, config.memoryBytes, config.memoryBytes);  // compile_limits.h: why not RLIMIT_AS
  // Files: NVRTC writes one of its own in TMPDIR (the private folder) for every compile, over
  // 1 MiB on the H200 machine, and compiles 5-10x slower when it cannot (README). The file limit
  // guards the disk, never below kMinFileBytes, and a write past it fails (EFBIG) rather than
  // killing the process (SIGXFSZ). The output limit itself is the reply's size, checked below.
  if (config.outputBytes) {
    const rlim_t files = std::max<rlim_t>(config.outputBytes, kMinFileBytes);
    setLimit(RLIMIT_FSIZE, files, files);
  }
  ::signal(SIGXFSZ, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  installHandlers();

  // Keep what a compile frees for the next one. A compile's memory is its own here, so glibc would
  // hand the whole heap back after each (trimmed, and large blocks are mapped apart) and the
  // next compile would fault it in again, page by page.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ::mallopt(M_TOP_PAD, 64 << 20);

  const auto &nvrtc = NvrtcCompiler::shared();
  warmUp();
  // Only the toolkit's headers and the private folder stay readable: a source that includes
  // /etc/shadow, a file of $HOME or /proc/self/environ gets "cannot open source file".
  std::vector<fs::path> open;
  if (!nvrtc.includeDirectory().empty()) open.emplace_back(nvrtc.includeDirectory());
  if (!config.privateDir.empty()) open.emplace_back(config.privateDir);
  LibraryFence fence;
  if (config.noFence) fence.problem = "turned off by --no-fence";
  else fence = raiseLibraryFence({}, {}, open);
  std::string fenceText = fence.active ? "Landlock (ABI " + std::to_string(fence.abi) + "): only " : "";
  if (fence.active)
    for (std::size_t i = 0; i < open.size(); ++i) fenceText += (i ? ", " : "") + open[i].string();
  if (fence.active) fenceText += " readable";
  else fenceText = "none: " + fence.problem;

  send(out, json{{"hello", wire::kHello},
                 {"version", kVersion},
                 {"available", nvrtc.available()},
                 {"problem", nvrtc.problem()},
                 {"nvrtc", nvrtc.identity()},
                 {"sandbox", config.sandbox},
                 {"sandbox_reason", config.sandboxReason},
                 {"fence", fenceText},
                 {"fence_active", fence.active},
                 {"limits",
                  {{"memory_bytes", config.memoryBytes},
                   {"cpu_seconds", config.cpuSeconds},
                   {"output_bytes", config.outputBytes}}}});

  std::string buffer, line;
  // A request carries a source of at most 4 MiB, base64: 5.4 MiB; the rest is small.
  constexpr std::size_t kMaxRequestBytes = 8u << 20;
  while (readLineFrom(in, buffer, line, kMaxRequestBytes)) {
    wire::Request request;
    try {
      request = wire::requestFromJson(json::parse(line));
    } catch (const std::exception &e) {
      send(out, json{{"id", 0}, {"fatal", std::string("a request the compile service cannot read: ") + e.what()}});
      return 2;
    }
    prepareFatalReplies(request.id, config);
    allowCpuFor(config.cpuSeconds);
    std::string text;  // the reply, dumped once: it carries the whole image
    try {
      text = lineOf(answer(request, config));
      if (config.outputBytes && text.size() > config.outputBytes) {
        const std::string message = "the compile's output (" + mebibytes(text.size()) + ") is over the limit of " +
                                    mebibytes(config.outputBytes) + " per compile";
        json reply{{"id", request.id}};
        if (request.target == wire::Target::Ptx) {
          TextOutput t;
          t.error = message;
          reply["text"] = wire::toJson(t);
        } else {
          reply["outcome"] = wire::toJson(compileFailure(request.request, message, true));
        }
        text = lineOf(reply);
      }
    } catch (const std::bad_alloc &) {
      send(out, json{{"id", request.id}, {"fatal", "the compile ran out of memory; " + memoryNote(config)}, {"limit", "memory"}});
      return 4;
    }
    writeAll(out, text);
  }
  return 0;
}

}  // namespace kwb::worker
