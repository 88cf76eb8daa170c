#include "app/cli/workers_option.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "core/worker/worker_client.h"

void addWorkersOption(CLI::App *command, std::string &spec) {
  command->add_option("--workers", spec,
                      "Where the GPU workers run: local (default), ssh://[USER@]HOST[:PORT][/PATH/TO/kwb-worker] "
                      "(OpenSSH, your own configuration and keys), several hosts in one pool (ssh://a,ssh://b), or slurm:partition=P,gpus=N,time=HH:MM:SS"
                      "[,jobid=N][,worker=PATH]");
}

bool applyWorkers(const std::string &spec, kwb::EvaluatorSettings &settings) {
  std::string problem;
  const auto launchers = kwb::worker::parseWorkerLaunchers(spec, problem);
  if (!launchers) {
    std::cerr << "kwb: " << problem << "\n";
    return false;
  }
  kwb::useWorkers(settings, *launchers);
  return true;
}

namespace {

// What one launcher's worker says of itself and its GPUs; "problem" set when it did not start.
nlohmann::json remoteDevices(const kwb::EvaluatorSettings &settings) {
  std::string problem;
  const auto client = kwb::startWorker(settings, std::nullopt, problem);
  if (!client) return {{"workers", settings.launcher.spec()}, {"started", false}, {"problem", problem}};
  const auto hello = client->hello();
  const auto sandbox = client->sandbox();
  const auto gpu = hello.value("gpu", nlohmann::json::object());
  nlohmann::json devices = nlohmann::json::array();
  for (const auto &d : kwb::devicesInHello(hello))
    devices.push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"arch", d.arch}});
  return {{"workers", settings.launcher.spec()},
          {"started", true},
          {"host", sandbox.host},
          {"worker_version", hello.value("worker", "")},
          {"protocol", hello.value("protocol", 0)},
          {"driver_version", gpu.is_object() ? gpu.value("driver_version", 0) : 0},
          {"devices", hello.value("devices", nlohmann::json::array())},
          {"gpus", devices},
          {"problem", gpu.is_object() ? gpu.value("problem", "") : ""},
          {"sandbox", {{"state", sandbox.state}, {"verified", sandbox.verified}, {"reason", sandbox.reason}}}};
}

void printRemoteDevices(const kwb::EvaluatorSettings &settings, const nlohmann::json &r) {
  if (!r.value("started", false)) {
    std::cerr << "kwb: " << r.value("problem", std::string()) << "\n";
    return;
  }
  std::cout << "workers: " << settings.launcher.describe() << " (host " << r.value("host", std::string()) << ", kwb-worker "
            << r.value("worker_version", std::string("?")) << ", protocol " << r.value("protocol", 0) << ")\n";
  const auto &sandbox = r["sandbox"];
  std::cout << "sandbox: " << sandbox.value("state", std::string()) << (sandbox.value("verified", false) ? " (verified there)" : "")
            << ": " << sandbox.value("reason", std::string()) << "\n";
  if (r["gpus"].empty()) {
    const std::string why = r.value("problem", std::string());
    std::cout << "no CUDA device there: " << (why.empty() ? std::string("none reported") : why) << "\n";
  }
  for (const auto &d : r["gpus"])
    std::cout << "  GPU " << d.value("ordinal", 0) << ": " << d.value("name", std::string()) << " (" << d.value("arch", std::string())
              << ")\n";
}

}  // namespace

int remoteDevicesCommand(const kwb::EvaluatorSettings &settings, bool asJson) {
  // Several hosts: each one's answer, in the order given (a JSON array of them).
  std::vector<kwb::EvaluatorSettings> each;
  if (settings.hosts.empty()) each.push_back(settings);
  for (const auto &host : settings.hosts) {
    each.push_back(settings);
    each.back().hosts.clear();
    each.back().launcher = host;
  }
  nlohmann::json all = nlohmann::json::array();
  bool started = true;
  for (const auto &one : each) {
    const auto r = remoteDevices(one);
    started = started && r.value("started", false);
    if (asJson) all.push_back(r);
    else printRemoteDevices(one, r);
  }
  if (asJson) std::cout << (settings.hosts.empty() ? all.front() : all).dump(2) << "\n";
  return started ? 0 : 1;
}
