// kwb-worker: the process that owns one GPU's CUDA context. Run by hand it lists the devices
// it can see; started by kwb or kernel-workbench with --serve it speaks the worker protocol
// (core/worker/PROTOCOL.md) on stdin/stdout.
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu/device_info.h"
#include "core/gpu/device_report.h"
#include "core/gpu/device_stats.h"
#include "core/worker/server/profile_command.h"
#include "core/worker/server/ceilings_command.h"
#include "core/worker/server/compile_server.h"
#include "core/worker/server/evaluate_command.h"
#include "core/worker/server/host_launcher.h"
#include "core/worker/server/time_command.h"
#include "core/sandbox/worker_sandbox.h"
#include "core/sandbox/lockdown.h"
#include "core/sandbox/seccomp_filter.h"
#include "core/worker/server/relay.h"
#include "core/worker/server/worker_server.h"
#include "kwb/version.h"

namespace {

void usage(std::ostream &out) {
  out << "Usage: kwb-worker [--version] [--devices [--json]] [--stats --json]\n"
         "       kwb-worker --serve [--device N] [--sandbox bwrap|unshare|none] [--private-dir DIR]\n"
         "                  [--sandbox-note TEXT] [--no-seccomp] [--sandbox-finished]\n"
         "       kwb-worker --relay [--device N] [--sanitize TOOL]\n"
         "       kwb-worker --sandbox-exec --private-dir DIR -- PROGRAM [ARGS...]\n"
         "       kwb-worker --compile-service [--sandbox bwrap|unshare|none] [--private-dir DIR]\n"
         "                  [--memory-limit-mb N] [--cpu-limit-s N] [--output-limit-mb N] [--no-fence]\n"
         "       kwb-worker --host-launcher LIBRARY --device N --allow-libraries A,B|none   (started by the worker itself)\n"
         "The GPU worker of Kernel Workbench. It is started by kwb and kernel-workbench;\n"
         "run by hand it lists the devices it can see.\n"
         "  --stats --json   live figures of every visible GPU (NVML: load, memory, temperature,\n"
         "                   SM clock, clock event reasons); an empty list and a problem without one\n"
         "  --serve          speak the worker protocol (JSON lines) on stdin/stdout\n"
         "  --device N       use and report only CUDA device N\n"
         "  --relay          the far side of a remote worker (started through ssh or srun): start the\n"
         "                   sandboxed worker on this host, check its sandbox here, and pass the\n"
         "                   protocol through on stdin/stdout\n"
         "  --sanitize TOOL  with --relay: run that worker under this host's compute-sanitizer\n"
         "                   (memcheck, racecheck, initcheck or synccheck; kwb eval --sanitize)\n"
         "  --sandbox KIND   the sandbox the worker was started in; 'unshare' makes the worker\n"
         "                   finish it (read-only file system, minimal /dev, no capabilities)\n"
         "  --private-dir D  the only writable directory\n"
         "  --sandbox-note T why there is no sandbox (reported in hello)\n"
         "  --no-seccomp     do not install the seccomp filter inside the sandbox (for debugging;\n"
         "                   KWB_SECCOMP=off does the same); hello reports it\n"
         "  --sandbox-finished  with --sandbox unshare: a --sandbox-exec before this process finished\n"
         "                   the sandbox (the worker runs under a tool, compute-sanitizer); checked,\n"
         "                   not done again\n"
         "  --sandbox-exec   inside namespaces made by unshare: finish the sandbox as --sandbox\n"
         "                   unshare does, check it, then run PROGRAM there (used for nvcc); exits\n"
         "                   with status 125 and says why when the sandbox is not in effect\n"
         "  --compile-service  compile device-only sources with NVRTC for kwb and kernel-workbench\n"
         "                   (JSON lines on stdin/stdout, core/compile/compile_wire.h), within the\n"
         "                   limits given (private memory, CPU time per compile, output size; 0: none)\n"
         "  --no-fence       with --compile-service: raise no Landlock fence after NVRTC is loaded (for\n"
         "                   debugging, measuring its cost); hello's fence says so\n"
         "  --host-launcher  run a candidate's host launcher in a process of its own, for the worker\n"
         "                   that started it (requests on fd 3, answers on fd 4)\n";
}

std::string join(const std::vector<std::string> &parts, const char *separator) {
  std::string out;
  for (const auto &p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

// What is wrong with the isolation checkSandboxFromInside saw; empty when it is in effect.
std::vector<std::string> isolationProblems(const kwb::worker::SandboxSelfCheck &self) {
  std::vector<std::string> problems;
  if (!self.networkIsolated) problems.push_back("network interfaces visible: " + join(self.interfaces, ", "));
  if (self.homeWritable) problems.push_back("$HOME (" + self.home + ") is writable");
  if (self.tmpWritable) problems.push_back("/tmp is writable");
  if (!self.privateDirWritable)
    problems.push_back("the private directory '" + self.privateDir + "' is not writable: " + self.privateDirError);
  return problems;
}

bool seccompWanted(bool noSeccompFlag, std::string &why) {
  if (noSeccompFlag) {
    why = "turned off by --no-seccomp";
    return false;
  }
  if (const char *env = std::getenv("KWB_SECCOMP"); env && (!std::strcmp(env, "off") || !std::strcmp(env, "0"))) {
    why = std::string("turned off by KWB_SECCOMP=") + env;
    return false;
  }
  return true;
}

// kwb-worker --sandbox-exec: finish the sandbox `unshare` started, check it, run the program.
int sandboxExec(const std::string &privateDir, const std::vector<std::string> &command) {
  namespace w = kwb::worker;
  if (command.empty()) {
    std::cerr << "kwb-worker: --sandbox-exec needs a program after --\n";
    return 2;
  }
  // May fork: the parent stays as the pid namespace's init and never returns.
  const auto lockdown = w::lockDownInsideNamespaces(privateDir);
  auto problems = lockdown.problems;
  const auto more = isolationProblems(w::checkSandboxFromInside(privateDir));
  problems.insert(problems.end(), more.begin(), more.end());
  if (!problems.empty()) {
    std::cerr << "kwb-worker --sandbox-exec: sandbox not in effect: " << join(problems, "; ") << "\n";
    return 125;
  }
  std::vector<char *> argv;
  for (const auto &a : command) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  std::cerr << "kwb-worker --sandbox-exec: cannot run " << command.front() << ": " << std::strerror(errno) << "\n";
  return 127;
}

// What a serving process (the worker, the compile service) knows of its sandbox once it is made.
struct Isolation {
  kwb::worker::ProtocolFds fds;
  kwb::worker::SeccompReport seccomp;
  kwb::worker::SandboxSelfCheck self;
  std::string sandbox;  // "bwrap", "unshare" or "none" (requested but not in effect: "none")
  std::string reason;   // why "none"
};

// Finishes the sandbox (unshare), makes the process undumpable, installs the seccomp filter and
// takes over stdin/stdout for the protocol; then checks the isolation from inside.
Isolation isolate(kwb::worker::SandboxKind sandbox, const std::string &privateDir, const std::string &note,
                  bool noSeccomp, bool sandboxFinished) {
  namespace w = kwb::worker;
  Isolation out;
  std::vector<std::string> problems;
  // Finished by `kwb-worker --sandbox-exec` (a tool such as compute-sanitizer runs between it and
  // this process): the isolation is checked below all the same.
  if (sandbox == w::SandboxKind::Unshare && !sandboxFinished) {
    // May fork: the parent stays as the pid namespace's init and never returns.
    const auto lockdown = w::lockDownInsideNamespaces(privateDir);
    problems = lockdown.problems;
  }
  // Not dumpable: a process of the same user (a host launcher's process, which runs candidate
  // code) cannot open /proc/<worker>/fd/1 (the reply channel) or /proc/<worker>/mem.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // The seccomp filter goes on before anything else is loaded (the CUDA driver, a candidate,
  // NVRTC) and before the first thread starts; only inside a sandbox, so "none" stays a plain
  // process.
  if (sandbox == w::SandboxKind::None) {
    out.seccomp.reason = "not installed: the process runs without a sandbox";
  } else if (std::string why; !seccompWanted(noSeccomp, why)) {
    out.seccomp.reason = why;
  } else {
    out.seccomp = w::installSeccompFilter();
  }
  out.fds = w::takeOverStdio();
  w::exitWhenClientVanishes(out.fds.in);
  out.self = w::checkSandboxFromInside(privateDir);
  if (sandbox == w::SandboxKind::None) {
    out.sandbox = "none";
    out.reason = note.empty() ? "started without a sandbox (no --sandbox)" : note;
  } else {
    const auto more = isolationProblems(out.self);
    problems.insert(problems.end(), more.begin(), more.end());
    out.sandbox = problems.empty() ? w::sandboxKindName(sandbox) : "none";
    if (!problems.empty())
      out.reason = std::string(w::sandboxKindName(sandbox)) + " sandbox not in effect: " + join(problems, "; ");
  }
  return out;
}

int compileService(kwb::worker::SandboxKind sandbox, const std::string &privateDir, const std::string &note,
                   bool noSeccomp, const kwb::worker::CompileServerConfig &limits) {
  const auto isolation = isolate(sandbox, privateDir, note, noSeccomp, false);
  auto config = limits;
  config.sandbox = isolation.sandbox;
  config.sandboxReason = isolation.reason;
  config.privateDir = privateDir;
  return kwb::worker::runCompileServer(isolation.fds.in, isolation.fds.out, config);
}

int serve(std::optional<int> device, kwb::worker::SandboxKind sandbox, const std::string &privateDir,
          const std::string &note, bool noSeccomp, bool sandboxFinished) {
  namespace w = kwb::worker;
  const auto isolation = isolate(sandbox, privateDir, note, noSeccomp, sandboxFinished);
  const auto &fds = isolation.fds;
  const auto &seccomp = isolation.seccomp;
  w::WorkerServerConfig config;
  config.device = device;
  config.privateDir = privateDir;
  config.sandboxChecks = w::toJson(isolation.self);
  config.seccomp = seccomp.active;
  config.seccompReason = seccomp.reason;
  config.seccompDenied = seccomp.denied;
  config.sandbox = isolation.sandbox;
  config.sandboxReason = isolation.reason;

  // The devices, looked at from inside the sandbox: what CUDA can really reach from here.
  const auto inventory = kwb::probeGpus();
  nlohmann::json devices = inventory;
  if (device) {
    nlohmann::json kept = nlohmann::json::array();
    for (const auto &d : devices["devices"])
      if (d.value("ordinal", -1) == *device) kept.push_back(d);
    if (kept.empty() && inventory.problem.empty())
      devices["problem"] = "no CUDA device " + std::to_string(*device) + "; the driver sees " +
                           std::to_string(inventory.devices.size()) + " device(s)";
    devices["devices"] = kept;
  }

  w::WorkerServer server(fds.in, fds.out, config);
  server.addBuiltinCommands(devices);
  w::addEvaluateCommand(server, device);
  w::addTimeCommand(server, device);
  w::addProfileCommand(server, device);
  w::addCeilingsCommand(server, device);
  std::cerr << "kwb-worker " << kwb::kVersion << ": serving (pid " << ::getpid() << ", sandbox "
            << config.sandbox << (config.sandboxReason.empty() ? "" : ": " + config.sandboxReason) << "; seccomp "
            << (seccomp.active ? "on" : "off: " + seccomp.reason) << ")\n";
  const int status = server.run();
  // A lost CUDA context is not torn down (that can hang or crash): leave at once.
  if (status == w::kContextLostExitStatus) {
    std::cerr.flush();
    std::_Exit(status);
  }
  return status;
}

}  // namespace

int main(int argc, char **argv) {
  bool json = false, devices = false, stats = false, serveMode = false, noSeccomp = false, sandboxExecMode = false,
       sandboxFinished = false, compileMode = false, relayMode = false;
  kwb::worker::CompileServerConfig compileLimits;
  std::string hostLauncher;
  std::vector<std::string> allowedLibraries;
  std::vector<std::string> execCommand;
  std::optional<int> device;
  auto sandbox = kwb::worker::SandboxKind::None;
  std::string privateDir, note, relayTool;
  auto value = [&](int &i, const char *name) -> const char * {
    if (i + 1 >= argc) {
      std::cerr << "kwb-worker: " << name << " needs a value\n";
      std::exit(2);
    }
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--version")) {
      std::cout << "kwb-worker " << kwb::kVersion << "\n";
      return 0;
    } else if (!std::strcmp(argv[i], "--devices")) {
      devices = true;
    } else if (!std::strcmp(argv[i], "--stats")) {
      stats = true;
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (!std::strcmp(argv[i], "--serve")) {
      serveMode = true;
    } else if (!std::strcmp(argv[i], "--relay")) {
      relayMode = true;
    } else if (!std::strcmp(argv[i], "--sanitize")) {
      relayTool = value(i, "--sanitize");
    } else if (!std::strcmp(argv[i], "--device")) {
      const char *v = value(i, "--device");
      char *end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (!*v || *end || n < 0 || n > 1024) {
        std::cerr << "kwb-worker: --device expects a device number, not '" << v << "'\n";
        return 2;
      }
      device = static_cast<int>(n);
    } else if (!std::strcmp(argv[i], "--sandbox")) {
      const char *v = value(i, "--sandbox");
      const auto kind = kwb::worker::parseSandboxKind(v);
      if (!kind) {
        std::cerr << "kwb-worker: --sandbox expects bwrap, unshare or none, not '" << v << "'\n";
        return 2;
      }
      sandbox = *kind;
    } else if (!std::strcmp(argv[i], "--private-dir")) {
      privateDir = value(i, "--private-dir");
    } else if (!std::strcmp(argv[i], "--sandbox-note")) {
      note = value(i, "--sandbox-note");
    } else if (!std::strcmp(argv[i], "--no-seccomp")) {
      noSeccomp = true;
    } else if (!std::strcmp(argv[i], "--sandbox-finished")) {
      sandboxFinished = true;
    } else if (!std::strcmp(argv[i], "--host-launcher")) {
      hostLauncher = value(i, "--host-launcher");
    } else if (!std::strcmp(argv[i], "--allow-libraries")) {
      std::istringstream list(value(i, "--allow-libraries"));
      for (std::string name; std::getline(list, name, ',');)
        if (!name.empty() && name != "none") allowedLibraries.push_back(name);
    } else if (!std::strcmp(argv[i], "--compile-service")) {
      compileMode = true;
    } else if (!std::strcmp(argv[i], "--no-fence")) {
      compileLimits.noFence = true;
    } else if (!std::strcmp(argv[i], "--memory-limit-mb") || !std::strcmp(argv[i], "--cpu-limit-s") ||
               !std::strcmp(argv[i], "--output-limit-mb")) {
      const std::string name = argv[i];
      const char *v = value(i, name.c_str());
      char *end = nullptr;
      const unsigned long long n = std::strtoull(v, &end, 10);
      if (!*v || *end || *v == '-' || n > (1ull << 40)) {
        std::cerr << "kwb-worker: " << name << " expects a whole number, not '" << v << "'\n";
        return 2;
      }
      if (name == "--memory-limit-mb") compileLimits.memoryBytes = n << 20;
      else if (name == "--output-limit-mb") compileLimits.outputBytes = n << 20;
      else compileLimits.cpuSeconds = n;
    } else if (!std::strcmp(argv[i], "--sandbox-exec")) {
      sandboxExecMode = true;
    } else if (!std::strcmp(argv[i], "--") && sandboxExecMode) {
      execCommand.assign(argv + i + 1, argv + argc);
      break;
    } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      usage(std::cout);
      return 0;
    } else {
      std::cerr << "kwb-worker: unknown argument '" << argv[i] << "'\n";
      usage(std::cerr);
      return 2;
    }
  }
  if (!hostLauncher.empty())
    return kwb::worker::runHostLauncherChild(hostLauncher, device.value_or(0), allowedLibraries);
  if (sandboxExecMode) return sandboxExec(privateDir, execCommand);
  if (compileMode) return compileService(sandbox, privateDir, note, noSeccomp, compileLimits);
  if (!relayTool.empty() && !relayMode) {
    std::cerr << "kwb-worker: --sanitize goes with --relay (a local worker is started under the tool by its client)\n";
    return 2;
  }
  if (relayMode) return kwb::worker::runRelay(device, relayTool);
  if (serveMode) return serve(device, sandbox, privateDir, note, noSeccomp, sandboxFinished);
  if (stats) {
    // Trusted code only (the driver and NVML): no sandbox. JSON is the only form.
    std::cout << nlohmann::json(kwb::sampleGpuStats()).dump(2) << "\n";
    return 0;
  }
  if (!devices && !json) {
    usage(std::cout);
    return 0;
  }
  const auto inventory = kwb::probeGpus();
  if (json) std::cout << nlohmann::json(inventory).dump(2) << "\n";
  else std::cout << kwb::formatInventory(inventory);
  return 0;
}
