#include "core/worker/worker_client.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <future>
#include <sstream>

#include "core/compile/temporary_directory.h"
#include "kwb/version.h"
#include "core/process/protocol_child.h"

extern char **environ;

namespace kwb::worker {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kStderrLineCap = 4096;            // longer stderr lines are cut
constexpr std::chrono::milliseconds kGracefulExit{1000};  // idle worker, input closed
constexpr std::chrono::milliseconds kClosedOutputGrace{2000};

std::string seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return text;
}

void closeFd(int &fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void setNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

int openPidFd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#endif
  (void)pid;
  return -1;  // old kernel: the I/O loop polls with waitid instead
}

std::string joinLines(const std::deque<std::string> &lines) {
  std::string out;
  for (const auto &l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

// The parent pid in /proc/N/stat ("N (comm) S PPID ..."; comm may hold spaces and parens).
pid_t parentOf(const std::string &pidText) {
  std::ifstream in("/proc/" + pidText + "/stat");
  std::string stat;
  std::getline(in, stat);
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  long ppid = -1;
  rest >> state >> ppid;
  return static_cast<pid_t>(ppid);
}

// The pid numbers of a process in each pid namespace it belongs to, outermost first.
std::vector<long long> namespacePids(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream values(line.substr(6));
    std::vector<long long> out;
    long long v;
    while (values >> v) out.push_back(v);
    return out;
  }
  return {};
}

// The descendant of `root` that its own pid namespace numbers `innerPid`.
pid_t findDescendantByInnerPid(pid_t root, long long innerPid) {
  std::map<pid_t, std::vector<pid_t>> children;
  if (DIR *dir = ::opendir("/proc")) {
    while (const dirent *e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
      const pid_t parent = parentOf(name);
      if (parent > 0) children[parent].push_back(static_cast<pid_t>(std::stol(name)));
    }
    ::closedir(dir);
  }
  std::vector<pid_t> frontier{root};
  for (int depth = 0; depth < 6 && !frontier.empty(); ++depth) {
    std::vector<pid_t> next;
    for (const pid_t p : frontier) {
      const auto ns = namespacePids(p);
      if (!ns.empty() && ns.back() == innerPid) return p;
      if (const auto it = children.find(p); it != children.end())
        next.insert(next.end(), it->second.begin(), it->second.end());
    }
    frontier = std::move(next);
  }
  return -1;
}

// What is wrong with a hello's fields, or empty. Every field the client reads is checked here,
// so nothing later throws on a crafted hello.
std::string malformedHello(const Json &data) {
  if (!data.is_object()) return "the hello is not a JSON object";
  const auto protocol = data.find("protocol");
  if (protocol == data.end()) return "the hello has no \"protocol\"";
  if (!protocol->is_number_integer()) return "the hello's \"protocol\" is not an integer (" + protocol->dump() + ")";
  if (const auto pid = data.find("pid"); pid != data.end() && !pid->is_number_integer())
    return "the hello's \"pid\" is not an integer";
  for (const char *key : {"sandbox", "sandbox_reason", "seccomp_reason"})
    if (const auto it = data.find(key); it != data.end() && !it->is_string())
      return std::string("the hello's \"") + key + "\" is not a string";
  if (const auto it = data.find("sandbox_checks"); it != data.end() && !it->is_object())
    return "the hello's \"sandbox_checks\" is not an object";
  if (const auto it = data.find("seccomp"); it != data.end() && !it->is_boolean())
    return "the hello's \"seccomp\" is not a boolean";
  if (const auto it = data.find("relay"); it != data.end()) {
    if (!it->is_object()) return "the hello's \"relay\" is not an object";
    for (const char *key : {"host", "sandbox", "reason", "private_dir"})
      if (const auto f = it->find(key); f != it->end() && !f->is_string())
        return std::string("the hello's relay \"") + key + "\" is not a string";
    if (const auto f = it->find("verified"); f != it->end() && !f->is_boolean())
      return "the hello's relay \"verified\" is not a boolean";
  }
  if (const auto it = data.find("worker"); it != data.end() && !it->is_string())
    return "the hello's \"worker\" is not a string";
  return {};
}

// What is wrong with a successful probe-sandbox result, or empty.
std::string malformedProbe(const Json &result) {
  if (!result.is_object()) return "the probe-sandbox result is not a JSON object";
  for (const char *list : {"connect", "write", "connect_unix", "read"}) {
    const auto it = result.find(list);
    if (it == result.end()) continue;
    if (!it->is_array()) return std::string("the probe-sandbox result's \"") + list + "\" is not an array";
    for (const auto &entry : *it) {
      if (!entry.is_object() || !entry.contains("ok") || !entry["ok"].is_boolean())
        return std::string("an entry of the probe-sandbox result's \"") + list + "\" is not an object with a boolean \"ok\"";
      for (const char *key : {"host", "path", "error"})
        if (entry.contains(key) && !entry[key].is_string())
          return std::string("the probe-sandbox result's \"") + list + "\" has a \"" + key + "\" that is not a string";
      if (entry.contains("port") && !entry["port"].is_number_integer())
        return std::string("the probe-sandbox result's \"") + list + "\" has a \"port\" that is not an integer";
    }
  }
  const auto priv = result.find("private_dir");
  if (priv == result.end() || !priv->is_object() || !priv->contains("ok") || !(*priv)["ok"].is_boolean())
    return "the probe-sandbox result's \"private_dir\" is not an object with a boolean \"ok\"";
  if (priv->contains("error") && !(*priv)["error"].is_string())
    return "the probe-sandbox result's \"private_dir\" has an \"error\" that is not a string";
  return {};
}

}  // namespace

std::string signalName(int signal) {
  if (const char *abbrev = ::sigabbrev_np(signal)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(signal);
}

std::string handshakeProblem(const Json &hello, const WorkerLauncher &launcher) {
  const std::string where = launcher.describe();
  const std::string install = "install Kernel Workbench " + std::string(kVersion) + " there (its relocatable bundle or " +
                              "package) and name its kwb-worker" +
                              (launcher.kind == WorkerLauncher::Kind::Slurm ? " with worker=PATH"
                                                                            : " with ssh://HOST/PATH/TO/kwb-worker") +
                              " if it is not on that host's PATH";
  if (!hello.is_object() || !hello.contains("relay"))
    return "the program started on " + where + " answered as a worker, not as `kwb-worker --relay` (an older " +
           "kwb-worker?): " + install;
  const std::string theirs = hello.value("worker", std::string("?"));
  const std::string host = hello["relay"].value("host", where);
  const int protocol = hello.value("protocol", 0);
  if (protocol != kProtocolVersion)
    return "kwb-worker on " + host + " (version " + theirs + ") speaks protocol version " + std::to_string(protocol) +
           "; this workbench (version " + kVersion + ") speaks " + std::to_string(kProtocolVersion) + ": " + install;
  if (theirs != kVersion)
    return "kwb-worker on " + host + " is version " + theirs + "; this workbench is version " + kVersion + ": " + install;
  return {};
}

const char *WorkerClient::stateName(State state) {
  switch (state) {
    case State::Stopped: return "stopped";
    case State::Starting: return "starting";
    case State::Ready: return "ready";
    case State::Dead: return "dead";
  }
  return "?";
}

struct WorkerClient::Process {
  explicit Process(std::size_t maxLine) : decoder(maxLine) {}
  std::uint64_t generation = 0;
  pid_t pid = -1;
  int inFd = -1, outFd = -1, errFd = -1, pidFd = -1;
  bool exited = false;
  bool killed = false;
  std::string killCause;
  bool wrapped = false;  // inside bwrap/unshare: a signal comes back as exit status 128 + n
  std::unique_ptr<TemporaryDirectory> dir;
  fs::path privateDir, canary;
  fs::path secret, socketPath;  // a file and a Unix socket outside the private directory
  int listenFd = -1, unixListenFd = -1;
  std::optional<std::uint64_t> probeId;
  LineDecoder decoder;
  std::string errPartial;
  std::deque<std::string> errTail;
  std::string outbound;
  std::size_t outboundSent = 0;
  bool helloSeen = false, ready = false;
  Clock::time_point startDeadline;
  std::optional<Clock::time_point> killAt;  // kill then unless it has exited
  std::string killAtCause;
  Json hello;
  Json farExit;  // a remote worker under a tool: its relay's "worker-exit" event
  // A relay's "worker-died" replies, held until its transport ends (see handleLineLocked), and
  // when it is killed unless it has ended; whether it was (the replies then do not stand).
  std::map<std::uint64_t, Reply> relayedDeaths;
  std::optional<Clock::time_point> relayEndDeadline;
  bool relayEndMissed = false;
};

struct WorkerClient::Pending {
  std::uint64_t id = 0;
  std::string cmd;
  std::string line;  // until written
  RequestHandlers handlers;
  std::chrono::milliseconds timeout{0};
  std::uint64_t generation = 0;  // the process it was written to; 0 while held
  std::optional<Clock::time_point> deadline;
};

WorkerClient::WorkerClient(WorkerClientOptions options, WorkerListeners listeners)
    : options_(std::move(options)), listeners_(std::move(listeners)) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    wakeRead_ = fds[0];
    wakeWrite_ = fds[1];
  }
  ioThread_ = std::thread([this] { run(); });
  ioThreadId_ = ioThread_.get_id();
}

WorkerClient::~WorkerClient() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    wantStart_ = false;
    failHeldLocked({error_kind::kCancelled, "the worker client shut down before the request was sent", {}},
                   deferred_);
    if (current_) dying_.push_back(std::move(current_));
    for (auto &p : dying_) {
      if (p->killed || p->exited) continue;
      const bool busy = !p->ready || std::any_of(pending_.begin(), pending_.end(), [&](const auto &entry) {
        return entry.second->generation == p->generation;
      });
      if (busy) {
        killLocked(*p, "the worker client shut down with requests in flight");
      } else {
        ::shutdown(p->inFd, SHUT_WR);  // end of input: the worker exits on its own
        p->killAt = Clock::now() + kGracefulExit;
        p->killAtCause = "it did not exit within " + seconds(kGracefulExit) + " after its input was closed";
      }
    }
    state_ = State::Stopped;
  }
  readyChanged_.notify_all();
  wake();
  if (ioThread_.joinable()) ioThread_.join();
  closeFd(wakeRead_);
  closeFd(wakeWrite_);
}

void WorkerClient::wake() {
  if (wakeWrite_ >= 0) {
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(wakeWrite_, &byte, 1);  // full pipe: already awake
  }
}

void WorkerClient::start() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || state_ == State::Starting || state_ == State::Ready) return;
    state_ = State::Starting;
    wantStart_ = true;
  }
  wake();
}

void WorkerClient::restart() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    if (current_) {
      killLocked(*current_, "restart requested");
      dying_.push_back(std::move(current_));
    }
    hello_ = Json();
    sandbox_ = SandboxStatus{};
    state_ = State::Starting;
    wantStart_ = true;
  }
  wake();
}

bool WorkerClient::waitUntilReady(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  readyChanged_.wait_for(lock, timeout, [&] { return state_ != State::Starting; });
  return state_ == State::Ready;
}

std::optional<WorkerExit> WorkerClient::finish(std::chrono::milliseconds grace) {
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    wantStart_ = false;
    if (!current_) {
      if (state_ == State::Starting) {  // not spawned yet: it will not be
        state_ = State::Stopped;
        failHeldLocked({error_kind::kCancelled, "the worker was finished before it started", {}}, deferred_);
        readyChanged_.notify_all();
        wake();  // the failed requests' callbacks run on the I/O thread
      }
      return lastExit_;
    }
    generation = current_->generation;
    if (!current_->killed && !current_->exited) {
      if (current_->inFd >= 0) ::shutdown(current_->inFd, SHUT_WR);
      current_->killAt = Clock::now() + grace;
      current_->killAtCause = "it did not exit within " + seconds(grace) + " after its input was closed";
    }
  }
  wake();
  std::unique_lock lock(mutex_);
  // Reaped: current_ is reset under the same lock that records lastExit_.
  readyChanged_.wait(lock, [&] { return !current_ || current_->generation != generation; });
  return lastExit_;
}

void WorkerClient::stop(const std::string &cause) {
  {
    std::lock_guard lock(mutex_);
    wantStart_ = false;
    if (current_) killLocked(*current_, cause);
    else if (state_ == State::Starting) {
      // Not spawned yet (the I/O thread may still be finding the sandbox): it will not be.
      state_ = State::Stopped;
      failHeldLocked({error_kind::kCancelled, "the worker was stopped before it started: " + cause, {}}, deferred_);
      readyChanged_.notify_all();
    }
  }
  wake();
}

std::uint64_t WorkerClient::send(const std::string &cmd, Json params, RequestHandlers handlers,
                                 std::optional<std::chrono::milliseconds> timeout) {
  std::uint64_t id;
  {
    std::lock_guard lock(mutex_);
    id = ++nextId_;
    auto request = std::make_unique<Pending>();
    request->id = id;
    request->cmd = cmd;
    request->handlers = std::move(handlers);
    request->timeout = timeout.value_or(options_.requestTimeout);
    request->line = encodeRequest({id, cmd, params.is_object() ? std::move(params) : Json::object()});
    if (request->line.size() > options_.maxLineBytes + 1) {
      const auto bytes = request->line.size() - 1;
      pending_[id] = std::move(request);
      failLocked(id,
                 {error_kind::kRequestTooLarge,
                  "the request '" + cmd + "' is " + std::to_string(bytes) + " bytes, over the protocol's limit of " +
                      std::to_string(options_.maxLineBytes) + " bytes per line",
                  {}},
                 deferred_);
    } else if (state_ == State::Stopped || state_ == State::Dead) {
      std::string why = "the worker is not running";
      if (current_ && current_->killed) why += " (it was killed after " + current_->killCause + ")";
      else if (lastExit_) why += " (it " + lastExit_->description + ")";
      why += "; restart it to send '" + cmd + "'";
      pending_[id] = std::move(request);
      failLocked(id, {error_kind::kNotRunning, why, {}}, deferred_);
    } else if (current_ && current_->ready && !current_->killed) {
      writeRequestLocked(*current_, *request);
      pending_[id] = std::move(request);
    } else {
      pending_[id] = std::move(request);
      held_.push_back(id);
    }
  }
  wake();
  return id;
}

Reply WorkerClient::call(const std::string &cmd, Json params, std::optional<std::chrono::milliseconds> timeout) {
  if (std::this_thread::get_id() == ioThreadId_)
    return Reply::failure(std::nullopt, {error_kind::kInternal, "WorkerClient::call() from a callback would wait for itself", {}});
  auto promise = std::make_shared<std::promise<Reply>>();
  auto future = promise->get_future();
  send(cmd, std::move(params), {nullptr, [promise](const Reply &r) { promise->set_value(r); }}, timeout);
  return future.get();
}

WorkerClient::State WorkerClient::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

Json WorkerClient::hello() const {
  std::lock_guard lock(mutex_);
  return hello_;
}

SandboxStatus WorkerClient::sandbox() const {
  std::lock_guard lock(mutex_);
  return sandbox_;
}

std::optional<WorkerExit> WorkerClient::lastExit() const {
  std::lock_guard lock(mutex_);
  return lastExit_;
}

std::uint64_t WorkerClient::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

std::size_t WorkerClient::pendingRequests() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

pid_t WorkerClient::processId() const {
  std::lock_guard lock(mutex_);
  return current_ ? current_->pid : -1;
}

pid_t WorkerClient::workerProcessId() const {
  pid_t child;
  long long inner;
  bool wrapped;
  {
    std::lock_guard lock(mutex_);
    if (!current_ || !current_->helloSeen || current_->exited) return -1;
    child = current_->pid;
    const auto pid = current_->hello.find("pid");
    inner = pid != current_->hello.end() && pid->is_number_integer() ? pid->get<long long>() : -1;
    wrapped = current_->wrapped;
  }
  if (!wrapped) return child;
  return findDescendantByInnerPid(child, inner);
}

// ---- the I/O thread ----------------------------------------------------------------------------

void WorkerClient::run() {
  struct Slot {
    Process *process;
    int which;  // 0 wake, 1 stdout, 2 stderr, 3 stdin, 4 pidfd
  };
  std::vector<pollfd> fds;
  std::vector<Slot> slots;
  for (;;) {
    Calls calls;
    bool finished = false, spawn = false;
    int timeoutMs = -1;
    {
      std::lock_guard lock(mutex_);
      if (wantStart_ && !stopping_) {
        wantStart_ = false;
        spawn = true;
      }
    }
    if (spawn) {
      // Finding the sandbox may run trial processes: not under the lock.
      const auto support = detectSandbox(options_.sandbox);
      std::lock_guard lock(mutex_);
      if (!stopping_ && state_ == State::Starting) {  // not stopped while the sandbox was found
        if (current_) {  // start() raced with a process that is still around
          killLocked(*current_, "replaced by a new worker");
          dying_.push_back(std::move(current_));
        }
        spawnLocked(support, calls);
      }
    }
    {
      std::lock_guard lock(mutex_);
      checkDeadlinesLocked(calls);
      calls.insert(calls.end(), std::make_move_iterator(deferred_.begin()), std::make_move_iterator(deferred_.end()));
      deferred_.clear();
      finished = stopping_ && !current_ && dying_.empty();
      fds.clear();
      slots.clear();
      if (!finished) {
        fds.push_back({wakeRead_, POLLIN, 0});
        slots.push_back({nullptr, 0});
        auto next = Clock::time_point::max();
        bool needWaitid = false;
        auto add = [&](Process &p) {
          if (p.outFd >= 0) fds.push_back({p.outFd, POLLIN, 0}), slots.push_back({&p, 1});
          if (p.errFd >= 0) fds.push_back({p.errFd, POLLIN, 0}), slots.push_back({&p, 2});
          if (p.inFd >= 0 && p.outboundSent < p.outbound.size())
            fds.push_back({p.inFd, POLLOUT, 0}), slots.push_back({&p, 3});
          if (p.pidFd >= 0) fds.push_back({p.pidFd, POLLIN, 0}), slots.push_back({&p, 4});
          else needWaitid = true;
          if (!p.ready && !p.killed) next = std::min(next, p.startDeadline);
          if (p.killAt && !p.killed) next = std::min(next, *p.killAt);
          if (p.relayEndDeadline && !p.killed) next = std::min(next, *p.relayEndDeadline);
        };
        if (current_) add(*current_);
        for (auto &p : dying_) add(*p);
        for (const auto &[id, r] : pending_)
          if (r->deadline) next = std::min(next, *r->deadline);
        if (next != Clock::time_point::max()) {
          const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
          timeoutMs = static_cast<int>(std::clamp<long long>(left, 0, 60000));
        }
        if (needWaitid) timeoutMs = timeoutMs < 0 ? 20 : std::min(timeoutMs, 20);
      }
    }
    for (auto &call : calls) call();
    calls.clear();
    if (finished) break;

    const int ready = ::poll(fds.data(), fds.size(), timeoutMs);
    if (ready < 0 && errno != EINTR) {
      // Should not happen; avoid a busy loop if it does.
      ::usleep(1000);
    }
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        Process *p = slots[i].process;
        switch (slots[i].which) {
          case 0: {
            char drain[256];
            while (::read(wakeRead_, drain, sizeof drain) > 0) {
            }
            break;
          }
          case 1: readOutputLocked(*p, calls); break;
          case 2: readStderrLocked(*p, calls); break;
          case 3: writeInputLocked(*p); break;
          case 4: p->exited = true; break;
        }
      }
      // Requests sent meanwhile: write what can be written now.
      if (current_ && current_->outboundSent < current_->outbound.size()) writeInputLocked(*current_);
      auto checkExit = [](Process &p) {
        if (p.exited || p.pidFd >= 0) return;
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(p.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == p.pid)
          p.exited = true;
      };
      if (current_) checkExit(*current_);
      for (auto &p : dying_) checkExit(*p);
      if (current_ && current_->exited) {
        reapLocked(*current_, calls);
        current_.reset();
      }
      for (auto it = dying_.begin(); it != dying_.end();) {
        if ((*it)->exited) {
          reapLocked(**it, calls);
          it = dying_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto &call : calls) call();
  }
}

void WorkerClient::spawnLocked(const SandboxSupport &support, Calls &calls) {
  auto p = std::make_unique<Process>(options_.maxLineBytes);
  p->generation = ++generation_;
  auto fail = [&](const std::string &why) { failStartLocked(*p, why, calls); };
  std::error_code ec;
  if (options_.launcher.remote()) return spawnRemoteLocked(std::move(p), calls);
  if (options_.workerPath.empty() || ::access(options_.workerPath.c_str(), X_OK) != 0)
    return fail("no worker program at '" + options_.workerPath.string() + "'");
  p->dir = std::make_unique<TemporaryDirectory>("kwb-worker-");
  if (!p->dir->valid()) return fail(p->dir->error());
  p->privateDir = p->dir->path() / "private";
  p->canary = p->dir->path() / "outside-canary";
  p->secret = p->dir->path() / "outside-secret";
  p->socketPath = p->dir->path() / "outside.sock";
  fs::create_directory(p->privateDir, ec);
  if (ec) return fail("cannot create the private directory " + p->privateDir.string() + ": " + ec.message());
  fs::permissions(p->privateDir, fs::perms::owner_all, ec);

  std::vector<std::string> workerArgv{fs::absolute(options_.workerPath, ec).string(), "--serve"};
  if (options_.device) workerArgv.insert(workerArgv.end(), {"--device", std::to_string(*options_.device)});
  workerArgv.insert(workerArgv.end(), {"--sandbox", sandboxKindName(support.kind), "--private-dir", p->privateDir.string()});
  if (support.kind == SandboxKind::None) workerArgv.insert(workerArgv.end(), {"--sandbox-note", support.reason});
  // A tool the worker runs under goes between the sandbox and the worker. Unshare only makes the
  // namespaces and kwb-worker finishes the sandbox itself: `kwb-worker --sandbox-exec` does,
  // then runs the tool, which runs the worker (told the sandbox is finished).
  std::vector<std::string> command = workerArgv;
  std::vector<std::string> toolKeeps;
  if (!options_.wrapper.empty()) {
    if (support.kind == SandboxKind::Unshare) command.push_back("--sandbox-finished");
    command.insert(command.begin(), options_.wrapper.begin(), options_.wrapper.end());
    for (const auto &tool : {fs::path(options_.wrapper.front()), fs::weakly_canonical(options_.wrapper.front(), ec)})
      for (const auto &keep : programKeeps(tool)) toolKeeps.push_back(keep);
    if (support.kind == SandboxKind::Unshare)
      command.insert(command.begin(), {workerArgv.front(), "--sandbox-exec", "--private-dir", p->privateDir.string(), "--"});
    else {
      // The tool starts the worker: its folder and the folders it loads libraries from (a bundle's
      // $ORIGIN/../lib) stay visible too (file by file where a folder would reveal a cover).
      for (const auto &keep : programKeeps(workerArgv.front())) toolKeeps.push_back(keep);
    }
  }
  SandboxCommandOptions sandboxOptions;
  sandboxOptions.extraKeeps = toolKeeps;
  auto argv = sandboxCommand(support, command, p->privateDir, sandboxOptions);
  auto extraEnvironment = options_.environment;
  if (support.kind == SandboxKind::Unshare) {
    // The worker covers these itself; $XDG_RUNTIME_DIR and this process's $HOME are not in its
    // environment.
    const auto covers = sandboxCovers(workerArgv.front(), {}, toolKeeps);
    extraEnvironment.emplace_back(kSandboxCoversVariable, joinPathList(covers.covers));
    extraEnvironment.emplace_back(kSandboxKeepsVariable, joinPathList(covers.keeps));
  }
  auto env = workerEnvironment(p->privateDir, extraEnvironment);
  // The switches of a worker under a tool (exact allocations, the fence's open folders) come from
  // this client only: never from the caller's environment, never without the tool.
  for (const char *name : {"KWB_EXACT_ALLOCATIONS=", "KWB_FENCE_OPEN="}) {
    const std::string prefix = name;
    env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string &e) { return e.rfind(prefix, 0) == 0; }),
              env.end());
    if (options_.wrapper.empty()) continue;
    for (const auto &[key, value] : options_.environment)
      if (key + "=" == prefix) env.push_back(prefix + value);
  }
  p->wrapped = support.kind != SandboxKind::None;

  startChildLocked(std::move(p), argv, env, calls);
}

// A remote worker: ssh or srun runs `kwb-worker --relay` there, with this process's environment
// (the user's ssh agent and configuration, Slurm's variables); the sandbox is the far side's.
void WorkerClient::spawnRemoteLocked(std::unique_ptr<Process> p, Calls &calls) {
  std::vector<std::string> workerArgs{"--relay"};
  if (options_.device) workerArgs.insert(workerArgs.end(), {"--device", std::to_string(*options_.device)});
  if (!options_.remoteTool.empty()) workerArgs.insert(workerArgs.end(), {"--sanitize", options_.remoteTool});
  // A launcher that did not come through parseWorkerLauncher is checked the same before ssh or srun.
  if (const auto why = launcherProblem(options_.launcher); !why.empty())
    return failStartLocked(*p, "--workers: " + why, calls);
  auto argv = remoteWorkerCommand(options_.launcher, workerArgs);
  const std::string program = argv.empty() ? std::string() : argv.front();
  const auto found = launcherProgram(program);
  if (!found) return failStartLocked(*p, missingLauncherProgram(options_.launcher, program), calls);
  argv.front() = *found;
  p->dir = std::make_unique<TemporaryDirectory>("kwb-worker-");
  if (!p->dir->valid()) return failStartLocked(*p, p->dir->error(), calls);
  p->privateDir = p->dir->path();
  std::vector<std::string> env;
  for (char **e = environ; e && *e; ++e) env.emplace_back(*e);
  startChildLocked(std::move(p), argv, env, calls);
}

void WorkerClient::failStartLocked(Process &p, const std::string &why, Calls &calls) {
  WorkerExit e;
  e.generation = p.generation;
  e.description = "could not be started: " + why;
  e.startFailed = true;
  lastExit_ = e;
  state_ = State::Dead;
  failHeldLocked({error_kind::kStartFailed, "the worker " + e.description, {}}, calls);
  readyChanged_.notify_all();
  if (listeners_.onExit) calls.push_back([cb = listeners_.onExit, e] { cb(e); });
}

void WorkerClient::startChildLocked(std::unique_ptr<Process> p, const std::vector<std::string> &argv,
                                    const std::vector<std::string> &env, Calls &calls) {
  auto child = spawnProtocolChild(argv, env, p->privateDir);
  if (child.pid < 0) return failStartLocked(*p, child.error, calls);
  p->pid = child.pid;
  p->inFd = child.in;
  p->outFd = child.out;
  p->errFd = child.err;
  setNonBlocking(p->inFd);
  setNonBlocking(p->outFd);
  setNonBlocking(p->errFd);
  p->pidFd = openPidFd(child.pid);
  p->startDeadline = Clock::now() + options_.startTimeout;
  state_ = State::Starting;
  current_ = std::move(p);
}

namespace {

// `scancel --quiet STEP`, not waited for (the caller holds the client's lock on its I/O thread):
// a grandchild runs it, the child between is reaped at once. Only async-signal-safe calls after
// fork.
void cancelSlurmStepDetached(const std::string &step) {
  const auto program = launcherProgram("scancel");
  if (!program) return;
  std::string a0 = *program, a1 = "--quiet", a2 = step;
  char *argv[] = {a0.data(), a1.data(), a2.data(), nullptr};
  const pid_t child = ::fork();
  if (child == 0) {
    if (::fork() == 0) {
      const int null = ::open("/dev/null", O_RDWR);
      if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
      }
      ::execv(argv[0], argv);
    }
    ::_exit(0);
  }
  if (child > 0)
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
}

}  // namespace

void WorkerClient::killLocked(Process &p, const std::string &cause) {
  if (p.killed || p.pid <= 0) return;
  p.killed = true;
  p.killCause = cause;
  // A running worker that is killed is dead from now on, not when it is reaped: a process can
  // take long to exit after SIGKILL (on the H200, one whose kernel never returned stayed while
  // the driver tore its context down), and a request sent meanwhile was held for a worker that
  // was never started, its time limit not yet running: the caller waited for ever. Now such a
  // request fails at once, and the caller restarts the worker (Evaluator::ensureWorker does).
  if (&p == current_.get() && p.ready && state_ == State::Ready) {
    state_ = State::Dead;
    readyChanged_.notify_all();
  }
  // The pid is not reaped yet (only the reaper waits for it), so neither it nor its group id
  // can have been reused. Inside bwrap/unshare the sandbox dies with its outer process.
  ::kill(-p.pid, SIGKILL);
  ::kill(p.pid, SIGKILL);
  // srun killed leaves its job step running, its worker and GPU held (the next step of a
  // one-GPU allocation then waits for ever): the step is cancelled too. Its relay named it.
  if (options_.launcher.kind == WorkerLauncher::Kind::Slurm && p.hello.is_object())
    if (const auto relay = p.hello.find("relay"); relay != p.hello.end() && relay->is_object())
      if (const std::string step = relay->value("slurm_step", ""); !step.empty()) cancelSlurmStepDetached(step);
}

void WorkerClient::checkDeadlinesLocked(Calls &calls) {
  const auto now = Clock::now();
  auto processOf = [&](std::uint64_t generation) -> Process * {
    if (current_ && current_->generation == generation) return current_.get();
    for (auto &p : dying_)
      if (p->generation == generation) return p.get();
    return nullptr;
  };
  std::vector<std::uint64_t> expired;
  for (const auto &[id, r] : pending_)
    if (r->deadline && *r->deadline <= now) expired.push_back(id);
  for (const auto id : expired) {
    auto &r = *pending_[id];
    const std::string limit = seconds(r.timeout);
    if (Process *p = processOf(r.generation)) {
      killLocked(*p, "request " + std::to_string(id) + " ('" + r.cmd + "') ran past its time limit of " + limit);
    }
    failLocked(id,
               {error_kind::kTimeout,
                "no reply to '" + r.cmd + "' (request " + std::to_string(id) + ") within its time limit of " + limit +
                    "; the worker's process group was killed with SIGKILL",
                {{"limit_ms", r.timeout.count()}}},
               calls);
  }
  auto check = [&](Process &p) {
    if (p.killed || p.exited) return;
    if (!p.ready && now >= p.startDeadline) {
      killLocked(p, std::string("it did not become ready within ") + seconds(options_.startTimeout) +
                        (p.helloSeen ? " (no answer to the sandbox probe)" : " (no hello)"));
    } else if (p.killAt && now >= *p.killAt) {
      killLocked(p, p.killAtCause);
    } else if (p.relayEndDeadline && now >= *p.relayEndDeadline) {
      p.relayEndMissed = true;
      killLocked(p, "its relay did not end within " + seconds(options_.relayEndGrace) + " after its worker died");
    }
  };
  if (current_) check(*current_);
  for (auto &p : dying_) check(*p);
}

void WorkerClient::readOutputLocked(Process &p, Calls &calls) {
  char buffer[65536];
  std::vector<DecodedLine> lines;
  // When the process has exited, read everything left; otherwise a bounded amount per wake-up.
  for (int round = 0; p.outFd >= 0 && round < (p.exited ? 4096 : 16); ++round) {
    const ssize_t n = ::read(p.outFd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      closeFd(p.outFd);
      if (auto last = p.decoder.finish()) handleLineLocked(p, *last, calls);
      if (!p.exited && !p.killed && !p.killAt) {
        p.killAt = Clock::now() + kClosedOutputGrace;
        p.killAtCause = "it closed its output but kept running";
      }
      break;
    }
    lines.clear();
    p.decoder.feed(std::string_view(buffer, static_cast<std::size_t>(n)), lines);
    for (const auto &line : lines) handleLineLocked(p, line, calls);
  }
}

void WorkerClient::readStderrLocked(Process &p, Calls &calls) {
  char buffer[16384];
  auto emit = [&](std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > kStderrLineCap) line = line.substr(0, kStderrLineCap) + " [...]";
    p.errTail.push_back(line);
    while (p.errTail.size() > std::max<std::size_t>(options_.stderrTailLines, 1)) p.errTail.pop_front();
    if (listeners_.onStderr && !stopping_) calls.push_back([cb = listeners_.onStderr, line] { cb(line); });
  };
  for (int round = 0; p.errFd >= 0 && round < (p.exited ? 1024 : 16); ++round) {
    const ssize_t n = ::read(p.errFd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) {
      closeFd(p.errFd);
      if (!p.errPartial.empty()) emit(std::exchange(p.errPartial, {}));
      break;
    }
    p.errPartial.append(buffer, static_cast<std::size_t>(n));
    std::size_t start = 0, nl;
    while ((nl = p.errPartial.find('\n', start)) != std::string::npos) {
      emit(p.errPartial.substr(start, nl - start));
      start = nl + 1;
    }
    p.errPartial.erase(0, start);
    if (p.errPartial.size() > 4 * kStderrLineCap) emit(std::exchange(p.errPartial, {}));
  }
}

void WorkerClient::writeInputLocked(Process &p) {
  while (p.inFd >= 0 && p.outboundSent < p.outbound.size()) {
    const ssize_t n = ::send(p.inFd, p.outbound.data() + p.outboundSent, p.outbound.size() - p.outboundSent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p.outboundSent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    // The worker is gone: its requests fail when it is reaped.
    p.outbound.clear();
    p.outboundSent = 0;
    return;
  }
  if (p.outboundSent == p.outbound.size()) {
    p.outbound.clear();
    p.outboundSent = 0;
  } else if (p.outboundSent > (1u << 20) && p.outboundSent > p.outbound.size() / 2) {
    p.outbound.erase(0, p.outboundSent);
    p.outboundSent = 0;
  }
}

void WorkerClient::complainLocked(const std::string &text, Calls &calls) {
  if (listeners_.onStderr && !stopping_)
    calls.push_back([cb = listeners_.onStderr, line = "kwb-worker protocol error: " + text] { cb(line); });
}

void WorkerClient::handleLineLocked(Process &p, const DecodedLine &line, Calls &calls) {
  // A malformed message is a protocol error: the worker is killed and the requests it holds
  // fail with kind "protocol", naming what was wrong. Nothing may throw out of the I/O thread.
  auto protocolError = [&](const std::string &what) {
    complainLocked(what, calls);
    if (p.killed || p.exited) return;
    killLocked(p, "it sent a malformed message: " + what);
    std::vector<std::uint64_t> mine;
    for (const auto &[id, r] : pending_)
      if (r->generation == p.generation) mine.push_back(id);
    const ErrorInfo error{error_kind::kProtocol, "the worker sent a malformed message (" + what + "); it was killed", {}};
    for (const auto id : mine) failLocked(id, error, calls);
    if (&p == current_.get() && !p.ready) failHeldLocked(error, calls);
  };
  try {
    auto ownRequest = [&](std::uint64_t id) -> Pending * {
      const auto it = pending_.find(id);
      return it != pending_.end() && it->second->generation == p.generation ? it->second.get() : nullptr;
    };
    if (line.kind != DecodedLine::Kind::Message) {
      complainLocked(line.error, calls);
      if (line.idHint && ownRequest(*line.idHint))
        failLocked(*line.idHint, {error_kind::kProtocol, "the worker's reply could not be read: " + line.error, {}}, calls);
      return;
    }
    auto message = parseWorkerMessage(line.message);
    if (const auto *why = std::get_if<std::string>(&message)) {
      complainLocked(*why, calls);
      return;
    }
    if (const auto *event = std::get_if<Event>(&message)) {
      if (!event->id) {
        if (event->event == "hello" && !p.helloSeen) {
          if (const auto what = malformedHello(event->data); !what.empty()) return protocolError(what);
          handleHelloLocked(p, *event, calls);
        } else if (event->event == "hello") complainLocked("a second hello", calls);
        else if (event->event == "worker-exit" && options_.launcher.remote() && event->data.is_object())
          p.farExit = event->data;  // the relay's last line under a tool (relay.h)
        return;  // other worker-level events are for later versions: ignored
      }
      if (Pending *r = ownRequest(*event->id)) {
        if (r->handlers.onEvent) calls.push_back([cb = r->handlers.onEvent, e = *event] { cb(e); });
      } else {
        complainLocked("an event for request " + std::to_string(*event->id) + ", which is not waiting", calls);
      }
      return;
    }
    const auto &reply = std::get<Reply>(message);
    if (!reply.id) {
      complainLocked("the worker could not read a request: " + reply.error.message, calls);
      return;
    }
    if (p.probeId && *reply.id == *p.probeId) {
      if (reply.ok) {
        if (const auto what = malformedProbe(reply.result); !what.empty()) return protocolError(what);
      }
      handleProbeReplyLocked(p, reply, calls);
      return;
    }
    if (!ownRequest(*reply.id)) {
      complainLocked("a reply to request " + std::to_string(*reply.id) + ", which is not waiting", calls);
      return;
    }
    if (options_.launcher.remote() && !reply.ok && reply.error.kind == error_kind::kWorkerDied) {
      // The far side's worker died: the candidate's doing, or its job step's end? Cancelling a
      // step (scancel, preemption, its time limit) kills the worker and the relay one after the
      // other; a worker killed first makes the relay say "worker-died" before it goes too. So the
      // reply waits for the transport's end: the relay's own status confirms it (reapLocked).
      p.relayedDeaths.emplace(*reply.id, reply);
      if (!p.relayEndDeadline) p.relayEndDeadline = Clock::now() + options_.relayEndGrace;
      pending_[*reply.id]->deadline.reset();  // answered: its own time limit no longer runs
      return;
    }
    auto node = pending_.extract(*reply.id);
    if (node.mapped()->handlers.onReply)
      calls.push_back([cb = std::move(node.mapped()->handlers.onReply), reply] { cb(reply); });
  } catch (const std::exception &e) {
    protocolError(std::string("a message the client could not handle: ") + e.what());
  }
}

void WorkerClient::handleHelloLocked(Process &p, const Event &hello, Calls &calls) {
  p.helloSeen = true;
  p.hello = hello.data;
  p.hello["event"] = "hello";
  const auto protocol = hello.data.value("protocol", 0);
  if (options_.launcher.remote()) {
    if (const auto problem = handshakeProblem(p.hello, options_.launcher); !problem.empty()) {
      killLocked(p, problem);
      return;
    }
    // The relay made the sandbox on its host and probed it from there.
    const Json relay = p.hello["relay"];
    SandboxStatus s;
    s.state = relay.value("sandbox", "none");
    s.verified = relay.value("verified", false);
    s.reason = relay.value("reason", "");
    s.privateDir = relay.value("private_dir", "");
    s.probe = relay.value("probe", Json());
    s.seccomp = p.hello.value("seccomp", false);
    s.seccompReason = p.hello.value("seccomp_reason", "");
    s.host = relay.value("host", "");
    s.slurmStep = relay.value("slurm_step", "");
    s.visibleDevices = relay.value("cuda_visible_devices", "");
    s.tool = relay.value("tool", "");
    if (&p == current_.get()) sandbox_ = s;
    becomeReadyLocked(p, calls);
    return;
  }
  if (protocol != kProtocolVersion) {
    killLocked(p, "it speaks protocol version " + std::to_string(protocol) + "; this client speaks " +
                      std::to_string(kProtocolVersion));
    return;
  }
  if (!options_.verifySandbox) {
    sandbox_ = SandboxStatus{};
    sandbox_.state = p.hello.value("sandbox", "none");
    sandbox_.reason = p.hello.value("sandbox_reason", "") + (sandbox_.state == "none" ? "" : " (not verified)");
    sandbox_.privateDir = p.privateDir.string();
    sandbox_.seccomp = p.hello.value("seccomp", false);
    sandbox_.seccompReason = p.hello.value("seccomp_reason", "");
    becomeReadyLocked(p, calls);
    return;
  }
  // A server the sandboxed worker must not reach, on this machine's loopback.
  Json params = {{"write", Json::array({p.canary.string()})}, {"timeout_ms", 1000}};
  p.listenFd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (p.listenFd >= 0 && ::bind(p.listenFd, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0 &&
      ::listen(p.listenFd, 4) == 0 &&
      ::getsockname(p.listenFd, reinterpret_cast<sockaddr *>(&address), &length) == 0) {
    params["connect"] = Json::array({{{"host", "127.0.0.1"}, {"port", ntohs(address.sin_port)}}});
  } else {
    closeFd(p.listenFd);
    complainLocked(std::string("no loopback listener for the sandbox probe: ") + std::strerror(errno), calls);
  }
  // A host Unix socket and a private file it must not reach (covered like /tmp and $HOME).
  {
    std::ofstream secret(p.secret);
    secret << "not for the worker\n";
  }
  if (fs::exists(p.secret)) params["read"] = Json::array({p.secret.string()});
  p.unixListenFd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un unixAddress{};
  unixAddress.sun_family = AF_UNIX;
  const auto socketPath = p.socketPath.string();
  if (p.unixListenFd >= 0 && socketPath.size() < sizeof unixAddress.sun_path) {
    std::memcpy(unixAddress.sun_path, socketPath.c_str(), socketPath.size() + 1);
    if (::bind(p.unixListenFd, reinterpret_cast<sockaddr *>(&unixAddress), sizeof unixAddress) == 0 &&
        ::listen(p.unixListenFd, 4) == 0)
      params["connect_unix"] = Json::array({socketPath});
  }
  if (!params.contains("connect_unix")) {
    closeFd(p.unixListenFd);
    complainLocked("no Unix socket listener for the sandbox probe at " + socketPath, calls);
  }
  const auto id = ++nextId_;
  p.probeId = id;
  p.outbound += encodeRequest({id, "probe-sandbox", params});
}

void WorkerClient::handleProbeReplyLocked(Process &p, const Reply &reply, Calls &calls) {
  closeFd(p.listenFd);
  closeFd(p.unixListenFd);
  p.probeId.reset();
  SandboxStatus s;
  s.privateDir = p.privateDir.string();
  s.seccomp = p.hello.value("seccomp", false);
  s.seccompReason = p.hello.value("seccomp_reason", "");
  const std::string claimed = p.hello.value("sandbox", "none");
  const std::string helloReason = p.hello.value("sandbox_reason", "");
  std::vector<std::string> problems;
  if (!reply.ok) {
    problems.push_back("probe-sandbox failed: " + reply.error.message);
  } else {
    s.probe = reply.result;
    for (const auto &c : reply.result.value("connect", Json::array()))
      if (c.value("ok", false))
        problems.push_back("it reached " + c.value("host", std::string()) + ":" + std::to_string(c.value("port", 0)) +
                           " on this machine");
    for (const auto &c : reply.result.value("connect_unix", Json::array()))
      if (c.value("ok", false))
        problems.push_back("it connected to the Unix socket " + c.value("path", std::string()) + " on this machine");
    for (const auto &r : reply.result.value("read", Json::array()))
      if (r.value("ok", false))
        problems.push_back("it could read " + r.value("path", std::string()) + " outside its private directory");
    for (const auto &w : reply.result.value("write", Json::array()))
      if (w.value("ok", false))
        problems.push_back("it could create " + w.value("path", std::string()) + " outside its private directory");
    const auto priv = reply.result.value("private_dir", Json::object());
    if (!priv.value("ok", false))
      problems.push_back("it cannot write its private directory: " + priv.value("error", std::string("?")));
  }
  std::error_code ec;
  if (fs::exists(p.canary, ec)) {
    problems.push_back("a file it wrote appeared outside the sandbox (" + p.canary.string() + ")");
    fs::remove(p.canary, ec);
  }
  if (claimed == "none") {
    s.reason = helloReason;
  } else if (!problems.empty()) {
    std::string text;
    for (const auto &pr : problems) text += (text.empty() ? "" : "; ") + pr;
    s.reason = claimed + " sandbox not in effect: " + text;
  } else {
    s.state = claimed;
    s.verified = true;
    s.reason = "no network, no host Unix sockets, /tmp and $HOME hidden; only " + s.privateDir +
               " is writable (confirmed by probe-sandbox)";
  }
  if (&p == current_.get()) sandbox_ = s;
  becomeReadyLocked(p, calls);
}

void WorkerClient::becomeReadyLocked(Process &p, Calls &calls) {
  p.ready = true;
  if (&p != current_.get()) return;
  state_ = State::Ready;
  hello_ = p.hello;
  while (!held_.empty()) {
    const auto id = held_.front();
    held_.pop_front();
    if (const auto it = pending_.find(id); it != pending_.end()) writeRequestLocked(p, *it->second);
  }
  readyChanged_.notify_all();
  if (listeners_.onReady && !stopping_) calls.push_back([cb = listeners_.onReady, h = p.hello] { cb(h); });
}

void WorkerClient::writeRequestLocked(Process &p, Pending &request) {
  request.generation = p.generation;
  request.deadline = Clock::now() + request.timeout;
  p.outbound += request.line;
  std::string().swap(request.line);
}

void WorkerClient::failLocked(std::uint64_t id, ErrorInfo error, Calls &calls) {
  auto node = pending_.extract(id);
  if (node.empty()) return;
  auto reply = Reply::failure(id, std::move(error));
  if (node.mapped()->handlers.onReply)
    calls.push_back([cb = std::move(node.mapped()->handlers.onReply), reply = std::move(reply)] { cb(reply); });
}

void WorkerClient::failHeldLocked(const ErrorInfo &error, Calls &calls) {
  while (!held_.empty()) {
    const auto id = held_.front();
    held_.pop_front();
    failLocked(id, error, calls);
  }
}

void WorkerClient::reapLocked(Process &p, Calls &calls) {
  // What it wrote last (a final reply, its dying words on stderr) may still sit in the pipes.
  readOutputLocked(p, calls);
  readStderrLocked(p, calls);
  if (!p.errPartial.empty()) {
    p.errTail.push_back(std::exchange(p.errPartial, {}));
    if (p.errTail.size() > options_.stderrTailLines) p.errTail.pop_front();
  }
  ::kill(-p.pid, SIGKILL);  // anything it left running in its group
  int status = 0;
  pid_t waited;
  while ((waited = ::waitpid(p.pid, &status, 0)) < 0 && errno == EINTR) {
  }
  WorkerExit e;
  e.generation = p.generation;
  e.pid = p.pid;
  e.cause = p.killCause;
  e.stderrTail = joinLines(p.errTail);
  e.startFailed = !p.ready;
  e.replaced = &p != current_.get();
  if (p.farExit.is_object()) {
    e.farKnown = true;
    if (const auto code = p.farExit.find("exit_code"); code != p.farExit.end() && code->is_number_integer())
      e.farExitCode = code->get<int>();
    if (const auto sig = p.farExit.find("signal"); sig != p.farExit.end() && sig->is_string()) e.farSignal = sig->get<std::string>();
    if (const auto d = p.farExit.find("description"); d != p.farExit.end() && d->is_string())
      e.farDescription = d->get<std::string>();
    if (const auto c = p.farExit.find("cause"); c != p.farExit.end() && c->is_string()) e.farCause = c->get<std::string>();
  }
  if (waited != p.pid) {
    e.description = "ended (its exit status is unknown: " + std::string(std::strerror(errno)) + ")";
  } else if (WIFSIGNALED(status)) {
    e.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    e.exitCode = WEXITSTATUS(status);
    // bwrap and our pid-namespace init report a signal as 128 + its number.
    if (p.wrapped && e.exitCode > 128 && e.exitCode < 128 + 65) e.signal = e.exitCode - 128;
  }
  if (e.signal) {
    e.signalName = signalName(e.signal);
    const char *text = ::strsignal(e.signal);
    e.description = "was killed by signal " + e.signalName + (text ? std::string(" (") + text + ")" : "");
  } else if (e.description.empty()) {
    e.description = "exited with status " + std::to_string(e.exitCode);
  }
  std::string what = "the worker (pid " + std::to_string(p.pid) + ") " + e.description;
  if (!e.cause.empty()) what += " after " + e.cause;
  const std::string tail = e.stderrTail.empty() ? "" : "; its last stderr lines:\n" + e.stderrTail;
  Json details = {{"pid", p.pid}, {"stderr", e.stderrTail}, {"generation", p.generation}};
  details["signal"] = e.signal ? Json(e.signalName) : Json(nullptr);
  details["exit_code"] = e.signal || e.exitCode < 0 ? Json(nullptr) : Json(e.exitCode);

  std::vector<std::uint64_t> mine;
  for (const auto &[id, r] : pending_)
    if (r->generation == p.generation) mine.push_back(id);
  // The relay ended on its own after its worker's death (or was stopped here, not for want of
  // that end): its word stands.
  const bool relayEnded =
      (p.killed && !p.relayEndMissed) || (!e.signal && e.exitCode == kRelayExitWorkerEnded);
  for (const auto id : mine) {
    const auto relayed = p.relayedDeaths.find(id);
    if (stopping_) failLocked(id, {error_kind::kCancelled, "the worker client shut down before the reply came", {}}, calls);
    else if (relayed != p.relayedDeaths.end() && relayEnded) failLocked(id, relayed->second.error, calls);
    else if (options_.launcher.remote() && (!p.killed || relayed != p.relayedDeaths.end()))
      failLocked(id,
                 {error_kind::kWorkerLost,
                  "the connection to the worker on " + options_.launcher.describe() + " ended with the request unanswered (" +
                      e.description + (e.cause.empty() ? "" : " after " + e.cause) +
                      (options_.launcher.kind == WorkerLauncher::Kind::Slurm
                                           ? ": the job step was cancelled, preempted or ran past its time limit?"
                                           : ": the connection dropped?") +
                      ")" +
                      (relayed == p.relayedDeaths.end()
                           ? ""
                           : "; before it ended, its relay said: " + relayed->second.error.message) +
                      tail,
                  details},
                 calls);
    else failLocked(id, {error_kind::kWorkerDied, what + tail, details}, calls);
  }
  const bool isCurrent = &p == current_.get();
  if (isCurrent) {
    if (stopping_) failHeldLocked({error_kind::kCancelled, "the worker client shut down", {}}, calls);
    else if (!p.ready) failHeldLocked({error_kind::kStartFailed, "the worker did not start: " + what + tail, details}, calls);
    state_ = stopping_ ? State::Stopped : State::Dead;
    lastExit_ = e;
    readyChanged_.notify_all();
  }
  closeFd(p.inFd);
  closeFd(p.outFd);
  closeFd(p.errFd);
  closeFd(p.pidFd);
  closeFd(p.listenFd);
  closeFd(p.unixListenFd);
  if (listeners_.onExit && !stopping_) calls.push_back([cb = listeners_.onExit, e] { cb(e); });
}

}  // namespace kwb::worker
