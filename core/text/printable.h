#pragma once
// Text from a file or a server shown in a terminal or a message (issue 17, 6): control
// characters — C0, DEL and the C1 range, a terminal's escape sequences among them — written as
// escapes (\n, \t, \x1b, \u009b), so a key cannot forge a line ("/etc/passwd:1: valid") or
// recolour the terminal; and a length cap, so a 10 MB key does not make a 10 MB message.
#include <cstddef>
#include <string>
#include <string_view>

namespace kwb {

// At most about maxBytes of the text (cut at a character boundary, then "… (N bytes)").
std::string printable(std::string_view text, std::size_t maxBytes = 1024);

// v with `digits` decimals ("%.*f"): figures in tables, journals and prompts.
std::string fixed(double v, int digits);

// The text on one line (newlines and tabs as spaces), at most maxBytes of it, cut at a character
// boundary with "..." after: for a table cell or a prompt line.
std::string clippedLine(std::string_view text, std::size_t maxBytes);

// The text without the newlines and carriage returns it ends with: a program's output as the end
// of a one-line message.
std::string withoutLineEnds(std::string text);

}  // namespace kwb
