#pragma once
// Where a worker runs and how it is started there (issue 22): on this machine (the client makes
// its sandbox), on another host through OpenSSH (the user's own configuration and keys, one
// connection reused by every worker of that host), or as a Slurm job step through `srun`. A
// remote worker is `kwb-worker --relay` on the far side: it starts the sandboxed worker there,
// checks the sandbox from that host, and passes the protocol's lines through (PROTOCOL.md,
// "Remote workers"). Nothing is assumed shared but the worker program: requests carry the
// compiled code, the manifest's text and the inputs' generator settings.
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kwb::worker {

struct WorkerLauncher {
  enum class Kind { Local, Ssh, Slurm };
  Kind kind = Kind::Local;
  // ssh: [user@]host and a port (0: ssh's own choice, ~/.ssh/config applies).
  std::string host;
  int port = 0;
  // The worker program on the far side: a path, or empty for `kwb-worker` on its PATH.
  std::string remoteWorker;
  // slurm: partition, gpus (workers, one GPU each), time (a step's limit), jobid (an allocation
  // the user holds: steps run inside it; without it a pool asks for one with salloc: see
  // slurm_allocation.h), wait (seconds salloc may wait), account, qos, constraint.
  std::map<std::string, std::string> slurm;

  bool remote() const { return kind != Kind::Local; }
  // "local", "ssh://ana@gpu-box:2222", "slurm (partition gpu, 8 GPUs, time 01:00:00)".
  std::string describe() const;
  // The spec that parses back to this launcher (--workers).
  std::string spec() const;
};

// `kwb-worker --relay` ends with this status after its worker ended (a crash, a lost context),
// once the replies saying so are written. ssh and srun pass it through; a transport that ends
// otherwise (killed by a signal, a cancelled job step, a dropped connection) ends another way.
inline constexpr int kRelayExitWorkerEnded = 3;
// ... and with this one when it was asked for a tool (--sanitize) its host does not have.
inline constexpr int kRelayExitNoTool = 4;
// A relay under a tool gives its worker this long to start (the tool loads and instruments first),
// and this long to end once its input closed (the tool writes its summary); the client waits
// longer on both, so that the relay's own word on how the tool ended can reach it.
inline constexpr std::chrono::seconds kRelayToolStartTimeout{120};
inline constexpr std::chrono::seconds kRelayToolFinishGrace{60};
inline constexpr std::chrono::seconds kRelayToolClientMargin{30};

// --workers: "local", "ssh://[USER@]HOST[:PORT][/PATH/TO/kwb-worker]",
// "slurm:partition=gpu,gpus=8,time=01:00:00[,jobid=N][,worker=PATH][,account=A][,wait=S]". nullopt with
// `problem` saying what is wrong and what is expected.
// Every field is checked by its kind, so that none reaches ssh, srun or salloc as an option or
// as anything but the one argument it is: the worker program an absolute path ('/' first), a host
// and user, partition, account and qos names that do not begin with '-' (letters, digits, _ . -),
// a constraint a feature expression, gpus, wait and jobid whole numbers in range, time one of
// srun's time formats, a port 1 to 65535.
std::optional<WorkerLauncher> parseWorkerLauncher(const std::string &spec, std::string &problem);

// --workers with several hosts in one pool: "ssh://a,ssh://b[:PORT][/PATH],local", each part as
// parseWorkerLauncher takes it, in order; one part is a list of one. A part begins at a comma
// followed by "ssh://" or "local" (a Slurm spec's own commas separate its fields). A Slurm
// launcher stands alone: its GPUs are steps in one allocation, not a host's; the same host twice
// is refused. nullopt with `problem` naming the part.
std::optional<std::vector<WorkerLauncher>> parseWorkerLaunchers(const std::string &spec, std::string &problem);
// The spec of a list (parts joined by commas), which parses back to it.
std::string launchersSpec(const std::vector<WorkerLauncher> &launchers);

// The same checks for a launcher made otherwise: empty when each field is acceptable, else which
// field and the rule it breaks. Checked again before ssh, srun or salloc runs.
std::string launcherProblem(const WorkerLauncher &launcher);

// The ssh program and its own options: $KWB_SSH_COMMAND split at spaces (as GIT_SSH_COMMAND),
// else "ssh".
std::vector<std::string> sshCommand();

// The directory for ssh's shared connections ($XDG_RUNTIME_DIR/kwb-ssh, else /tmp/kwb-ssh-UID),
// created private to this user; empty when it cannot be made (connections are then not shared).
// Never longer than kSshControlDirectoryMax: a socket's path holds 107 bytes, and ssh names
// DIR/%C (40 characters) and, while a master starts, that with a 17-character suffix.
constexpr std::size_t kSshControlDirectoryMax = 107 - 1 - 40 - 17;
std::string sshControlDirectory();

// ssh: makes sure a shared connection to the launcher's host is up (`ssh -O check`, else a master
// put in the background by ControlPersist, in a session of its own, so that killing one worker's
// ssh never drops the others'). Before a start, sockets in the private folder that refuse connections (masters
// that died without their cleanup) are removed; after it, the master must answer `-O check` to
// count as up (else sshConnectionStats says down, and why; the workers then log in on their own).
// Empty when it is up, sharing is off, or only sharing failed; else what ssh said (it could not
// connect or log in). Serialized per host within this process.
std::string ensureSshMaster(const WorkerLauncher &launcher);

// What ensureSshMaster has seen of one host's shared connection in this process (the GPUs dock's
// line per host). Keyed by WorkerLauncher::describe().
struct SshConnectionStats {
  bool asked = false;       // a worker's start asked for it
  bool up = false;          // the last look found it up, or started it
  int started = 0;          // shared connections started to the host (the first, and after it ended)
  int reused = 0;           // worker starts that found it already up
  double lastSetupMs = 0;   // the last start's time, the login included
  std::string problem;      // why the last start failed; empty when it did not
};
SshConnectionStats sshConnectionStats(const std::string &launcherDescription);
inline SshConnectionStats sshConnectionStats(const WorkerLauncher &launcher) {
  return sshConnectionStats(launcher.describe());
}

// The command line that starts `workerArguments` (the worker's own, after its program) on the
// launcher's host: ssh with connection reuse, no terminal, no password prompts, keep-alives; or
// srun. Quoting for the remote shell is done here.
std::vector<std::string> remoteWorkerCommand(const WorkerLauncher &launcher,
                                             const std::vector<std::string> &workerArguments);

// A launcher's program (ssh, srun) as it will be run: `program` when it holds a '/', else the
// first of that name on $PATH; nullopt when it is not there or cannot be run.
std::optional<std::string> launcherProgram(const std::string &program);

// Why a launcher's program (ssh, srun) is missing and what to install, for a start that failed.
std::string missingLauncherProgram(const WorkerLauncher &launcher, const std::string &program);

// One argument quoted for a POSIX shell ('it'\''s').
std::string shellQuote(const std::string &argument);

}  // namespace kwb::worker
