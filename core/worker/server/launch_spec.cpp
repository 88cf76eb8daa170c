#include "core/worker/server/launch_spec.h"

#include "core/task/manifest_parser.h"
#include "core/text/base64.h"
#include "core/worker/server/worker_server.h"

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

RequestTask readRequestTask(const nlohmann::json &p, const std::string &command) {
  auto bad = [&](const std::string &what) { return CommandError(error_kind::kInvalidArgument, command + ": " + what); };
  if (!p.contains("task") || !p["task"].is_string()) throw bad("'task' (the task folder) is missing");
  if (!p.contains("config") || !p["config"].is_string()) throw bad("'config' (a size configuration name) is missing");
  RequestTask r;
  r.folder = p["task"].get<std::string>();
  r.configName = p["config"].get<std::string>();
  try {
    if (p.contains("manifest") && p["manifest"].is_string())
      r.task = parseManifest(p["manifest"].get<std::string>(), r.folder + "/task.toml", {});
    else
      r.task = loadTask(r.folder);
  } catch (const std::exception &e) {
    throw bad(std::string("cannot read the task: ") + e.what());
  }
  if (!r.task.config(r.configName))
    throw bad("task '" + r.task.name + "' has no size configuration '" + r.configName + "'");
  return r;
}

std::vector<TensorExtent> tensorExtents(const RequestTask &request, const std::vector<const LaunchSpec *> &launches,
                                        const std::string &command, std::map<std::string, std::size_t> &index) {
  auto bad = [&](const std::string &what) { return CommandError(error_kind::kInvalidArgument, command + ": " + what); };
  const SizeConfig &config = request.config();
  std::vector<TensorExtent> out;
  for (const auto &t : request.task.tensors) {
    TensorExtent e;
    e.tensor = &t;
    try {
      for (const auto &dim : t.shape) {
        const auto v = dim.evaluate(config.values);
        if (v < 0) throw bad("tensor '" + t.name + "' has a negative dimension");
        e.shape.push_back(v);
        e.count *= static_cast<std::uint64_t>(v);
      }
    } catch (const ExpressionError &err) {
      throw bad("tensor '" + t.name + "' shape: " + err.what());
    }
    e.bytes = static_cast<std::size_t>(e.count * dtypeSize(t.dtype));
    index[t.name] = out.size();
    out.push_back(std::move(e));
  }
  for (const auto *spec : launches)
    for (const auto &a : spec->args)
      if (!index.count(a) && !config.values.count(a))
        throw bad("argument '" + a + "' of kernel '" + spec->kernel + "' names no tensor or size of the task");
  return out;
}

}  // namespace kwb::worker
