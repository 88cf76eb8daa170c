#include "app/cli/workers_option.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "core/worker/worker_client.h"

void addWorkersOption(CLI::App *command, std::string &spec) {
  command->add_option("--workers", spec,
                      "Where the GPU workers run: local (default), ssh://[USER@]HOST[:PORT][/PATH/TO/kwb-worker] "
                      "(OpenSSH, your own configuration and keys), or slurm:partition=P,gpus=N,time=HH:MM:SS"
                      "[,jobid=N][,worker=PATH]");
}

bool applyWorkers(const std::string &spec, kwb::EvaluatorSettings &settings) {
  std::string problem;
  const auto launcher = kwb::worker::parseWorkerLauncher(spec, problem);
  if (!launcher) {
    std::cerr << "kwb: " << problem << "\n";
    return false;
  }
  settings.launcher = *launcher;
  return true;
}

int remoteDevicesCommand(const kwb::EvaluatorSettings &settings, bool asJson) {
  std::string problem;
  const auto client = kwb::startWorker(settings, std::nullopt, problem);
  if (!client) {
    if (asJson) std::cout << nlohmann::json({{"workers", settings.launcher.spec()}, {"problem", problem}}).dump(2) << "\n";
    else std::cerr << "kwb: " << problem << "\n";
    return 1;
  }
  const auto hello = client->hello();
  const auto sandbox = client->sandbox();
  const auto devices = kwb::devicesInHello(hello);
  const auto gpu = hello.value("gpu", nlohmann::json::object());
  if (asJson) {
    nlohmann::json out = {{"workers", settings.launcher.spec()},
                          {"host", sandbox.host},
                          {"worker_version", hello.value("worker", "")},
                          {"protocol", hello.value("protocol", 0)},
                          {"driver_version", gpu.is_object() ? gpu.value("driver_version", 0) : 0},
                          {"devices", hello.value("devices", nlohmann::json::array())},
                          {"problem", gpu.is_object() ? gpu.value("problem", "") : ""},
                          {"sandbox", {{"state", sandbox.state}, {"verified", sandbox.verified}, {"reason", sandbox.reason}}}};
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "workers: " << settings.launcher.describe() << " (host " << sandbox.host << ", kwb-worker "
            << hello.value("worker", "?") << ", protocol " << hello.value("protocol", 0) << ")\n";
  std::cout << "sandbox: " << sandbox.state << (sandbox.verified ? " (verified there)" : "") << ": " << sandbox.reason
            << "\n";
  if (devices.empty()) {
    std::cout << "no CUDA device there: "
              << (gpu.is_object() ? gpu.value("problem", std::string("none reported")) : std::string("none reported")) << "\n";
  }
  for (const auto &d : devices) std::cout << "  GPU " << d.ordinal << ": " << d.name << " (" << d.arch << ")\n";
  return 0;
}
