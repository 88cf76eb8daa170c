#include "core/compile/source_views.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace kwb {

namespace {

std::vector<std::string> splitLines(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(start, end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
    start = end + 1;
  }
  return out;
}

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

}  // namespace

std::vector<int> Listing::linesFor(int sourceLine, std::string_view file) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].sourceLine == sourceLine && (file.empty() || lines[i].sourceFile == file)) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> Listing::sourceLines() const {
  std::set<int> s;
  for (const auto &l : lines)
    if (l.sourceLine > 0) s.insert(l.sourceLine);
  return {s.begin(), s.end()};
}

Listing annotateSass(std::string_view sass) {
  static const std::regex marker(R"re(^\s*//## File "([^"]*)", line (\d+))re");
  Listing out;
  int line = 0;
  std::string file;
  for (auto &text : splitLines(sass)) {
    std::smatch m;
    if (std::regex_search(text, m, marker)) {
      file = m[1].str();
      line = std::stoi(m[2].str());
      continue;
    }
    // A new function starts with its label: nothing before it carries over.
    const std::string t = trim(text);
    if (!t.empty() && t.back() == ':' && t.find(' ') == std::string::npos) line = 0;
    const bool instruction = t.rfind("/*", 0) == 0;  // "/*0010*/  IMAD ..."
    ListingLine l;
    l.text = std::move(text);
    if (instruction && line > 0) {
      l.sourceLine = line;
      l.sourceFile = file;
      out.hasLineInfo = true;
    }
    out.lines.push_back(std::move(l));
  }
  return out;
}

Listing annotatePtx(std::string_view ptx) {
  static const std::regex fileDirective(R"re(^\s*\.file\s+(\d+)\s+"([^"]*)")re");
  static const std::regex locDirective(R"re(^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+)re");
  Listing out;
  // NVRTC writes the .file directives at the end: read them first.
  auto all = splitLines(ptx);
  std::map<int, std::string> files;
  for (const auto &text : all) {
    std::smatch m;
    if (std::regex_search(text, m, fileDirective)) files[std::stoi(m[1].str())] = m[2].str();
  }
  int line = 0;
  std::string file;
  for (auto &text : all) {
    std::smatch m;
    ListingLine l;
    if (std::regex_search(text, m, fileDirective)) {
      // read above
    } else if (std::regex_search(text, m, locDirective)) {
      const auto it = files.find(std::stoi(m[1].str()));
      file = it == files.end() ? std::string() : it->second;
      line = std::stoi(m[2].str());
    } else {
      const std::string t = trim(text);
      if (t == "}") {
        line = 0;  // the end of a function
      } else if (line > 0 && !t.empty() && t[0] != '/' && t[0] != '.' && t[0] != '{') {
        l.sourceLine = line;
        l.sourceFile = file;
        out.hasLineInfo = true;
      }
    }
    l.text = std::move(text);
    out.lines.push_back(std::move(l));
  }
  return out;
}

std::string normalizeListingLine(std::string_view line) {
  static const std::regex address(R"(/\*[0-9a-fA-F]{4,}\*/)");
  static const std::regex encoding(R"(/\*\s*0x[0-9a-fA-F]+\s*\*/)");
  static const std::regex blanks(R"(\s+)");
  const std::string t = trim(line);
  if (t.rfind(".loc", 0) == 0 || t.rfind("//##", 0) == 0) return {};
  std::string s = std::regex_replace(t, address, "");
  s = std::regex_replace(s, encoding, "");
  s = std::regex_replace(s, blanks, " ");
  return trim(s);
}

std::vector<DiffLine> diffListings(std::string_view a, std::string_view b) {
  std::vector<std::string> ra, rb, na, nb;
  for (auto &l : splitLines(a))
    if (auto n = normalizeListingLine(l); !n.empty()) {
      na.push_back(std::move(n));
      ra.push_back(std::move(l));
    }
  for (auto &l : splitLines(b))
    if (auto n = normalizeListingLine(l); !n.empty()) {
      nb.push_back(std::move(n));
      rb.push_back(std::move(l));
    }
  // Myers' O((N+M)D) greedy algorithm, keeping each round's frontier to walk the path back.
  const int n = static_cast<int>(na.size()), m = static_cast<int>(nb.size());
  const int max = n + m;
  std::vector<int> v(2 * max + 2, 0);
  std::vector<std::vector<int>> trace;
  int found = -1;
  for (int d = 0; d <= max && found < 0; ++d) {
    trace.push_back(v);
    for (int k = -d; k <= d; k += 2) {
      int x = (k == -d || (k != d && v[k - 1 + max] < v[k + 1 + max])) ? v[k + 1 + max] : v[k - 1 + max] + 1;
      int y = x - k;
      while (x < n && y < m && na[x] == nb[y]) ++x, ++y;
      v[k + max] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  std::vector<DiffLine> out;
  int x = n, y = m;
  for (int d = found; d > 0; --d) {
    const auto &pv = trace[d];
    const int k = x - y;
    const bool down = k == -d || (k != d && pv[k - 1 + max] < pv[k + 1 + max]);
    const int pk = down ? k + 1 : k - 1;
    const int px = pv[pk + max], py = px - pk;
    while (x > px + (down ? 0 : 1) && y > py + (down ? 1 : 0)) {
      out.push_back({DiffLine::Kind::Same, ra[--x]});
      --y;
    }
    if (down)
      out.push_back({DiffLine::Kind::Added, rb[--y]});
    else
      out.push_back({DiffLine::Kind::Removed, ra[--x]});
  }
  while (x > 0 && y > 0) {
    out.push_back({DiffLine::Kind::Same, ra[--x]});
    --y;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::string formatDiff(const std::vector<DiffLine> &diff) {
  std::string out;
  for (const auto &d : diff) {
    out += d.kind == DiffLine::Kind::Same ? ' ' : d.kind == DiffLine::Kind::Removed ? '-' : '+';
    out += d.text;
    out += '\n';
  }
  return out;
}

}  // namespace kwb
