#pragma once
// A line diff of two texts (no Qt): the longest common subsequence of their lines, as edits and
// as a unified diff with context (the form `diff -u` and `git diff` print). For kernel sources
// of a few hundred lines; the table is lines(a) x lines(b) cells, so texts beyond kMaxCells are
// compared as one replaced block.
#include <cstddef>
#include <string>
#include <vector>

namespace kwb {

struct LineEdit {
  enum class Kind { Same, Removed, Added };
  Kind kind = Kind::Same;
  std::size_t oldLine = 0, newLine = 0;  // 1-based; 0 where the line is not on that side
  std::string text;                      // without its newline
};

inline constexpr std::size_t kMaxDiffCells = 16'000'000;

std::vector<LineEdit> lineDiff(const std::string &a, const std::string &b);

// The diff as two columns, row by row: unchanged lines side by side; a run of removed lines
// followed by added ones paired row by row as changed lines (the rest of the longer run alone),
// each pair with the part that differs marked, between the two lines' common prefix and suffix.
struct SideBySideRow {
  enum class Kind { Same, Changed, Removed, Added };
  Kind kind = Kind::Same;
  std::size_t oldLine = 0, newLine = 0;  // 1-based; 0 where the row has no line on that side
  std::string oldText, newText;
  // In a Changed row, the bytes that differ: [oldFrom, oldTo) of oldText, [newFrom, newTo) of newText.
  std::size_t oldFrom = 0, oldTo = 0, newFrom = 0, newTo = 0;
};

std::vector<SideBySideRow> sideBySide(const std::string &a, const std::string &b);

// "--- OLD\n+++ NEW\n@@ -l,n +l,n @@\n..." with `context` unchanged lines around each change;
// empty when the texts' lines are the same.
std::string unifiedDiff(const std::string &a, const std::string &b, const std::string &oldName,
                        const std::string &newName, std::size_t context = 3);

}  // namespace kwb
