#pragma once
// The pieces the export formats share (core/export): the layout of a package (the task's
// identifier, the launch, the tunables baked in), the typed launcher's header and source, the
// kernel with its tunables, the reference's launcher, provenance lines, and writing files.
// Internal to kwbexport.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/export/kernel_export.h"
#include "core/paths/safe_write.h"

namespace kwb::exporting::parts {

struct Layout {
  std::string id;                 // the task's identifier
  std::string ns = "kwb_export";  // the launcher's namespace
  std::string stream = "stream";  // the launcher's stream parameter
  const Launch *launch = nullptr;
  bool hostLauncher = false;
  std::map<std::string, std::int64_t> tunables;  // every tunable's value
  bool halfTypes = false, bfloatTypes = false;
  // The architecture to build for, as CMake ("90a") and PyTorch ("9.0a") name it; empty: the
  // building machine's GPU. A host launcher on an architecture with specific features gets them
  // (sm_90 -> sm_90a), as the workbench compiled it.
  std::string cmakeArch, torchArch;
};

// The input with its hash, date and workbench version set; throws ExportError without code.
ExportInput prepared(const ExportInput &given);
// Throws ExportError naming a tunable the task lacks, or a task with no kernel to launch.
Layout layoutOf(const ExportInput &in);
std::string readTaskReference(const Task &task);  // throws ExportError
void prepareFolder(const std::filesystem::path &dir, bool overwrite);

// An export's folder (prepared: made, or refused when it has files and `overwrite` is false; held
// open, a symbolic link in its place refused) and the files written into it, in order: each made
// new and renamed into place (SafeFolder), so a link planted in the folder is replaced, never
// written through.
struct PackageWriter {
  PackageWriter(const std::filesystem::path &dir, bool overwrite, std::vector<std::string> notes);
  void put(const std::string &name, const std::string &text);  // relative to the folder
  ExportedPackage package;
  std::optional<SafeFolder> folder;
};

std::string number(double v);               // a C++ double literal (NAN, INFINITY for those)
std::string pyNumber(double v);             // a Python float literal
std::string decimal(double v, int digits);  // fixed digits, whatever the C locale
std::string cString(const std::string &text); // a C string literal
std::string commented(const std::string &text, const std::string &prefix = "// ");
std::string joined(const std::vector<std::string> &parts, const std::string &sep);
std::vector<std::string> sizesOf(const Task &task, const Tensor &t);  // the sizes its shape names
std::string describe(const Tensor &t);       // "x: f32 [rows, cols], read"; "(the PyTorch module's fc.weight)" for state
std::string provenanceComment(const ExportInput &in);
std::string tunablesText(const std::map<std::string, std::int64_t> &tunables);
// The kwb_check::Generator literal (templates/kwb_check.cuh) of a task's generator.
std::string generatorLiteral(const Generator &g);

// include/ID.h, src/ID_kernel.cu, src/ID.cu, test/reference_launch.cu.
std::string headerText(const ExportInput &in, const Layout &l);
std::string kernelText(const ExportInput &in, const Layout &l);
std::string launcherText(const ExportInput &in, const Layout &l);
std::string referenceLaunchText(const ExportInput &in, const Layout &l);

}  // namespace kwb::exporting::parts
