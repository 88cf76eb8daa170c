#include "core/eval/torch_reference.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/eval/input_generator.h"
#include "core/paths/install_paths.h"
#include "core/process/child_process.h"
#include "core/task/source_file.h"

namespace kwb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char *kScriptName = "kwb_torch_reference.py";
// In a job's cache folder: its outputs were computed with the repeat check.
constexpr const char *kRepeatChecked = "repeat-checked";

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// A tensor's shape and element count in a configuration.
std::vector<std::int64_t> shapeIn(const Tensor &t, const SizeConfig &config, std::uint64_t &count) {
  std::vector<std::int64_t> shape;
  count = 1;
  for (const auto &e : t.shape) {
    shape.push_back(e.evaluate(config.values));
    count *= static_cast<std::uint64_t>(std::max<std::int64_t>(0, shape.back()));
  }
  return shape;
}

void writeBytes(const fs::path &path, const std::vector<std::byte> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// A parameter as Python gets it (Param::literal's semantics): an int, or a float.
json paramValue(const Param &p) { return p.isInteger() ? json(p.integer) : json(p.real); }

// Whether [reference] init names a size: Model is then built per configuration.
bool initNamesSize(const Task &task) {
  if (!task.reference.init) return false;
  for (const auto &name : *task.reference.init)
    if (!task.param(name)) return true;
  return false;
}

// The task's Model(...) arguments in `config` (sizes take its values; none: the parameters
// only), or null (the module's own get_init_inputs(), or none).
json initArguments(const Task &task, const SizeConfig *config) {
  if (!task.reference.init) return nullptr;
  json out = json::array();
  for (const auto &name : *task.reference.init) {
    if (const Param *p = task.param(name)) {
      out.push_back(paramValue(*p));
    } else if (config) {
      const auto it = config->values.find(name);
      if (it != config->values.end()) out.push_back(it->second);  // else: the parser checked
    }
  }
  return out;
}

// forward's arguments as the helper reads them (kwb::forwardArguments): a tensor's name, or a
// parameter's value.
json forwardSpec(const Task &task) {
  json out = json::array();
  for (const auto &name : forwardArguments(task)) {
    if (const Param *p = task.param(name)) out.push_back({{"name", name}, {"value", paramValue(*p)}});
    else out.push_back(name);  // a tensor (the parser checked)
  }
  return out;
}

// The module file's top-level constants in `config` ([reference] module_constants: sizes and
// integer parameters, all in its values).
json moduleConstants(const Task &task, const SizeConfig &config) {
  json out = json::object();
  for (const auto &name : task.reference.moduleConstants) {
    const auto it = config.values.find(name);
    if (it != config.values.end()) out[name] = it->second;  // else: the parser checked
  }
  return out;
}

// A job's or timing's own module constants and Model(...) arguments, where they depend on the
// configuration.
void addPerConfiguration(json &entry, const Task &task, const SizeConfig &config) {
  if (initNamesSize(task)) entry["init"] = initArguments(task, &config);
  if (!task.reference.moduleConstants.empty()) entry["constants"] = moduleConstants(task, config);
}

// What a configuration's outputs depend on beyond its name: its sizes (and so its Model(...)
// arguments where init names a size).
std::string configIdentity(const SizeConfig &config) {
  std::string out = config.name;
  for (const auto &[name, value] : config.values) out += "\n" + name + "=" + std::to_string(value);
  return out;
}

// The inputs of one job as the helper reads them, written into `dir`.
json writeInputs(const Task &task, const SizeConfig &config, std::uint64_t seed, bool firstGenerator,
                 const fs::path &dir) {
  json inputs = json::array();
  for (const auto &t : task.tensors) {
    if (t.role == TensorRole::Out) continue;
    std::uint64_t count = 0;
    const auto shape = shapeIn(t, config, count);
    const fs::path file = dir / (t.name + ".in.bin");
    writeBytes(file, firstGenerator && t.init ? generateInput(t.dtype, shape, *t.init, seed, t.name)
                                              : generateInput(t, shape, seed));
    inputs.push_back({{"name", t.name}, {"dtype", dtypeName(t.dtype)}, {"shape", shape}, {"file", file.string()},
                      {"role", roleName(t.role)}});
    if (!t.state.empty()) inputs.back()["state"] = t.state;
    if (t.draw > 0) inputs.back()["draw"] = t.draw;
  }
  return inputs;
}

json outputsOf(const Task &task, const SizeConfig &config, const fs::path &dir) {
  json outputs = json::array();
  for (const auto &t : task.tensors) {
    if (t.role == TensorRole::In) continue;
    std::uint64_t count = 0;
    const auto shape = shapeIn(t, config, count);
    json entry = {{"name", t.name}, {"dtype", dtypeName(t.dtype)}, {"shape", shape},
                  {"file", (dir / (t.name + ".out.bin")).string()}, {"role", roleName(t.role)}};
    // The task's tolerance: the repeat check flags differences within it rather than failing.
    if (t.tolerance && !t.tolerance->exact) entry["tolerance"] = {{"rtol", t.tolerance->rtol}, {"atol", t.tolerance->atol}};
    outputs.push_back(entry);
  }
  return outputs;
}

// A number of the helper's JSON: 0 when absent or null (it writes a non-finite figure as null).
double numberAt(const json &j, const char *key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

TorchTimingFigure figureOf(const json &j) {
  TorchTimingFigure f;
  if (!j.is_object()) {
    f.error = "not measured";
    return f;
  }
  if (j.contains("error")) {
    f.error = j.value("error", std::string("failed"));
    return f;
  }
  f.ok = j.contains("median_ms") && j["median_ms"].is_number();
  f.medianMs = numberAt(j, "median_ms");
  f.q1Ms = numberAt(j, "q1_ms");
  f.q3Ms = numberAt(j, "q3_ms");
  f.minMs = numberAt(j, "min_ms");
  f.relativeSpread = numberAt(j, "relative_spread");
  f.samples = static_cast<std::size_t>(numberAt(j, "samples"));
  f.stopReason = j.value("stop_reason", std::string());
  f.timer = j.value("timer", std::string());
  f.timerNote = j.value("timer_note", std::string());
  f.compileSeconds = numberAt(j, "compile_seconds");
  if (!f.ok) f.error = "the helper gave no median";
  return f;
}

TorchTiming timingOf(const json &t, bool compiled) {
  TorchTiming timing;
  timing.config = t.value("id", std::string());
  timing.eager = figureOf(t.value("eager", json()));
  timing.compiled = compiled ? figureOf(t.value("compile", json())) : TorchTimingFigure{};
  return timing;
}

// What the module's outputs depend on: the manifest, the module's text, Model(...)'s and
// forward's arguments, the module constants, which inputs are module state or draws (the last four from
// the task itself: a task need not come from its manifest's text). Version 2: the module keeps its
// own mode (no eval()).
// Throws when a file cannot be read.
std::string identityOf(const Task &task) {
  std::string state;
  for (const auto &t : task.tensors)
    if (!t.state.empty()) state += t.name + "=" + t.state + "\n";
    else if (t.draw > 0) state += t.name + "=draw " + std::to_string(t.draw) + "\n";
  const json init = task.reference.init ? json(*task.reference.init) : json();
  return "kwb-torch-reference-2\n" + readManifestText(task.manifestPath) + "\n\x1f" +
         readTaskFile(task, task.reference.python) + "\n\x1f" + init.dump() + "\n" +
         json(task.reference.moduleConstants).dump() + "\n" +
         initArguments(task, nullptr).dump() + "\n" + forwardSpec(task).dump() + "\n" + state;
}

// Removes a folder when it goes out of scope.
struct ScratchDir {
  fs::path path;
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

std::string torchJobKey(const TorchOutputJob &job) {
  return job.config->name + "/seed " + std::to_string(job.seed) + (job.firstGenerator ? " first" : "");
}

std::string TorchRun::describe() const {
  if (ok) return "the PyTorch reference ran";
  std::string where = file.empty() ? std::string() : " (" + fs::path(file).filename().string() +
                                                         (line > 0 ? ":" + std::to_string(line) : std::string()) + ")";
  return "the PyTorch reference: " + kind + ": " + message + where + (job.empty() ? "" : " [" + job + "]");
}

std::optional<fs::path> bundledPythonScript(const std::string &name, std::string &problem) {
  if (auto dir = bundledPythonDir(); dir && fs::exists(*dir / name)) return *dir / name;
  problem = "the workbench's helper " + name +
            " was not found (looked in $KWB_PYTHON_DIR, the installed share/kernel-workbench/python and the source "
            "tree); set KWB_PYTHON_DIR to the folder that holds it";
  return std::nullopt;
}

std::optional<fs::path> findPython(const TorchSettings &settings, std::string &problem) {
  auto runnable = [](const fs::path &p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  std::string wanted = settings.python;
  const char *env = std::getenv("KWB_PYTHON");
  if (wanted.empty() && env && *env) wanted = env;
  if (!wanted.empty()) {
    if (wanted.find('/') != std::string::npos) {
      if (runnable(wanted)) return fs::path(wanted);
      problem = "the Python interpreter " + wanted + " (" + (settings.python.empty() ? "KWB_PYTHON" : "the settings") +
                ") is not an executable file";
      return std::nullopt;
    }
  } else {
    wanted = "python3";
  }
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && runnable(fs::path(dir) / wanted)) return fs::path(dir) / wanted;
  problem = "no Python interpreter: " + wanted + " is not on PATH" +
            (env && *env ? std::string() : " (KWB_PYTHON names another)") +
            "; a PyTorch reference needs Python 3 with PyTorch (pip install torch)";
  return std::nullopt;
}

namespace {

std::optional<fs::path> helperScript(const TorchSettings &settings, std::string &problem) {
  if (!settings.script.empty()) return settings.script;
  return bundledPythonScript(kScriptName, problem);
}

// Runs the helper on `argument` (a spec file or --probe); fills `run` from its result line.
void runHelper(const fs::path &python, const fs::path &script, const std::string &argument,
               const TorchSettings &settings, const TorchRunRequest *request, TorchRun &run, json &result) {
  ChildProcessRequest child;
  child.argv = {python.string(), script.string(), argument};
  child.timeout = settings.timeLimit;
  child.outputLimit = 4u << 20;
  std::string resultLine;
  child.onLine = [&](const std::string &line) {
    if (line.rfind("{\"result\"", 0) == 0) {
      resultLine = line;
      return;
    }
    if (line.rfind("{\"ok\"", 0) == 0) {  // --probe's one line
      resultLine = "{\"result\": " + line + "}";
      return;
    }
    if (line.rfind("{\"event\"", 0) != 0 || !request || !request->onProgress) return;
    const json e = json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", std::string()) == "progress")
      request->onProgress(e.value("text", std::string()));
  };
  if (request) child.cancelled = request->cancelled;
  const auto out = runChildProcess(child);
  run.seconds += out.seconds;
  auto lastLines = [&] {
    const auto &o = out.output;
    const auto from = o.size() > 1500 ? o.size() - 1500 : 0;
    return o.substr(from);
  };
  if (!out.started) {
    run.kind = "no-python";
    run.message = out.startError;
    return;
  }
  if (out.cancelled) {
    run.kind = "cancelled";
    run.message = "cancelled by the user";
    return;
  }
  if (out.timedOut) {
    run.kind = "timeout";
    run.message = "the helper ran past its limit of " + std::to_string(settings.timeLimit.count() / 1000) + " s";
    return;
  }
  result = json::parse(resultLine, nullptr, false);
  if (!result.is_object() || !result.contains("result") || !result["result"].is_object()) {
    run.kind = "crashed";
    run.message = "the helper ended (" +
                  (out.signal ? "signal " + std::to_string(out.signal) : "status " + std::to_string(out.exitCode)) +
                  ") without a result; its last output: " + lastLines();
    result = json();
    return;
  }
  result = result["result"];
  // The probe says "device": null where torch sees no CUDA device: a field that is no string is empty.
  const auto text = [&result](const char *key) {
    const auto it = result.find(key);
    return it != result.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  run.python = text("python");
  run.torchVersion = text("torch");
  run.device = text("device");
  if (!result.value("ok", false)) {
    run.kind = result.value("kind", std::string("failed"));
    run.message = result.value("message", std::string());
    run.file = result.value("file", std::string());
    run.line = result.value("line", 0);
    run.job = result.value("job", std::string());
    run.traceback = result.value("traceback", std::string());
    return;
  }
  run.ok = true;
}

}  // namespace

TorchRun runTorchReference(const Task &task, const TorchRunRequest &request, const TorchSettings &settings) {
  TorchRun run;
  if (task.reference.python.empty()) {
    run.kind = "bad-spec";
    run.message = "the task has no PyTorch reference ([reference] python)";
    return run;
  }
  std::string problem;
  const auto python = findPython(settings, problem);
  if (!python) {
    run.kind = "no-python";
    run.message = problem;
    return run;
  }
  const auto script = helperScript(settings, problem);
  if (!script) {
    run.kind = "no-script";
    run.message = problem;
    return run;
  }
  const fs::path cache = settings.cacheDir.empty() ? userCacheDir() / "torch-reference" : settings.cacheDir;
  std::string identity;
  try {
    identity = identityOf(task);
  } catch (const std::exception &e) {
    run.kind = "module-load";
    run.message = e.what();
    run.file = task.reference.python.string();
    return run;
  }
  auto timingIdentity = [&](const SizeConfig &config) {
    return "timing\n" + identity + configIdentity(config) + "\n" + std::to_string(request.timingSeed) + "\n" +
           (request.timeCompiled ? "eager+compile" : "eager") + "\n" + request.deviceName + "\n" + python->string() +
           "\n" + std::to_string(request.timeCapMs) + "/" + std::to_string(request.targetSpread);
  };

  // A scratch folder beside the cache (the same file system: finished outputs are renamed in).
  static std::atomic<unsigned> counter{0};
  ScratchDir scratch{cache / ("run-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))};
  json spec = {{"module", (task.folder / task.reference.python).string()},
               {"init", initNamesSize(task) ? json() : initArguments(task, nullptr)},
               {"device", settings.cpuForTests ? json("cpu") : json(settings.device)},
               {"forward", forwardSpec(task)},
               {"jobs", json::array()},
               {"timings", json::array()}};
  struct Pending {
    std::string key;
    fs::path cacheFolder, jobFolder;
  };
  std::vector<Pending> pending;
  try {
    std::error_code ec;
    fs::create_directories(scratch.path, ec);
    if (ec) throw std::runtime_error("cannot create " + scratch.path.string() + ": " + ec.message());
    for (const auto &job : request.outputs) {
      const std::string jobId = torchJobKey(job);
      const fs::path folder = cache / hex64(fnv1a64(identity + jobId + "\n" + configIdentity(*job.config)));
      std::map<std::string, fs::path> files;
      // Outputs computed without the repeat check do not answer a request that wants it.
      bool complete = !request.repeatCheck || fs::exists(folder / kRepeatChecked, ec);
      for (const auto &t : task.tensors)
        if (t.role != TensorRole::In) {
          files[t.name] = folder / (t.name + ".bin");
          complete = complete && fs::exists(files[t.name], ec);
        }
      run.outputs[jobId] = files;
      if (complete) {
        ++run.cachedJobs;
        continue;
      }
      const fs::path jobFolder = scratch.path / ("job" + std::to_string(pending.size()));
      fs::create_directories(jobFolder, ec);
      spec["jobs"].push_back({{"id", jobId},
                              {"inputs", writeInputs(task, *job.config, job.seed, job.firstGenerator, jobFolder)},
                              {"outputs", outputsOf(task, *job.config, jobFolder)},
                              {"repeat_check", request.repeatCheck}});
      addPerConfiguration(spec["jobs"].back(), task, *job.config);
      pending.push_back({jobId, folder, jobFolder});
    }
    for (const auto *config : request.timings) {
      if (!request.deviceName.empty()) {
        const fs::path file = cache / ("timing-" + hex64(fnv1a64(timingIdentity(*config))) + ".json");
        std::ifstream in(file);
        const json cached = in ? json::parse(in, nullptr, false) : json();
        if (cached.is_object() && cached.contains("eager")) {
          run.timings.push_back(timingOf(cached, request.timeCompiled));
          ++run.cachedTimings;
          continue;
        }
      }
      const fs::path folder = scratch.path / ("timing-" + config->name);
      fs::create_directories(folder, ec);
      json modes = json::array({"eager"});
      if (request.timeCompiled) modes.push_back("compile");
      spec["timings"].push_back({{"id", config->name},
                                 {"inputs", writeInputs(task, *config, request.timingSeed, true, folder)},
                                 {"outputs", outputsOf(task, *config, folder)},
                                 {"modes", modes},
                                 {"cap_ms", request.timeCapMs},
                                 {"min_samples", request.minSamples},
                                 {"max_samples", request.maxSamples},
                                 {"target_spread", request.targetSpread},
                                 {"warmup_ms", 50}});
      addPerConfiguration(spec["timings"].back(), task, *config);
    }
  } catch (const std::exception &e) {
    run.kind = "cache";
    run.message = std::string("preparing the helper's inputs: ") + e.what();
    return run;
  }
  if (spec["jobs"].empty() && spec["timings"].empty()) {
    run.ok = true;
    return run;
  }
  const fs::path specFile = scratch.path / "spec.json";
  {
    std::ofstream out(specFile);
    out << spec.dump();
  }
  json result;
  runHelper(*python, *script, specFile.string(), settings, &request, run, result);
  if (!run.ok) return run;
  run.computedJobs = pending.size();
  // Finished outputs into the cache: each job's folder renamed whole (a reader never sees half).
  for (const auto &p : pending) {
    std::error_code ec;
    const fs::path staged = p.jobFolder / "out";
    fs::create_directories(staged, ec);
    for (const auto &[name, file] : run.outputs[p.key]) fs::rename(p.jobFolder / (name + ".out.bin"), staged / file.filename(), ec);
    if (request.repeatCheck) std::ofstream(staged / kRepeatChecked) << "forward ran twice, the same bits\n";
    fs::remove_all(p.cacheFolder, ec);
    fs::rename(staged, p.cacheFolder, ec);
    if (ec) {
      run.ok = false;
      run.kind = "cache";
      run.message = "cannot store the outputs in " + p.cacheFolder.string() + ": " + ec.message();
      return run;
    }
  }
  for (const auto &t : result.value("timings", json::array())) {
    run.timings.push_back(timingOf(t, request.timeCompiled));
    const SizeConfig *config = task.config(run.timings.back().config);
    // Kept when eager measured (a failed torch.compile is kept too: it fails the same way again).
    if (!request.deviceName.empty() && config && run.timings.back().eager.ok) {
      std::ofstream out(cache / ("timing-" + hex64(fnv1a64(timingIdentity(*config))) + ".json"));
      out << t.dump();
    }
  }
  return run;
}

std::string probeTorch(const TorchSettings &settings, std::string &problem) {
  const auto python = findPython(settings, problem);
  if (!python) return {};
  const auto script = helperScript(settings, problem);
  if (!script) return {};
  TorchRun run;
  json result;
  runHelper(*python, *script, "--probe", settings, nullptr, run, result);
  if (result.is_null()) {
    problem = run.message;
    return {};
  }
  return result.dump();
}

}  // namespace kwb
