#include "core/gpu/dynamic_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <utility>

namespace kwb {

DynamicLibrary::~DynamicLibrary() {
  if (handle_ && !keep_) dlclose(handle_);
}

DynamicLibrary::DynamicLibrary(DynamicLibrary &&other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      path_(std::move(other.path_)),
      error_(std::move(other.error_)),
      keep_(other.keep_) {}

DynamicLibrary &DynamicLibrary::operator=(DynamicLibrary &&other) noexcept {
  if (this != &other) {
    if (handle_ && !keep_) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
    error_ = std::move(other.error_);
    keep_ = other.keep_;
  }
  return *this;
}

bool DynamicLibrary::open(const std::vector<std::string> &candidates) {
  std::string lastError;
  for (const auto &candidate : candidates) {
    dlerror();
    if (void *h = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (handle_) dlclose(handle_);
      handle_ = h;
      path_ = candidate;
      error_.clear();
      return true;
    }
    if (const char *e = dlerror()) lastError = e;
  }
  error_ = "not found (tried ";
  for (std::size_t i = 0; i < candidates.size(); ++i) error_ += (i ? ", " : "") + candidates[i];
  error_ += ")";
  if (!lastError.empty()) error_ += "; last error: " + lastError;
  return false;
}

void *DynamicLibrary::rawSymbol(const char *name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

std::vector<std::string> cudaToolkitLibraryCandidates(const std::vector<std::string> &sonames,
                                                      const std::vector<std::string> &subdirs) {
  std::vector<std::string> out(sonames.begin(), sonames.end());
  std::vector<std::filesystem::path> homes;
  if (const char *env = std::getenv("CUDA_HOME"); env && *env) homes.emplace_back(env);
  if (const char *env = std::getenv("CUDA_PATH"); env && *env) homes.emplace_back(env);
  homes.emplace_back(KWB_CUDA_HOME);
  homes.emplace_back("/usr/local/cuda");
  for (const auto &home : homes)
    for (const auto &sub : subdirs)
      for (const auto &so : sonames) {
        auto p = home / sub / so;
        std::error_code ec;
        if (std::filesystem::exists(p, ec)) out.push_back(p.string());
      }
  return out;
}

}  // namespace kwb
