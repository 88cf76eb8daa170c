#pragma once
// A real OpenSSH server on loopback for the remote-worker tests and the overhead benchmark
// (issue 22): `sshd -D` as this user, on a free port of 127.0.0.1, with a host key and a client
// key made for it in a temporary folder, public-key login only. An ssh_config there names it
// `kwbtest` (known host pinned, that key only); `sshCommand()` is the value for $KWB_SSH_COMMAND.
// Stopped (its whole process group) when destroyed. No Qt.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kwb::test {

class LoopbackSshd {
 public:
  // `alias`: the Host name its ssh_config gives it (two servers, two names: several hosts).
  explicit LoopbackSshd(std::string alias = kHost);
  ~LoopbackSshd();
  LoopbackSshd(const LoopbackSshd &) = delete;
  LoopbackSshd &operator=(const LoopbackSshd &) = delete;

  // Empty when it runs; else why not (no sshd installed, it did not start).
  const std::string &problem() const { return problem_; }
  int port() const { return port_; }
  const std::filesystem::path &folder() const { return folder_; }
  std::string sshCommand() const;                 // "ssh -F FOLDER/ssh_config"
  static constexpr const char *kHost = "kwbtest"; // the Host alias in that config by default
  const std::string &alias() const { return alias_; }
  const std::filesystem::path configFile() const { return folder_ / "ssh_config"; }
  // "ssh -F FILE" for a config that includes each server's: their aliases side by side. FILE is
  // written into `folder`.
  static std::string sshCommandFor(const std::vector<const LoopbackSshd *> &servers, const std::filesystem::path &folder);
  // Its log so far (sshd -e), for a failure message.
  std::string log() const;
  // Kills every session's processes sshd started for this server (the connections drop).
  void dropConnections();
  // The host goes away: its connections dropped and the server stopped (a new connection is
  // refused).
  void stop();

 private:
  std::string alias_;
  std::filesystem::path folder_;
  std::string problem_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace kwb::test
