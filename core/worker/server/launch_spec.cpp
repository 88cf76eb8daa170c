#include "core/worker/server/launch_spec.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/task/manifest_parser.h"
#include "core/text/base64.h"
#include "core/worker/server/worker_server.h"

namespace kwb::worker {

LaunchSpec launchSpec(const LaunchRequest &r, const std::string &command, const char *field) {
  auto bad = [&](const std::string &what) {
    return CommandError(error_kind::kInvalidArgument, command + ": " + field + ": " + what);
  };
  LaunchSpec s;
  if (r.givenOutputs()) {
    if (std::string(field) != "reference") throw bad("only the reference may be given as outputs");
    s.givenOutputs = r.outputs;
    s.kernel = "(outputs given)";
    return s;
  }
  s.args = r.args;
  for (const auto &a : s.args)
    if (a.empty()) throw bad("'args' must hold names");
  if (r.hostLauncher()) {
    auto image = base64Decode(r.library);
    if (!image || image->empty()) throw bad("'library' is not valid base64");
    s.image = std::move(*image);
    s.hostLauncher = true;
    s.kernel = "kwb_launch";
    return s;
  }
  if (r.kernel.empty()) throw bad("'kernel' (a string) is missing");
  s.kernel = r.kernel;
  auto dims = [&](const char *key, const std::vector<std::int64_t> &in, std::array<unsigned, 3> &out) {
    if (in.empty() || in.size() > 3) throw bad(std::string("'") + key + "' must be a list of 1 to 3 positive integers");
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (in[i] < 1 || in[i] > 0xffffffffLL)
        throw bad(std::string("'") + key + "' must be a list of 1 to 3 positive integers");
      out[i] = static_cast<unsigned>(in[i]);
    }
  };
  dims("grid", r.grid, s.grid);
  dims("block", r.block, s.block);
  if (r.sharedBytes < 0 || r.sharedBytes > 0x7fffffffLL) throw bad("'shared_bytes' must be a non-negative integer");
  s.sharedBytes = static_cast<unsigned>(r.sharedBytes);
  if (r.cubin.empty()) throw bad("'cubin' (base64 CUBIN bytes) is missing");
  auto image = base64Decode(r.cubin);
  if (!image || image->empty()) throw bad("'cubin' is not valid base64");
  s.image = std::move(*image);
  return s;
}

RequestTask readRequestTask(const TaskRequest &p, const std::string &command) {
  auto bad = [&](const std::string &what) { return CommandError(error_kind::kInvalidArgument, command + ": " + what); };
  if (p.task.empty()) throw bad("'task' (the task folder) is missing");
  if (p.config.empty()) throw bad("'config' (a size configuration name) is missing");
  RequestTask r;
  r.folder = p.task;
  r.configName = p.config;
  r.manifestText = p.manifest;
  try {
    if (!p.manifest.empty())
      r.task = parseManifest(p.manifest, r.folder + "/task.toml", {});
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
      if (!index.count(a) && !config.values.count(a) && !request.task.param(a))
        throw bad("argument '" + a + "' of kernel '" + spec->kernel + "' names no tensor, size or parameter of the task");
  return out;
}

std::map<std::uint64_t, std::map<std::string, std::vector<std::byte>>> readGivenOutputs(
    const LaunchSpec &reference, const std::vector<const TensorExtent *> &tensors, const std::vector<std::uint64_t> &seeds,
    const std::string &command) {
  namespace fs = std::filesystem;
  auto bad = [&](const std::string &what) {
    return CommandError(error_kind::kInvalidArgument, command + ": reference.outputs: " + what);
  };
  // Every file is read and removed, the good and the bad: none is left for candidate code to find.
  std::vector<fs::path> files;
  for (const auto &g : reference.givenOutputs) files.emplace_back(g.file);
  struct RemoveAll {
    std::vector<fs::path> &files;
    ~RemoveAll() {
      std::error_code ec;
      for (const auto &f : files) fs::remove(f, ec);
    }
  } removeAll{files};

  const char *tmp = std::getenv("TMPDIR");  // the private directory (core/sandbox/worker_sandbox.h)
  std::error_code ec;
  const fs::path privateDir = tmp && *tmp ? fs::canonical(tmp, ec) : fs::path();
  if (privateDir.empty() || ec) throw bad("the worker has no private directory (TMPDIR) to read them from");
  std::map<std::uint64_t, std::map<std::string, std::vector<std::byte>>> out;
  for (const auto &g : reference.givenOutputs) {
    const TensorExtent *t = nullptr;
    for (const auto *e : tensors)
      if (e->tensor->name == g.tensor) t = e;
    if (!t || t->tensor->role == TensorRole::In) throw bad("'" + g.tensor + "' is no output of the task");
    if (std::find(seeds.begin(), seeds.end(), g.seed) == seeds.end())
      throw bad("seed " + std::to_string(g.seed) + " is not one the request runs");
    const fs::path file = fs::weakly_canonical(g.file, ec);
    if (ec || file.parent_path() != privateDir || fs::is_symlink(g.file) || !fs::is_regular_file(file, ec))
      throw bad("'" + g.file + "' is not a plain file in the worker's private directory");
    if (fs::file_size(file, ec) != t->bytes || ec)
      throw bad("'" + g.file + "' holds " + std::to_string(fs::file_size(file, ec)) + " bytes; tensor '" + g.tensor +
                "' has " + std::to_string(t->bytes));
    std::vector<std::byte> bytes(t->bytes);
    std::ifstream in(file, std::ios::binary);
    if (!in.read(reinterpret_cast<char *>(bytes.data()), static_cast<std::streamsize>(bytes.size())))
      throw bad("cannot read '" + g.file + "'");
    out[g.seed][g.tensor] = std::move(bytes);
  }
  for (const auto seed : seeds)
    for (const auto *t : tensors)
      if (t->tensor->role != TensorRole::In && !out[seed].count(t->tensor->name))
        throw bad("no file for output '" + t->tensor->name + "' and seed " + std::to_string(seed));
  return out;
}

}  // namespace kwb::worker
