// The worker's sandbox: from inside it a worker cannot reach a TCP server on this machine's
// loopback, cannot write into (a pretend) $HOME or /tmp, and can write its private directory.
// Checked for each mechanism that works here (bwrap, unshare); the same probe run without a
// sandbox succeeds, so the checks are real attempts, not a stub that always says "isolated".
#include <QProcess>
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <fstream>
#include <filesystem>
#include <map>
#include <optional>

#include "core/sandbox/worker_sandbox.h"
#include "core/worker/worker_client.h"

using namespace kwb::worker;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

Q_DECLARE_METATYPE(kwb::worker::SandboxPreference)

namespace {

// A TCP server on 127.0.0.1 that nobody outside a sandbox is kept from reaching.
struct LoopbackServer {
  int fd = -1;
  int port = 0;
  LoopbackServer() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0)
      return;
    port = ntohs(a.sin_port);
  }
  ~LoopbackServer() {
    if (fd >= 0) ::close(fd);
  }
  // Whether a connection is waiting (non-blocking accept).
  bool someoneConnected() {
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return false;
    ::close(c);
    return true;
  }
};

// A Unix stream socket server, standing in for D-Bus, X11, docker.sock or ssh-agent.
struct UnixServer {
  int fd = -1;
  std::string path;
  explicit UnixServer(std::string at) : path(std::move(at)) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (fd < 0 || path.size() >= sizeof a.sun_path) return;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd, 8) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~UnixServer() {
    if (fd >= 0) ::close(fd);
  }
  bool someoneConnected() {
    const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return false;
    ::close(c);
    return true;
  }
};

// Sets an environment variable for the life of the object (the sandbox reads $HOME and
// $XDG_RUNTIME_DIR from the process that starts it).
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string &value) : name(std::move(n)) {
    if (const char *v = std::getenv(name.c_str())) old = v;
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

// A host-like setup outside /tmp (in the test's working directory, so only the $HOME and
// $XDG_RUNTIME_DIR covers can hide it): a runtime dir with a socket, a home with a secret.
struct HostFixture {
  QTemporaryDir runtime{QDir::currentPath() + "/kwb-xdg-XXXXXX"};
  QTemporaryDir homeDir{QDir::currentPath() + "/kwb-home-XXXXXX"};
  fs::path home = homeDir.path().toStdString();
  fs::path secret = home / "id_ed25519";
  UnixServer bus{runtime.path().toStdString() + "/bus"};
  UnixServer tmpSocket{"/tmp/kwb-x11-" + std::to_string(::getpid())};
  HostFixture() { std::ofstream(secret) << "-----BEGIN OPENSSH PRIVATE KEY-----\n"; }
  ~HostFixture() {
    std::error_code ec;
    fs::remove(tmpSocket.path, ec);
  }
  bool valid() const { return runtime.isValid() && homeDir.isValid() && bus.fd >= 0 && tmpSocket.fd >= 0; }
};

// The probe-sandbox "syscalls" checks the seccomp filter refuses with EPERM, and two it allows.
const std::vector<std::string> kDeniedChecks{"socket_inet", "socket_inet6", "socket_packet", "ptrace",
                                             "process_vm_readv", "unshare", "setns", "mount", "chroot",
                                             "keyctl", "bpf", "userfaultfd", "io_uring_setup", "personality",
                                             "clone_newuser"};
const std::vector<std::string> kAllowedChecks{"socket_unix", "socket_netlink"};

// name -> the check's entry in a probe-sandbox result.
std::map<std::string, kwb::worker::Json> syscallResults(const kwb::worker::Json &result) {
  std::map<std::string, kwb::worker::Json> out;
  for (const auto &entry : result.value("syscalls", kwb::worker::Json::array()))
    out[entry.value("name", "")] = entry;
  return out;
}

bool contains(const std::vector<std::string> &argv, std::initializer_list<const char *> run) {
  const std::vector<std::string> needle(run.begin(), run.end());
  return std::search(argv.begin(), argv.end(), needle.begin(), needle.end()) != argv.end();
}

}  // namespace

class TestWorkerSandbox : public QObject {
  Q_OBJECT
 private:
  std::filesystem::path worker_;

  WorkerClientOptions options(SandboxPreference preference, const fs::path &home) const {
    WorkerClientOptions o;
    o.workerPath = worker_;
    o.sandbox = preference;
    o.requestTimeout = 10s;
    o.startTimeout = 10s;
    o.environment = {{"HOME", home.string()}};
    return o;
  }

  // A copy of kwb-worker at `worker` that needs one library (the first it needs beyond the C
  // library's) it can find only in `libraryFolder`, under a new name so the system's copy does not
  // stand in, through RUNPATH `runpath`: the copied library, or nothing with the reason in `why`.
  std::optional<fs::path> relocatedWorker(const fs::path &patchelf, const fs::path &worker, const fs::path &libraryFolder,
                                          const QString &runpath, QString &why) const {
    fs::copy_file(worker_, worker);
    // patchelf ARGUMENTS: what it printed, nothing when it failed.
    const auto run = [&](const QStringList &arguments) -> std::optional<QString> {
      QProcess p;
      p.start(QString::fromStdString(patchelf.string()), arguments);
      const bool ok = p.waitForFinished(60000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
      if (!ok) why = "patchelf " + arguments.join(' ') + ": " + QString::fromLocal8Bit(p.readAllStandardError());
      if (!ok) return std::nullopt;
      return QString::fromLocal8Bit(p.readAllStandardOutput());
    };
    QString moved;
    for (const auto &needed : run({"--print-needed", QString::fromStdString(worker.string())}).value_or("").split('\n', Qt::SkipEmptyParts))
      if (!needed.startsWith("libc.so") && !needed.startsWith("ld-linux") && !needed.startsWith("libm.so")) {
        moved = needed;
        break;
      }
    if (moved.isEmpty()) return why = "kwb-worker needs no library to move", std::nullopt;
    const QString renamed = "libkwbtest-moved-" + moved;
    QProcess ldconfig;
    const auto system = kwb::findOnPath("ldconfig").value_or("/sbin/ldconfig");
    ldconfig.start(QString::fromStdString(system.string()), {"-p"});
    if (!ldconfig.waitForFinished(30000)) return why = "ldconfig -p did not finish", std::nullopt;
    QString systemCopy;
    for (const auto &line : QString::fromLocal8Bit(ldconfig.readAllStandardOutput()).split('\n'))
      if (line.trimmed().startsWith(moved + " ") && line.contains("=> ")) {
        systemCopy = line.section("=> ", 1).trimmed();
        break;
      }
    if (systemCopy.isEmpty()) return why = "ldconfig -p does not list " + moved, std::nullopt;
    const fs::path library = libraryFolder / renamed.toStdString();
    fs::copy_file(systemCopy.toStdString(), library);
    if (!run({"--replace-needed", moved, renamed, QString::fromStdString(worker.string())}) ||
        !run({"--set-rpath", runpath, QString::fromStdString(worker.string())}))
      return std::nullopt;
    return library;
  }

  // Options for `worker` (a relocated copy), started under env when `underTool`, as --sanitize
  // starts it under compute-sanitizer.
  WorkerClientOptions relocatedOptions(SandboxPreference preference, const fs::path &home, const fs::path &worker,
                                       bool underTool) const {
    auto o = options(preference, home);
    o.workerPath = worker;
    if (underTool) o.wrapper = {kwb::findOnPath("env").value_or("/usr/bin/env").string()};
    return o;
  }

  // Starts `client`: empty once it is ready, else how it ended and what it printed.
  static QString started(WorkerClient &client) {
    client.start();
    if (client.waitUntilReady(20s)) return {};
    const auto exit = client.lastExit();
    return QString::fromStdString(exit ? exit->description + " " + exit->cause + " " + exit->stderrTail : "not ready");
  }

 private slots:
  void initTestCase() {
    worker_ = qEnvironmentVariable("KWB_WORKER").toStdString();
    QVERIFY2(!worker_.empty(), "run through ctest: KWB_WORKER names kwb-worker");
  }

  void commandLines() {
    const std::vector<std::string> worker{"/opt/kwb/kwb-worker", "--serve"};
    const auto bwrap = sandboxCommand({SandboxKind::Bwrap, "/usr/bin/bwrap", true, ""}, worker, "/tmp/kwb-p/private");
    QCOMPARE(bwrap.front(), std::string("/usr/bin/bwrap"));
    QVERIFY(contains(bwrap, {"--ro-bind", "/", "/"}));
    QVERIFY(contains(bwrap, {"--dev", "/dev"}));
    QVERIFY(contains(bwrap, {"--proc", "/proc"}));
    QVERIFY(contains(bwrap, {"--bind", "/tmp/kwb-p/private", "/tmp/kwb-p/private"}));
    for (const char *flag : {"--unshare-net", "--unshare-pid", "--new-session", "--die-with-parent"})
      QVERIFY2(contains(bwrap, {flag}), flag);
    QVERIFY(contains(bwrap, {"--", "/opt/kwb/kwb-worker", "--serve"}));
    QCOMPARE(bwrap.back(), std::string("--serve"));
    // The NVIDIA nodes CUDA opens, where this machine has them.
    std::error_code ec;
    if (fs::exists("/dev/nvidiactl", ec)) QVERIFY(contains(bwrap, {"--dev-bind", "/dev/nvidiactl", "/dev/nvidiactl"}));

    QVERIFY(contains(bwrap, {"--unshare-ipc"}));
    QVERIFY(contains(bwrap, {"--tmpfs", "/tmp"}));
    QVERIFY(contains(bwrap, {"--tmpfs", "/dev/shm"}));
    QVERIFY(contains(bwrap, {"--remount-ro", "/tmp"}));
    // The private directory (under /tmp here) is bound after the covers.
    const auto at = [&](std::initializer_list<const char *> run) {
      const std::vector<std::string> needle(run.begin(), run.end());
      return std::search(bwrap.begin(), bwrap.end(), needle.begin(), needle.end()) - bwrap.begin();
    };
    QVERIFY(at({"--tmpfs", "/tmp"}) < at({"--bind", "/tmp/kwb-p/private", "/tmp/kwb-p/private"}));

    // Always with a pid namespace and a /proc of its own, and an IPC namespace.
    for (const bool pid : {true, false}) {
      const auto unshare = sandboxCommand({SandboxKind::Unshare, "/usr/bin/unshare", pid, ""}, worker, "/p");
      QVERIFY(contains(unshare, {"/usr/bin/unshare", "--net", "--mount", "--ipc", "--pid", "--fork", "--kill-child",
                                 "--mount-proc", "--map-root-user", "--", "/opt/kwb/kwb-worker", "--serve"}));
    }
    QCOMPARE(sandboxCommand({SandboxKind::None, "", false, ""}, worker, "/p"), worker);
    // nvcc's sandbox: no GPU device nodes.
    const auto noGpu = sandboxCommand({SandboxKind::Bwrap, "/usr/bin/bwrap", true, ""}, worker, "/tmp/kwb-p/private",
                                      SandboxCommandOptions{.gpuDevices = false});
    QVERIFY(!contains(noGpu, {"--dev-bind"}));
    QVERIFY(contains(noGpu, {"--unshare-net"}));
  }

  void coversAndKeeps() {
    QTemporaryDir home(QDir::currentPath() + "/kwb-home-XXXXXX");
    QVERIFY(home.isValid());
    const std::string homePath = fs::canonical(home.path().toStdString()).string();
    ScopedEnv homeEnv("HOME", homePath);
    ScopedEnv libraries("LD_LIBRARY_PATH", homePath + "/lib:/usr/lib");
    fs::create_directories(homePath + "/lib");
    fs::create_directories(homePath + "/bin");
    const auto c = sandboxCovers(homePath + "/bin/kwb-worker");
    auto has = [](const std::vector<std::string> &v, const std::string &x) { return std::find(v.begin(), v.end(), x) != v.end(); };
    for (const char *covered : {"/tmp", "/run", "/var/tmp"})
      if (fs::is_directory(covered)) QVERIFY2(has(c.covers, fs::canonical(covered).string()), covered);
    // $HOME is covered: by a cover of its own, or by one it lies under (a clone in /tmp).
    QVERIFY(std::any_of(c.covers.begin(), c.covers.end(), [&](const std::string &cover) {
      return homePath == cover || homePath.starts_with(cover + "/");
    }));
    // The worker's folder and its libraries under a covered path come back; /usr is not covered.
    QVERIFY(has(c.keeps, homePath + "/bin"));
    QVERIFY(has(c.keeps, homePath + "/lib"));
    QVERIFY(!has(c.keeps, "/usr/lib"));
    QVERIFY(!has(c.covers, "/"));
    // Extra keeps (nvcc's toolkit folder) come back when they lie under a cover, not otherwise.
    fs::create_directories(homePath + "/cuda/bin");
    const auto withToolkit = sandboxCovers(homePath + "/bin/kwb-worker", {}, {homePath + "/cuda", "/usr"});
    QVERIFY(has(withToolkit.keeps, homePath + "/cuda"));
    QVERIFY(!has(withToolkit.keeps, "/usr"));
  }

  // Issue 45: a relocatable bundle (packaging/make-bundle.sh) unpacked under $HOME or /tmp, where a
  // user unpacks a tarball. Its programs find their libraries through RUNPATH $ORIGIN/../lib, which
  // the sandbox must keep visible, read-only, beside the program's own folder: for the worker (bwrap
  // starts it inside), and for what starts inside the sandbox after it is made (unshare: the worker
  // locks down first, then a tool, a host launcher's process or compute-sanitizer, starts
  // kwb-worker again). Here a copy of kwb-worker in X/usr/bin needs one library it can find only in
  // X/usr/lib (renamed, so the system's copy does not stand in), started under a tool (env) as
  // --sanitize starts it under compute-sanitizer.
  void relocatedWorkerFindsItsLibraries_data() {
    QTest::addColumn<SandboxPreference>("preference");
    QTest::addColumn<bool>("underHome");
    QTest::newRow("bwrap-home") << SandboxPreference::Bwrap << true;
    QTest::newRow("bwrap-tmp") << SandboxPreference::Bwrap << false;
    QTest::newRow("unshare-home") << SandboxPreference::Unshare << true;
    QTest::newRow("unshare-tmp") << SandboxPreference::Unshare << false;
  }

  void relocatedWorkerFindsItsLibraries() {
    QFETCH(SandboxPreference, preference);
    QFETCH(bool, underHome);
    const auto support = probeSandboxSupport(preference);
    if (support.kind == SandboxKind::None) QSKIP(qPrintable("not available here: " + QString::fromStdString(support.reason)));
    const auto patchelf = kwb::findOnPath("patchelf");
    if (!patchelf) QSKIP("patchelf is not on PATH (packaging/install-deps.sh installs it)");
    QTemporaryDir home(QDir::currentPath() + "/kwb-home-XXXXXX"), tmp;  // tmp: under /tmp
    QVERIFY(home.isValid() && tmp.isValid());
    const fs::path homePath = fs::canonical(home.path().toStdString());
    ScopedEnv homeEnv("HOME", homePath.string());
    const fs::path root = fs::canonical((underHome ? home : tmp).path().toStdString()) / "kernel-workbench";
    fs::create_directories(root / "usr/bin");
    fs::create_directories(root / "usr/lib");
    const fs::path worker = root / "usr/bin/kwb-worker";
    QString why;
    QVERIFY2(relocatedWorker(*patchelf, worker, root / "usr/lib", "$ORIGIN/../lib", why), qPrintable(why));

    // The loader's folders, read from the program: the bundle's lib, links resolved.
    const auto keeps = kwb::programKeeps(worker);
    QVERIFY2(std::find(keeps.begin(), keeps.end(), (root / "usr/lib").string()) != keeps.end(),
             qPrintable(QString::fromStdString(kwb::joinPathList(keeps))));
    const auto covers = sandboxCovers(worker);
    QVERIFY(std::find(covers.keeps.begin(), covers.keeps.end(), (root / "usr/lib").string()) != covers.keeps.end());

    for (const bool underTool : {false, true}) {
      WorkerClient client(relocatedOptions(preference, homePath, worker, underTool));
      const auto why = started(client);
      QVERIFY2(why.isEmpty(), qPrintable(QString::fromStdString(root.string()) + (underTool ? " under env: " : ": ") + why));
      QCOMPARE(client.sandbox().state, std::string(sandboxKindName(support.kind)));
      // Visible, but read-only: the bundle is not the sandbox's to change.
      const auto r = client.call("probe-sandbox", {{"write", {(root / "usr/lib/written").string()}}, {"timeout_ms", 1000}});
      QVERIFY2(r.ok, r.error.message.c_str());
      QVERIFY2(!r.result["write"][0].value("ok", true), r.result["write"][0].dump().c_str());
      QVERIFY(!fs::exists(root / "usr/lib/written"));
    }
  }

  // Review of issue 45: a library search path must never show a covered folder whole. A program in
  // ~/bin with RUNPATH $ORIGIN/.. finds its library in $HOME itself: only that file (and the
  // program's folder) may come back, never $HOME's other files (~/.ssh, providers.json,
  // library.sqlite); a RUNPATH entry that supplies no library (here $ORIGIN/../data) is not kept.
  void libraryPathNeverRevealsHome_data() { isolation_data(); }

  void libraryPathNeverRevealsHome() {
    QFETCH(SandboxPreference, preference);
    const auto patchelf = kwb::findOnPath("patchelf");
    if (!patchelf) QSKIP("patchelf is not on PATH (packaging/install-deps.sh installs it)");
    QTemporaryDir home(QDir::currentPath() + "/kwb-home-XXXXXX");
    QVERIFY(home.isValid());
    const fs::path homePath = fs::canonical(home.path().toStdString());
    ScopedEnv homeEnv("HOME", homePath.string());
    fs::create_directories(homePath / "bin");
    fs::create_directories(homePath / ".ssh");
    fs::create_directories(homePath / "data");
    const auto secret = homePath / ".ssh/id_ed25519", notes = homePath / "data/notes.txt";
    std::ofstream(secret) << "-----BEGIN OPENSSH PRIVATE KEY-----\n";
    std::ofstream(notes) << "not the sandbox's\n";
    const fs::path worker = homePath / "bin/kwb-worker";
    QString why;
    const auto library = relocatedWorker(*patchelf, worker, homePath, "$ORIGIN/..:$ORIGIN/../data", why);
    QVERIFY2(library, qPrintable(why));

    // Kept: the program's folder and the library file; not $HOME, not the folder that supplies nothing.
    const auto keeps = kwb::programKeeps(worker);
    for (const auto &folder : {homePath, homePath / "data"})
      QVERIFY2(std::find(keeps.begin(), keeps.end(), folder.string()) == keeps.end(),
               qPrintable(QString::fromStdString(kwb::joinPathList(keeps))));
    const std::vector<std::string> expected{(homePath / "bin").string(), library->string()};
    QCOMPARE(sandboxCovers(worker).keeps, expected);
    // Folders handed in to keep that are a cover or lie above one are left covered too.
    QCOMPARE(sandboxCovers(worker, {}, {homePath.string(), homePath.parent_path().string(), "/"}).keeps, expected);

    const auto support = probeSandboxSupport(preference);
    if (support.kind == SandboxKind::None) QSKIP(qPrintable("not available here: " + QString::fromStdString(support.reason)));
    for (const bool underTool : {false, true}) {
      WorkerClient client(relocatedOptions(preference, homePath, worker, underTool));
      const auto why = started(client);
      QVERIFY2(why.isEmpty(), qPrintable((underTool ? "under env: " : "alone: ") + why));
      const auto r = client.call("probe-sandbox", {{"read", {library->string(), secret.string(), notes.string()}},
                                                   {"timeout_ms", 1000}});
      QVERIFY2(r.ok, r.error.message.c_str());
      QCOMPARE(r.result["read"].size(), std::size_t(3));
      QVERIFY2(r.result["read"][0].value("ok", false), r.result["read"][0].dump().c_str());  // the read is real
      QVERIFY2(!r.result["read"][1].value("ok", true), r.result["read"][1].dump().c_str());
      QVERIFY2(!r.result["read"][2].value("ok", true), r.result["read"][2].dump().c_str());
    }
  }

  void environmentLeavesSecretsBehind() {
    ::setenv("OPENAI_API_KEY", "sk-test-secret", 1);
    ::setenv("ANTHROPIC_API_KEY", "sk-ant-secret", 1);
    ::setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    const auto env = workerEnvironment("/tmp/kwb-p/private", {{"KWB_EXTRA", "1"}});
    for (const auto &entry : env) QVERIFY2(entry.find("secret") == std::string::npos, entry.c_str());
    auto has = [&](const std::string &entry) { return std::find(env.begin(), env.end(), entry) != env.end(); };
    QVERIFY(has("TMPDIR=/tmp/kwb-p/private"));
    QVERIFY(has("CUDA_CACHE_PATH=/tmp/kwb-p/private/cuda-cache"));
    QVERIFY(has("CUDA_VISIBLE_DEVICES=0"));
    QVERIFY(has("KWB_EXTRA=1"));
    QVERIFY(std::any_of(env.begin(), env.end(), [](const std::string &e) { return e.starts_with("PATH="); }));
    ::unsetenv("OPENAI_API_KEY");
    ::unsetenv("ANTHROPIC_API_KEY");
  }

  void isolation_data() {
    QTest::addColumn<SandboxPreference>("preference");
    QTest::newRow("bwrap") << SandboxPreference::Bwrap;
    QTest::newRow("unshare") << SandboxPreference::Unshare;
  }

  void isolation() {
    QFETCH(SandboxPreference, preference);
    const auto support = probeSandboxSupport(preference);
    if (support.kind == SandboxKind::None) QSKIP(qPrintable("not available here: " + QString::fromStdString(support.reason)));

    LoopbackServer server;
    QVERIFY(server.port > 0);
    HostFixture host;  // the pretend $HOME (writable for this test) and $XDG_RUNTIME_DIR
    QVERIFY(host.valid());
    const fs::path homePath = host.home;
    ScopedEnv homeEnv("HOME", homePath.string());
    ScopedEnv runtimeEnv("XDG_RUNTIME_DIR", host.runtime.path().toStdString());

    WorkerClient client(options(preference, homePath));
    client.start();
    QVERIFY2(client.waitUntilReady(10s), client.lastExit() ? client.lastExit()->stderrTail.c_str() : "");
    const auto sandbox = client.sandbox();
    QVERIFY2(sandbox.verified, sandbox.reason.c_str());
    QCOMPARE(sandbox.state, std::string(sandboxKindName(support.kind)));
    const auto hello = client.hello();
    QCOMPARE(hello.value("sandbox", ""), sandbox.state);
    const auto checks = hello["sandbox_checks"];
    QCOMPARE(checks.value("network_isolated", false), true);
    QCOMPARE(checks.value("home", ""), homePath.string());
    QCOMPARE(checks.value("home_writable", true), false);
    QCOMPARE(checks.value("tmp_writable", true), false);
    QCOMPARE(checks.value("private_dir_writable", false), true);

    const auto escape = homePath / "escape.txt";
    const auto tmpEscape = fs::temp_directory_path() / ("kwb-escape-" + std::to_string(::getpid()));
    const auto r = client.call("probe-sandbox", {{"connect", {{{"host", "127.0.0.1"}, {"port", server.port}}}},
                                                 {"write", {escape.string(), tmpEscape.string()}},
                                                 {"connect_unix", {host.bus.path, host.tmpSocket.path}},
                                                 {"read", {host.secret.string()}},
                                                 {"timeout_ms", 1000}});
    QVERIFY2(r.ok, r.error.message.c_str());
    QCOMPARE(r.result["connect_unix"].size(), std::size_t(2));
    for (const auto &c : r.result["connect_unix"]) {
      QVERIFY2(!c.value("ok", true), c.dump().c_str());
      qInfo("%s: connect to %s: %s", sandboxKindName(support.kind), c.value("path", "").c_str(), c.value("error", "").c_str());
    }
    QVERIFY(!host.bus.someoneConnected());
    QVERIFY(!host.tmpSocket.someoneConnected());
    QCOMPARE(r.result["read"].size(), std::size_t(1));
    QVERIFY2(!r.result["read"][0].value("ok", true), r.result["read"][0].dump().c_str());
    const auto &connect = r.result["connect"][0];
    QCOMPARE(connect.value("ok", true), false);
    qInfo("%s: connect to 127.0.0.1:%d: %s; write to $HOME: %s", sandboxKindName(support.kind), server.port,
          connect.value("error", "").c_str(), r.result["write"][0].value("error", "").c_str());
    QVERIFY(!server.someoneConnected());
    for (const auto &w : r.result["write"]) QCOMPARE(w.value("ok", true), false);
    std::error_code ec;
    QVERIFY(!fs::exists(escape, ec));
    QVERIFY(!fs::exists(tmpEscape, ec));
    QCOMPARE(r.result["private_dir"].value("ok", false), true);
    QCOMPARE(r.result["private_dir"].value("path", ""), sandbox.privateDir);
    QVERIFY(fs::is_directory(sandbox.privateDir, ec));
    QVERIFY(client.call("ping").ok);

    // The seccomp filter: on, reported in hello and SandboxStatus; the calls it denies fail
    // with EPERM (not a kill: the worker answers), the ones CUDA needs still work.
    QVERIFY2(hello.value("seccomp", false), hello.value("seccomp_reason", "").c_str());
    QVERIFY(sandbox.seccomp);
    QVERIFY(hello["seccomp_denied"].is_array() && !hello["seccomp_denied"].empty());
    std::vector<std::string> names = kDeniedChecks;
    names.insert(names.end(), kAllowedChecks.begin(), kAllowedChecks.end());
    const auto s = client.call("probe-sandbox", {{"syscalls", names}});
    QVERIFY2(s.ok, s.error.message.c_str());
    const auto results = syscallResults(s.result);
    QCOMPARE(results.size(), names.size());
    for (const auto &name : kDeniedChecks) {
      const auto &e = results.at(name);
      QVERIFY2(!e.value("ok", true), (name + ": " + e.dump()).c_str());
      QVERIFY2(e.value("errno", 0) == EPERM, (name + ": " + e.dump()).c_str());
    }
    for (const auto &name : kAllowedChecks)
      QVERIFY2(results.at(name).value("ok", false), (name + ": " + results.at(name).dump()).c_str());
    // Ordinary work goes on after all those refusals.
    QVERIFY(client.call("ping", {{"after", "seccomp"}}).ok);
    const auto devices = client.call("devices");
    QVERIFY2(devices.ok, devices.error.message.c_str());
    QVERIFY(devices.result.contains("devices"));
  }

  // --no-seccomp / KWB_SECCOMP=off: the namespaces stay, the filter is off and hello says why;
  // the same calls then get through (or fail for other reasons than EPERM), so the EPERMs above
  // come from the filter.
  void seccompCanBeTurnedOff_data() { isolation_data(); }

  void seccompCanBeTurnedOff() {
    QFETCH(SandboxPreference, preference);
    const auto support = probeSandboxSupport(preference);
    if (support.kind == SandboxKind::None) QSKIP(qPrintable("not available here: " + QString::fromStdString(support.reason)));
    QTemporaryDir home(QDir::currentPath() + "/kwb-home-XXXXXX");
    QVERIFY(home.isValid());
    const fs::path homePath = home.path().toStdString();
    ScopedEnv homeEnv("HOME", homePath.string());
    auto o = options(preference, homePath);
    o.environment.emplace_back("KWB_SECCOMP", "off");
    WorkerClient client(o);
    client.start();
    QVERIFY2(client.waitUntilReady(10s), client.lastExit() ? client.lastExit()->stderrTail.c_str() : "");
    const auto sandbox = client.sandbox();
    QVERIFY2(sandbox.verified, sandbox.reason.c_str());
    QVERIFY(!sandbox.seccomp);
    QVERIFY2(sandbox.seccompReason.find("KWB_SECCOMP=off") != std::string::npos, sandbox.seccompReason.c_str());
    QCOMPARE(client.hello().value("seccomp", true), false);
    const auto s = client.call("probe-sandbox", {{"syscalls", {"socket_inet", "unshare", "process_vm_readv", "ptrace", "setns"}}});
    QVERIFY2(s.ok, s.error.message.c_str());
    const auto results = syscallResults(s.result);
    for (const char *name : {"socket_inet", "unshare", "process_vm_readv"})
      QVERIFY2(results.at(name).value("ok", false), (std::string(name) + ": " + results.at(name).dump()).c_str());
    QCOMPARE(results.at("ptrace").value("errno", 0), ESRCH);
    QCOMPARE(results.at("setns").value("errno", 0), EBADF);
  }

  void syscallsCheckRefusesUnknownNames() {
    WorkerClient client(options(SandboxPreference::None, fs::current_path()));
    client.start();
    QVERIFY(client.waitUntilReady(10s));
    const auto r = client.call("probe-sandbox", {{"syscalls", {"socket_inet", "reboot_now"}}});
    QVERIFY(!r.ok);
    QCOMPARE(r.error.kind, std::string("invalid-argument"));
    QVERIFY2(r.error.message.find("reboot_now") != std::string::npos, r.error.message.c_str());
  }

  void withoutSandboxTheSameProbeGetsOut() {
    LoopbackServer server;
    HostFixture host;
    QVERIFY(host.valid());
    const fs::path homePath = host.home;
    ScopedEnv homeEnv("HOME", homePath.string());
    ScopedEnv runtimeEnv("XDG_RUNTIME_DIR", host.runtime.path().toStdString());
    WorkerClient client(options(SandboxPreference::None, homePath));
    client.start();
    QVERIFY(client.waitUntilReady(10s));
    const auto sandbox = client.sandbox();
    QCOMPARE(sandbox.state, std::string("none"));
    QVERIFY(!sandbox.verified);
    QVERIFY2(sandbox.reason.find("turned off") != std::string::npos, sandbox.reason.c_str());
    QCOMPARE(client.hello().value("sandbox", ""), std::string("none"));
    const auto escape = homePath / "escape.txt";
    const auto r = client.call("probe-sandbox", {{"connect", {{{"host", "127.0.0.1"}, {"port", server.port}}}},
                                                 {"write", escape.string()},
                                                 {"connect_unix", {host.bus.path, host.tmpSocket.path}},
                                                 {"read", {host.secret.string()}}});
    QVERIFY(r.ok);
    for (const auto &c : r.result["connect_unix"]) QVERIFY2(c.value("ok", false), c.dump().c_str());
    QVERIFY(host.bus.someoneConnected());
    QVERIFY(host.tmpSocket.someoneConnected());
    QCOMPARE(r.result["read"][0].value("ok", false), true);
    QCOMPARE(r.result["connect"][0].value("ok", false), true);
    QVERIFY(server.someoneConnected());
    QCOMPARE(r.result["write"][0].value("ok", false), true);
    QCOMPARE(r.result["write"][0].value("removed", false), true);  // the probe cleans up after itself
    QCOMPARE(r.result["private_dir"].value("ok", false), true);

    // No sandbox, no seccomp filter: the same system calls are made and get through.
    QCOMPARE(client.hello().value("seccomp", true), false);
    QVERIFY(!sandbox.seccomp);
    const auto s = client.call("probe-sandbox", {{"syscalls", {"socket_inet", "unshare", "process_vm_readv", "ptrace", "setns"}}});
    QVERIFY2(s.ok, s.error.message.c_str());
    const auto results = syscallResults(s.result);
    for (const char *name : {"socket_inet", "unshare", "process_vm_readv"})
      QVERIFY2(results.at(name).value("ok", false), (std::string(name) + ": " + results.at(name).dump()).c_str());
    QCOMPARE(results.at("ptrace").value("errno", 0), ESRCH);
    QCOMPARE(results.at("setns").value("errno", 0), EBADF);
  }
};

QTEST_GUILESS_MAIN(TestWorkerSandbox)
#include "tst_worker_sandbox.moc"
