#pragma once
// One kernel launch as the evaluate and time requests carry it: the module (CUBIN, base64 in
// the request), the kernel's name, evaluated grid/block/shared bytes and the argument order.
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
  std::string image;  // CUBIN bytes
};

// Reads request[field]; throws CommandError (invalid-argument) "<command>: <field>: <what>".
LaunchSpec parseLaunchSpec(const nlohmann::json &j, const std::string &command, const char *field);

}  // namespace kwb::worker
