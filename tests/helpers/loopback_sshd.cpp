#include "helpers/loopback_sshd.h"
#include "core/sandbox/sandbox.h"
#include "helpers/daemon_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace kwb::test {

namespace {


bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}


std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The direct children of `parent`, from /proc.
std::vector<pid_t> childrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto &e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace

LoopbackSshd::LoopbackSshd(std::string alias) : alias_(std::move(alias)) {
  const std::string sshd = installedProgram("sshd", {"/usr/sbin/sshd", "/usr/local/sbin/sshd"});
  if (sshd.empty()) {
    problem_ = "sshd is not installed (Debian: apt install openssh-server; packaging/install-deps.sh installs it)";
    return;
  }
  const std::string keygen = installedProgram("ssh-keygen", {"/usr/bin/ssh-keygen"});
  if (keygen.empty()) {
    problem_ = "ssh-keygen is not installed (Debian: apt install openssh-client)";
    return;
  }
  char templ[] = "/tmp/kwb-sshd-XXXXXX";
  if (!::mkdtemp(templ)) {
    problem_ = std::string("mkdtemp: ") + std::strerror(errno);
    return;
  }
  folder_ = templ;
  const std::string d = folder_.string();
  for (const char *key : {"host_key", "client_key"}) {
    const std::string command = "'" + keygen + "' -q -t ed25519 -N '' -f '" + d + "/" + key + "' >/dev/null 2>&1";
    if (std::system(command.c_str()) != 0) {
      problem_ = std::string("ssh-keygen could not make ") + key;
      return;
    }
  }
  fs::copy_file(folder_ / "client_key.pub", folder_ / "authorized_keys");
  ::chmod((folder_ / "authorized_keys").c_str(), 0600);
  // Run as root (CI), sshd wants its privilege-separation folder.
  if (::geteuid() == 0) ::mkdir("/run/sshd", 0755);
  port_ = freeLoopbackPort();
  const std::string user = [] {
    const char *u = std::getenv("USER");
    if (u && *u) return std::string(u);
    return std::string(::geteuid() == 0 ? "root" : "");
  }();
  {
    std::ofstream c(folder_ / "sshd_config");
    c << "Port " << port_ << "\nListenAddress 127.0.0.1\nHostKey " << d << "/host_key\nPidFile " << d
      << "/sshd.pid\nAuthorizedKeysFile " << d << "/authorized_keys\n"
      << "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
      << "StrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nMaxSessions 64\nMaxStartups 64\n";
    // A bundle's programs (the GPU machine) find their libraries through it: sessions get it too.
    if (const char *libs = std::getenv("LD_LIBRARY_PATH"); libs && *libs) c << "SetEnv LD_LIBRARY_PATH=" << libs << "\n";
  }
  {
    std::ofstream k(folder_ / "known_hosts");
    k << "[127.0.0.1]:" << port_ << " " << trimmed(readText(folder_ / "host_key.pub")) << "\n";
  }
  {
    std::ofstream c(folder_ / "ssh_config");
    c << "Host " << alias_ << "\n  HostName 127.0.0.1\n  Port " << port_ << "\n"
      << (user.empty() ? "" : "  User " + user + "\n") << "  IdentityFile " << d << "/client_key\n"
      << "  IdentitiesOnly yes\n  UserKnownHostsFile " << d << "/known_hosts\n  StrictHostKeyChecking yes\n"
      << "  LogLevel ERROR\n";
  }
  const std::string log = d + "/sshd.log";
  const pid_t pid = startDaemon({sshd, "-D", "-e", "-f", d + "/sshd_config"}, log);
  pid_ = pid;
  // Ready when its port accepts, or gone.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (!accepts(port_)) {
    if (daemonExited(pid_)) {
      pid_ = -1;
      problem_ = "sshd exited at once: " + readText(log);
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      problem_ = "sshd did not listen on 127.0.0.1:" + std::to_string(port_) + " within 15 s: " + readText(log);
      return;
    }
    ::poll(nullptr, 0, 20);
  }
}

LoopbackSshd::~LoopbackSshd() {
  stop();
  std::error_code ec;
  if (!folder_.empty()) fs::remove_all(folder_, ec);
}

void LoopbackSshd::stop() {
  if (pid_ <= 0) return;
  dropConnections();
  stopDaemon(pid_);
  pid_ = -1;
}

std::string LoopbackSshd::sshCommand() const { return "ssh -F " + (folder_ / "ssh_config").string(); }

std::string LoopbackSshd::sshCommandFor(const std::vector<const LoopbackSshd *> &servers, const fs::path &folder) {
  const fs::path file = folder / "ssh_config";
  std::ofstream c(file);
  for (const auto *server : servers) c << "Include " << server->configFile().string() << "\n";
  return "ssh -F " + file.string();
}

std::string LoopbackSshd::log() const { return readText(folder_ / "sshd.log"); }

void LoopbackSshd::dropConnections() {
  if (pid_ <= 0) return;
  // Each connection is a child of the listening sshd; killing it closes the connection and the
  // session's pipes (the command there reads end of file).
  for (const pid_t child : childrenOf(pid_)) ::kill(child, SIGKILL);
}

}  // namespace kwb::test
