#include "core/worker/server/host_launcher.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <charconv>
#include <chrono>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "core/sandbox/library_fence.h"
#include "core/worker/server/device_context.h"  // kExactAllocationsVariable
#include "core/worker/server/line_io.h"

namespace kwb::worker {

namespace {

constexpr int kRequestFd = 3, kAnswerFd = 4;
constexpr std::size_t kMaxLine = 4096;  // what the worker reads of one line from the child

std::string hex(const unsigned char *data, std::size_t n) {
  static const char *digits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

bool unhex(const std::string &text, unsigned char *out, std::size_t n) {
  if (text.size() != 2 * n) return false;
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const int hi = value(text[2 * i]), lo = value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

// "NAME MESSAGE" (the child's error and failed lines) into its two parts.
void splitNameAndMessage(const std::string &rest, std::string &name, std::string &message) {
  const auto space = rest.find(' ');
  name = rest.substr(0, space);
  message = space == std::string::npos ? rest : rest.substr(space + 1);
}

std::string describeExit(int status) {
  if (WIFSIGNALED(status)) {
    const int s = WTERMSIG(status);
    const char *name = sigabbrev_np(s);
    return "killed by signal " + std::to_string(s) + (name ? std::string(" (SIG") + name + ")" : std::string());
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

}  // namespace

// ---- The worker's side ---------------------------------------------------------------------

std::unique_ptr<HostLauncherProcess> HostLauncherProcess::start(const std::string &libraryPath, int device,
                                                                std::string &name, std::string &problem,
                                                                const std::string &executable,
                                                                const std::vector<std::string> &allowedLibraries) {
  int request[2], answer[2];
  if (::pipe2(request, O_CLOEXEC) != 0) {
    name = "host-launcher-start";
    problem = std::string("cannot make a pipe for the host launcher's process: ") + std::strerror(errno);
    return nullptr;
  }
  if (::pipe2(answer, O_CLOEXEC) != 0) {
    ::close(request[0]);
    ::close(request[1]);
    name = "host-launcher-start";
    problem = std::string("cannot make a pipe for the host launcher's process: ") + std::strerror(errno);
    return nullptr;
  }
  // Everything the child needs, made before fork (the worker has threads: after fork only
  // async-signal-safe calls).
  const std::string deviceText = std::to_string(device);
  const std::string library = libraryPath.empty() ? std::string("-") : libraryPath;
  std::string allowed;
  for (const auto &l : allowedLibraries) allowed += (allowed.empty() ? "" : ",") + l;
  if (allowed.empty()) allowed = "none";
  const char *argv[] = {"kwb-worker", "--host-launcher", library.c_str(), "--device", deviceText.c_str(),
                        "--allow-libraries", allowed.c_str(), nullptr};
  const pid_t parent = ::getpid();
  rlimit files{};
  const int highestFd = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                            ? static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20))
                            : 1 << 16;
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {request[0], request[1], answer[0], answer[1]}) ::close(fd);
    name = "host-launcher-start";
    problem = std::string("cannot start the host launcher's process: ") + std::strerror(errno);
    return nullptr;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);  // a group of its own: stopped and killed with whatever it starts
    // Out of the way of 3 and 4 first, then into place; stdout to stderr, never the reply channel.
    const int in = ::fcntl(request[0], F_DUPFD, 100), out = ::fcntl(answer[1], F_DUPFD, 100);
    if (in < 0 || out < 0 || ::dup2(in, kRequestFd) < 0 || ::dup2(out, kAnswerFd) < 0 || ::dup2(2, 1) < 0)
      ::_exit(127);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    if (::syscall(SYS_close_range, 5u, ~0u, 0u) != 0)
      for (int fd = 5; fd < highestFd; ++fd) ::close(fd);
    ::execv(executable.c_str(), const_cast<char *const *>(argv));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // (both sides, whichever runs first)
  ::close(request[0]);
  ::close(answer[1]);
  std::unique_ptr<HostLauncherProcess> p(new HostLauncherProcess);
  p->pid_ = pid;
  p->toChild_ = request[1];
  p->fromChild_ = answer[0];
  std::string line;
  if (!p->readLine(line)) {
    name = "host-launcher-died";
    problem = "the host launcher's process ended before it was ready: " + describeExit(p->reap());
    return nullptr;
  }
  if (line == "ready" || line.rfind("ready ", 0) == 0) {
    p->fence_ = line.size() > 6 ? line.substr(6) : std::string();
    p->stop();
    return p;
  }
  if (line.rfind("error ", 0) == 0) {
    splitNameAndMessage(line.substr(6), name, problem);
  } else {
    name = "host-launcher-protocol";
    problem = "the host launcher's process did not start properly (it said '" + line.substr(0, 200) + "')";
  }
  return nullptr;
}

std::unique_ptr<HostLauncherProcess> HostLauncherProcess::startWithImage(const std::string &image, int device,
                                                                         std::string &name, std::string &problem,
                                                                         const std::vector<std::string> &allowedLibraries) {
  const char *tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/kwb-launcher-XXXXXX.so";
  const int fd = ::mkstemps(path.data(), 3);
  const bool written = fd >= 0 && writeAll(fd, image);
  if (fd >= 0) ::close(fd);
  if (!written) {
    if (fd >= 0) ::unlink(path.c_str());
    name = "write";
    problem = "cannot write the library to " + path;
    return nullptr;
  }
  // The child removes the file once it has opened it; a child that never got that far leaves it.
  auto process = start(path, device, name, problem, "/proc/self/exe", allowedLibraries);
  if (!process) ::unlink(path.c_str());
  return process;
}

HostLauncherProcess::~HostLauncherProcess() { kill(); }

int HostLauncherProcess::reap() {
  int status = 0;
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);  // its group: whatever it started too (and a child still running)
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  return status;
}

void HostLauncherProcess::kill() {
  if (toChild_ >= 0) ::close(toChild_);
  if (fromChild_ >= 0) ::close(fromChild_);
  toChild_ = fromChild_ = -1;
  reap();
}

// Between requests the process and its group are stopped: its threads cannot run while the
// worker prepares, times the reference or serves other requests.
void HostLauncherProcess::stop() {
  if (pid_ > 0) ::kill(-pid_, SIGSTOP);
}

bool HostLauncherProcess::readLine(std::string &line) { return readLineFrom(fromChild_, buffer_, line, kMaxLine); }

HostLaunchResult HostLauncherProcess::exchange(const std::string &request) {
  HostLaunchResult r;
  // Nothing may be waiting from it before it is asked: an answer written ahead ("done 0" lines
  // queued to make later launches look instant) breaks the protocol.
  pollfd ahead{fromChild_, POLLIN, 0};
  if (pid_ > 0 && (!buffer_.empty() || ::poll(&ahead, 1, 0) > 0)) {
    kill();
    r.status = HostLaunchResult::Status::Protocol;
    r.name = "host-launcher-protocol";
    r.message = "the host launcher's process wrote to the worker before it was asked";
    return r;
  }
  const auto started = std::chrono::steady_clock::now();
  std::string line;
  if (pid_ > 0) ::kill(-pid_, SIGCONT);
  const bool sent = pid_ > 0 && writeAll(toChild_, request);
  const bool answered = sent && readLine(line);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (answered) stop();
  if (!answered) {
    // EOF: the child is gone (or closed its end); a line too long: it is broken.
    const int status = reap();
    kill();
    r.status = HostLaunchResult::Status::Died;
    r.name = "host-launcher-died";
    r.message = "the host launcher's process " + describeExit(status) + " during the launch";
    return r;
  }
  int code = 0;
  const bool done = line.rfind("done ", 0) == 0 && line.size() > 5 && [&] {
    const char *first = line.data() + 5, *last = line.data() + line.size();
    const auto [end, ec] = std::from_chars(first, last, code);
    return ec == std::errc() && end == last;
  }();
  if (done) {
    r.status = code == 0 ? HostLaunchResult::Status::Done : HostLaunchResult::Status::LaunchError;
    r.code = code;
    r.name = code == 0 ? "" : "kwb_launch returned " + std::to_string(code);
    r.message = code == 0 ? "" : "kwb_launch returned cudaError_t " + std::to_string(code) + " (not cudaSuccess)";
    return r;
  }
  if (line.rfind("failed ", 0) == 0) {
    r.status = HostLaunchResult::Status::CudaFailed;
    splitNameAndMessage(line.substr(7), r.name, r.message);
    kill();  // its context may be lost: a fresh child next time
    return r;
  }
  kill();
  r.status = HostLaunchResult::Status::Protocol;
  r.name = "host-launcher-protocol";
  r.message = "the host launcher's process answered '" + line.substr(0, 200) + "' instead of done or failed";
  return r;
}

HostLaunchResult HostLauncherProcess::launch(CudaDriver &driver, const std::vector<HostArgument> &args,
                                             std::size_t repeat) {
  std::string request = "launch " + std::to_string(repeat) + " " + std::to_string(args.size());
  for (const auto &a : args) {
    if (!a.pointer) {
      request += " s:" + std::to_string(a.value);
      continue;
    }
    auto known = handles_.find(a.device);
    if (known == handles_.end()) {
      CUipcMemHandle handle{};
      if (const CUresult rc = driver.cuIpcGetMemHandle(&handle, a.device); rc != cu::SUCCESS) {
        HostLaunchResult r;
        r.status = HostLaunchResult::Status::CudaFailed;
        r.name = "ipc-handle";
        r.message = "cannot share a tensor with the host launcher's process: " + driver.describe(rc);
        return r;
      }
      known = handles_.emplace(a.device, hex(reinterpret_cast<const unsigned char *>(handle.reserved),
                                             sizeof handle.reserved)).first;
    }
    request += " p:" + known->second;
  }
  mapped_ = true;
  return exchange(request + "\n");
}

void HostLauncherProcess::release() {
  handles_.clear();
  if (!mapped_ || pid_ <= 0) return;
  mapped_ = false;
  const auto r = exchange("release\n");
  if (r.status != HostLaunchResult::Status::Done) kill();
}

std::vector<std::string> HostLauncherProcess::loadedLibraries() const {
  std::set<std::string> paths;
  if (pid_ <= 0) return {};
  std::ifstream maps("/proc/" + std::to_string(pid_) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find(".so") != std::string::npos) paths.insert(path);
  }
  return {paths.begin(), paths.end()};
}

// ---- The child's side ----------------------------------------------------------------------

namespace {

constexpr const char *kEmptyKernelPtx = R"(.version 7.0
.target sm_52
.address_size 64
.visible .entry kwb_empty()
{
  ret;
}
)";

void answer(const std::string &line) {
  if (!writeAll(kAnswerFd, line + "\n")) ::_exit(3);
}

std::string oneLine(std::string text) {
  for (auto &c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

}  // namespace

int runHostLauncherChild(const std::string &libraryPath, int device, const std::vector<std::string> &allowedLibraries) {
  CudaDriver driver;
  if (!driver.load()) {
    answer("error no-device " + oneLine(driver.problem()));
    return 1;
  }
  auto cudaError = [&](CUresult r) {
    const char *name = nullptr;
    driver.cuGetErrorName(r, &name);
    return std::string(name ? name : "CUDA_ERROR_" + std::to_string(r));
  };
  CUdevice dev = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUresult r = driver.cuInit(0);
  if (r == cu::SUCCESS) r = driver.cuDeviceGet(&dev, device);
  if (r == cu::SUCCESS) r = driver.cuDevicePrimaryCtxRetain(&context, dev);
  if (r == cu::SUCCESS) r = driver.cuCtxSetCurrent(context);
  if (r == cu::SUCCESS) r = driver.cuStreamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING */);
  if (r != cu::SUCCESS) {
    answer("error no-device " + oneLine("the host launcher's CUDA context: " + driver.describe(r)));
    return 1;
  }
  using Launch = int (*)(void *const *, CUstream);
  Launch launch = nullptr;
  std::string fenceText;
  if (libraryPath == "-") {
    // The clean child: one empty kernel of its own per launch.
    static CUfunction empty = nullptr;
    CUmodule module = nullptr;
    r = driver.cuModuleLoadData(&module, kEmptyKernelPtx);
    if (r == cu::SUCCESS) r = driver.cuModuleGetFunction(&empty, module, "kwb_empty");
    if (r != cu::SUCCESS) {
      answer("error load " + oneLine("the empty kernel: " + driver.describe(r)));
      return 1;
    }
    static CudaDriver *emptyDriver = &driver;
    launch = [](void *const *, CUstream s) -> int {
      return emptyDriver->cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
    };
  } else {
    // The vendor libraries the task does not allow become unreadable first (the driver's own
    // libraries are mapped by now, so their folders are known).
    const auto fence = raiseHostLauncherFence(allowedLibraries, std::filesystem::path(libraryPath).parent_path());
    if (fence.active)
      fenceText = "landlock ABI " + std::to_string(fence.abi) + ": " + std::to_string(fence.fenced.size()) +
                  " vendor library file(s) fenced off";
    else
      fenceText = "no fence: " + fence.problem;
    // The candidate's static constructors run here, in this process only.
    void *handle = ::dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    ::unlink(libraryPath.c_str());
    if (!handle) {
      const char *e = ::dlerror();
      answer("error dlopen " +
             oneLine(std::string("the candidate library does not load: ") + (e ? e : "dlopen failed")));
      return 1;
    }
    launch = reinterpret_cast<Launch>(::dlsym(handle, "kwb_launch"));
    if (!launch) {
      answer("error no-entry-point the candidate library does not export kwb_launch; define extern \"C\" "
             "cudaError_t kwb_launch(void *const *args, cudaStream_t stream)");
      return 1;
    }
  }
  answer(fenceText.empty() ? std::string("ready") : "ready " + oneLine(fenceText));

  std::map<std::string, CUdeviceptr> opened;  // IPC handle (hex) → mapped pointer
  std::string buffer, line;
  while (readLineFrom(kRequestFd, buffer, line, std::size_t{1} << 20)) {
    std::istringstream in(line);
    std::string verb;
    in >> verb;
    if (verb == "release") {
      for (const auto &[key, ptr] : opened) driver.cuIpcCloseMemHandle(ptr);
      opened.clear();
      answer("done 0");
      continue;
    }
    if (verb != "launch") return 2;  // the worker never says anything else
    std::size_t repeat = 0, count = 0;
    in >> repeat >> count;
    std::vector<CUdeviceptr> pointers(count);
    std::vector<long long> sizes(count);
    std::vector<void *> params(count);
    std::string failure;
    for (std::size_t i = 0; i < count && failure.empty(); ++i) {
      std::string arg;
      in >> arg;
      if (arg.rfind("s:", 0) == 0) {
        sizes[i] = std::stoll(arg.substr(2));
        params[i] = &sizes[i];
        continue;
      }
      const std::string key = arg.substr(2);
      auto it = opened.find(key);
      if (it == opened.end()) {
        CUipcMemHandle h{};
        if (arg.rfind("p:", 0) != 0 ||
            !unhex(key, reinterpret_cast<unsigned char *>(h.reserved), sizeof h.reserved))
          return 2;
        CUdeviceptr ptr = 0;
        r = driver.cuIpcOpenMemHandle(&ptr, h, 1 /* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS */);
        if (r != cu::SUCCESS) {
          failure = "failed " + cudaError(r) + " " + oneLine("mapping a tensor: " + driver.describe(r));
          break;
        }
        it = opened.emplace(key, ptr).first;
        // Under compute-sanitizer (the worker's exact allocations say so): initcheck in this
        // process never saw the worker write these buffers, so it would call every read of an
        // input uninitialized. Copying each onto itself marks it written; the bytes stay.
        if (const char *exact = std::getenv(kExactAllocationsVariable); exact && std::string_view(exact) == "1") {
          CUdeviceptr base = 0;
          std::size_t bytes = 0;
          if (driver.cuMemGetAddressRange(&base, &bytes, ptr) == cu::SUCCESS && bytes &&
              driver.cuMemcpyDtoD(base, base, bytes) == cu::SUCCESS)
            driver.cuCtxSynchronize();  // done before the candidate's stream (non-blocking) starts
        }
      }
      pointers[i] = it->second;
      params[i] = &pointers[i];
    }
    if (!failure.empty()) {
      answer(failure);
      continue;
    }
    int status = 0;
    for (std::size_t i = 0; i < repeat && status == 0; ++i) status = launch(params.data(), stream);
    r = driver.cuCtxSynchronize();
    if (r != cu::SUCCESS) answer("failed " + cudaError(r) + " " + oneLine("kwb_launch: " + driver.describe(r)));
    else answer("done " + std::to_string(status));
  }
  return 0;
}

}  // namespace kwb::worker
