// Remote workers (issue 22) through a real OpenSSH server on loopback (tests/helpers/loopback_sshd.h),
// a key made for the test: the launcher's spec and command line, the relay's handshake and
// sandbox report, compile-only evaluations and device lists through `ssh` workers, and the faults
// (a hang past its limit, a crash, a dropped connection, a cancel) reaching the far side's worker.
#include <QtTest>

#include <signal.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "core/eval/evaluator.h"
#include "core/eval/evaluator_pool.h"
#include "core/eval/sanitizer.h"
#include "core/process/child_process.h"
#include "core/sandbox/worker_sandbox.h"
#include "core/task/manifest_parser.h"
#include "core/worker/worker_client.h"
#include "core/worker/worker_launcher.h"
#include "helpers/loopback_sshd.h"
#include "helpers/test_files.h"
#include "helpers/process_wait.h"
#include "helpers/worker_replies.h"
#include "kwb/version.h"

using namespace kwb::worker;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using kwb::test::Replies;
using kwb::test::waitForExit;

namespace {

std::string text(const Reply &r) { return r.ok ? r.result.dump() : r.error.kind + ": " + r.error.message; }

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// $XDG_RUNTIME_DIR pointed at `folder` (made) while it lives, so that ssh's shared connections go
// in a folder of the test's choosing; the earlier value restored after.
class RuntimeFolder {
 public:
  explicit RuntimeFolder(const fs::path &folder) : folder_(folder), before_(qgetenv("XDG_RUNTIME_DIR")) {
    fs::create_directories(folder);
    qputenv("XDG_RUNTIME_DIR", QByteArray::fromStdString(folder.string()));
  }
  ~RuntimeFolder() { restore(); }
  RuntimeFolder(const RuntimeFolder &) = delete;
  RuntimeFolder &operator=(const RuntimeFolder &) = delete;
  void restore() const { qputenv("XDG_RUNTIME_DIR", before_); }
  // ssh's control folder in it; empty where the folder is too deep and /tmp/kwb-ssh-UID, shared
  // with the user's own connections, would be used instead (a test never plants anything there).
  std::string ownControlFolder() const {
    const std::string dir = kwb::worker::sshControlDirectory();
    return dir == (folder_ / "kwb-ssh").string() ? dir : std::string();
  }
  static constexpr const char *kTooDeep = "this machine's temporary folder is too deep for a kwb-ssh of the test's own";

 private:
  fs::path folder_;
  QByteArray before_;
};

}  // namespace

class TestRemoteWorkers : public QObject {
  Q_OBJECT

  std::unique_ptr<kwb::test::LoopbackSshd> sshd_;
  fs::path worker_;
  QTemporaryDir runtime_;

  WorkerLauncher launcher(const std::string &program = {}) const {
    std::string problem;
    const auto l = parseWorkerLauncher(std::string("ssh://") + kwb::test::LoopbackSshd::kHost +
                                           (program.empty() ? worker_.string() : program),
                                       problem);
    if (!l) qFatal("%s", problem.c_str());
    return *l;
  }
  WorkerClientOptions options(const std::string &program = {}) const {
    WorkerClientOptions o;
    o.launcher = launcher(program);
    o.requestTimeout = 20s;
    o.startTimeout = 30s;
    return o;
  }
  // A script that answers like a remote kwb-worker with the given hello line.
  fs::path fakeWorker(const QString &name, const std::string &hello) const {
    const fs::path path = fs::path(runtime_.path().toStdString()) / name.toStdString();
    kwb::test::writeScript(path, "echo '" + hello + "'\nexec cat >/dev/null");
    return path;
  }
  // A worker through ssh (these options, else the defaults), started and ready; its relay's hello.
  std::unique_ptr<WorkerClient> readyClient(Json &hello) { return readyClient(hello, options()); }
  std::unique_ptr<WorkerClient> readyClient(Json &hello, const WorkerClientOptions &o) {
    auto client = std::make_unique<WorkerClient>(o);
    client->start();
    if (!client->waitUntilReady(40s)) {
      const auto e = client->lastExit();
      QTest::qFail(("not ready: " + (e ? e->description + " " + e->cause + " " + e->stderrTail : std::string("?")) +
                    "\nsshd: " + sshd_->log())
                       .c_str(),
                   __FILE__, __LINE__);
      return nullptr;
    }
    hello = client->hello();
    return client;
  }

  // ssh run as the workers run it (the test's ssh_config), these arguments after its options.
  static kwb::ChildProcessResult runSsh(const std::vector<std::string> &arguments) {
    kwb::ChildProcessRequest request;
    request.argv = sshCommand();
    request.argv.front() = launcherProgram(request.argv.front()).value_or(request.argv.front());
    request.argv.insert(request.argv.end(), arguments.begin(), arguments.end());
    request.timeout = 20s;
    return kwb::runChildProcess(request);
  }
  // Whether the host's shared connection answers in `dir`, as a worker's ssh looks for it.
  static kwb::ChildProcessResult checkShared(const std::string &dir, const std::string &host) {
    return runSsh({"-o", "ControlPath=" + dir + "/%C", "-O", "check", "--", host});
  }
  // The socket path ssh names for the host in `dir` (ssh -G: its configuration, %C expanded).
  static std::string controlPathFor(const std::string &dir, const std::string &host) {
    const auto g = runSsh({"-G", "-o", "ControlPath=" + dir + "/%C", "--", host});
    const auto at = g.output.find("\ncontrolpath ");
    if (!g.succeeded() || at == std::string::npos) return {};
    const auto start = at + 13;
    return g.output.substr(start, g.output.find('\n', start) - start);
  }
  // ensureSshMaster starts one more master for the launcher's host, reported up, and it answers
  // in `dir`; it is ended when the returned guard goes.
  [[nodiscard]] static auto startsAndAnswers(const std::string &dir, const WorkerLauncher &launcher) {
    auto ended = qScopeGuard([=] { runSsh({"-o", "ControlPath=" + dir + "/%C", "-O", "exit", "--", launcher.host}); });
    const auto earlier = sshConnectionStats(launcher);
    const std::string down = ensureSshMaster(launcher);
    const auto connection = sshConnectionStats(launcher);
    const auto checked = checkShared(dir, launcher.host);
    [&] {
      QVERIFY2(down.empty(), down.c_str());
      QVERIFY2(connection.up && connection.problem.empty(), connection.problem.c_str());
      QCOMPARE(connection.started, earlier.started + 1);
      QVERIFY2(checked.succeeded(), checked.output.c_str());
    }();
    return ended;
  }
  // A Unix socket bound at `path`; listening (a live master) or not (one whose master died
  // without its cleanup: connecting is refused). The descriptor, open.
  static int plantSocket(const std::string &path, bool listening) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), std::min(path.size() + 1, sizeof address.sun_path - 1));
    if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr *>(&address), sizeof address) != 0 ||
        (listening && ::listen(fd, 4) != 0))
      qFatal("cannot plant a socket at %s: %s", path.c_str(), std::strerror(errno));
    return fd;
  }

 private slots:
  void initTestCase() {
    worker_ = qEnvironmentVariable("KWB_WORKER").toStdString();
    QVERIFY2(!worker_.empty(), "run through ctest: KWB_WORKER names kwb-worker");
    QVERIFY(runtime_.isValid());
    // ssh's shared connections live in this test's folder (and end with its sshd).
    qputenv("XDG_RUNTIME_DIR", runtime_.path().toUtf8());
    sshd_ = std::make_unique<kwb::test::LoopbackSshd>();
    // packaging/install-deps.sh installs openssh-server: a machine without it fails here, loudly.
    QVERIFY2(sshd_->problem().empty(), sshd_->problem().c_str());
    qputenv("KWB_SSH_COMMAND", QByteArray::fromStdString(sshd_->sshCommand()));
    qInfo("sshd on 127.0.0.1:%d", sshd_->port());
  }

  void cleanupTestCase() { sshd_.reset(); }

  void launcherSpecs() {
    std::string problem;
    auto l = parseWorkerLauncher("local", problem);
    QVERIFY(l && l->kind == WorkerLauncher::Kind::Local && !l->remote());
    l = parseWorkerLauncher("ssh://ana@gpu-box.lab:2222/opt/kwb/bin/kwb-worker", problem);
    QVERIFY2(l, problem.c_str());
    QCOMPARE(l->host, std::string("ana@gpu-box.lab"));
    QCOMPARE(l->port, 2222);
    QCOMPARE(l->remoteWorker, std::string("/opt/kwb/bin/kwb-worker"));
    QCOMPARE(l->describe(), std::string("ssh://ana@gpu-box.lab:2222"));
    QCOMPARE(parseWorkerLauncher(l->spec(), problem)->remoteWorker, l->remoteWorker);
    l = parseWorkerLauncher("slurm:partition=gpu,gpus=8,time=01:00:00", problem);
    QVERIFY2(l, problem.c_str());
    QCOMPARE(l->kind, WorkerLauncher::Kind::Slurm);
    QCOMPARE(l->slurm.at("partition"), std::string("gpu"));
    QCOMPARE(l->describe(), std::string("slurm (partition gpu, 8 GPUs, time 01:00:00)"));
    // A constraint may be a feature expression (srun and salloc get it as one argument).
    l = parseWorkerLauncher("slurm:partition=gpu,constraint=a100|h100&ib", problem);
    QVERIFY2(l, problem.c_str());
    QCOMPARE(l->slurm.at("constraint"), std::string("a100|h100&ib"));
    // srun's time formats, job ids, waits and no GPUs at all (compile-only work) are taken.
    for (const char *spec : {"slurm:time=60", "slurm:time=10:00", "slurm:time=2-12", "slurm:time=2-00:30:00",
                             "slurm:time=UNLIMITED", "slurm:jobid=123456,wait=30,gpus=0", "slurm:account=lab-1.a_b,qos=high",
                             "slurm:constraint=[rack1*2&rack2*2]", "ssh://a.b-c_d@h-1.lab/opt/k~w/kwb-worker"}) {
      problem.clear();
      QVERIFY2(parseWorkerLauncher(spec, problem), (std::string(spec) + ": " + problem).c_str());
    }
    // What is refused, and the message names the field and says what is expected.
    for (const auto &[spec, needle] : std::vector<std::pair<std::string, std::string>>{
             {"ssh://", "not a host name"},
             {"ssh://-oProxyCommand=x", "not a host name"},
             {"ssh://ana@-oProxyCommand=x", "the host must be letters"},
             {"ssh://-oProxyCommand=x@host", "the user must be letters"},
             {"ssh://@host", "the user must be"},
             {"ssh://host:99999", "not a port number"},
             {"ssh://host:", "not a port number"},
             {"ssh://host:+22", "not a port number"},
             {"ssh://host:-22", "not a port number"},
             {"ssh://host/opt/k w/kwb-worker", "must be the absolute path"},
             {"ssh://host/opt/kwb\nworker", "must be the absolute path"},
             {"ssh://host/opt/$(id)/kwb-worker", "must be the absolute path"},
             // Issue 45, 7: never an option of srun's.
             {"slurm:partition=gpu,worker=--prolog=/path/evil.sh", "worker='--prolog=/path/evil.sh': worker must be the absolute path"},
             {"slurm:worker=kwb-worker", "worker must be the absolute path"},
             {"slurm:worker=/opt/kwb worker", "worker must be the absolute path"},
             {"slurm:worker=/opt/kwb-worker;id", "worker must be the absolute path"},
             {"slurm:worker=/", "worker must be the absolute path"},
             {"slurm:partition=--prolog=/x", "partition must be a name of letters, digits and _ . -, not beginning with '-'"},
             {"slurm:account=-x", "account must be a name"},
             {"slurm:qos=a b", "qos must be a name"},
             {"slurm:partition=gpu,color=red", "known key"},
             {"slurm:gpus=many", "gpus must be a number of GPUs, 0 to 4096"},
             {"slurm:gpus=-1", "gpus must be a number of GPUs"},
             {"slurm:gpus=+8", "gpus must be a number of GPUs"},
             {"slurm:gpus=5000", "gpus must be a number of GPUs"},
             {"slurm:time=--begin=now", "time must be a time limit"},
             {"slurm:time=1:2:3:4", "time must be a time limit"},
             {"slurm:time=01:00:00x", "time must be a time limit"},
             {"slurm:jobid=12x", "jobid must be a job id"},
             {"slurm:jobid=-5", "jobid must be a job id"},
             {"slurm:jobid=0", "jobid must be a job id"},
             {"slurm:wait=0", "wait must be a number of seconds"},
             {"slurm:wait=10s", "wait must be a number of seconds"},
             {"slurm:wait=99999999", "wait must be a number of seconds"},
             {"slurm:constraint=--x", "constraint must be a feature expression"},
             {"slurm:partition=gpu;rm", "partition must be a name"},
             {"slurm:partition=a|b", "partition must be a name"},
             {"slurm:constraint=a100 h100", "constraint must be a feature expression"},
             {"slurm:constraint=a100;id", "constraint must be a feature expression"},
             {"tcp://host", "expected local, ssh://"}}) {
      problem.clear();
      QVERIFY2(!parseWorkerLauncher(spec, problem), spec.c_str());
      QVERIFY2(problem.find(needle) != std::string::npos, (spec + ": " + problem).c_str());
    }
    // A terminal's escape sequence in a spec is shown escaped, never as itself.
    problem.clear();
    QVERIFY(!parseWorkerLauncher("slurm:partition=gpu\x1b[31m", problem));
    QVERIFY2(problem.find('\x1b') == std::string::npos && problem.find("\\x1b") != std::string::npos, problem.c_str());
  }

  // A launcher made without the parser (a program's own struct) is checked the same before ssh
  // runs: a host that would be an option never reaches it.
  // Several hosts in one pool (issue 49): a list of ssh hosts (and local), each part as a single
  // launcher takes it; a Slurm launcher alone; the same host twice, an empty part and a bad part
  // refused, naming it.
  void severalHostsSpecs() {
    std::string problem;
    auto list = parseWorkerLaunchers("ssh://ana@gpu-a:2222/opt/kwb/bin/kwb-worker,ssh://gpu-b,local", problem);
    QVERIFY2(list, problem.c_str());
    QCOMPARE(list->size(), std::size_t(3));
    QCOMPARE((*list)[0].host, std::string("ana@gpu-a"));
    QCOMPARE((*list)[0].remoteWorker, std::string("/opt/kwb/bin/kwb-worker"));
    QCOMPARE((*list)[1].describe(), std::string("ssh://gpu-b"));
    QCOMPARE((*list)[2].kind, WorkerLauncher::Kind::Local);
    QCOMPARE(launchersSpec(*list), std::string("ssh://ana@gpu-a:2222/opt/kwb/bin/kwb-worker,ssh://gpu-b,local"));
    QCOMPARE(parseWorkerLaunchers(launchersSpec(*list), problem)->size(), std::size_t(3));
    // One launcher is a list of one; a Slurm spec's commas are its own.
    list = parseWorkerLaunchers("slurm:partition=gpu,gpus=8,time=01:00:00", problem);
    QVERIFY2(list && list->size() == 1, problem.c_str());
    QCOMPARE(list->front().slurm.at("gpus"), std::string("8"));
    list = parseWorkerLaunchers("ssh://gpu-a", problem);
    QVERIFY(list && list->size() == 1 && list->front().host == "gpu-a");
    for (const auto &[spec, says] : std::vector<std::pair<std::string, std::string>>{
             {"ssh://gpu-a,slurm:partition=gpu,gpus=2", "a Slurm launcher stands alone"},
             {"slurm:partition=gpu,gpus=2,ssh://gpu-a", "a Slurm launcher stands alone"},
             {"ssh://gpu-a,ssh://gpu-a", "ssh://gpu-a is listed twice"},
             {"ssh://gpu-a,ssh://", "is not a host name"},
             {"ssh://gpu-a,ssh://-oProxyCommand=x", "is not a host name"},
             {",ssh://gpu-a", "an empty part"}}) {
      problem.clear();
      QVERIFY2(!parseWorkerLaunchers(spec, problem), spec.c_str());
      QVERIFY2(problem.find(says) != std::string::npos, (spec + ": " + problem).c_str());
    }
  }

  // Two hosts in one pool, both asked at once: here neither has a CUDA device, so the pool has no
  // GPU and says so for each host, as a local worker would; a host that is gone is left out with
  // why (its worker did not start), the other's answer still given.
  void severalHostsInOnePoolSayWhatEachHas() {
    kwb::test::LoopbackSshd second("kwbtest-b");
    QVERIFY2(second.problem().empty(), second.problem().c_str());
    QTemporaryDir both;
    QVERIFY(both.isValid());
    const QByteArray before = qgetenv("KWB_SSH_COMMAND");
    qputenv("KWB_SSH_COMMAND", QByteArray::fromStdString(kwb::test::LoopbackSshd::sshCommandFor(
                                   {sshd_.get(), &second}, fs::path(both.path().toStdString()))));
    std::string problem;
    const auto hosts = parseWorkerLaunchers(std::string("ssh://") + sshd_->alias() + worker_.string() + ",ssh://" +
                                                second.alias() + worker_.string(),
                                            problem);
    QVERIFY2(hosts, problem.c_str());
    kwb::EvaluatorSettings local;
    local.workerPath = worker_;
    std::string localProblem;
    const bool gpuHere = !kwb::describeVisibleDevices(local, localProblem).empty();
    {
      kwb::EvaluatorPoolSettings ps;
      ps.evaluator.launcher = hosts->front();
      ps.evaluator.hosts = *hosts;
      std::vector<std::string> messages;
      std::mutex m;
      kwb::EvaluatorPool pool(ps, [&](const std::string &text) {
        std::lock_guard lock(m);
        messages.push_back(text);
      });
      if (gpuHere) {
        QCOMPARE(pool.devices().size(), 2 * kwb::describeVisibleDevices(local, localProblem).size());
        QCOMPARE(pool.devices().back().host, std::string("ssh://kwbtest-b"));
      } else {
        QVERIFY(pool.devices().empty());
        QVERIFY2(pool.problem() == "ssh://kwbtest: " + localProblem + "; ssh://kwbtest-b: " + localProblem,
                 pool.problem().c_str());
        QCOMPARE(messages.size(), std::size_t(2));
        QVERIFY2(messages[0].rfind("left out of the pool: ssh://kwbtest: ", 0) == 0, messages[0].c_str());
      }
      // Each host's shared connection, as the dock's line per host says it.
      for (const auto &host : *hosts) {
        const auto connection = kwb::worker::sshConnectionStats(host);
        QVERIFY2(connection.asked && connection.up && connection.started + connection.reused >= 1,
                 (host.describe() + ": " + connection.problem).c_str());
        QVERIFY(connection.started == 0 || connection.lastSetupMs > 0);
      }
    }
    second.stop();
    {
      kwb::EvaluatorPoolSettings ps;
      ps.evaluator.launcher = hosts->front();
      ps.evaluator.hosts = *hosts;
      ps.evaluator.workerStartTimeout = 20s;
      kwb::EvaluatorPool pool(ps);
      const std::string gone = "ssh://kwbtest-b: the GPU worker on ssh://kwbtest-b did not start";
      QVERIFY2(pool.problem().find(gone) != std::string::npos || (gpuHere && !pool.devices().empty()), pool.problem().c_str());
      for (const auto &d : pool.devices()) QCOMPARE(d.host, std::string("ssh://kwbtest"));
    }
    qputenv("KWB_SSH_COMMAND", before);
  }

  void handMadeLauncherIsCheckedBeforeSsh() {
    const fs::path marker = fs::path(runtime_.path().toStdString()) / "proxy-command-ran";
    kwb::EvaluatorSettings s;
    s.launcher = launcher();
    s.launcher.host = "-oProxyCommand=touch " + marker.string();
    QVERIFY(!launcherProblem(s.launcher).empty());
    std::string problem;
    QVERIFY(!kwb::startWorker(s, std::nullopt, problem));
    QVERIFY2(problem.find("--workers: '-oProxyCommand=touch") != std::string::npos &&
                 problem.find("is not [USER@]HOST") != std::string::npos,
             problem.c_str());
    // The port: 0 is "none given" (ssh's own choice, no -p); anything else outside 1 to 65535 is refused,
    // and the message says which values are allowed.
    for (const int port : {-1, 65536, 100000}) {
      auto l = launcher();
      l.port = port;
      const auto why = launcherProblem(l);
      QVERIFY2(why.find("port " + std::to_string(port) + " is not a port number (1 to 65535, or 0 for ssh's own choice)") !=
                   std::string::npos,
               why.c_str());
    }
    for (const int port : {0, 1, 65535}) {
      auto l = launcher();
      l.port = port;
      QVERIFY2(launcherProblem(l).empty(), launcherProblem(l).c_str());
      const auto argv = remoteWorkerCommand(l, {"--relay"});
      QCOMPARE(std::find(argv.begin(), argv.end(), "-p") != argv.end(), port != 0);
    }
    s.launcher = launcher();
    s.launcher.remoteWorker = "relative/kwb-worker";
    problem.clear();
    QVERIFY(!kwb::startWorker(s, std::nullopt, problem));
    QVERIFY2(problem.find("must be the absolute path") != std::string::npos, problem.c_str());
    QVERIFY(!fs::exists(marker));
  }

  void commandLines() {
    std::string problem;
    auto l = *parseWorkerLauncher("ssh://ana@box:2200/opt/k~w/kwb-worker", problem);
    const auto argv = remoteWorkerCommand(l, {"--relay", "--device", "3"});
    const auto has = [&](const std::string &a) { return std::find(argv.begin(), argv.end(), a) != argv.end(); };
    QVERIFY(has("BatchMode=yes") && has("-T") && has("2200") && has("ControlMaster=no"));
    // The host comes after "--" (never read as an option), the remote command quoted for its shell.
    const auto dashes = std::find(argv.begin(), argv.end(), "--");
    QVERIFY(dashes != argv.end() && dashes + 3 == argv.end());
    QCOMPARE(*(dashes + 1), std::string("ana@box"));
    QCOMPARE(argv.back(), std::string("'/opt/k~w/kwb-worker' --relay --device 3"));
    QCOMPARE(shellQuote("it's"), std::string("'it'\\''s'"));
    l = *parseWorkerLauncher("slurm:partition=gpu,time=00:30:00,jobid=42,worker=/opt/kwb-worker", problem);
    const auto srun = remoteWorkerCommand(l, {"--relay"});
    QCOMPARE(srun.front(), std::string("srun"));
    for (const char *a : {"--jobid=42", "--partition=gpu", "--time=00:30:00", "--gpus=1", "--unbuffered"})
      QVERIFY2(std::find(srun.begin(), srun.end(), a) != srun.end(), a);
    // srun's options end before the program ("--"): nothing after it is read as one of them.
    QCOMPARE(srun[srun.size() - 3], std::string("--"));
    QCOMPARE(srun[srun.size() - 2], std::string("/opt/kwb-worker"));
    QCOMPARE(srun.back(), std::string("--relay"));
  }

  // The relay's hello: the worker's own, plus the host and the sandbox as made and probed there.
  void helloPingAndDevicesThroughSsh() {
    Json hello;
    auto client = readyClient(hello);
    QVERIFY(client);
    QVERIFY2(hello.contains("relay"), hello.dump().c_str());
    QCOMPARE(hello.value("worker", ""), std::string(kwb::kVersion));
    const auto sandbox = client->sandbox();
    QVERIFY(!sandbox.host.empty());
    const auto local = detectSandbox();
    QCOMPARE(sandbox.state, std::string(local.kind == SandboxKind::None ? "none" : sandboxKindName(local.kind)));
    QCOMPARE(sandbox.verified, local.kind != SandboxKind::None);
    QVERIFY(alive(hello["relay"].value("worker_pid", -1)));
    const auto pong = client->call("ping", {{"payload", std::string(100000, 'x')}});
    QVERIFY2(pong.ok, text(pong).c_str());
    QCOMPARE(pong.result.value("payload", std::string()).size(), std::size_t(100000));
    const auto devices = client->call("devices");
    QVERIFY2(devices.ok, text(devices).c_str());
    QVERIFY(devices.result.contains("devices"));
    const auto bad = client->call("frobnicate");
    QCOMPARE(bad.error.kind, std::string("unknown-command"));
  }

  // A runtime folder too deep for ssh's socket path (a bench's or a cluster's long $TMPDIR): the
  // shared connection goes in /tmp/kwb-ssh-UID instead and still starts; ssh would otherwise
  // refuse it ("too long for Unix domain socket") and the worker never start.
  void deepRuntimeFolderStillSharesTheConnection() {
    const RuntimeFolder deep(fs::path(runtime_.path().toStdString()) / std::string(60, 'r') / "run");
    const std::string dir = sshControlDirectory();
    QCOMPARE(dir, "/tmp/kwb-ssh-" + std::to_string(::getuid()));
    QVERIFY(dir.size() <= kSshControlDirectoryMax);
    const auto launcher = options().launcher;
    const auto earlier = sshConnectionStats(launcher);
    const std::string down = ensureSshMaster(launcher);  // as an evaluator does before its worker
    QVERIFY2(down.empty(), down.c_str());
    const auto connection = sshConnectionStats(launcher);
    QVERIFY2(connection.up && connection.problem.empty(), connection.problem.c_str());
    // Started now, or found up (an earlier test's, where this machine's temporary folder is itself
    // too deep): either way it answers in the short folder.
    QCOMPARE(connection.started + connection.reused, earlier.started + earlier.reused + 1);
    const auto checked = checkShared(dir, launcher.host);
    QVERIFY2(checked.succeeded(), checked.output.c_str());
    Json hello;
    auto client = readyClient(hello);
    QVERIFY(client);
    QVERIFY(client->call("ping").ok);
    client.reset();
    // What the runtime folder gives when it is short enough: its own kwb-ssh.
    deep.restore();
    const std::string own = runtime_.path().toStdString() + "/kwb-ssh";
    if (own.size() <= kSshControlDirectoryMax) QCOMPARE(sshControlDirectory(), own);
  }

  // A master killed without its cleanup (SIGKILL, the OOM killer) left its socket behind, in a
  // folder that outlives a run (/tmp/kwb-ssh-UID). The next start removes it and shares again
  // (ssh would otherwise log in unshared: "ControlSocket ... already exists, disabling
  // multiplexing", while the host's line said "shared connection up"); another host's live
  // master in the same folder is left alone.
  void staleSocketOfADeadMasterIsReplaced() {
    const RuntimeFolder runtime(fs::path(runtime_.path().toStdString()) / "stale");
    const std::string dir = runtime.ownControlFolder();
    if (dir.empty()) QSKIP(RuntimeFolder::kTooDeep);
    const auto launcher = options().launcher;
    const std::string path = controlPathFor(dir, launcher.host);
    QVERIFY2(path.rfind(dir + "/", 0) == 0 && path.size() == dir.size() + 41, path.c_str());
    ::close(plantSocket(path, false));
    const std::string other = dir + "/" + std::string(40, 'a');
    const int live = plantSocket(other, true);
    const auto closeLive = qScopeGuard([&] { ::close(live); });
    QVERIFY(!checkShared(dir, launcher.host).succeeded());  // refused: the dead master's socket
    const auto ended = startsAndAnswers(dir, launcher);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(fs::exists(fs::symlink_status(other)), "another host's live socket was removed");
  }

  // A host that runs something else than the asked command on every login (sshd's ForceCommand,
  // a wrapper): the master's `true` exits with another status there, here 1 (`false` in its
  // place), yet the login worked and the master answers: up, not "could not connect".
  void hostThatForcesAnotherCommandStillShares() {
    const fs::path fresh = fs::path(runtime_.path().toStdString()) / "forced";
    const RuntimeFolder runtime(fresh);
    const std::string dir = runtime.ownControlFolder();
    if (dir.empty()) QSKIP(RuntimeFolder::kTooDeep);
    const fs::path wrapper = fresh / "ssh-forcing-false";
    // ssh, with a last argument `true` (the master's command) turned into `false`.
    kwb::test::writeScript(wrapper, "n=$#; i=0\nfor a do\n  i=$((i + 1)); shift\n"
                                    "  if [ $i -eq $n ] && [ \"$a\" = true ]; then a=false; fi\n"
                                    "  set -- \"$@\" \"$a\"\ndone\nexec ssh \"$@\"");
    const QByteArray before = qgetenv("KWB_SSH_COMMAND");
    const auto restore = qScopeGuard([&] { qputenv("KWB_SSH_COMMAND", before); });
    qputenv("KWB_SSH_COMMAND", QByteArray::fromStdString(wrapper.string() + " -F " + sshd_->configFile().string()));
    const auto launcher = options().launcher;
    const auto ended = startsAndAnswers(dir, launcher);
  }

  // A shared connection that does not answer after ssh logged in (here the path holds a file
  // that is no socket, which nothing removes, so the master cannot take its name): the host's
  // line says it is down, and why in ssh's words; no unshared ssh is left running in the
  // background; the worker still starts, logging in on its own.
  void sharedConnectionThatDoesNotAnswerIsReportedDown() {
    const RuntimeFolder runtime(fs::path(runtime_.path().toStdString()) / "blocked");
    const std::string dir = runtime.ownControlFolder();
    if (dir.empty()) QSKIP(RuntimeFolder::kTooDeep);
    const auto launcher = options().launcher;
    const std::string path = controlPathFor(dir, launcher.host);
    QVERIFY2(!path.empty(), "ssh -G names no control path");
    std::ofstream(path) << "not a socket\n";
    const auto removeFile = qScopeGuard([&] { fs::remove(path); });
    const std::string down = ensureSshMaster(launcher);
    QVERIFY2(down.empty(), down.c_str());  // not a refusal: the workers log in on their own
    const auto connection = sshConnectionStats(launcher);
    QVERIFY(!connection.up);
    QVERIFY2(connection.problem.find("does not answer") != std::string::npos, connection.problem.c_str());
    QVERIFY2(connection.problem.find(dir) != std::string::npos, connection.problem.c_str());
    QVERIFY2(connection.problem.find("already exists") != std::string::npos, connection.problem.c_str());
    // The start left nothing behind: no ssh of ours with this folder's path still runs.
    for (const auto &entry : fs::directory_iterator("/proc")) {
      const std::string cmdline = kwb::test::readFile(entry.path() / "cmdline");
      if (cmdline.find("ControlPath=" + dir + "/") != std::string::npos)
        QFAIL(("an ssh left running: pid " + entry.path().filename().string()).c_str());
    }
    Json hello;
    auto client = readyClient(hello);
    QVERIFY(client);
    QVERIFY(client->call("ping").ok);
  }

  // A compile-only evaluation through an ssh worker: the same honest "not run" as a local one,
  // the reason the far side's worker gave; the pool lists the far side's devices (none here).
  void compileOnlyEvaluationThroughSsh() {
    const auto task = kwb::loadTask(kwb::test::kernelsDir() / "softmax");
    const auto source = kwb::test::readFile(task.folder / task.starterSource());
    kwb::EvaluatorSettings remote;
    remote.launcher = launcher();
    kwb::EvaluationOptions o;
    o.configs = {"small"};
    const auto r = kwb::Evaluator(remote).evaluate(task, source, o);
    kwb::EvaluatorSettings local;
    local.workerPath = worker_;
    const auto l = kwb::Evaluator(local).evaluate(task, source, o);
    QCOMPARE(kwb::toString(r.outcome), kwb::toString(l.outcome));
    QCOMPARE(r.message, l.message);
    QVERIFY2(r.candidate.ok, r.candidate.log.c_str());
    std::string problem;
    const auto devices = kwb::describeVisibleDevices(remote, problem);
    std::string localProblem;
    const auto localDevices = kwb::describeVisibleDevices(local, localProblem);
    QCOMPARE(devices.size(), localDevices.size());
    QCOMPARE(problem, localProblem);
    kwb::EvaluatorPoolSettings ps;
    ps.evaluator = remote;
    kwb::EvaluatorPool pool(ps);
    QCOMPARE(pool.devices().size(), localDevices.size());
    if (localDevices.empty()) QCOMPARE(pool.problem(), localProblem);
  }

  // A request past its limit: the client closes the connection, and the far side's relay stops
  // the worker there; a fresh one answers next.
  void hangPastItsLimitStopsTheRemoteWorker() {
    Json hello;
    auto client = readyClient(hello);
    QVERIFY(client);
    const pid_t remote = hello["relay"].value("worker_pid", -1);
    QCOMPARE(::kill(remote, SIGSTOP), 0);  // a hang: alive, silent
    Replies replies;
    client->send("ping", Json::object(), replies.handlers(), 1500ms);
    QVERIFY(replies.waitFor(1, 20s));
    QCOMPARE(replies.inOrder[0].error.kind, std::string("timeout"));
    QVERIFY2(waitForExit(remote, 20s), "the remote worker outlived its connection");
    client->restart();
    QVERIFY(client->waitUntilReady(40s));
    QVERIFY(client->call("ping").ok);
  }

  // The far side's worker crashes mid-request: its relay's reply says so, and the connection
  // ends with it (the worker is Dead here, restarted by whoever uses it).
  void crashOnTheFarSideIsWorkerDied() {
    Json hello;
    auto client = readyClient(hello);
    QVERIFY(client);
    Replies replies;
    const auto failed = kwb::test::pingThenKillTheRemoteWorker(*client, replies);
    QVERIFY2(failed.empty(), failed.c_str());
    QVERIFY(replies.waitFor(1, 20s));
    QVERIFY2(replies.inOrder[0].error.kind == "worker-died", text(replies.inOrder[0]).c_str());
    QVERIFY2(replies.inOrder[0].error.message.find("SIGKILL") != std::string::npos, text(replies.inOrder[0]).c_str());
    QTRY_COMPARE_WITH_TIMEOUT(client->state(), WorkerClient::State::Dead, 20000);
  }

  // The far side's worker dies and its relay says so, but the relay is then killed itself
  // before it can end on its own (a cancelled Slurm step kills them one after the other): not the
  // candidate's doing for certain, so a lost worker, whose message keeps what the relay said.
  void relayKilledAfterItsWorkerDiedIsALostWorker() {
    const fs::path wrapper = fs::path(runtime_.path().toStdString()) / "killed-relay";
    kwb::test::writeScript(wrapper, "'" + worker_.string() + "' \"$@\"\nkill -KILL $$");
    Json hello;
    auto client = readyClient(hello, options(wrapper.string()));
    QVERIFY(client);
    Replies replies;
    const auto failed = kwb::test::pingThenKillTheRemoteWorker(*client, replies);
    QVERIFY2(failed.empty(), failed.c_str());
    QVERIFY(replies.waitFor(1, 20s));
    const auto &r = replies.inOrder[0];
    QVERIFY2(r.error.kind == "worker-lost", text(r).c_str());
    QVERIFY2(r.error.message.find("its relay said") != std::string::npos &&
                 r.error.message.find("SIGKILL") != std::string::npos,
             text(r).c_str());
    QVERIFY2(r.error.details.value("exit_code", Json()) != Json(kRelayExitWorkerEnded), r.error.details.dump().c_str());
  }

  // The relay says its worker died, but its connection does not end (here a wrapper keeps it
  // open): the reply waits no longer than relayEndGrace, then the connection is killed and the
  // request is a lost worker; the request's own time limit, shorter, does not turn it into a timeout.
  void relayThatDoesNotEndAfterItsWorkerDiedIsALostWorker() {
    const fs::path wrapper = fs::path(runtime_.path().toStdString()) / "lingering-relay";
    kwb::test::writeScript(wrapper, "'" + worker_.string() + "' \"$@\"\nexec cat >/dev/null");
    auto o = options(wrapper.string());
    o.relayEndGrace = 5s;
    Json hello;
    auto client = readyClient(hello, o);
    QVERIFY(client);
    Replies replies;
    const auto failed = kwb::test::pingThenKillTheRemoteWorker(*client, replies, 3s);
    QVERIFY2(failed.empty(), failed.c_str());
    QVERIFY(replies.waitFor(1, 20s));
    const auto &r = replies.inOrder[0];
    QVERIFY2(r.error.kind == "worker-lost", text(r).c_str());
    QVERIFY2(r.error.message.find("did not end within 5.0 s") != std::string::npos &&
                 r.error.message.find("its relay said") != std::string::npos,
             text(r).c_str());
  }

  // The connection drops (its sshd process killed): what was in flight ends "worker-died", the
  // worker on the far side goes with it, and a restart connects again.
  void droppedConnectionIsALostWorker() {
    Json hello;
    auto client = readyClient(hello);
    QVERIFY(client);
    const pid_t remote = hello["relay"].value("worker_pid", -1);
    QCOMPARE(::kill(remote, SIGSTOP), 0);
    Replies replies;
    client->send("ping", Json::object(), replies.handlers());
    sshd_->dropConnections();
    QVERIFY(replies.waitFor(1, 30s));
    // Lost, not died: the device's trouble (the pool moves the evaluation), not the candidate's.
    QCOMPARE(replies.inOrder[0].error.kind, std::string("worker-lost"));
    QVERIFY2(replies.inOrder[0].error.message.find("ssh://kwbtest") != std::string::npos, text(replies.inOrder[0]).c_str());
    QVERIFY2(waitForExit(remote, 20s), "the remote worker outlived its dropped connection");
    client->restart();
    QVERIFY2(client->waitUntilReady(40s), sshd_->log().c_str());
    QVERIFY(client->call("ping").ok);
  }

  // Cancel (the evaluator restarts its worker): the far side's worker is stopped too.
  void cancelReachesTheRemoteWorker() {
    Json hello;
    auto client = readyClient(hello);
    QVERIFY(client);
    const pid_t remote = hello["relay"].value("worker_pid", -1);
    Replies replies;
    QCOMPARE(::kill(remote, SIGSTOP), 0);
    client->send("ping", Json::object(), replies.handlers());
    client->stop("cancelled by the user");
    QVERIFY(replies.waitFor(1, 20s));
    QCOMPARE(replies.inOrder[0].error.kind, std::string("worker-died"));
    QVERIFY2(waitForExit(remote, 20s), "the remote worker outlived the cancel");
  }

  // The far side's driver is older than this machine's toolkit: the evaluation stops after the
  // compile, naming the host and both versions, before anything is sent there to run (this far
  // side answers nothing: a request would hang).
  void olderDriverThereIsRefusedBeforeAnyRun() {
    const auto task = kwb::loadTask(kwb::test::kernelsDir() / "softmax");
    const auto source = kwb::test::readFile(task.folder / task.starterSource());
    kwb::EvaluationOptions o;
    o.configs = {"small"};
    // This machine's toolkit, from a compile-only evaluation here; the far driver a major behind.
    kwb::EvaluatorSettings here;
    here.workerPath = worker_;
    here.useDevice = false;
    const auto compiled = kwb::Evaluator(here).evaluate(task, source, o);
    if (!compiled.candidate.ok) QSKIP(("no CUDA toolkit here to compile with: " + compiled.candidate.log).c_str());
    const int major = std::atoi(compiled.candidate.toolkitVersion.c_str());
    QVERIFY2(major > 1, compiled.candidate.toolkitVersion.c_str());
    const Json hello = {{"event", "hello"},
                        {"protocol", kProtocolVersion},
                        {"worker", kwb::kVersion},
                        {"relay", {{"host", "far"}, {"sandbox", "bwrap"}, {"verified", true}}},
                        {"gpu", {{"driver_version", (major - 1) * 1000 + 80}}},
                        {"devices", Json::array({{{"ordinal", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"compute_capability", "9.0"}}})}};
    kwb::EvaluatorSettings s;
    s.launcher = launcher(fakeWorker("old-driver", hello.dump()).string());
    const auto r = kwb::Evaluator(s).evaluate(task, source, o);
    QVERIFY2(r.candidate.ok, r.candidate.log.c_str());
    QCOMPARE(kwb::toString(r.outcome), kwb::toString(kwb::Outcome::Error));
    for (const std::string &needle : std::vector<std::string>{
             "the CUDA driver on ssh://kwbtest supports CUDA " + std::to_string(major - 1) + ".8",
             "compiled here by CUDA " + r.candidate.toolkitVersion, "needs a driver for CUDA " + std::to_string(major)})
      QVERIFY2(r.message.find(needle) != std::string::npos, r.message.c_str());
  }

  // The handshake: another version, another protocol, or not a relay at all is refused before any
  // work, naming both sides and what to install.
  void handshakeMismatchesAreRefused() {
    struct Case {
      QString name;
      std::string hello, needles[3];
    };
    const std::vector<Case> cases{
        {"old-version", R"({"event":"hello","protocol":1,"worker":"0.0.1","relay":{"host":"far"}})",
         {"version 0.0.1", std::string("version ") + kwb::kVersion, "install Kernel Workbench"}},
        {"other-protocol", R"({"event":"hello","protocol":2,"worker":"9.9","relay":{"host":"far"}})",
         {"protocol version 2", "speaks 1", "install"}},
        {"no-relay", R"({"event":"hello","protocol":1,"worker":"0.1.0"})",
         {"not as `kwb-worker --relay`", "install", "ssh://HOST/PATH"}}};
    for (const auto &c : cases) {
      const auto fake = fakeWorker(c.name, c.hello);
      Replies replies;
      WorkerClient client(options(fake.string()));
      client.start();
      client.send("ping", Json::object(), replies.handlers());
      QVERIFY(!client.waitUntilReady(30s));
      QVERIFY(replies.waitFor(1, 20s));
      const auto exit = client.lastExit();
      QVERIFY(exit);
      for (const auto &n : c.needles)
        QVERIFY2(exit->cause.find(n) != std::string::npos, (c.name.toStdString() + ": " + exit->cause).c_str());
    }
  }

  // No kwb-worker there, no login there: the start fails with what to do.
  // --sanitize on a remote worker (issue 49, 3), the relay's part, without a GPU: a stand-in for
  // compute-sanitizer on the far side (named by KWB_COMPUTE_SANITIZER in that side's environment,
  // set by a wrapper the --workers spec names) says a banner, runs the worker it is given and,
  // when the worker has ended, its summary, then exits with the worker's status. The relay names
  // the tool in its hello; the banner comes back on stderr, and after the input closed the summary
  // too, then the relay's "worker-exit": how the tool ended, there. Without a tool there the relay
  // refuses (status 4), saying where it looked and what to do.
  void remoteToolRunsOnTheFarSide() {
    const fs::path dir = runtime_.path().toStdString();
    const fs::path tool = dir / "stand-in-sanitizer";
    kwb::test::writeScript(tool,
                           "while [ $# -gt 0 ]; do case \"$1\" in */kwb-worker) break;; esac; shift; done\n"
                           "echo '========= COMPUTE-SANITIZER (stand-in)' >&2\n"
                           "\"$@\"; status=$?\n"
                           "echo \"========= ERROR SUMMARY: 0 errors (the worker's status $status)\" >&2\n"
                           "exit $status");
    const fs::path far = dir / "far-kwb-worker";
    kwb::test::writeScript(far, "export KWB_COMPUTE_SANITIZER='" + tool.string() + "'\nexec '" + worker_.string() + "' \"$@\"");
    auto o = options(far.string());
    o.remoteTool = "memcheck";
    auto lines = std::make_shared<std::vector<std::string>>();
    auto mutex = std::make_shared<std::mutex>();
    kwb::worker::WorkerListeners listeners;
    listeners.onStderr = [lines, mutex](const std::string &line) {
      std::lock_guard lock(*mutex);
      lines->push_back(line);
    };
    auto said = [&](const std::string &what) {
      std::lock_guard lock(*mutex);
      return std::any_of(lines->begin(), lines->end(), [&](const std::string &l) { return l.find(what) != std::string::npos; });
    };
    {
      WorkerClient client(o, listeners);
      client.start();
      QVERIFY2(client.waitUntilReady(40s), ("not ready: " + sshd_->log()).c_str());
      QCOMPARE(client.sandbox().tool, tool.string());
      QVERIFY(said("========= COMPUTE-SANITIZER (stand-in)"));
      QVERIFY(!said("ERROR SUMMARY"));
      QVERIFY(client.call("ping").ok);
      const auto exit = client.finish(30s);
      QVERIFY(exit);
      QVERIFY2(exit->farKnown, (exit->description + "; " + exit->stderrTail).c_str());
      QCOMPARE(exit->farExitCode, 0);
      QVERIFY(exit->farSignal.empty());
      QCOMPARE(exit->farDescription, std::string("exited with status 0"));
      QVERIFY(said("========= ERROR SUMMARY: 0 errors (the worker's status 0)"));
    }
    // A tool that is not there.
    kwb::test::writeScript(far, "export KWB_COMPUTE_SANITIZER=/nonexistent/compute-sanitizer\nexec '" + worker_.string() +
                                    "' \"$@\"");
    WorkerClient missing(o);
    missing.start();
    QVERIFY(!missing.waitUntilReady(40s));
    const auto exit = missing.lastExit();
    QVERIFY(exit);
    QCOMPARE(exit->exitCode, kwb::worker::kRelayExitNoTool);
    QVERIFY2(exit->stderrTail.find("compute-sanitizer not found on") != std::string::npos &&
                 exit->stderrTail.find("KWB_COMPUTE_SANITIZER") != std::string::npos,
             exit->stderrTail.c_str());
    // And the relay's own check of the tool's name.
    o.remoteTool = "valgrind";
    WorkerClient unknown(o);
    unknown.start();
    QVERIFY(!unknown.waitUntilReady(40s));
    QVERIFY2(unknown.lastExit() && unknown.lastExit()->stderrTail.find("unknown tool 'valgrind'") != std::string::npos,
             unknown.lastExit() ? unknown.lastExit()->stderrTail.c_str() : "no exit");
  }

  // A PyTorch reference on a remote worker: refused before anything runs there (its outputs are
  // made here and given to the worker as files), saying why and what to do, for an evaluation and
  // for --sanitize alike.
  void pytorchReferenceOnARemoteWorkerIsRefusedSayingWhy() {
    auto task = kwb::loadTask(kwb::test::kernelsDir() / "softmax");
    const auto source = kwb::test::readFile(task.folder / task.starterSource());
    kwb::EvaluatorSettings remote;
    remote.launcher = launcher();
    kwb::EvaluationOptions o;
    o.configs = {"small"};
    o.reference = "pytorch";
    kwb::Evaluator evaluator(remote);
    const auto r = evaluator.evaluate(task, source, o);
    QCOMPARE(kwb::toString(r.outcome), kwb::toString(kwb::Outcome::Error));
    QVERIFY2(r.candidate.ok, r.candidate.log.c_str());  // the candidate's own errors would come first
    for (const char *part : {"checked against its PyTorch module (", "files in its private folder", "--reference cuda",
                             "--workers local"})
      QVERIFY2(r.message.find(part) != std::string::npos, r.message.c_str());
    QVERIFY2(r.message.find(remote.launcher.describe()) != std::string::npos, r.message.c_str());
    task.reference.source.clear();  // a PyTorch-only task
    kwb::SanitizeOptions so;
    so.tools = {kwb::SanitizerTool::Memcheck};
    const auto sanitized = evaluator.sanitize(task, source, so);
    QVERIFY(sanitized.reports.empty());
    QVERIFY2(sanitized.problem.rfind("not sanitized: ", 0) == 0 &&
                 sanitized.problem.find("give the task a CUDA reference") != std::string::npos,
             sanitized.problem.c_str());
  }

  void missingProgramAndRefusedLogin() {
    kwb::EvaluatorSettings s;
    s.launcher = launcher("/nonexistent/kwb-worker");
    std::string problem;
    QVERIFY(!kwb::startWorker(s, std::nullopt, problem));
    QVERIFY2(problem.find("status 127") != std::string::npos && problem.find("no kwb-worker there") != std::string::npos,
             problem.c_str());
    std::string spec = std::string("ssh://nobody-kwb-test@") + kwb::test::LoopbackSshd::kHost + worker_.string();
    s.launcher = *parseWorkerLauncher(spec, problem);
    problem.clear();
    QVERIFY(!kwb::startWorker(s, std::nullopt, problem));
    QVERIFY2(problem.find("ssh could not connect") != std::string::npos, problem.c_str());
  }
};

QTEST_GUILESS_MAIN(TestRemoteWorkers)
#include "tst_remote_workers.moc"
