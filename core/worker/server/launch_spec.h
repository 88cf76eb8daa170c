#pragma once
// One launch as the evaluate and time requests carry it: either a kernel of a CUBIN module
// ("cubin", base64) with its name, evaluated grid/block/shared bytes and argument order, or a
// host launcher ("library", base64 bytes of a shared library exporting kwb_launch) with the
// argument order only: kwb_launch(args, stream) does its own launches.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/task/task.h"

namespace kwb::worker {

struct LaunchSpec {
  std::string kernel;
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned sharedBytes = 0;
  std::vector<std::string> args;
  std::string image;  // CUBIN bytes, or the shared library's bytes for a host launcher
  bool hostLauncher = false;
};

// Reads request[field]; throws CommandError (invalid-argument) "<command>: <field>: <what>".
LaunchSpec parseLaunchSpec(const nlohmann::json &j, const std::string &command, const char *field);

// The task and size configuration a request names: "task" (the folder), "config", and the
// manifest's text in "manifest" (else the folder's task.toml is read). Throws CommandError
// (invalid-argument) "<command>: <what>".
struct RequestTask {
  std::string folder;
  Task task;
  std::string configName;
  const SizeConfig &config() const { return *task.config(configName); }
};
RequestTask readRequestTask(const nlohmann::json &request, const std::string &command);

// One tensor of a configuration: its shape, element count and bytes.
struct TensorExtent {
  const Tensor *tensor = nullptr;
  std::vector<std::int64_t> shape;
  std::uint64_t count = 1;
  std::size_t bytes = 0;
};
// Every tensor of the task for the configuration, in manifest order, and each name's index;
// checks that every argument of `launches` names a tensor or a size. Throws CommandError.
std::vector<TensorExtent> tensorExtents(const RequestTask &request, const std::vector<const LaunchSpec *> &launches,
                                        const std::string &command, std::map<std::string, std::size_t> &index);

}  // namespace kwb::worker
