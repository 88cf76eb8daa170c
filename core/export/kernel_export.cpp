#include "core/export/kernel_export.h"
#include "core/export/package_parts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <locale>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/compile/arch_limits.h"
#include "core/compile/compile_types.h"
#include "core/store/database.h"
#include "core/text/content_hash.h"
#include "kwb/version.h"

namespace kwb::exporting {

namespace fs = std::filesystem;

const char *toString(ExportFormat format) {
  switch (format) {
    case ExportFormat::Cuda: return "cuda";
    case ExportFormat::Torch: return "torch";
    case ExportFormat::Report: return "report";
  }
  return "cuda";
}

std::optional<ExportFormat> exportFormatFromString(const std::string &text) {
  for (const auto f : {ExportFormat::Cuda, ExportFormat::Torch, ExportFormat::Report})
    if (text == toString(f)) return f;
  return std::nullopt;
}

std::string identifierOf(const std::string &name) {
  std::string out;
  for (const char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "k_" + out;
  // C++ and Python keywords, and the package's own names, get a suffix.
  static const std::set<std::string> kTaken = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const", "continue",
      "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "not", "operator", "or", "private",
      "protected", "public", "register", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template",
      "this", "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "while", "xor", "as", "assert", "def", "del", "elif", "except", "from", "global", "import", "in", "is", "lambda",
      "nonlocal", "pass", "raise", "with", "yield", "None", "True", "False", "expr", "kwb_export", "kwb_reference",
      "kwb_check", "reference", "torch", "std", "main"};
  if (kTaken.count(out) || out.rfind("__", 0) == 0) out += "_op";
  return out;
}

std::string cppExpression(const Expression &e, const std::map<std::string, std::int64_t> &tunables) {
  const std::string &text = e.text();
  if (text.empty()) return "0LL";
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      const std::string word = text.substr(i, j - i);
      if (word == "ceil_div" || word == "min" || word == "max") out += "kwb_" + word;
      else if (const auto t = tunables.find(word); t != tunables.end()) out += "(" + std::to_string(t->second) + "LL)";
      else out += word;
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      out += text.substr(i, j - i) + "LL";
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return "(" + out + ")";
}

std::string cppType(DType dtype) {
  switch (dtype) {
    case DType::F64: return "double";
    case DType::F32: return "float";
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::I64: return "std::int64_t";
    case DType::I32: return "std::int32_t";
    case DType::I8: return "std::int8_t";
    case DType::U8: return "std::uint8_t";
    case DType::Bool: return "bool";
  }
  return "float";
}

// The test helpers' text, compiled into the program (core/export/embedded_templates.cpp.in).
const char *embeddedCheckHeader();

namespace parts {

std::string checkDtype(DType d) {
  switch (d) {
    case DType::F64: return "kwb_check::DType::F64";
    case DType::F32: return "kwb_check::DType::F32";
    case DType::F16: return "kwb_check::DType::F16";
    case DType::BF16: return "kwb_check::DType::BF16";
    case DType::I64: return "kwb_check::DType::I64";
    case DType::I32: return "kwb_check::DType::I32";
    case DType::I8: return "kwb_check::DType::I8";
    case DType::U8: return "kwb_check::DType::U8";
    case DType::Bool: return "kwb_check::DType::Bool";
  }
  return {};
}

std::string checkKind(Generator::Kind k) {
  switch (k) {
    case Generator::Kind::Uniform: return "kwb_check::Kind::Uniform";
    case Generator::Kind::Normal: return "kwb_check::Kind::Normal";
    case Generator::Kind::RandInt: return "kwb_check::Kind::RandInt";
    case Generator::Kind::Arange: return "kwb_check::Kind::Arange";
    case Generator::Kind::Constant: return "kwb_check::Kind::Constant";
  }
  return {};
}

std::string number(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  std::ostringstream s;
  s.imbue(std::locale::classic());
  s.precision(17);
  s << v;
  std::string t = s.str();
  if (t.find_first_of(".eE") == std::string::npos) t += ".0";  // a double literal
  return t;
}

std::string decimal(double v, int digits) {
  std::ostringstream s;
  s.imbue(std::locale::classic());
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

std::string pyNumber(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  return number(v);
}

// The C string literal of `text`.
std::string cString(const std::string &text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

// `text` as lines of a C++ comment.
std::string commented(const std::string &text, const std::string &prefix) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += prefix + line + "\n";
  return out;
}


// The sizes a tensor's shape names, in the task's order.
std::vector<std::string> sizesOf(const Task &task, const Tensor &t) {
  std::set<std::string> used;
  for (const auto &dim : t.shape)
    for (const auto &id : dim.identifiers()) used.insert(id);
  std::vector<std::string> out;
  for (const auto &s : task.sizeNames)
    if (used.count(s)) out.push_back(s);
  return out;
}

std::string elementsExpression(const Tensor &t, const std::map<std::string, std::int64_t> &tunables) {
  if (t.shape.empty()) return "1LL";
  std::string out;
  for (const auto &dim : t.shape) out += (out.empty() ? "" : " * ") + cppExpression(dim, tunables);
  return out;
}

std::string joined(const std::vector<std::string> &parts, const std::string &sep) {
  std::string out;
  for (const auto &p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// "x: f32 [rows, cols], read"
std::string describe(const Tensor &t) {
  std::vector<std::string> dims;
  for (const auto &d : t.shape) dims.push_back(d.text());
  const char *role = t.role == TensorRole::In ? "read" : t.role == TensorRole::Out ? "written" : "read and written";
  return t.name + ": " + std::string(dtypeName(t.dtype)) + " [" + joined(dims, ", ") + "], " + role +
         (t.state.empty() ? "" : " (the PyTorch module's " + t.state + ")") +
         (t.draw > 0 ? " (the random tensor the PyTorch module's forward draws, call " + std::to_string(t.draw) + ")" : "");
}

// The launcher's parameter list: every tensor (const for inputs), every size, the stream.
std::string parameters(const Task &task, const Layout &l, bool withDefault) {
  std::vector<std::string> p;
  for (const auto &t : task.tensors)
    p.push_back(std::string(t.role == TensorRole::In ? "const " : "") + cppType(t.dtype) + " *" + t.name);
  for (const auto &s : task.sizeNames) p.push_back("long long " + s);
  p.push_back("cudaStream_t " + l.stream + (withDefault ? " = nullptr" : ""));
  return joined(p, ", ");
}

std::string typeIncludes(const Layout &l) {
  std::string out = "#include <cuda_runtime.h>\n";
  if (l.halfTypes) out += "#include <cuda_fp16.h>\n";
  if (l.bfloatTypes) out += "#include <cuda_bf16.h>\n";
  return out + "\n#include <cstdint>\n";
}

std::string provenanceComment(const ExportInput &in) {
  const auto &p = in.provenance;
  std::string out = "Exported by Kernel Workbench " + p.workbench + " on " + p.exportedAt + " from " + p.what;
  if (!p.workspace.empty()) out += " of " + p.workspace;
  out += ".\nCandidate " + p.candidateHash.substr(0, 16) + (p.sourceName.empty() ? "" : " (" + p.sourceName + ")");
  if (in.result && !in.result->device.empty()) out += ", measured on " + in.result->device + " (" + in.result->arch + ")";
  return out + ".\n";
}

std::string tunablesText(const std::map<std::string, std::int64_t> &tunables) {
  std::vector<std::string> parts;
  for (const auto &[k, v] : tunables) parts.push_back(k + " = " + std::to_string(v));
  return joined(parts, ", ");
}

// The manifest's functions, as the workbench evaluates them (64-bit; ceil_div rounds up), in the
// header's namespace.
const char *kExpressionHelpers =
    "namespace expr {\n"
    "// The manifest's functions, as the workbench evaluates them (64-bit; ceil_div rounds up).\n"
    "inline long long kwb_ceil_div(long long a, long long b) { return a / b + (a % b != 0 && ((a < 0) == (b < 0))); }\n"
    "inline long long kwb_min(long long a, long long b) { return a < b ? a : b; }\n"
    "inline long long kwb_max(long long a, long long b) { return a > b ? a : b; }\n"
    "}  // namespace expr\n\n";

std::string headerText(const ExportInput &in, const Layout &l) {
  const Task &task = in.task;
  std::string h = commented(task.name + ": " + task.description + "\n" + provenanceComment(in));
  h += "#pragma once\n" + typeIncludes(l) + "\nnamespace " + l.ns + " {\n\n";
  h += kExpressionHelpers;
  if (!task.params.empty()) {
    // In `expr`, where the launch's and the shapes' expressions look names up.
    h += "namespace expr {\n// The task's parameters ([params]), as the workbench passed them to the kernel.\n";
    for (const auto &p : task.params)
      h += "inline constexpr " + (p.isInteger() ? std::string("long long") : cppType(p.dtype)) + " " + p.name + " = " +
           p.literal() + (p.dtype == DType::F32 ? "f" : "") + ";\n";
    h += "}  // namespace expr\n\n";
  }
  if (!l.tunables.empty()) h += "// Tunables baked into the kernel: " + tunablesText(l.tunables) + ".\n";
  std::string doc;
  for (const auto &t : task.tensors) doc += describe(t) + " (device memory)\n";
  doc += "Sizes: " + joined(task.sizeNames, ", ") + ", each positive.\n";
  doc += std::string(l.hostLauncher ? "Runs the kernel's host launcher" : "Launches the kernel") + " on `" + l.stream +
         "` (asynchronously). Returns cudaErrorInvalidValue for\na size that is not positive or a null pointer, "
         "cudaErrorInvalidConfiguration for a launch\nbeyond the device's limits, else the launch's own error.\n";
  h += commented(doc);
  h += "cudaError_t " + l.id + "(" + parameters(task, l, true) + ");\n\n";
  for (const auto &t : task.tensors) {
    std::vector<std::string> args;
    for (const auto &s : sizesOf(task, t)) args.push_back("long long " + s);
    h += "// Elements of " + t.name + " for the given sizes.\n";
    h += "inline long long " + l.id + "_" + t.name + "_elements(" + joined(args, ", ") + ") {\n";
    h += "  using namespace expr;\n  return " + elementsExpression(t, l.tunables) + ";\n}\n\n";
  }
  return h + "}  // namespace " + l.ns + "\n";
}

// The body of a launcher: checks, the argument array in the launch's order, then the launch.
std::string launchBody(const Task &task, const Launch &launch, const Layout &l, const std::string &kernelSymbol,
                       bool hostLauncher, const std::string &hostSymbol) {
  std::string b = "  using namespace ::" + l.ns + "::expr;\n";
  std::vector<std::string> checks;
  for (const auto &s : task.sizeNames) checks.push_back(s + " <= 0");
  for (const auto &t : task.tensors) checks.push_back("!" + t.name);
  b += "  if (" + joined(checks, " || ") + ") return cudaErrorInvalidValue;\n";
  std::vector<std::string> args;
  for (const auto &a : launch.args) {
    const Tensor *t = task.tensor(a);
    args.push_back(t || task.param(a) ? "const_cast<void *>(static_cast<const void *>(&" + a + "))"
                                      : "static_cast<void *>(&" + a + ")");
  }
  b += "  void *kwb_args[] = {" + joined(args, ", ") + "};\n";
  if (hostLauncher) {
    b += "  return " + hostSymbol + "(kwb_args, " + l.stream + ");\n";
    return b;
  }
  const char *axes[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    b += "  const long long kwb_grid_" + std::string(axes[i]) + " = " +
         (static_cast<std::size_t>(i) < launch.grid.size() ? cppExpression(launch.grid[i], l.tunables) : "1LL") + ";\n";
  }
  for (int i = 0; i < 3; ++i) {
    b += "  const long long kwb_block_" + std::string(axes[i]) + " = " +
         (static_cast<std::size_t>(i) < launch.block.size() ? cppExpression(launch.block[i], l.tunables) : "1LL") + ";\n";
  }
  b += "  const long long kwb_shared = " + cppExpression(launch.sharedBytes, l.tunables) + ";\n";
  b += "  if (kwb_grid_x <= 0 || kwb_grid_x > 2147483647LL || kwb_grid_y <= 0 || kwb_grid_y > 65535 || kwb_grid_z <= 0 ||\n"
       "      kwb_grid_z > 65535 || kwb_block_x <= 0 || kwb_block_y <= 0 || kwb_block_z <= 0 ||\n"
       "      kwb_block_x * kwb_block_y * kwb_block_z > 1024 || kwb_shared < 0)\n"
       "    return cudaErrorInvalidConfiguration;\n";
  b += "  const void *kwb_kernel = reinterpret_cast<const void *>(&" + kernelSymbol + ");\n";
  b += "  if (kwb_shared > 48 * 1024) {\n"
       "    const cudaError_t e = cudaFuncSetAttribute(kwb_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,\n"
       "                                               static_cast<int>(kwb_shared));\n"
       "    if (e != cudaSuccess) return e;\n"
       "  }\n";
  b += "  const cudaError_t kwb_error = cudaLaunchKernel(kwb_kernel, dim3(unsigned(kwb_grid_x), unsigned(kwb_grid_y), "
       "unsigned(kwb_grid_z)),\n"
       "                                                dim3(unsigned(kwb_block_x), unsigned(kwb_block_y), "
       "unsigned(kwb_block_z)), kwb_args,\n"
       "                                                static_cast<std::size_t>(kwb_shared), " + l.stream + ");\n";
  b += "  return kwb_error;\n";
  return b;
}

std::string launcherText(const ExportInput &in, const Layout &l) {
  std::string s = commented(in.task.name + "'s launcher: " + (l.hostLauncher ? "the candidate's own host launcher" : "the workbench's launch") +
                            ", typed.\n" + provenanceComment(in));
  s += "#include \"" + l.id + ".h\"\n\n";
  const std::string host = l.id + "_kwb_launch";
  if (l.hostLauncher) s += "// The host launcher's entry point under a name of this package's own.\n#define kwb_launch " + host + "\n";
  s += "#include \"" + l.id + "_kernel.cu\"\n";
  if (l.hostLauncher) s += "#undef kwb_launch\n";
  s += "\ncudaError_t " + l.ns + "::" + l.id + "(" + parameters(in.task, l, false) + ") {\n";
  s += launchBody(in.task, *l.launch, l, "::" + l.launch->kernel, l.hostLauncher, host);
  return s + "}\n";
}

std::string kernelText(const ExportInput &in, const Layout &l) {
  std::string s = commented(in.task.name + "'s kernel, as Kernel Workbench measured it.\n" + provenanceComment(in));
  if (!l.tunables.empty()) {
    s += "// Tunables baked in (the workbench passed them to the compiler as -D):\n";
    for (const auto &[k, v] : l.tunables) s += "#define " + k + " " + std::to_string(v) + "\n";
  }
  if (!in.task.params.empty()) {
    s += "// Parameters baked in (the workbench passed them to the compiler as -D):\n";
    for (const auto &[k, v] : paramDefines(in.task)) s += "#define " + k + " " + v + "\n";
  }
  s += "\n" + in.code;
  if (!in.code.empty() && in.code.back() != '\n') s += "\n";
  return s;
}

std::string referenceLaunchText(const ExportInput &in, const Layout &l) {
  const Launch &launch = in.task.reference.launch;
  const std::string renamed = "kwb_reference_" + launch.kernel;
  std::string s = commented("The task's reference (" + in.task.name + "/" + in.task.reference.source.filename().string() +
                            "), launched as the task declares: what the test checks the kernel against.");
  s += "#include \"" + l.id + ".h\"\n\n";
  s += "// Renamed: the kernel under test may carry the same name.\n#define " + launch.kernel + " " + renamed + "\n";
  s += "#include \"reference.cu\"\n#undef " + launch.kernel + "\n\n";
  s += "namespace kwb_reference {\n\ncudaError_t " + l.id + "(" + parameters(in.task, l, false) + ") {\n";
  s += launchBody(in.task, launch, l, "::" + renamed, false, {});
  return s + "}\n\n}  // namespace kwb_reference\n";
}

std::string generatorLiteral(const Generator &g) {
  const char *matrix = "None";
  switch (g.matrix) {
    case Generator::Matrix::None: break;
    case Generator::Matrix::Symmetric: matrix = "Symmetric"; break;
    case Generator::Matrix::Upper: matrix = "Upper"; break;
    case Generator::Matrix::Lower: matrix = "Lower"; break;
  }
  return "{" + checkKind(g.kind) + ", " + number(g.a) + ", " + number(g.b) + ", " + std::to_string(g.seedOffset) + "ULL, " +
         number(g.scale) + ", " + number(g.shift) + ", kwb_check::Matrix::" + matrix + ", " + std::to_string(g.diagonal) +
         "LL}";
}

// One of a tensor's dimensions for the test's configuration `c`, as a C++ expression over c's sizes.
std::string dimensionForConfig(const Task &task, const Expression &dim, const Layout &l) {
  const auto ids = dim.identifiers();
  std::vector<std::string> params, args;
  for (const auto &s : task.sizeNames)
    if (std::find(ids.begin(), ids.end(), s) != ids.end()) {
      params.push_back("long long " + s);
      args.push_back("c." + s);
    }
  return "[](" + joined(params, ", ") + ") { using namespace ::" + l.ns + "::expr; return " + cppExpression(dim, l.tunables) +
         "; }(" + joined(args, ", ") + ")";
}

std::string testText(const ExportInput &in, const Layout &l) {
  const Task &task = in.task;
  std::string s = commented(
      "Checks " + task.name + "'s exported kernel against the task's reference on the workbench's inputs\n"
      "(the same bytes for a seed as `kwb eval --seed N`), with the task's tolerances, then times both\n"
      "(CUDA events, the L2 flushed before each sample, the median).\n"
      "Usage: test_" + l.id + " [--config NAME] [--seed N] [--samples N] [--no-time]\n"
      "Exit status: 0 every check passed; 1 a mismatch; 2 usage error; 3 a CUDA error.\n" + provenanceComment(in));
  s += "#include \"" + l.id + ".h\"\n#include \"kwb_check.cuh\"\n\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <string>\n\n";
  s += "namespace kwb_reference {\ncudaError_t " + l.id + "(" + parameters(task, l, false) + ");\n}\n\nnamespace {\n\n";
  // Configurations.
  s += "struct Config {\n  const char *name;\n";
  for (const auto &n : task.sizeNames) s += "  long long " + n + ";\n";
  s += "};\n\nconst Config kConfigs[] = {\n";
  for (const auto &c : task.configs) {
    s += "    {" + cString(c.name);
    for (const auto &n : task.sizeNames) {
      const auto it = c.values.find(n);
      s += ", " + std::to_string(it == c.values.end() ? 0 : it->second) + "LL";
    }
    s += "},\n";
  }
  s += "};\n\nconst unsigned long long kSeeds[] = {";
  {
    std::vector<std::string> seeds;
    for (const auto seed : task.seeds) seeds.push_back(std::to_string(seed) + "ULL");
    if (seeds.empty()) seeds.push_back("1ULL");
    s += joined(seeds, ", ");
  }
  s += "};\n\n";
  // Generators per input tensor.
  for (const auto &t : task.tensors) {
    if (!t.init) continue;
    s += "const kwb_check::Generator k" + t.name + "Generators[] = {" + generatorLiteral(*t.init);
    for (const auto &g : t.moreInits) s += ", " + generatorLiteral(g);
    s += "};\n";
  }
  s += "\n// The generator a seed picks: seed 1 the first, 2 the second, ... cycling (seed 0 the first).\n"
       "template <std::size_t N>\nconst kwb_check::Generator &forSeed(const kwb_check::Generator (&g)[N], unsigned long long seed) {\n"
       "  return seed == 0 ? g[0] : g[(seed - 1) % N];\n}\n\n";
  // One configuration and seed: generate, run both, compare; time when asked.
  s += "struct Buffers {\n";
  for (const auto &t : task.tensors) s += "  kwb_check::DeviceBuffer *" + t.name + "_cand = nullptr, *" + t.name + "_ref = nullptr;\n";
  s += "};\n\n";
  s += "int checkConfig(const Config &c, unsigned long long seed, bool time, int samples, void *flush, std::size_t flushBytes,\n"
       "                cudaStream_t stream) {\n";
  s += "  int failed = 0;\n";
  for (const auto &t : task.tensors) {
    std::vector<std::string> args;
    for (const auto &n : sizesOf(task, t)) args.push_back("c." + n);
    s += "  const long long n_" + t.name + " = " + l.ns + "::" + l.id + "_" + t.name + "_elements(" + joined(args, ", ") + ");\n";
    s += "  const std::size_t bytes_" + t.name + " = std::size_t(n_" + t.name + ") * kwb_check::sizeOf(" + checkDtype(t.dtype) + ");\n";
    s += "  kwb_check::DeviceBuffer " + t.name + "_cand(bytes_" + t.name + "), " + t.name + "_ref(bytes_" + t.name + ");\n";
    if (t.init) {
      // A matrix structure needs the last two dimensions.
      bool structured = t.init->matrix != Generator::Matrix::None;
      for (const auto &g : t.moreInits) structured = structured || g.matrix != Generator::Matrix::None;
      std::string matrix;
      if (structured && t.shape.size() >= 2)
        matrix = ", std::size_t(" + dimensionForConfig(task, t.shape[t.shape.size() - 2], l) + "), std::size_t(" +
                 dimensionForConfig(task, t.shape.back(), l) + ")";
      s += "  {\n    const auto host = kwb_check::generate(" + checkDtype(t.dtype) + ", std::size_t(n_" + t.name + "), forSeed(k" +
           t.name + "Generators, seed), seed, " + cString(t.name) + matrix + ");\n";
      s += "    KWB_CHECK(cudaMemcpy(" + t.name + "_cand.p, host.data(), bytes_" + t.name + ", cudaMemcpyHostToDevice));\n";
      s += "    KWB_CHECK(cudaMemcpy(" + t.name + "_ref.p, host.data(), bytes_" + t.name + ", cudaMemcpyHostToDevice));\n  }\n";
    } else {
      s += "  // Written by the kernel: set to all ones first (NaN for floats), so an element left unwritten fails.\n";
      s += "  KWB_CHECK(cudaMemset(" + t.name + "_cand.p, 0xff, bytes_" + t.name + "));\n";
      s += "  KWB_CHECK(cudaMemset(" + t.name + "_ref.p, 0xff, bytes_" + t.name + "));\n";
    }
  }
  auto call = [&](const std::string &fn, const std::string &suffix) {
    std::vector<std::string> args;
    for (const auto &t : task.tensors)
      args.push_back("static_cast<" + std::string(t.role == TensorRole::In ? "const " : "") + cppType(t.dtype) + " *>(" + t.name + suffix + ".p)");
    for (const auto &n : task.sizeNames) args.push_back("c." + n);
    args.push_back("stream");
    return fn + "(" + joined(args, ", ") + ")";
  };
  const std::string candidateCall = call(l.ns + "::" + l.id, "_cand");
  const std::string referenceCall = call("kwb_reference::" + l.id, "_ref");
  s += "  KWB_CHECK(" + referenceCall + ");\n";
  s += "  KWB_CHECK(" + candidateCall + ");\n";
  s += "  KWB_CHECK(cudaStreamSynchronize(stream));\n";
  for (const auto &t : task.tensors) {
    if (t.role == TensorRole::In) continue;
    const Tolerance tol = t.tolerance.value_or(Tolerance{});
    s += "  {\n    std::vector<unsigned char> got(bytes_" + t.name + "), want(bytes_" + t.name + ");\n";
    s += "    KWB_CHECK(cudaMemcpy(got.data(), " + t.name + "_cand.p, bytes_" + t.name + ", cudaMemcpyDeviceToHost));\n";
    s += "    KWB_CHECK(cudaMemcpy(want.data(), " + t.name + "_ref.p, bytes_" + t.name + ", cudaMemcpyDeviceToHost));\n";
    s += "    const kwb_check::Tolerance tolerance{" + std::string(tol.exact ? "true" : "false") + ", " + number(tol.rtol) + ", " +
         number(tol.atol) + "};\n";
    s += "    const auto r = kwb_check::compare(got.data(), want.data(), " + checkDtype(t.dtype) + ", std::size_t(n_" + t.name +
         "), tolerance);\n";
    s += "    if (r.passed()) {\n      std::printf(\"  %-10s seed %llu  " + t.name +
         ": ok (%zu elements, max abs err %.3g)\\n\", c.name, seed, r.checked, r.maxAbsError);\n";
    s += "    } else {\n      ++failed;\n";
    s += "      if (r.nanInReference) std::printf(\"  %-10s seed %llu  " + t.name +
         ": the reference wrote %zu NaN: the task's reference is broken\\n\", c.name, seed, r.nanInReference);\n";
    s += "      else std::printf(\"  %-10s seed %llu  " + t.name +
         ": MISMATCH: %zu of %zu elements differ (first at %zu: got %.9g, want %.9g)\\n\", c.name, seed, r.mismatches, "
         "r.checked, r.first, r.firstGot, r.firstWant);\n    }\n  }\n";
  }
  s += "  if (time && !failed) {\n";
  s += "    const double cand = kwb_check::medianMs([&] { KWB_CHECK(" + candidateCall + "); }, stream, flush, flushBytes, samples);\n";
  s += "    const double ref = kwb_check::medianMs([&] { KWB_CHECK(" + referenceCall + "); }, stream, flush, flushBytes, samples);\n";
  s += "    std::printf(\"  %-10s kernel %.4f ms, reference %.4f ms: %.2fx (median of %d, L2 flushed)\\n\", c.name, cand, ref,\n"
       "                cand > 0 ? ref / cand : 0.0, samples);\n  }\n";
  s += "  return failed;\n}\n\n}  // namespace\n\n";
  // main.
  s += "int main(int argc, char **argv) {\n"
       "  const char *only = nullptr;\n  long long seedWanted = -1;\n  int samples = 20;\n  bool time = true;\n"
       "  for (int i = 1; i < argc; ++i) {\n"
       "    const std::string a = argv[i];\n"
       "    if (a == \"--config\" && i + 1 < argc) only = argv[++i];\n"
       "    else if (a == \"--seed\" && i + 1 < argc) seedWanted = std::atoll(argv[++i]);\n"
       "    else if (a == \"--samples\" && i + 1 < argc) samples = std::max(1, std::atoi(argv[++i]));\n"
       "    else if (a == \"--no-time\") time = false;\n"
       "    else {\n"
       "      std::fprintf(stderr, \"usage: %s [--config NAME] [--seed N] [--samples N] [--no-time]\\n\", argv[0]);\n"
       "      return 2;\n    }\n  }\n"
       "  int device = 0;\n  KWB_CHECK(cudaGetDevice(&device));\n  cudaDeviceProp prop;\n"
       "  KWB_CHECK(cudaGetDeviceProperties(&prop, device));\n"
       "  std::printf(\"" + task.name + ": exported kernel against the task's reference on %s (sm_%d%d)\\n\", prop.name, prop.major, prop.minor);\n"
       "  const std::size_t flushBytes = std::size_t(prop.l2CacheSize > 0 ? prop.l2CacheSize : (64 << 20)) * 2;\n"
       "  kwb_check::DeviceBuffer flush(flushBytes);\n"
       "  cudaStream_t stream;\n  KWB_CHECK(cudaStreamCreate(&stream));\n"
       "  int failed = 0, ran = 0;\n"
       "  for (const Config &c : kConfigs) {\n"
       "    if (only && std::strcmp(only, c.name) != 0) continue;\n"
       "    bool timed = false;\n"
       "    for (const unsigned long long seed : kSeeds) {\n"
       "      if (seedWanted >= 0 && seed != static_cast<unsigned long long>(seedWanted)) continue;\n"
       "      failed += checkConfig(c, seed, time && !timed, samples, flush.p, flushBytes, stream);\n"
       "      timed = true;\n      ++ran;\n    }\n  }\n"
       "  KWB_CHECK(cudaStreamDestroy(stream));\n"
       "  if (ran == 0) {\n    std::fprintf(stderr, \"no configuration or seed matched\\n\");\n    return 2;\n  }\n"
       "  std::printf(failed ? \"FAILED: %d check(s)\\n\" : \"passed: %d check(s)\\n\", failed ? failed : ran);\n"
       "  return failed ? 1 : 0;\n}\n";
  return s;
}

// The architectures a package builds for when no GPU is found and none was measured: code for
// Ampere (runs on every sm_8x) and Hopper, with Hopper's PTX for later GPUs to compile at load.
const char *const kFallbackCudaArchitectures = "80-real;90";

// The CMake that chooses the architectures before project() (which would otherwise fix the
// compiler's default): the user's -DCMAKE_CUDA_ARCHITECTURES or CUDAARCHS; else the GPUs
// nvidia-smi sees (the measured architecture on a GPU of its kind, keeping its specific features:
// 90a, not 90); else the measured one, else kFallbackCudaArchitectures. Never bare `native`, which
// CMake refuses where no GPU is found ("no GPU was detected": most CI machines).
std::string cmakeArchitecturesText(const Layout &l) {
  const std::string measured = l.cmakeArch;
  std::string measuredDigits = measured;
  while (!measuredDigits.empty() && !std::isdigit(static_cast<unsigned char>(measuredDigits.back()))) measuredDigits.pop_back();
  const std::string fallback = measured.empty() ? kFallbackCudaArchitectures : measured;
  const std::string fallbackWhy = measured.empty() ? "no GPU found and none measured: Ampere and Hopper code, Hopper PTX for later GPUs"
                                                   : "no GPU found: the architecture the workbench measured it on";
  std::string s;
  s += "# The GPU architectures to build for, chosen before project(). Name them with\n"
       "# -DCMAKE_CUDA_ARCHITECTURES=90a (or \"80;90\", or native) or the CUDAARCHS environment variable;\n"
       "# otherwise this machine's GPUs as nvidia-smi reports them";
  if (!measured.empty()) s += " (" + measuredDigits + " as " + measured + ", as the workbench compiled it)";
  s += ",\n# else " + fallback + " (" + fallbackWhy + ").\n";
  s += "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})\n";
  s += "  set(kwb_architectures \"\")\n";
  s += "  find_program(KWB_NVIDIA_SMI nvidia-smi)\n";
  s += "  if(KWB_NVIDIA_SMI)\n";
  s += "    execute_process(COMMAND \"${KWB_NVIDIA_SMI}\" --query-gpu=compute_cap --format=csv,noheader\n"
       "                    RESULT_VARIABLE kwb_status OUTPUT_VARIABLE kwb_caps ERROR_QUIET TIMEOUT 60)\n";
  s += "    if(kwb_status EQUAL 0)\n";
  s += "      string(REGEX MATCHALL \"[0-9]+\\\\.[0-9]+\" kwb_caps \"${kwb_caps}\")\n";
  s += "      foreach(kwb_cap IN LISTS kwb_caps)\n";
  s += "        string(REPLACE \".\" \"\" kwb_arch \"${kwb_cap}\")\n";
  if (!measured.empty() && measured != measuredDigits)
    s += "        if(kwb_arch STREQUAL \"" + measuredDigits + "\")\n          set(kwb_arch \"" + measured + "\")\n        endif()\n";
  s += "        list(APPEND kwb_architectures \"${kwb_arch}\")\n";
  s += "      endforeach()\n";
  s += "    endif()\n";
  s += "  endif()\n";
  s += "  if(kwb_architectures)\n";
  s += "    list(REMOVE_DUPLICATES kwb_architectures)\n";
  s += "    set(kwb_why \"this machine's GPU, from nvidia-smi\")\n";
  s += "  else()\n";
  s += "    set(kwb_architectures \"" + fallback + "\")\n";
  s += "    set(kwb_why \"" + fallbackWhy + "\")\n";
  s += "  endif()\n";
  s += "  set(CMAKE_CUDA_ARCHITECTURES \"${kwb_architectures}\" CACHE STRING \"The GPU architectures to build for\")\n";
  s += "  message(STATUS \"" + l.id + "_kernel: CUDA architectures ${kwb_architectures} (${kwb_why}); \"\n"
       "                 \"-DCMAKE_CUDA_ARCHITECTURES=... names others\")\n";
  s += "endif()\n";
  return s;
}

std::string cmakeText(const ExportInput &in, const Layout &l) {
  std::string s = commented(in.task.name + "'s kernel as a CMake library, with its test against the task's reference.\n" +
                            provenanceComment(in) + "Build: cmake -S . -B build && cmake --build build && ./build/test_" + l.id, "# ");
  s += "cmake_minimum_required(VERSION 3.24)\n";
  s += cmakeArchitecturesText(l);
  s += "project(" + l.id + "_kernel LANGUAGES CXX CUDA)\n\n";
  s += "if(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()\n";
  s += "set(CMAKE_CUDA_STANDARD 17)\nset(CMAKE_CUDA_STANDARD_REQUIRED ON)\nset(CMAKE_CXX_STANDARD 17)\n\n";
  s += "find_package(CUDAToolkit REQUIRED)\n\n";
  s += "add_library(" + l.id + "_kernel src/" + l.id + ".cu)\n";
  s += "target_include_directories(" + l.id + "_kernel PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)\n";
  s += "target_link_libraries(" + l.id + "_kernel PUBLIC CUDA::cudart)\n";
  s += "set_target_properties(" + l.id + "_kernel PROPERTIES POSITION_INDEPENDENT_CODE ON)\n\n";
  s += "option(" + l.id + "_TESTS \"Build the test against the task's reference\" ON)\n";
  s += "if(" + l.id + "_TESTS)\n";
  s += "  add_executable(test_" + l.id + " test/test_" + l.id + ".cu test/reference_launch.cu)\n";
  s += "  target_link_libraries(test_" + l.id + " PRIVATE " + l.id + "_kernel)\n";
  s += "  # The inputs are the workbench's bytes only with separate multiply and add roundings on the host.\n";
  s += "  target_compile_options(test_" + l.id + " PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-ffp-contract=off>)\n";
  s += "  enable_testing()\n  add_test(NAME " + l.id + "_against_reference COMMAND test_" + l.id + " --no-time)\nendif()\n";
  return s;
}

std::string readmeText(const ExportInput &in, const Layout &l) {
  const Task &task = in.task;
  std::string s = "# " + task.name + ": exported kernel\n\n" + task.description + ".\n\n";
  s += provenanceComment(in) + "\n";
  if (!l.tunables.empty()) s += "Tunables baked in: " + tunablesText(l.tunables) + ".\n\n";
  s += "## Use\n\n```cpp\n#include \"" + l.id + ".h\"\n\n";
  s += "cudaError_t " + l.ns + "::" + l.id + "(" + parameters(task, l, true) + ");\n```\n\n";
  for (const auto &t : task.tensors) s += "- `" + describe(t) + "`\n";
  s += "\nLink the `" + l.id + "_kernel` library (`add_subdirectory` this folder, or build it and link `lib" + l.id +
       "_kernel.a`).\n\n";
  s += "## Build and test\n\n```sh\ncmake -S . -B build && cmake --build build\n./build/test_" + l.id +
       "            # every configuration and seed, then the times\n./build/test_" + l.id +
       " --config " + (task.configs.empty() ? std::string("NAME") : task.configs.front().name) + " --seed 1\n```\n\n";
  s += "It builds for the GPUs of the machine that configures it (as nvidia-smi reports them), else for " +
       (l.cmakeArch.empty() ? std::string(kFallbackCudaArchitectures) + " (none was measured)"
                            : l.cmakeArch + " (the architecture the workbench measured it on)") +
       "; name others with\n`cmake -S . -B build -DCMAKE_CUDA_ARCHITECTURES=90a` (a list: `\"80;90\"`; or `native`).\n\n";
  s += "The test makes the workbench's inputs (the same bytes for a seed as `kwb eval --seed N`), runs the task's\n"
       "reference (`test/reference.cu`) and the kernel, compares every output with the task's tolerance, and\n"
       "times both with CUDA events (L2 flushed before each sample, median). Exit status 0: every check passed.\n";
  if (in.result) {
    s += "\n## As the workbench measured it\n\n" + std::string("GPU: ") + (in.result->device.empty() ? "none (compiled only)" : in.result->device) +
         ", " + in.result->arch + ".\n\n| configuration | outcome | kernel (ms) | reference (ms) | speedup |\n|---|---|---|---|---|\n";
    for (const auto &c : in.result->configs) {
      s += "| " + c.config + " | " + std::string(kwb::toString(c.outcome)) + " | ";
      if (c.timing && c.timing->ok) {
        s += decimal(c.timing->candidate.median, 4) + " | " + decimal(c.timing->reference.median, 4) + " | " +
             decimal(c.timing->speedup, 2) + "x |\n";
      } else {
        s += "- | - | - |\n";
      }
    }
  }
  return s;
}

Layout layoutOf(const ExportInput &in) {
  Layout l;
  l.id = identifierOf(in.task.name);
  l.hostLauncher = detectSourceForm(in.code) == SourceForm::HostLauncher;
  l.launch = in.task.launch ? &*in.task.launch : &in.task.reference.launch;
  try {
    l.tunables = effectiveTunables(in.task, in.tunables);
    std::vector<const SizeConfig *> configs;
    for (const auto &c : in.task.configs) configs.push_back(&c);
    checkConstraints(in.task, configs, l.tunables);
  } catch (const std::exception &e) {
    throw ExportError(e.what());
  }
  for (const auto &t : in.task.tensors) {
    l.halfTypes = l.halfTypes || t.dtype == DType::F16;
    l.bfloatTypes = l.bfloatTypes || t.dtype == DType::BF16;
    if (t.name == "stream") l.stream = "cuda_stream";
  }
  for (const auto &s : in.task.sizeNames)
    if (s == "stream") l.stream = "cuda_stream";
  std::string arch = !in.arch.empty() ? in.arch : in.result ? in.result->arch : std::string();
  if (arch.rfind("sm_", 0) == 0) {
    arch = archSpecificTarget(arch);  // as the workbench compiles every candidate (sm_90 -> sm_90a)
    l.cmakeArch = arch.substr(3);
    std::string digits = l.cmakeArch, suffix;
    while (!digits.empty() && !std::isdigit(static_cast<unsigned char>(digits.back()))) {
      suffix.insert(suffix.begin(), digits.back());
      digits.pop_back();
    }
    if (digits.size() >= 2) l.torchArch = digits.substr(0, digits.size() - 1) + "." + digits.substr(digits.size() - 1) + suffix;
  }
  if (!l.hostLauncher && l.launch->kernel.empty())
    throw ExportError("task " + in.task.name + " declares no kernel to launch ([launch] or [reference] kernel)");
  return l;
}

// The folder to write into: made when missing; one with files in it only with `overwrite`.
void prepareFolder(const fs::path &dir, bool overwrite) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec))
    throw ExportError(dir.string() + " is a symbolic link (to " + fs::read_symlink(dir, ec).string() +
                      "); an export is not written through links: name the folder it leads to, or a new one");
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw ExportError(dir.string() + " is a file; name a folder to export into");
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec) && !overwrite)
    throw ExportError(dir.string() + " is not empty; name a new folder, or write over it (kwb export --force; the "
                      "Export dialog's check box)");
  fs::create_directories(dir, ec);
  if (ec) throw ExportError("could not make " + dir.string() + ": " + ec.message());
}

PackageWriter::PackageWriter(const fs::path &dir, bool overwrite, std::vector<std::string> notes) {
  prepareFolder(dir, overwrite);
  try {
    folder = SafeFolder::open(dir, false);
  } catch (const SafeWriteError &e) {
    throw ExportError(e.what());
  }
  package.dir = dir;
  package.notes = std::move(notes);
}

void PackageWriter::put(const std::string &name, const std::string &text) {
  try {
    folder->writeRelative(name, text);
  } catch (const SafeWriteError &e) {
    throw ExportError(std::string("could not write the export: ") + e.what());
  }
  package.files.push_back(name);
}

ExportInput prepared(const ExportInput &given) {
  ExportInput in = given;
  if (in.code.empty()) throw ExportError("the candidate has no code to export");
  in.provenance.candidateHash = contentHash(in.code);
  if (in.provenance.exportedAt.empty()) in.provenance.exportedAt = utcTimestamp();
  in.provenance.workbench = kVersion;
  return in;
}

std::string readTaskReference(const Task &task) {
  if (!task.reference.hasCuda())
    throw ExportError("task '" + task.name + "' has no CUDA reference (its reference is the PyTorch module " +
                      task.reference.python.string() +
                      "): an exported package's test is built from a CUDA reference; not available yet for PyTorch-only tasks");
  const fs::path referenceSource = task.folder / task.reference.source;
  std::ifstream reference(referenceSource, std::ios::binary);
  if (!reference)
    throw ExportError("cannot read the task's reference " + referenceSource.string() + " (the test is built from it)");
  return std::string((std::istreambuf_iterator<char>(reference)), std::istreambuf_iterator<char>());
}

}  // namespace parts

using namespace parts;

std::string provenanceJson(const ExportInput &in) {
  const auto &p = in.provenance;
  nlohmann::json j = {{"task", in.task.name},
                      {"from", p.what},
                      {"workspace", p.workspace},
                      {"session", p.session},
                      {"run", p.run},
                      {"source_name", p.sourceName},
                      {"candidate_hash", p.candidateHash},
                      {"exported_at", p.exportedAt},
                      {"workbench", p.workbench},
                      {"tunables", in.tunables}};
  if (in.result) {
    j["device"] = in.result->device;
    j["arch"] = in.result->arch;
    j["outcome"] = kwb::toString(in.result->outcome);
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

ExportedPackage exportCudaPackage(const ExportInput &given, const fs::path &dir, bool overwrite) {
  ExportInput in = prepared(given);
  const Layout l = layoutOf(in);
  in.tunables = l.tunables;
  const std::string referenceText = readTaskReference(in.task);
  PackageWriter writer(dir, overwrite, in.notes);
  ExportedPackage &out = writer.package;
  if (l.cmakeArch.empty())
    out.notes.push_back(std::string("no measured architecture: it builds for the building machine's GPUs (nvidia-smi), else for ") +
                        kFallbackCudaArchitectures + "; a kernel using architecture-specific features (wgmma: sm_90a) needs "
                        "-DCMAKE_CUDA_ARCHITECTURES=90a");
  auto put = [&](const std::string &name, const std::string &text) { writer.put(name, text); };
  put("README.md", readmeText(in, l));
  put("CMakeLists.txt", cmakeText(in, l));
  put("include/" + l.id + ".h", headerText(in, l));
  put("src/" + l.id + "_kernel.cu", kernelText(in, l));
  put("src/" + l.id + ".cu", launcherText(in, l));
  put("test/reference.cu", referenceText);
  put("test/reference_launch.cu", referenceLaunchText(in, l));
  put("test/kwb_check.cuh", checkHeaderText());
  put("test/test_" + l.id + ".cu", testText(in, l));
  put("provenance.json", provenanceJson(in));
  if (l.hostLauncher)
    out.notes.push_back("a host launcher: its kwb_launch is renamed " + l.id + "_kwb_launch in the package");
  return out;
}

const std::string &checkHeaderText() {
  static const std::string text = embeddedCheckHeader();
  return text;
}

}  // namespace kwb::exporting
