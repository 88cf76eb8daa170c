#pragma once
// The optimization features a kernel source has, read from its code (comments and strings
// stripped): the vocabulary of skill cards' requires / provides / conflicts. Each feature is
// found by what it must write (`cp.async`, `__shfl_xor_sync`, `__shared__`, ...), and is named in
// prose by a few words ("shared memory", "async copy"), so a step's "Relies on:" text can be read
// for the features it depends on. Heuristic by nature: a reviewer edits what a card claims.
#include <set>
#include <string>
#include <vector>

namespace kwb {

struct KernelFeature {
  const char *name;          // "cp-async"
  const char *description;   // "asynchronous global-to-shared copies (cp.async)"
  const char *minimumArch;   // the oldest architecture that has it: "sm_80"; "" for any
};

const std::vector<KernelFeature> &kernelFeatures();
const KernelFeature *kernelFeature(const std::string &name);

// The features the code of `source` shows.
std::set<std::string> detectFeatures(const std::string &source);
// The features of `among` that `prose` speaks of ("relies on the shared-memory tiles of step 3"),
// in words or by name ("Relies on: cp-async, warp-shuffle", as a de-optimized lineage writes it).
std::set<std::string> featuresNamedIn(const std::string &prose, const std::set<std::string> &among);
// The source without comments and string literals (kept line for line).
std::string codeOnly(const std::string &source);
// The feature that names what a set of added features is about: the most specific one (wgmma over
// mma.sync over shared-memory tiles over loop unrolling); "" for none.
std::string principalFeature(const std::set<std::string> &features);
// The newest of the features' minimum architectures ("sm_90a" > "sm_90" > "sm_80"), "" for none.
std::string minimumArchitecture(const std::set<std::string> &features);

}  // namespace kwb
