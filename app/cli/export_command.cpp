#include "app/cli/export_command.h"

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/candidate_input.h"
#include "core/export/export_sources.h"
#include "core/export/report.h"
#include "core/gpu/device_info.h"
#include "core/profile/profiler.h"
#include "core/task/source_file.h"
#include "core/memory/experience_store.h"
#include "core/paths/install_paths.h"
#include "core/store/library_schema.h"
#include "core/task/manifest_parser.h"

using namespace kwb::exporting;

namespace {

// The history, experience and session for a report; with --profile, the kernel and the task's
// starter profiled on this machine's GPU.
ReportContext reportContext(const ExportInput &in, kwb::Workspace *workspace, const ExportArgs &args) {
  std::unique_ptr<kwb::memory::ExperienceStore> store;
  try {
    store = kwb::memory::ExperienceStore::open(args.library.empty() ? kwb::libraryDatabasePath() : std::filesystem::path(args.library));
  } catch (const std::exception &e) {
    std::cerr << "kwb export: note: the experience memory is left out of the report (" << e.what() << ")\n";
  }
  ReportContext ctx = reportContextFor(in, workspace, store.get());
  const auto gpus = kwb::probeGpus();
  ctx.driver = gpus.driverVersion
                   ? std::to_string(gpus.driverVersion / 1000) + "." + std::to_string(gpus.driverVersion % 1000 / 10) +
                         " (the CUDA driver API's version on the exporting machine)"
                   : "not known: " + (gpus.problem.empty() ? std::string("no CUDA driver") : gpus.problem) + " on the exporting machine";
  if (args.profile) {
    kwb::profile::ProfileOptions options;
    options.tunables = in.tunables;
    options.sourceName = in.provenance.sourceName.empty() ? "candidate.cu" : in.provenance.sourceName;
    std::cerr << "kwb export: profiling the kernel and the task's starter (the baseline)...\n";
    ctx.profile = kwb::profile::profileCandidate(in.task, in.code, options);
    try {
      kwb::profile::ProfileOptions base;
      base.sourceName = in.task.starterSource().filename().string();
      ctx.baselineProfile = kwb::profile::profileCandidate(in.task, kwb::readTaskFile(in.task, in.task.starterSource()), base);
    } catch (const std::exception &e) {
      std::cerr << "kwb export: note: the baseline was not profiled (" << e.what() << ")\n";
    }
  }
  return ctx;
}

}  // namespace

int exportCommand(const ExportArgs &args, bool asJson) {
  const auto format = exportFormatFromString(args.format);
  if (!format) {
    std::cerr << "kwb export: --format is cuda, torch or report, not '" << args.format << "'\n";
    return 2;
  }
  std::map<std::string, std::int64_t> tunables;
  if (!parseTunableValues(args.set, tunables, "--set", "kwb export")) return 2;
  SourceSpec spec;
  try {
    spec = parseSourceSpec(args.source);
  } catch (const ExportError &e) {
    std::cerr << "kwb export: " << e.what() << "\n";
    return 2;
  }
  const std::filesystem::path workspacePath =
      args.workspace.empty() ? kwb::userDataDir() / "workspace.kwb" : std::filesystem::path(args.workspace);
  std::unique_ptr<kwb::Workspace> workspace;
  auto openWorkspace = [&](bool required) {
    try {
      workspace = kwb::Workspace::openExisting(workspacePath);
    } catch (const std::exception &e) {
      if (required) {
        std::cerr << "kwb export: " << e.what() << " (--workspace names another)\n";
        return false;
      }
    }
    return true;
  };

  ExportInput in;
  try {
    if (spec.kind == SourceSpec::Kind::File) {
      const auto candidate = loadCandidate(args.task, spec.text, "kwb export");
      if (!candidate) return 2;
      openWorkspace(false);
      auto values = candidate->tunables;
      for (const auto &[k, v] : tunables) values[k] = v;
      in = exportInputFromFile(candidate->task, candidate->path, candidate->text, workspace.get(), values);
    } else {
      kwb::Task task;
      try {
        task = kwb::loadTask(args.task);
      } catch (const std::exception &e) {
        std::cerr << "kwb export: " << args.task << ": " << e.what() << "\n";
        return 2;
      }
      if (spec.kind == SourceSpec::Kind::Case) {
        openWorkspace(false);
        auto store = kwb::memory::ExperienceStore::open(args.library.empty() ? kwb::libraryDatabasePath()
                                                                             : std::filesystem::path(args.library));
        in = exportInputFromCase(task, *store, spec.id, workspace.get());
      } else {
        if (!openWorkspace(true)) return 2;
        in = spec.kind == SourceSpec::Kind::Run ? exportInputFromRun(task, *workspace, spec.id)
                                                : exportInputFromSessionBest(task, *workspace, spec.text);
      }
      for (const auto &[k, v] : tunables) in.tunables[k] = v;
    }
  } catch (const ExportError &e) {
    std::cerr << "kwb export: " << e.what() << "\n";
    return 2;
  } catch (const std::exception &e) {
    std::cerr << "kwb export: " << e.what() << "\n";
    return 1;
  }

  if (!in.result) {
    // Not measured: built for this machine's GPU where it has one, as the workbench would compile it.
    const auto gpus = kwb::probeGpus();
    if (gpus.hasDevices())
      in.arch = "sm_" + std::to_string(gpus.devices.front().ccMajor) + std::to_string(gpus.devices.front().ccMinor);
  }
  ExportedPackage out;
  try {
    switch (*format) {
      case ExportFormat::Cuda: out = exportCudaPackage(in, args.to, args.force); break;
      case ExportFormat::Torch: out = exportTorchPackage(in, args.to, args.force); break;
      case ExportFormat::Report: out = exportReport(in, reportContext(in, workspace.get(), args), args.to, args.force); break;
    }
  } catch (const ExportError &e) {
    std::cerr << "kwb export: " << e.what() << "\n";
    return 2;
  }
  if (asJson) {
    std::cout << nlohmann::json{{"dir", out.dir.string()}, {"format", args.format}, {"files", out.files}, {"notes", out.notes},
                                {"from", in.provenance.what}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "Exported " << in.task.name << " (" << in.provenance.what << ") as a " << args.format << " package to "
            << out.dir.string() << ":\n";
  for (const auto &f : out.files) std::cout << "  " << f << "\n";
  for (const auto &n : out.notes) std::cout << "note: " << n << "\n";
  return 0;
}
