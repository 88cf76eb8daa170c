#include "core/text/line_diff.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

namespace kwb {

namespace {

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

}  // namespace

std::vector<LineEdit> lineDiff(const std::string &a, const std::string &b) {
  const auto x = splitLines(a), y = splitLines(b);
  // Common head and tail first: most edits of a kernel touch a few lines in the middle.
  std::size_t head = 0;
  while (head < x.size() && head < y.size() && x[head] == y[head]) ++head;
  std::size_t tail = 0;
  while (tail < x.size() - head && tail < y.size() - head && x[x.size() - 1 - tail] == y[y.size() - 1 - tail]) ++tail;
  const std::size_t n = x.size() - head - tail, m = y.size() - head - tail;

  std::vector<LineEdit> out;
  auto same = [&](std::size_t i, std::size_t j) { out.push_back({LineEdit::Kind::Same, i + 1, j + 1, x[i]}); };
  for (std::size_t i = 0; i < head; ++i) same(i, i);
  if (n * m > kMaxDiffCells) {
    for (std::size_t i = 0; i < n; ++i) out.push_back({LineEdit::Kind::Removed, head + i + 1, 0, x[head + i]});
    for (std::size_t j = 0; j < m; ++j) out.push_back({LineEdit::Kind::Added, 0, head + j + 1, y[head + j]});
  } else {
    // lcs[i][j]: the longest common subsequence of x[head+i..] and y[head+j..].
    std::vector<std::uint32_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t & { return lcs[i * (m + 1) + j]; };
    for (std::size_t i = n; i-- > 0;)
      for (std::size_t j = m; j-- > 0;)
        at(i, j) = x[head + i] == y[head + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[head + i] == y[head + j]) {
        same(head + i, head + j);
        ++i, ++j;
      } else if (j < m && (i == n || at(i, j + 1) > at(i + 1, j))) {
        out.push_back({LineEdit::Kind::Added, 0, head + j + 1, y[head + j]});
        ++j;
      } else {
        out.push_back({LineEdit::Kind::Removed, head + i + 1, 0, x[head + i]});
        ++i;
      }
    }
  }
  for (std::size_t k = 0; k < tail; ++k) same(x.size() - tail + k, y.size() - tail + k);
  return out;
}

std::vector<SideBySideRow> sideBySide(const std::string &a, const std::string &b) {
  const auto edits = lineDiff(a, b);
  std::vector<SideBySideRow> rows;
  std::size_t k = 0;
  while (k < edits.size()) {
    if (edits[k].kind == LineEdit::Kind::Same) {
      SideBySideRow r;
      r.oldLine = edits[k].oldLine;
      r.newLine = edits[k].newLine;
      r.oldText = r.newText = edits[k].text;
      rows.push_back(std::move(r));
      ++k;
      continue;
    }
    // A run of changes: its removed lines, then its added ones, whichever order they came in.
    std::vector<const LineEdit *> removed, added;
    while (k < edits.size() && edits[k].kind != LineEdit::Kind::Same) {
      (edits[k].kind == LineEdit::Kind::Removed ? removed : added).push_back(&edits[k]);
      ++k;
    }
    const std::size_t n = std::max(removed.size(), added.size());
    for (std::size_t i = 0; i < n; ++i) {
      SideBySideRow r;
      if (i < removed.size()) r.oldLine = removed[i]->oldLine, r.oldText = removed[i]->text;
      if (i < added.size()) r.newLine = added[i]->newLine, r.newText = added[i]->text;
      if (i < removed.size() && i < added.size()) {
        r.kind = SideBySideRow::Kind::Changed;
        const std::string &x = r.oldText, &y = r.newText;
        std::size_t prefix = 0;
        while (prefix < x.size() && prefix < y.size() && x[prefix] == y[prefix]) ++prefix;
        std::size_t suffix = 0;
        while (suffix < x.size() - prefix && suffix < y.size() - prefix &&
               x[x.size() - 1 - suffix] == y[y.size() - 1 - suffix])
          ++suffix;
        r.oldFrom = r.newFrom = prefix;
        r.oldTo = x.size() - suffix;
        r.newTo = y.size() - suffix;
      } else {
        r.kind = i < removed.size() ? SideBySideRow::Kind::Removed : SideBySideRow::Kind::Added;
      }
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

std::string unifiedDiff(const std::string &a, const std::string &b, const std::string &oldName,
                        const std::string &newName, std::size_t context) {
  const auto edits = lineDiff(a, b);
  std::ostringstream s;
  bool any = false;
  std::size_t k = 0;
  while (k < edits.size()) {
    // The next change, and its hunk: context before, changes joined while their gaps fit
    // within two contexts, context after.
    while (k < edits.size() && edits[k].kind == LineEdit::Kind::Same) ++k;
    if (k == edits.size()) break;
    const std::size_t first = k >= context ? k - context : 0;
    std::size_t last = k;  // last changed edit in the hunk
    for (std::size_t q = k; q < edits.size(); ++q) {
      if (edits[q].kind != LineEdit::Kind::Same) {
        last = q;
      } else if (q - last > 2 * context) {
        break;
      }
    }
    const std::size_t end = std::min(edits.size(), last + 1 + context);
    std::size_t oldStart = 0, newStart = 0, oldCount = 0, newCount = 0;
    // Where the hunk starts on each side: the first line of that side in it, or (none) the
    // line before, as diff -u writes it.
    std::size_t oldBefore = 0, newBefore = 0;
    for (std::size_t q = 0; q < first; ++q) {
      if (edits[q].oldLine) oldBefore = edits[q].oldLine;
      if (edits[q].newLine) newBefore = edits[q].newLine;
    }
    for (std::size_t q = first; q < end; ++q) {
      if (edits[q].kind != LineEdit::Kind::Added) {
        if (!oldCount) oldStart = edits[q].oldLine;
        ++oldCount;
      }
      if (edits[q].kind != LineEdit::Kind::Removed) {
        if (!newCount) newStart = edits[q].newLine;
        ++newCount;
      }
    }
    if (!any) {
      s << "--- " << oldName << "\n+++ " << newName << "\n";
      any = true;
    }
    auto range = [](std::size_t start, std::size_t count, std::size_t before) {
      const std::string from = std::to_string(count ? start : before);
      return count == 1 ? from : from + "," + std::to_string(count);
    };
    s << "@@ -" << range(oldStart, oldCount, oldBefore) << " +" << range(newStart, newCount, newBefore) << " @@\n";
    for (std::size_t q = first; q < end; ++q) {
      const char mark = edits[q].kind == LineEdit::Kind::Same ? ' ' : edits[q].kind == LineEdit::Kind::Removed ? '-' : '+';
      s << mark << edits[q].text << "\n";
    }
    k = end;
  }
  return s.str();
}

}  // namespace kwb
