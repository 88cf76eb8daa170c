#pragma once
// A shared library opened at run time with dlopen, so binaries start where it is absent.
#include <string>
#include <vector>

namespace kwb {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;
  ~DynamicLibrary();
  DynamicLibrary(const DynamicLibrary &) = delete;
  DynamicLibrary &operator=(const DynamicLibrary &) = delete;
  DynamicLibrary(DynamicLibrary &&other) noexcept;
  DynamicLibrary &operator=(DynamicLibrary &&other) noexcept;

  // Tries each candidate (a bare soname searched by the loader, or a path) in order; the first
  // that loads wins. On failure, error() lists what was tried and dlerror()'s last words.
  bool open(const std::vector<std::string> &candidates);
  bool isOpen() const { return handle_ != nullptr; }
  const std::string &path() const { return path_; }
  const std::string &error() const { return error_; }

  // Leaves the library loaded when this object goes away: for libraries that start threads
  // or keep state (the CUDA driver after cuInit), which must not be unloaded under them.
  void keepLoaded() { keep_ = true; }

  void *rawSymbol(const char *name) const;
  template <typename Fn>
  bool resolve(Fn &fn, const char *name) const {
    fn = reinterpret_cast<Fn>(rawSymbol(name));
    return fn != nullptr;
  }

 private:
  void *handle_ = nullptr;
  std::string path_;
  std::string error_;
  bool keep_ = false;
};

// Candidate file names for a CUDA toolkit library: the sonames (searched by the loader),
// then the same names under $CUDA_HOME and the toolkit found at build time.
std::vector<std::string> cudaToolkitLibraryCandidates(const std::vector<std::string> &sonames,
                                                      const std::vector<std::string> &subdirs);

}  // namespace kwb
