#include "core/task/toml_shape.h"

#include <cstdio>

namespace kwb {

namespace {

bool bareKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

}  // namespace

std::optional<TomlShapeProblem> checkTomlShape(std::string_view text, const TomlShapeLimits &limits) {
  if (text.size() > limits.maxBytes)
    return TomlShapeProblem{0, "the file is " + std::to_string(text.size()) + " bytes; a manifest may have at most " +
                                   std::to_string(limits.maxBytes)};
  int line = 1;
  std::size_t parts = 1;  // of the key being read, counted at its dots
  const std::size_t n = text.size();
  // The next character that is not a space or a tab, from i.
  auto nextSolid = [&](std::size_t i) {
    while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i;
    return i < n ? text[i] : '\n';
  };
  auto tooLong = [&](std::size_t bytes, std::size_t end, int at) -> std::optional<TomlShapeProblem> {
    const char next = nextSolid(end);
    if (bytes > limits.maxKeyBytes && (next == '.' || next == '=' || next == ']'))
      return TomlShapeProblem{at, "a key part of " + std::to_string(bytes) + " bytes; at most " +
                                        std::to_string(limits.maxKeyBytes) + " are allowed"};
    return std::nullopt;
  };
  // Control characters: TOML allows none but tab anywhere (in strings they are escaped). Refused
  // before the scan below, whose idea of where strings end they would otherwise upset as they
  // upset toml++'s (a NUL after a value sent toml++ 3.3 into the undefined behaviour described
  // below on a later string's non-ASCII character; found by tests/fuzz/fuzz_manifest.cpp).
  {
    int at = 1;
    for (std::size_t i = 0; i < n; ++i) {
      const auto b = static_cast<unsigned char>(text[i]);
      if (b == '\n') ++at;
      else if ((b < 0x20 && b != '\t' && b != '\r') || b == 0x7f) {
        char code[8];
        std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(b));
        return TomlShapeProblem{at, std::string("a control character (") + code +
                                        "); TOML allows none but tab (in a string, write it as \\uXXXX)"};
      }
    }
  }
  for (std::size_t i = 0; i < n;) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      parts = 1;
      ++i;
    } else if (c == '#') {
      while (i < n && text[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      const bool basic = c == '"';
      const bool multi = i + 2 < n && text[i + 1] == c && text[i + 2] == c;
      const int startLine = line;
      std::size_t j = i + (multi ? 3 : 1);
      bool closed = false;
      while (j < n) {
        if (basic && text[j] == '\\' && j + 1 < n) {
          const char after = text[j + 1];
          if (multi && (after == ' ' || after == '\t' || after == '\r' || after == '\n')) {
            // A line-ending backslash: toml++ 3.3 tests what follows the skipped blanks for
            // Unicode whitespace, which is undefined behaviour for most characters that are not
            // ASCII (it reaches __builtin_unreachable; found by tests/fuzz/fuzz_manifest.cpp).
            std::size_t k = j + 1;
            while (k < n && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r' || text[k] == '\n')) {
              if (text[k] == '\n') ++line;
              ++k;
            }
            if (k < n && static_cast<unsigned char>(text[k]) >= 0x80)
              return TomlShapeProblem{line, "a character that is not ASCII first after a line-ending backslash; write it "
                                            "as \\uXXXX or put it after an ASCII character"};
            j = k;
            continue;
          }
          if (after == '\n') ++line;
          j += 2;
          continue;
        }
        if (text[j] == '\n') {
          if (!multi) break;  // unterminated: toml++ says where
          ++line;
        }
        if (text[j] == c && (!multi || (j + 2 < n && text[j + 1] == c && text[j + 2] == c))) {
          closed = true;
          break;
        }
        ++j;
      }
      const std::size_t end = closed ? j + (multi ? 3 : 1) : j;
      if (!multi)
        if (auto p = tooLong(end - i - 2, end, startLine)) return p;
      i = end;
    } else if (c == '.') {
      if (++parts > limits.maxKeyParts)
        return TomlShapeProblem{line, "a key of more than " + std::to_string(limits.maxKeyParts) +
                                          " dotted parts; each part nests a table"};
      ++i;
    } else if (bareKeyChar(c)) {
      std::size_t j = i;
      while (j < n && bareKeyChar(text[j])) ++j;
      if (auto p = tooLong(j - i, j, line)) return p;
      i = j;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      // TOML allows them only in strings and comments; toml++ 3.3 tests them for Unicode
      // whitespace, undefined behaviour for most (see above): refused here with the rule.
      return TomlShapeProblem{line, "a character that is not ASCII outside a string or a comment (TOML allows them "
                                    "only there)"};
    } else {
      if (c != ' ' && c != '\t' && c != '\r') parts = 1;  // '=', brackets, braces, commas: a new key
      ++i;
    }
  }
  return std::nullopt;
}

}  // namespace kwb
