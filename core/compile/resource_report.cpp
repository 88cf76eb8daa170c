#include "core/compile/resource_report.h"

#include "core/compile/arch_limits.h"

#include <charconv>
#include <optional>

namespace kwb {

namespace {

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The number that starts `s` (after blanks), and what follows it.
std::optional<std::pair<long long, std::string_view>> leadingNumber(std::string_view s) {
  s = trim(s);
  long long value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return std::make_pair(value, trim(s.substr(static_cast<std::size_t>(end - s.data()))));
}

int clampInt(long long v) { return v > 0x7fffffff ? 0x7fffffff : static_cast<int>(v); }

// Splits "a, b, c" into its items.
std::vector<std::string_view> items(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const auto comma = s.find(',');
    out.push_back(trim(s.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    s = s.substr(comma + 1);
  }
  return out;
}

// The text after "ptxas info    :" (or nothing when the line is not one).
std::optional<std::string_view> infoText(std::string_view line) {
  if (!startsWith(line, "ptxas")) return std::nullopt;
  line = trim(line.substr(5));
  if (!startsWith(line, "info")) return std::nullopt;
  line = trim(line.substr(4));
  if (!startsWith(line, ":")) return std::nullopt;
  return trim(line.substr(1));
}

std::string_view quoted(std::string_view s) {
  const auto open = s.find('\'');
  if (open == std::string_view::npos) return {};
  const auto close = s.find('\'', open + 1);
  if (close == std::string_view::npos) return {};
  return s.substr(open + 1, close - open - 1);
}

}  // namespace

std::vector<KernelResources> parseResourceReport(std::string_view log, std::string_view arch) {
  std::vector<KernelResources> kernels;
  KernelResources *entry = nullptr;  // the entry being compiled (Used ... lines are about it)
  std::string propertiesOf;          // the function the next stack-frame line is about
  bool skipping = false;             // compiling for an architecture not asked about

  std::size_t start = 0;
  while (start <= log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string_view line = trim(log.substr(start, end - start));
    start = end + 1;

    if (auto info = infoText(line)) {
      if (startsWith(*info, "Compiling entry function")) {
        const std::string_view rest = info->substr(24);
        const auto name = quoted(rest);
        const auto forArch = rest.find(" for ");
        const std::string_view target = forArch == std::string_view::npos ? std::string_view{} : quoted(rest.substr(forArch));
        skipping = !arch.empty() && !target.empty() && !sameArchitecture(target, arch);
        entry = nullptr;
        if (skipping) continue;
        kernels.push_back(KernelResources{.name = std::string(name)});
        entry = &kernels.back();
      } else if (startsWith(*info, "Function properties for ")) {
        propertiesOf = std::string(trim(info->substr(24)));
      } else if (startsWith(*info, "Used ") && entry && !skipping) {
        for (auto item : items(*info)) {
          if (startsWith(item, "Used ")) item = item.substr(5);
          if (startsWith(item, "used ")) item = item.substr(5);
          const auto number = leadingNumber(item);
          if (!number) continue;
          const auto [value, what] = *number;
          if (startsWith(what, "registers")) entry->registers = clampInt(value);
          else if (startsWith(what, "barriers")) entry->barriers = clampInt(value);
          else if (what == "bytes smem") entry->sharedStaticBytes = clampInt(value);
          else if (what == "bytes cmem[0]") entry->constantBytes = clampInt(value);
        }
      }
      continue;
    }
    // "ptxas         .     8 bytes stack frame, ..." (NVRTC) or "8 bytes stack frame, ..." (nvcc)
    std::string_view figures = line;
    if (startsWith(figures, "ptxas")) {
      figures = trim(figures.substr(5));
      if (!startsWith(figures, ".")) continue;
      figures = figures.substr(1);
    }
    if (figures.find("bytes stack frame") == std::string_view::npos || skipping) continue;
    KernelResources *target = nullptr;
    for (auto &k : kernels)
      if (k.name == propertiesOf) target = &k;
    if (!target) continue;  // a device function's frame, not a kernel's
    for (auto item : items(figures)) {
      const auto number = leadingNumber(item);
      if (!number) continue;
      const auto [value, what] = *number;
      if (what == "bytes stack frame") target->stackFrameBytes = clampInt(value);
      else if (what == "bytes spill stores") target->spillStoreBytes = clampInt(value);
      else if (what == "bytes spill loads") target->spillLoadBytes = clampInt(value);
    }
  }
  return kernels;
}

void addCubinFigures(std::vector<KernelResources> &kernels, const ElfContents &cubin) {
  for (const auto &name : cubinKernelNames(cubin)) {
    KernelResources *k = nullptr;
    for (auto &existing : kernels)
      if (existing.name == name) k = &existing;
    if (!k) {
      kernels.push_back(KernelResources{.name = name});
      k = &kernels.back();
    }
    if (k->constantBytes == 0)
      if (auto size = sectionSize(cubin, ".nv.constant0." + name)) k->constantBytes = clampInt(static_cast<long long>(*size));
    if (k->sharedStaticBytes == 0)
      if (auto size = sectionSize(cubin, ".nv.shared." + name)) k->sharedStaticBytes = clampInt(static_cast<long long>(*size));
  }
}

}  // namespace kwb
