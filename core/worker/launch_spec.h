#pragma once
// One launch as the evaluate and time requests carry it: either a kernel of a CUBIN module
// ("cubin", base64) with its name, evaluated grid/block/shared bytes and argument order, or a
// host launcher ("library", base64 bytes of a shared library exporting kwb_launch) with the
// argument order only: kwb_launch(args, stream) does its own launches.
#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

}  // namespace kwb::worker
