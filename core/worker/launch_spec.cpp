#include "core/worker/launch_spec.h"

#include "core/text/base64.h"
#include "core/worker/worker_server.h"

namespace kwb::worker {

LaunchSpec parseLaunchSpec(const nlohmann::json &j, const std::string &command, const char *field) {
  auto bad = [&](const std::string &what) {
    return CommandError(error_kind::kInvalidArgument, command + ": " + field + ": " + what);
  };
  if (!j.is_object()) throw bad("expected an object");
  LaunchSpec s;
  auto args = [&] {
    if (!j.contains("args") || !j["args"].is_array()) throw bad("'args' (a list of names) is missing");
    for (const auto &a : j["args"]) {
      if (!a.is_string()) throw bad("'args' must hold names");
      s.args.push_back(a.get<std::string>());
    }
  };
  if (j.contains("library")) {
    if (!j["library"].is_string()) throw bad("'library' must be base64 shared-library bytes");
    auto image = base64Decode(j["library"].get<std::string>());
    if (!image || image->empty()) throw bad("'library' is not valid base64");
    s.image = std::move(*image);
    s.hostLauncher = true;
    s.kernel = "kwb_launch";
    args();
    return s;
  }
  if (!j.contains("kernel") || !j["kernel"].is_string()) throw bad("'kernel' (a string) is missing");
  s.kernel = j["kernel"].get<std::string>();
  auto dims = [&](const char *key, std::array<unsigned, 3> &out) {
    if (!j.contains(key) || !j[key].is_array() || j[key].empty() || j[key].size() > 3)
      throw bad(std::string("'") + key + "' must be a list of 1 to 3 positive integers");
    for (std::size_t i = 0; i < j[key].size(); ++i) {
      const auto &v = j[key][i];
      if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 0xffffffffLL)
        throw bad(std::string("'") + key + "' must be a list of 1 to 3 positive integers");
      out[i] = static_cast<unsigned>(v.get<long long>());
    }
  };
  dims("grid", s.grid);
  dims("block", s.block);
  if (j.contains("shared_bytes")) {
    const auto &v = j["shared_bytes"];
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 0x7fffffffLL)
      throw bad("'shared_bytes' must be a non-negative integer");
    s.sharedBytes = static_cast<unsigned>(v.get<long long>());
  }
  args();
  if (!j.contains("cubin") || !j["cubin"].is_string()) throw bad("'cubin' (base64 CUBIN bytes) is missing");
  auto image = base64Decode(j["cubin"].get<std::string>());
  if (!image || image->empty()) throw bad("'cubin' is not valid base64");
  s.image = std::move(*image);
  return s;
}

}  // namespace kwb::worker
