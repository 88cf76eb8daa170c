#pragma once
// One launch of a request (core/worker/commands.h LaunchRequest), checked and decoded: either a
// kernel of a CUBIN module with its name, grid/block/shared bytes and argument order, or a host
// launcher (the bytes of a shared library exporting kwb_launch) with the argument order only:
// kwb_launch(args, stream) does its own launches.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/task/task.h"
#include "core/worker/commands.h"

namespace kwb::worker {

struct LaunchSpec {
  std::string kernel;
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned sharedBytes = 0;
  std::vector<std::string> args;
  std::string image;  // CUBIN bytes, or the shared library's bytes for a host launcher
  bool hostLauncher = false;
  std::vector<std::string> allowedLibraries;  // a host launcher's: the task's allow_libraries
  // A reference given as its outputs (LaunchRequest::outputs): nothing to load or launch.
  std::vector<GivenOutput> givenOutputs;
  bool outputsOnly() const { return !givenOutputs.empty(); }
};



// Checks and decodes a request's launch; throws CommandError (invalid-argument)
// "<command>: <field>: <what>".
LaunchSpec launchSpec(const LaunchRequest &request, const std::string &command, const char *field);

// The task and size configuration a request names: "task" (the folder), "config", and the
// manifest's text in "manifest" (else the folder's task.toml is read). Throws CommandError
// (invalid-argument) "<command>: <what>".
struct RequestTask {
  std::string folder;
  Task task;
  std::string configName;
  std::string manifestText;  // as the request gave it (empty: read from the folder)
  const SizeConfig &config() const { return *task.config(configName); }
};
RequestTask readRequestTask(const TaskRequest &request, const std::string &command);

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

// A given reference's outputs, read from the worker's private directory (and removed there):
// seed → tensor name → bytes. Checks that each file is a plain file inside `privateDir` holding
// exactly the tensor's bytes, and that every seed has every output; throws CommandError
// (invalid-argument) "<command>: <what>".
std::map<std::uint64_t, std::map<std::string, std::vector<std::byte>>> readGivenOutputs(
    const LaunchSpec &reference, const std::vector<const TensorExtent *> &tensors, const std::vector<std::uint64_t> &seeds,
    const std::string &command);
// The same over a request's tensors (any type derived from TensorExtent).
template <typename Tensors>
std::map<std::uint64_t, std::map<std::string, std::vector<std::byte>>> readGivenOutputs(
    const LaunchSpec &reference, const Tensors &tensors, const std::vector<std::uint64_t> &seeds,
    const std::string &command) {
  std::vector<const TensorExtent *> extents;
  for (const auto &t : tensors) extents.push_back(&t);
  return readGivenOutputs(reference, extents, seeds, command);
}

}  // namespace kwb::worker
