#pragma once
// The sandbox a worker runs in, as seen from the side that starts it. The mechanisms (bwrap,
// unshare, none), their detection and command lines live in core/sandbox/sandbox.h, shared
// with nvcc (core/compile/nvcc_compiler.cpp); this header gives them their kwb::worker names
// and adds what only the worker needs.
//
// The worker checks its own isolation and the client confirms it with the probe-sandbox
// command, so a sandbox that is requested but not in effect is reported as "none". Inside
// bwrap or unshare the worker also installs a seccomp filter (sandbox_seccomp.h).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/sandbox/sandbox.h"

namespace kwb::worker {

using kwb::SandboxKind;
using kwb::sandboxKindName;
using kwb::parseSandboxKind;
using kwb::SandboxPreference;
using kwb::SandboxSupport;
using kwb::detectSandbox;
using kwb::probeSandboxSupport;
using kwb::SandboxCommandOptions;
using kwb::sandboxCommand;
using kwb::SandboxCovers;
using kwb::sandboxCovers;
using kwb::kSandboxCoversVariable;
using kwb::kSandboxKeepsVariable;
using kwb::splitPathList;
using kwb::joinPathList;
using kwb::findOnPath;

// The environment a worker gets (KEY=VALUE): a short allow-list of the caller's variables
// (PATH, locale, CUDA_*, NVIDIA_*, KWB_*, ...) so API keys and other secrets stay behind;
// TMPDIR and CUDA_CACHE_PATH point into the private directory; `extra` is added last.
std::vector<std::string> workerEnvironment(const std::filesystem::path &privateDir,
                                           const std::vector<std::pair<std::string, std::string>> &extra = {});

}  // namespace kwb::worker
