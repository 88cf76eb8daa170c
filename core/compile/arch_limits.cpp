#include "core/compile/arch_limits.h"

#include <array>
#include <cctype>
#include <charconv>

namespace kwb {

namespace {

constexpr std::int64_t KiB = 1024;

// Register file, register allocation and block-size limits are the same on every architecture
// here (64K registers per SM and per block, 255 per thread, 256-register units per warp, four
// sub-partitions, 1024 threads per block); the rows differ in threads, blocks and shared memory.
constexpr ArchLimits row(int major, int minor, std::string_view family, int threadsPerSM, int blocksPerSM,
                         std::int64_t sharedPerSM, std::int64_t sharedOptIn, std::int64_t reserved,
                         int sharedUnit) {
  ArchLimits a;
  a.ccMajor = major;
  a.ccMinor = minor;
  a.family = family;
  a.maxThreadsPerSM = threadsPerSM;
  a.maxWarpsPerSM = threadsPerSM / a.warpSize;
  a.maxBlocksPerSM = blocksPerSM;
  a.sharedPerSM = sharedPerSM;
  a.sharedPerBlockOptIn = sharedOptIn;
  a.sharedReservedPerBlock = reserved;
  a.sharedAllocationUnit = sharedUnit;
  return a;
}

//                 cc      family                    threads blocks  smem/SM   opt-in/block reserved unit
constexpr std::array kArchitectures{
    row(7, 0, "Volta", 2048, 32, 96 * KiB, 96 * KiB, 0, 256),
    row(7, 2, "Volta (Xavier)", 2048, 32, 96 * KiB, 96 * KiB, 0, 256),
    row(7, 5, "Turing", 1024, 16, 64 * KiB, 64 * KiB, 0, 256),
    row(8, 0, "Ampere (A100)", 2048, 32, 164 * KiB, 163 * KiB, 1 * KiB, 128),
    row(8, 6, "Ampere (GA10x)", 1536, 16, 100 * KiB, 99 * KiB, 1 * KiB, 128),
    row(8, 7, "Ampere (Orin)", 1536, 16, 164 * KiB, 163 * KiB, 1 * KiB, 128),
    row(8, 9, "Ada Lovelace", 1536, 24, 100 * KiB, 99 * KiB, 1 * KiB, 128),
    row(9, 0, "Hopper", 2048, 32, 228 * KiB, 227 * KiB, 1 * KiB, 128),
    row(10, 0, "Blackwell (B200)", 2048, 32, 228 * KiB, 227 * KiB, 1 * KiB, 128),
    row(10, 3, "Blackwell Ultra (B300)", 2048, 32, 228 * KiB, 227 * KiB, 1 * KiB, 128),
    row(12, 0, "Blackwell (RTX 50)", 1536, 24, 100 * KiB, 99 * KiB, 1 * KiB, 128),
};

std::string knownList() {
  std::string s;
  for (const auto &a : kArchitectures) {
    if (!s.empty()) s += ", ";
    s += a.arch();
  }
  return s;
}

bool allDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

int toInt(std::string_view s) {
  int v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

std::string ArchLimits::arch() const { return "sm_" + std::to_string(ccMajor) + std::to_string(ccMinor); }

std::string ArchLimits::computeCapability() const {
  return std::to_string(ccMajor) + "." + std::to_string(ccMinor);
}

std::span<const ArchLimits> knownArchitectures() { return kArchitectures; }

ArchLimitsLookup archLimits(int ccMajor, int ccMinor) {
  for (const auto &a : kArchitectures)
    if (a.ccMajor == ccMajor && a.ccMinor == ccMinor) return {a, {}};
  return {std::nullopt, "unknown architecture sm_" + std::to_string(ccMajor) + std::to_string(ccMinor) +
                            " (compute capability " + std::to_string(ccMajor) + "." + std::to_string(ccMinor) +
                            "); known: " + knownList()};
}

ArchLimitsLookup archLimits(std::string_view arch) {
  const std::string original(arch);
  auto bad = [&] {
    return ArchLimitsLookup{std::nullopt, "not an architecture: '" + original +
                                              "' (expected sm_XY such as sm_90, or a compute capability such as 9.0)"};
  };
  std::string_view s = arch;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);

  if (const auto dot = s.find('.'); dot != std::string_view::npos) {  // "9.0", "10.3"
    const auto major = s.substr(0, dot);
    const auto minor = s.substr(dot + 1);
    if (!allDigits(major) || !allDigits(minor) || major.size() > 2 || minor.size() != 1) return bad();
    return archLimits(toInt(major), toInt(minor));
  }
  for (std::string_view prefix : {"sm_", "compute_", "sm"}) {
    if (s.substr(0, prefix.size()) == prefix) {
      s.remove_prefix(prefix.size());
      break;
    }
  }
  // Architecture-specific and family variants (sm_90a, sm_100f) have the base limits.
  if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) s.remove_suffix(1);
  if (!allDigits(s) || s.size() < 2 || s.size() > 3) return bad();
  return archLimits(toInt(s.substr(0, s.size() - 1)), toInt(s.substr(s.size() - 1)));
}

namespace {
std::string_view withoutSuffix(std::string_view arch) {
  if (!arch.empty() && (arch.back() == 'a' || arch.back() == 'f')) arch.remove_suffix(1);
  return arch;
}
}  // namespace

std::string archSpecificTarget(std::string_view arch) {
  static constexpr std::string_view kSpecific[] = {"90", "100", "103", "110", "120", "121"};
  for (std::string_view prefix : {"sm_", "compute_"})
    if (arch.substr(0, prefix.size()) == prefix)
      for (auto number : kSpecific)
        if (arch.substr(prefix.size()) == number) return std::string(arch) + "a";
  return std::string(arch);
}

bool sameArchitecture(std::string_view a, std::string_view b) { return withoutSuffix(a) == withoutSuffix(b); }

}  // namespace kwb
