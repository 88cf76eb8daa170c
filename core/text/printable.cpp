#include "core/text/printable.h"

#include <algorithm>
#include <cstdio>

namespace kwb {

std::string printable(std::string_view text, std::size_t maxBytes) {
  std::string out;
  out.reserve(std::min(text.size(), maxBytes) + 16);
  std::size_t i = 0;
  for (; i < text.size() && out.size() < maxBytes; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    char escape[8] = {};
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(escape, sizeof escape, "\\x%02x", c);
      out += escape;
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {  // U+0080..U+009F in UTF-8
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      out += escape;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (i < text.size()) {
    // Not in the middle of a UTF-8 sequence.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xc0) == 0x80) out.pop_back();
    if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xc0) == 0xc0) out.pop_back();
    out += "\u2026 (" + std::to_string(text.size()) + " bytes)";
  }
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string clippedLine(std::string_view text, std::size_t maxBytes) {
  std::string out(text);
  for (auto &ch : out)
    if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
  if (out.size() <= maxBytes) return out;
  std::size_t end = maxBytes;
  while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;  // not inside a UTF-8 sequence
  out.resize(end);
  return out + "...";
}

std::string withoutLineEnds(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace kwb
