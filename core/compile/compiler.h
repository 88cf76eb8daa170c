#pragma once
// The front door of compiling: picks the path by the request's source form (NVRTC in the sandboxed
// compile service for device-only sources, core/compile/compile_service.h; nvcc as a sandboxed child
// process for host launchers), serves and fills the disk
// cache, and times the whole. Usable from several threads at once; never call it on a GUI thread.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "core/compile/compile_cache.h"
#include "core/compile/compile_types.h"
#include "core/compile/nvcc_compiler.h"
#include "core/compile/nvrtc_compiler.h"

namespace kwb {

struct Task;

struct CompilerOptions {
  std::filesystem::path cacheDirectory;  // empty: CompileCache::defaultDirectory()
  bool useCache = true;
  // A compile running longer is stopped with an Error diagnostic: nvcc (and what it started) is
  // killed; NVRTC is cancelled through its flow callback. Such results are not cached.
  std::chrono::milliseconds timeLimit{std::chrono::seconds(120)};
  std::filesystem::path nvcc;  // empty: $CUDA_HOME/bin/nvcc and the other toolkit places, then $PATH
};

class Compiler {
 public:
  explicit Compiler(CompilerOptions options = {});

  // Never throws for a bad source or a missing toolkit: the result says what went wrong in its
  // diagnostics. seconds is the wall time of this call (a cache lookup on a hit).
  CompileResult compile(const CompileRequest &request) const;

  const CompilerOptions &options() const { return options_; }
  const CompileCache &cache() const { return cache_; }
  const NvrtcCompiler &nvrtc() const { return NvrtcCompiler::shared(); }
  const NvccCompiler &nvcc() const { return nvcc_; }

 private:
  CompilerOptions options_;
  CompileCache cache_;
  NvccCompiler nvcc_;
};

// The request for compiling `source` as a candidate of `task`: the form detected from the source,
// one -DNAME=value per tunable (the value from tunableValues, else the tunable's first value),
// and, for a device-only source, the kernel the task launches (its [launch], else the
// reference's). Throws std::invalid_argument for a value naming no tunable of the task.
CompileRequest requestFor(const Task &task, const std::string &source, const std::string &sourceName,
                          const std::string &arch, const std::map<std::string, std::int64_t> &tunableValues);

}  // namespace kwb
