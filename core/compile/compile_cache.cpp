#include "core/compile/compile_cache.h"

#include "core/paths/install_paths.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/compile/diagnostics.h"
#include "core/compile/temporary_directory.h"
#include "core/text/content_hash.h"

namespace kwb {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// One length-prefixed field of the key's material, so no two different requests read the same.
void field(std::string &out, std::string_view name, std::string_view value) {
  out.append(name);
  out += ' ';
  out += std::to_string(value.size());
  out += ':';
  out.append(value);
  out += '\n';
}

std::string_view formName(SourceForm form) {
  return form == SourceForm::HostLauncher ? "host-launcher" : "device-only";
}

std::optional<Diagnostic::Severity> severityFromName(const std::string &name) {
  for (auto s : {Diagnostic::Severity::Error, Diagnostic::Severity::Warning, Diagnostic::Severity::Note})
    if (severityName(s) == name) return s;
  return std::nullopt;
}

// Writes `bytes` to `target` through a temporary name in the same folder and a rename, so
// `target` is either the old file or the whole new one.
bool writeAtomically(const fs::path &target, std::string_view bytes) {
  static std::atomic<unsigned long> counter{0};
  const fs::path temporary = target.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(++counter);
  if (!writeWholeFile(temporary, bytes)) {
    std::error_code ec;
    fs::remove(temporary, ec);
    return false;
  }
  std::error_code ec;
  fs::rename(temporary, target, ec);
  if (ec) fs::remove(temporary, ec);
  return !ec;
}

}  // namespace

fs::path CompileCache::defaultDirectory() { return userCacheDir() / "compile"; }

CompileCache::CompileCache(fs::path directory) : directory_(std::move(directory)) {}

fs::path CompileCache::imagePath(const std::string &key) const { return directory_ / (key + ".bin"); }
fs::path CompileCache::metadataPath(const std::string &key) const { return directory_ / (key + ".json"); }

std::string CompileCache::key(const CompileRequest &request, const std::string &toolkitIdentity) {
  std::string material;
  field(material, "format", std::to_string(kFormatVersion));
  field(material, "form", formName(request.form));
  field(material, "toolkit", toolkitIdentity);
  field(material, "arch", request.arch);
  field(material, "name", request.sourceName);
  field(material, "source", request.source);
  // Sorted by name; stable, so a name given twice keeps its order (the last one wins in a compiler).
  auto defines = request.defines;
  std::stable_sort(defines.begin(), defines.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  for (const auto &[name, value] : defines) {
    field(material, "define", name);
    field(material, "value", value);
  }
  for (const auto &option : request.extraOptions) field(material, "option", option);
  field(material, "lineinfo", request.lineInfo ? "1" : "0");
  auto kernels = request.expectedKernels;
  std::sort(kernels.begin(), kernels.end());
  kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
  for (const auto &k : kernels) field(material, "kernel", k);
  return contentHash(material);
}

std::optional<CompileResult> CompileCache::load(const std::string &key) const {
  std::string text;
  if (!readWholeFile(metadataPath(key), text)) return std::nullopt;
  try {
    const json j = json::parse(text);
    if (j.at("format").get<int>() != kFormatVersion || j.at("key").get<std::string>() != key) return std::nullopt;
    CompileResult r;
    if (!readWholeFile(imagePath(key), r.image)) return std::nullopt;
    if (r.image.size() != j.at("imageSize").get<std::size_t>() || contentHash(r.image) != j.at("imageHash").get<std::string>())
      return std::nullopt;  // written by a crashed or concurrent store: a miss, replaced next time
    r.ok = j.at("ok").get<bool>();
    r.form = j.at("form").get<std::string>() == formName(SourceForm::HostLauncher) ? SourceForm::HostLauncher
                                                                                    : SourceForm::DeviceOnly;
    r.arch = j.at("arch").get<std::string>();
    r.toolkitVersion = j.at("toolkitVersion").get<std::string>();
    r.log = j.at("log").get<std::string>();
    for (const auto &d : j.at("diagnostics")) {
      const auto severity = severityFromName(d.at("severity").get<std::string>());
      if (!severity) return std::nullopt;
      r.diagnostics.push_back(Diagnostic{.file = d.at("file").get<std::string>(),
                                         .line = d.at("line").get<int>(),
                                         .column = d.at("column").get<int>(),
                                         .severity = *severity,
                                         .message = d.at("message").get<std::string>(),
                                         .code = d.at("code").get<std::string>()});
    }
    for (const auto &k : j.at("kernels"))
      r.kernels.push_back(KernelResources{.name = k.at("name").get<std::string>(),
                                          .registers = k.at("registers").get<int>(),
                                          .sharedStaticBytes = k.at("sharedStaticBytes").get<int>(),
                                          .constantBytes = k.at("constantBytes").get<int>(),
                                          .stackFrameBytes = k.at("stackFrameBytes").get<int>(),
                                          .spillStoreBytes = k.at("spillStoreBytes").get<int>(),
                                          .spillLoadBytes = k.at("spillLoadBytes").get<int>(),
                                          .barriers = k.at("barriers").get<int>()});
    r.cacheKey = key;
    return r;
  } catch (const json::exception &) {
    return std::nullopt;  // unreadable or partial: a miss
  }
}

bool CompileCache::store(const std::string &key, const CompileResult &result) const {
  std::error_code ec;
  if (fs::create_directories(directory_, ec)) {
    std::error_code modeEc;
    fs::permissions(directory_, fs::perms::owner_all, modeEc);  // 0700: a new cache is the user's alone
  }
  if (ec) return false;
  json diagnostics = json::array();
  for (const auto &d : result.diagnostics)
    diagnostics.push_back({{"file", d.file},
                           {"line", d.line},
                           {"column", d.column},
                           {"severity", severityName(d.severity)},
                           {"message", d.message},
                           {"code", d.code}});
  json kernels = json::array();
  for (const auto &k : result.kernels)
    kernels.push_back({{"name", k.name},
                       {"registers", k.registers},
                       {"sharedStaticBytes", k.sharedStaticBytes},
                       {"constantBytes", k.constantBytes},
                       {"stackFrameBytes", k.stackFrameBytes},
                       {"spillStoreBytes", k.spillStoreBytes},
                       {"spillLoadBytes", k.spillLoadBytes},
                       {"barriers", k.barriers}});
  const json metadata{{"format", kFormatVersion},
                      {"key", key},
                      {"ok", result.ok},
                      {"form", formName(result.form)},
                      {"arch", result.arch},
                      {"toolkitVersion", result.toolkitVersion},
                      {"imageSize", result.image.size()},
                      {"imageHash", contentHash(result.image)},
                      {"compileSeconds", result.seconds},
                      {"diagnostics", std::move(diagnostics)},
                      {"kernels", std::move(kernels)},
                      {"log", result.log}};
  // The image first, the metadata (which vouches for the image by its hash) last.
  return writeAtomically(imagePath(key), result.image) &&
         writeAtomically(metadataPath(key), metadata.dump(1, ' ', false, json::error_handler_t::replace));
}

}  // namespace kwb
