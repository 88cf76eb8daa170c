#pragma once
// Source, PTX and SASS side by side: listings annotated with the source line each instruction
// came from (PTX `.loc` directives; nvdisasm's `//## File "...", line N` comments where the CUBIN
// carries line information, which every compile here asks for with -lineinfo), and a line diff
// of two listings (two candidates' SASS or PTX), compared without the addresses and encodings
// that shift whenever one instruction is added. No Qt.
#include <string>
#include <string_view>
#include <vector>

namespace kwb {

struct ListingLine {
  std::string text;
  int sourceLine = 0;      // 1-based line of the candidate's source; 0 when none
  std::string sourceFile;  // as the compiler named it
};

struct Listing {
  std::vector<ListingLine> lines;
  bool hasLineInfo = false;  // at least one line maps to a source line
  // The listing's line indexes (0-based) that came from `sourceLine` of `file` (any file when
  // empty); empty when none.
  std::vector<int> linesFor(int sourceLine, std::string_view file = {}) const;
  // The source lines the listing covers, ascending.
  std::vector<int> sourceLines() const;
};

// SASS text from sassText(): the `//## File` comments become each following instruction's
// source line and are left out of the listing.
Listing annotateSass(std::string_view sass);
// PTX text: `.file N "name"` and `.loc N line col` give each following instruction its line;
// the directives stay in the listing.
Listing annotatePtx(std::string_view ptx);

// For comparing: a SASS line without its address (`/*0a30*/`) and encoding (`/* 0x... */`)
// comments and with runs of blanks made one; PTX lines without `.loc` directives (empty).
std::string normalizeListingLine(std::string_view line);

struct DiffLine {
  enum class Kind { Same, Removed, Added };
  Kind kind = Kind::Same;
  std::string text;  // the line as it was (from the first listing for Same and Removed)
};

// The shortest line diff of a against b (Myers' algorithm) over normalized lines, ignoring lines
// that normalize to nothing.
std::vector<DiffLine> diffListings(std::string_view a, std::string_view b);
// A unified-diff-like text: " line", "-line", "+line".
std::string formatDiff(const std::vector<DiffLine> &diff);

}  // namespace kwb
