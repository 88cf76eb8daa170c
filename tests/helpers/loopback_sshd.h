#pragma once
// A real OpenSSH server on loopback for the remote-worker tests and the overhead benchmark
// (issue 22): `sshd -D` as this user, on a free port of 127.0.0.1, with a host key and a client
// key made for it in a temporary folder, public-key login only. An ssh_config there names it
// `kwbtest` (known host pinned, that key only); `sshCommand()` is the value for $KWB_SSH_COMMAND.
// Stopped (its whole process group) when destroyed. No Qt.
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace kwb::test {

class LoopbackSshd {
 public:
  LoopbackSshd();
  ~LoopbackSshd();
  LoopbackSshd(const LoopbackSshd &) = delete;
  LoopbackSshd &operator=(const LoopbackSshd &) = delete;

  // Empty when it runs; else why not (no sshd installed, it did not start).
  const std::string &problem() const { return problem_; }
  int port() const { return port_; }
  const std::filesystem::path &folder() const { return folder_; }
  std::string sshCommand() const;                 // "ssh -F FOLDER/ssh_config"
  static constexpr const char *kHost = "kwbtest"; // the Host alias in that config
  // Its log so far (sshd -e), for a failure message.
  std::string log() const;
  // Kills every session's processes sshd started for this server (the connections drop).
  void dropConnections();

 private:
  std::filesystem::path folder_;
  std::string problem_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace kwb::test
