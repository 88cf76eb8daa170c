#pragma once
// Limits on a TOML text's shape, checked by a lexical scan before toml++ parses it (issue 17, 3):
// toml++ recurses per part of a dotted key or table header, and a 100 KB task.toml holding one
// key of 50,000 parts crashed every reader of it (the GUI at every start). Strings and comments
// are skipped; a value's own dots (1.5, a date's fraction) are single and never reach the limit.
// Characters that are not ASCII are refused outside strings and comments, and first after a
// line-ending backslash: toml++ 3.3 meets undefined behaviour on them there (fuzz_manifest).
// Control characters other than tab, CR and LF are refused anywhere, as TOML does.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kwb {

struct TomlShapeLimits {
  std::size_t maxBytes = 1 << 20;  // a manifest of a few KB is usual
  std::size_t maxKeyParts = 32;    // a.b.c: 3 parts
  std::size_t maxKeyBytes = 256;   // one part of a key, bare or quoted
};

struct TomlShapeProblem {
  int line = 0;  // 1-based; 0 for the whole file
  std::string message;
};

// Nothing when the text is within the limits; else the first place that is not.
std::optional<TomlShapeProblem> checkTomlShape(std::string_view text, const TomlShapeLimits &limits = {});

}  // namespace kwb
