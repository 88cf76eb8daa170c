#include "core/compile/compile_service.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/compile/compile_wire.h"
#include "core/compile/nvrtc_compiler.h"
#include "core/compile/temporary_directory.h"
#include "core/paths/install_paths.h"
#include "core/process/protocol_child.h"
#include "core/sandbox/worker_sandbox.h"

namespace kwb {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace wire = compile_wire;

// How long past a compile's own time limit (NVRTC stops itself then) the service may take to answer.
constexpr std::chrono::seconds kAnswerGrace{15};

void closeFd(int &fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string describeStatus(int status) {
  if (WIFSIGNALED(status)) {
    const int s = WTERMSIG(status);
    const char *name = sigabbrev_np(s);
    return std::string("killed by SIG") + (name ? name : std::to_string(s).c_str());
  }
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    // bwrap and the pid namespace's init pass a killed child on as 128 + its signal.
    if (code > 128 && code < 128 + 65) {
      const char *name = sigabbrev_np(code - 128);
      return "exit status " + std::to_string(code) + " (killed by SIG" + (name ? name : std::to_string(code - 128).c_str()) + ")";
    }
    return "exit status " + std::to_string(code);
  }
  return "ended";
}

std::string fileTail(const fs::path &path, std::size_t bytes) {
  std::string text;
  if (!readWholeFile(path, text)) return {};
  if (text.size() > bytes) text = "..." + text.substr(text.size() - bytes);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

// One thread that runs what it is given, one thing at a time, until it is destroyed.
class CompileService::Spawner {
 public:
  Spawner() : thread_([this] { loop(); }) {}
  ~Spawner() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  int run(const std::function<int()> &work) {
    std::packaged_task<int()> task(work);
    auto result = task.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
    return result.get();
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<int()>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

struct CompileService::Process {
  pid_t pid = -1;
  int in = -1;   // its stdin (our end of a socket pair)
  int out = -1;  // its stdout
  std::unique_ptr<TemporaryDirectory> dir;
  std::string buffer;
  std::string sandbox, sandboxReason, fence;
  bool healthy = true;
  int status = -1;  // once reaped

  fs::path logPath() const { return dir->path() / "compile-service.log"; }

  // The process's own words (stderr), the last of them.
  std::string log() const {
    const auto tail = fileTail(logPath(), 1500);
    return tail.empty() ? std::string() : ": " + tail;
  }

  void reap() {
    if (pid <= 0) return;
    int s = 0;
    while (::waitpid(pid, &s, 0) < 0 && errno == EINTR) {
    }
    status = s;
    pid = -1;
  }

  void end() {
    closeFd(in);
    closeFd(out);
    if (pid > 0) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      reap();
    }
  }

  ~Process() { end(); }

  // Reads one line until `deadline`. false on the end of its output or the deadline (timedOut).
  bool readLine(std::string &line, Clock::time_point deadline, bool &timedOut) {
    timedOut = false;
    for (;;) {
      if (const auto nl = buffer.find('\n'); nl != std::string::npos) {
        line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        return true;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        timedOut = true;
        return false;
      }
      pollfd p{out, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) continue;
      char chunk[65536];
      const ssize_t n = ::read(out, chunk, sizeof chunk);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }

  bool writeAll(const std::string &text) {
    const char *data = text.data();
    std::size_t size = text.size();
    while (size > 0) {
      const ssize_t n = ::send(in, data, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }
};

CompileService::CompileService(CompileServiceOptions options)
    : options_(std::move(options)), spawner_(std::make_unique<Spawner>()) {
  if (options_.maxProcesses <= 0)
    options_.maxProcesses = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 2, 8);
}

CompileService::~CompileService() {
  // The processes end before the thread that started them.
  std::lock_guard lock(mutex_);
  idle_.clear();
}

CompileService &CompileService::shared() {
  static CompileService service;
  return service;
}

CompileServiceState CompileService::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

CompileServiceWork CompileService::work() const {
  std::lock_guard lock(mutex_);
  return work_;
}

int CompileService::runningProcesses() const {
  std::lock_guard lock(mutex_);
  return running_;
}

std::unique_ptr<CompileService::Process> CompileService::start(std::string &problem) {
  auto p = std::make_unique<Process>();
  p->dir = std::make_unique<TemporaryDirectory>("kwb-compile-");
  if (!p->dir->valid()) {
    problem = "cannot make a folder for the compile service: " + p->dir->error();
    return nullptr;
  }
  const auto worker = options_.worker.empty() ? workerExecutable() : std::optional<fs::path>(options_.worker);
  if (!worker) {
    problem = "kwb-worker, which compiles device code in a sandbox (--compile-service), was not found beside this "
              "program, in its build tree or on PATH; install it with kwb, or set KWB_WORKER to its path";
    return nullptr;
  }
  const auto &limits = options_.limits;
  const std::string dir = p->dir->path().string();
  std::vector<std::string> command{worker->string(),
                                   "--compile-service",
                                   "--private-dir",
                                   dir,
                                   "--memory-limit-mb",
                                   std::to_string(limits.memoryBytes >> 20),
                                   "--cpu-limit-s",
                                   std::to_string(limits.cpuSeconds),
                                   "--output-limit-mb",
                                   std::to_string(limits.outputBytes >> 20)};
  // NVRTC's library and the toolkit's headers, shown again where a cover hides them.
  const auto &nvrtc = NvrtcCompiler::shared();
  std::vector<std::string> keeps;
  if (!nvrtc.includeDirectory().empty()) keeps.push_back(nvrtc.includeDirectory());
  if (!nvrtc.libraryPath().empty()) keeps.push_back(fs::path(nvrtc.libraryPath()).parent_path().string());

  auto support = detectSandbox(options_.sandbox);
  std::string fallbackReason;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto inner = command;
    if (support.kind == SandboxKind::None) {
      inner.insert(inner.end(), {"--sandbox", "none", "--sandbox-note",
                                 fallbackReason.empty() ? support.reason : fallbackReason});
    } else {
      inner.insert(inner.end(), {"--sandbox", sandboxKindName(support.kind)});
    }
    std::vector<std::pair<std::string, std::string>> extra;
    if (support.kind == SandboxKind::Unshare) {
      const auto covers = sandboxCovers(*worker, {}, keeps);
      extra.emplace_back(kSandboxCoversVariable, joinPathList(covers.covers));
      extra.emplace_back(kSandboxKeepsVariable, joinPathList(covers.keeps));
    }
    auto argv = sandboxCommand(support, inner, p->dir->path(), SandboxCommandOptions{.gpuDevices = false, .extraKeeps = keeps});
    auto env = worker::workerEnvironment(p->dir->path(), extra);

    // Its words go to a file in its folder (read when it fails); nowhere, if that cannot be made.
    int log = ::open(p->logPath().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log < 0) log = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    // Spawned from a thread that lives as long as this service: bwrap's --die-with-parent (and
    // unshare's --kill-child) signal the process when the *thread* that started it ends, and
    // compiles come from pool threads that do.
    ProtocolChild child;
    spawner_->run([&] {
      child = spawnProtocolChild(argv, env, p->dir->path(), log);
      return 0;
    });
    if (log >= 0) ::close(log);
    closeFd(child.err);  // a pipe only where no file could be given
    if (child.pid < 0) {
      problem = child.error;
      return nullptr;
    }
    p->pid = child.pid;
    p->in = child.in;
    p->out = child.out;
    p->buffer.clear();

    std::string line;
    bool timedOut = false;
    json hello;
    if (p->readLine(line, Clock::now() + options_.startTimeout, timedOut)) {
      hello = json::parse(line, nullptr, false);
      if (!hello.is_object() || hello.value("hello", std::string()) != wire::kHello) hello = json();
    }
    if (hello.is_object()) {
      if (!hello.value("available", false)) {
        problem = "NVRTC is not available in the compile service: " + hello.value("problem", std::string());
        return nullptr;
      }
      p->sandbox = hello.value("sandbox", std::string("none"));
      p->sandboxReason = hello.value("sandbox_reason", std::string());
      p->fence = hello.value("fence", std::string());
      return p;
    }
    const std::string said = p->log();
    if (timedOut) {
      problem = "the compile service did not start within " + formatLimit(options_.startTimeout) + said;
      return nullptr;
    }
    p->end();
    // The sandbox itself could not be made here (a container without user namespaces, say):
    // start once more without it, and say why in every result.
    if (support.kind == SandboxKind::None) {
      problem = "the compile service ended before it was ready (" + describeStatus(p->status) + ")" + said;
      return nullptr;
    }
    fallbackReason = support.reason + "; but the " + sandboxKindName(support.kind) +
                     " sandbox could not be made for the compile service (" + describeStatus(p->status) + ")" + said;
    support.kind = SandboxKind::None;
  }
  return nullptr;
}

std::unique_ptr<CompileService::Process> CompileService::acquire(std::string &problem) {
  {
    std::unique_lock lock(mutex_);
    freed_.wait(lock, [&] { return !idle_.empty() || running_ < options_.maxProcesses; });
    if (!idle_.empty()) {
      auto p = std::move(idle_.back());
      idle_.pop_back();
      return p;
    }
    ++running_;
  }
  auto p = start(problem);
  std::lock_guard lock(mutex_);
  if (!p) {
    --running_;
    state_.problem = problem;
    freed_.notify_one();
    return nullptr;
  }
  state_ = CompileServiceState{.started = true, .sandbox = p->sandbox, .sandboxReason = p->sandboxReason, .fence = p->fence};
  return p;
}

void CompileService::release(std::unique_ptr<Process> process) {
  if (!process->healthy) process->end();
  std::lock_guard lock(mutex_);
  if (process->healthy) idle_.push_back(std::move(process));
  else --running_;
  freed_.notify_one();
}

struct CompileService::Reply {
  std::string failure;  // the call failed (the process died, timed out, hit a limit): why
  json body;            // the reply, read once
  std::string sandbox, sandboxReason;  // of the process that answered
};

CompileService::Reply CompileService::call(wire::Request &request) {
  {
    std::lock_guard lock(mutex_);
    request.id = nextId_++;
  }
  const auto timeLimit = request.timeLimit;
  Reply reply;
  auto p = acquire(reply.failure);
  if (!p) return reply;
  reply.sandbox = p->sandbox;
  reply.sandboxReason = p->sandboxReason;
  bool timedOut = false;
  std::string answer;
  const std::string line = wire::toJson(request).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  if (!p->writeAll(line) || !p->readLine(answer, Clock::now() + timeLimit + kAnswerGrace, timedOut)) {
    p->healthy = false;
    p->end();
    reply.failure = timedOut ? "the compile did not finish within " + formatLimit(timeLimit) +
                                   " (the time limit) and its compile service process was ended"
                             : "the compile service's process ended while compiling (" + describeStatus(p->status) + ")" +
                                   p->log();
  } else {
    reply.body = json::parse(answer, nullptr, false);
    if (!reply.body.is_object() || reply.body.value("id", std::uint64_t{0}) != request.id) {
      p->healthy = false;
      reply.failure = "the compile service answered something else than the request's reply";
    } else if (reply.body.contains("fatal")) {
      p->healthy = false;
      reply.failure = reply.body.value("fatal", std::string("the compile service stopped"));
    } else if (const auto w = reply.body.find("work"); w != reply.body.end() && w->is_object()) {
      std::lock_guard lock(mutex_);
      ++work_.compiles;
      work_.wallSeconds += w->value("wall_s", 0.0);
      work_.cpuSeconds += w->value("cpu_s", 0.0);
      work_.minorFaults += w->value("minor_faults", std::uint64_t{0});
      work_.majorFaults += w->value("major_faults", std::uint64_t{0});
      work_.voluntarySwitches += w->value("voluntary_switches", std::uint64_t{0});
      work_.involuntarySwitches += w->value("involuntary_switches", std::uint64_t{0});
    }
  }
  release(std::move(p));
  return reply;
}

CompileOutcome CompileService::compile(const CompileRequest &request, std::chrono::milliseconds timeLimit) {
  wire::Request r{.target = wire::Target::Cubin, .timeLimit = timeLimit, .request = request};
  const Reply reply = call(r);
  CompileOutcome out;
  if (!reply.failure.empty()) {
    out = compileFailure(request, reply.failure);
  } else {
    try {
      out = wire::outcomeFromJson(reply.body.at("outcome"));
    } catch (const std::exception &e) {
      out = compileFailure(request, std::string("the compile service's reply cannot be read: ") + e.what());
    }
  }
  out.result.sandbox = reply.sandbox;
  out.result.sandboxed = !reply.sandbox.empty() && reply.sandbox != "none";
  out.result.sandboxReason = reply.sandboxReason;
  return out;
}

TextOutput CompileService::ptx(const CompileRequest &request, std::chrono::milliseconds timeLimit) {
  wire::Request r{.target = wire::Target::Ptx, .timeLimit = timeLimit, .request = request};
  const Reply reply = call(r);
  TextOutput out;
  if (!reply.failure.empty()) {
    out.error = reply.failure;
    return out;
  }
  try {
    return wire::textFromJson(reply.body.at("text"));
  } catch (const std::exception &e) {
    out.error = std::string("the compile service's reply cannot be read: ") + e.what();
  }
  return out;
}

}  // namespace kwb
