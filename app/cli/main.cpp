// kwb: the command-line twin of the workbench. Every command takes --json for scripts.
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/cli/task_report.h"
#include "core/gpu/device_info.h"
#include "core/gpu/device_report.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"
#include "core/task/task_catalog.h"
#include "core/task/task_json.h"
#include "kwb/version.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kExitInvalid = 2;

json errorJson(const kwb::ManifestError &e) {
  return {{"file", e.file()}, {"line", e.line()}, {"field", e.field()}, {"message", e.detail()},
          {"text", e.what()}};
}

int devicesCommand(bool asJson) {
  const auto inventory = kwb::probeGpus();
  if (asJson) std::cout << json(inventory).dump(2) << "\n";
  else std::cout << kwb::formatInventory(inventory);
  return 0;
}

int tasksListCommand(const std::string &dirArg, bool asJson) {
  fs::path dir = dirArg;
  if (dir.empty()) {
    auto bundled = kwb::bundledKernelsDir();
    if (!bundled) {
      std::cerr << "kwb: no bundled kernels folder found; name a folder: kwb tasks list DIR\n";
      return 1;
    }
    dir = *bundled;
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::cerr << "kwb: " << dir.string() << ": not a folder\n";
    return 1;
  }
  const auto entries = kwb::listTasks(dir);
  if (asJson) {
    json out = json::array();
    for (const auto &e : entries) {
      json row = {{"folder", e.folder.string()}, {"valid", e.task.has_value()}};
      if (e.task) {
        row["name"] = e.task->name;
        row["description"] = e.task->description;
        row["configs"] = e.task->configs.size();
      } else {
        row["error"] = e.error;
      }
      out.push_back(row);
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if (entries.empty()) {
    std::cout << "No tasks in " << dir.string() << "\n";
    return 0;
  }
  std::size_t width = 4;
  for (const auto &e : entries)
    width = std::max(width, e.task ? e.task->name.size() : e.folder.filename().string().size());
  for (const auto &e : entries) {
    if (e.task)
      std::cout << e.task->name << std::string(width + 2 - e.task->name.size(), ' ')
                << e.task->description << "\n";
    else
      std::cout << e.folder.filename().string()
                << std::string(width + 2 - e.folder.filename().string().size(), ' ')
                << "INVALID: " << e.error << "\n";
  }
  return 0;
}

int taskCommand(const std::string &path, bool asJson, bool validateOnly) {
  try {
    const auto task = kwb::loadTask(path);
    if (validateOnly) {
      if (asJson)
        std::cout << json{{"valid", true}, {"name", task.name}, {"manifest", task.manifestPath.string()}}.dump(2)
                  << "\n";
      else
        std::cout << task.manifestPath.string() << ": valid (" << task.name << ": "
                  << task.configs.size() << " size configurations, " << task.tensors.size()
                  << " tensors)\n";
      return 0;
    }
    if (asJson) std::cout << kwb::taskToJson(task).dump(2) << "\n";
    else std::cout << kwb::formatTask(task);
    return 0;
  } catch (const kwb::ManifestError &e) {
    if (asJson) std::cout << json{{"valid", false}, {"error", errorJson(e)}}.dump(2) << "\n";
    std::cerr << e.what() << "\n";
    return kExitInvalid;
  } catch (const std::exception &e) {
    if (asJson) std::cout << json{{"valid", false}, {"error", {{"text", e.what()}}}}.dump(2) << "\n";
    std::cerr << "kwb: " << path << ": " << e.what() << "\n";
    return kExitInvalid;
  }
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kwb: Kernel Workbench on the command line — tasks, devices, and (soon) the optimize loop",
               "kwb"};
  app.set_version_flag("--version", std::string("kwb ") + kwb::kVersion + " (" + kwb::kProjectName + ")");
  app.require_subcommand(1);
  bool asJson = false;

  auto *devices = app.add_subcommand("devices", "List CUDA devices and the CUDA libraries found");
  devices->add_flag("--json", asJson, "Machine-readable output");

  auto *tasks = app.add_subcommand("tasks", "Work with collections of tasks");
  tasks->require_subcommand(1);
  std::string listDir;
  auto *tasksList = tasks->add_subcommand("list", "List the tasks in DIR (default: the bundled kernels)");
  tasksList->add_option("DIR", listDir, "Folder whose subfolders hold tasks");
  tasksList->add_flag("--json", asJson, "Machine-readable output");

  auto *task = app.add_subcommand("task", "Work with one task folder");
  task->require_subcommand(1);
  std::string showPath, validatePath;
  auto *taskShow = task->add_subcommand("show", "Show a task: sizes, tensors, launch, cost per configuration");
  taskShow->add_option("PATH", showPath, "Task folder or its task.toml")->required();
  taskShow->add_flag("--json", asJson, "Machine-readable output");
  auto *taskValidate = task->add_subcommand("validate", "Check a task's manifest; exit 0 when valid, 2 when not");
  taskValidate->add_option("PATH", validatePath, "Task folder or its task.toml")->required();
  taskValidate->add_flag("--json", asJson, "Machine-readable output");

  // CLI11 reports a mistyped command as "A subcommand is required"; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const auto *sub : app.get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found = found || sub->get_name() == argv[1];
    }
    if (!found) {
      std::cerr << "kwb: unknown command '" << argv[1] << "'; expected one of: " << known << "\n"
                << "Run with --help for more information.\n";
      return kExitInvalid;
    }
  }
  CLI11_PARSE(app, argc, argv);

  if (*devices) return devicesCommand(asJson);
  if (*tasksList) return tasksListCommand(listDir, asJson);
  if (*taskShow) return taskCommand(showPath, asJson, false);
  if (*taskValidate) return taskCommand(validatePath, asJson, true);
  return 1;
}
