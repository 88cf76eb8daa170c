#include "core/compile/diagnostics.h"

#include <array>
#include <cctype>
#include <charconv>
#include <optional>

namespace kwb {

namespace {

using Severity = Diagnostic::Severity;

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

bool isSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view trimLeft(std::string_view s) {
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view trimRight(std::string_view s) {
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view trim(std::string_view s) { return trimLeft(trimRight(s)); }

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

int toInt(std::string_view digits) {
  int value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return value;
}

std::string_view baseName(std::string_view path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// A line holding only a caret (and blanks): the front end's pointer under the quoted source.
bool isCaretLine(std::string_view line) {
  const auto caret = line.find('^');
  if (caret == std::string_view::npos) return false;
  for (std::size_t i = 0; i < line.size(); ++i)
    if (i != caret && !isSpace(line[i])) return false;
  return true;
}

struct Parsed {
  std::string file;
  int line = 0;
  int column = 0;
  Severity severity = Severity::Error;
  std::string message;
  std::string code;
  bool skip = false;  // recognised, but not a diagnostic (ptxas info, gcc context lines)
};

// The front end's words for a diagnostic's kind, longest first so "fatal error" wins over "error".
struct KindWord {
  std::string_view word;
  Severity severity;
};
constexpr std::array<KindWord, 8> kFrontEndKinds{{{"catastrophic error", Severity::Error},
                                                  {"command-line error", Severity::Error},
                                                  {"internal error", Severity::Error},
                                                  {"fatal error", Severity::Error},
                                                  {"error", Severity::Error},
                                                  {"warning", Severity::Warning},
                                                  {"remark", Severity::Note},
                                                  {"note", Severity::Note}}};

// name.cu(12): warning #177-D: message
std::optional<Parsed> parseFrontEndHeader(std::string_view line) {
  for (std::size_t close = line.find("): "); close != std::string_view::npos; close = line.find("): ", close + 1)) {
    std::size_t digits = close;
    while (digits > 0 && isDigit(line[digits - 1])) --digits;
    if (digits == close || digits < 2 || line[digits - 1] != '(') continue;
    std::string_view file = line.substr(0, digits - 1);
    if (file.empty() || isSpace(file.front())) continue;
    std::string_view rest = line.substr(close + 3);
    for (const auto &kind : kFrontEndKinds) {
      if (!startsWith(rest, kind.word)) continue;
      std::string_view after = rest.substr(kind.word.size());
      std::string code;
      if (startsWith(after, " #")) {
        const auto colon = after.find(':');
        if (colon == std::string_view::npos) break;
        code = std::string(after.substr(2, colon - 2));
        after = after.substr(colon);
      }
      if (!startsWith(after, ":")) break;
      return Parsed{.file = std::string(file),
                    .line = toInt(line.substr(digits, close - digits)),
                    .severity = kind.severity,
                    .message = std::string(trim(after.substr(1))),
                    .code = std::move(code)};
    }
  }
  return std::nullopt;
}

// At end of source: error: expected a "}"     (the front end, with no file or line: the error is
// at the end of the compiled source; issue 17, 6: it was dropped, leaving only its notes)
constexpr std::string_view kEndOfSource = "At end of source: ";
std::optional<Parsed> parseEndOfSource(std::string_view line) {
  if (!startsWith(line, kEndOfSource)) return std::nullopt;
  // The same kinds and codes as a located record: read as one with a placeholder location.
  auto p = parseFrontEndHeader("end(1): " + std::string(line.substr(kEndOfSource.size())));
  if (!p) return std::nullopt;
  p->file.clear();
  p->line = 0;
  p->message += " (at the end of the source)";
  return p;
}

// ptxas error   : msg     ptxas /tmp/x.ptx, line 27; error   : msg     nvlink error   : msg
// nvcc fatal   : msg      nvrtc: error: msg
std::optional<Parsed> parseToolLine(std::string_view line) {
  static constexpr std::array<std::string_view, 6> kTools{"ptxas", "nvlink", "nvcc", "fatbinary", "cicc", "nvrtc"};
  for (std::string_view tool : kTools) {
    if (!startsWith(line, tool) || line.size() == tool.size()) continue;
    std::string_view rest = line.substr(tool.size());
    if (rest.front() == ':') rest.remove_prefix(1);
    if (rest.empty() || !isSpace(rest.front())) continue;
    rest = trimLeft(rest);
    int ptxLine = 0;
    // A location in the PTX: "<file>, line 27; error : ..."
    if (const auto semicolon = rest.find("; "); semicolon != std::string_view::npos) {
      const std::string_view where = rest.substr(0, semicolon);
      if (const auto at = where.rfind(", line "); at != std::string_view::npos) {
        ptxLine = toInt(where.substr(at + 7));
        rest = rest.substr(semicolon + 2);
      }
    }
    std::size_t wordEnd = 0;
    while (wordEnd < rest.size() && std::isalpha(static_cast<unsigned char>(rest[wordEnd]))) ++wordEnd;
    const std::string_view word = rest.substr(0, wordEnd);
    std::string_view after = trimLeft(rest.substr(wordEnd));
    if (!startsWith(after, ":")) continue;
    const std::string_view message = trim(after.substr(1));
    Parsed p;
    if (word == "info") {
      p.skip = true;
      return p;
    }
    if (word == "error" || word == "fatal") {
      p.severity = Severity::Error;
    } else if (word == "warning") {
      p.severity = Severity::Warning;
    } else {
      continue;
    }
    p.message = std::string(tool) + ": " + std::string(message);
    if (ptxLine > 0) p.message += " (PTX line " + std::to_string(ptxLine) + ")";
    return p;
  }
  return std::nullopt;
}

// file.cu:12:5: error: msg [-Wcode]     file.cu:4: Error: msg (the assembler)
// file.cu:12:5:   required from here    (context: a note)
std::optional<Parsed> parseHostCompilerLine(std::string_view line) {
  for (std::size_t colon = line.find(':'); colon != std::string_view::npos; colon = line.find(':', colon + 1)) {
    if (colon == 0 || isSpace(line.front())) return std::nullopt;
    std::size_t pos = colon + 1;
    std::size_t digitsEnd = pos;
    while (digitsEnd < line.size() && isDigit(line[digitsEnd])) ++digitsEnd;
    if (digitsEnd == pos || digitsEnd >= line.size() || line[digitsEnd] != ':') continue;
    Parsed p;
    p.file = std::string(line.substr(0, colon));
    p.line = toInt(line.substr(pos, digitsEnd - pos));
    pos = digitsEnd + 1;
    std::size_t columnEnd = pos;
    while (columnEnd < line.size() && isDigit(line[columnEnd])) ++columnEnd;
    if (columnEnd > pos && columnEnd < line.size() && line[columnEnd] == ':') {
      p.column = toInt(line.substr(pos, columnEnd - pos));
      pos = columnEnd + 1;
    }
    if (pos >= line.size() || !isSpace(line[pos])) continue;
    const std::string_view rest = trimLeft(line.substr(pos));
    static constexpr std::array<KindWord, 6> kKinds{{{"fatal error: ", Severity::Error},
                                                     {"error: ", Severity::Error},
                                                     {"Error: ", Severity::Error},
                                                     {"warning: ", Severity::Warning},
                                                     {"Warning: ", Severity::Warning},
                                                     {"note: ", Severity::Note}}};
    for (const auto &kind : kKinds) {
      if (!startsWith(rest, kind.word)) continue;
      std::string_view message = trim(rest.substr(kind.word.size()));
      // gcc names the warning's switch at the end: "... [-Wunused-variable]"
      if (endsWith(message, "]"))
        if (const auto open = message.rfind(" [-"); open != std::string_view::npos) {
          p.code = std::string(message.substr(open + 2, message.size() - open - 3));
          message = trimRight(message.substr(0, open));
        }
      p.severity = kind.severity;
      p.message = std::string(message);
      return p;
    }
    if (startsWith(rest, "required from") || startsWith(rest, "required by") || startsWith(rest, "in ")) {
      p.severity = Severity::Note;
      p.message = std::string(rest);
      return p;
    }
    if (startsWith(rest, "undefined reference to")) {
      p.severity = Severity::Error;
      p.message = "linker: " + std::string(rest);
      return p;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// /usr/bin/ld: ...     collect2: error: ld returned 1 exit status     x.o:(.text+0x1d): undefined reference to `f'
std::optional<Parsed> parseLinkerLine(std::string_view line) {
  if (startsWith(line, "collect2: error: ")) {
    return Parsed{.severity = Severity::Error, .message = "linking failed: " + std::string(line.substr(17))};
  }
  if (const auto at = line.find("undefined reference to"); at != std::string_view::npos)
    return Parsed{.severity = Severity::Error, .message = "linker: " + std::string(trimRight(line.substr(at)))};
  const auto colon = line.find(": ");
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view program = baseName(line.substr(0, colon));
  if (program != "ld" && !startsWith(program, "ld.")) return std::nullopt;
  std::string_view rest = trim(line.substr(colon + 2));
  if (endsWith(rest, ":")) return Parsed{.skip = true};  // context: "x.o: in function `f':"
  Parsed p;
  if (const auto w = rest.find("warning: "); w != std::string_view::npos) {
    p.severity = Severity::Warning;
    rest = rest.substr(w + 9);
  }
  p.message = "linker: " + std::string(rest);
  return p;
}

bool isSummaryLine(std::string_view line) {
  const std::string_view t = trim(line);
  return t.find("detected in the compilation of") != std::string_view::npos || t == "Compilation terminated." ||
         t == "Error limit reached." || startsWith(t, "Remark: The warnings can be suppressed");
}

// A line that starts a new record (so it ends the block of the one before).
bool startsRecord(std::string_view line) {
  return parseFrontEndHeader(line) || startsWith(line, kEndOfSource) || parseToolLine(line) ||
         parseHostCompilerLine(line) || isSummaryLine(line);
}

class Parser {
 public:
  explicit Parser(const DiagnosticContext &context)
      : context_(context), sourceLines_(splitLines(context.source)), compiledBase_(baseName(context.compiledName)) {}

  std::vector<Diagnostic> run(std::string_view output) {
    const auto lines = splitLines(output);
    for (std::size_t i = 0; i < lines.size();) {
      if (auto header = parseFrontEndHeader(lines[i])) {
        std::size_t end = i + 1;
        while (end < lines.size() && !trim(lines[end]).empty() && !startsRecord(lines[end])) ++end;
        frontEndRecord(std::move(*header), {lines.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                            lines.begin() + static_cast<std::ptrdiff_t>(end)});
        i = end;
        continue;
      }
      if (auto end = parseEndOfSource(lines[i])) {
        end->line = static_cast<int>(sourceLines_.size());  // its last line
        add(std::move(*end), true);
      } else if (auto tool = parseToolLine(lines[i])) {
        add(std::move(*tool), true);
      } else if (auto host = parseHostCompilerLine(lines[i])) {
        add(std::move(*host), false);
      } else if (auto linker = parseLinkerLine(lines[i])) {
        add(std::move(*linker), true);
      }
      ++i;
    }
    return std::move(out_);
  }

 private:
  bool isCompiledFile(std::string_view file) const {
    return !compiledBase_.empty() && baseName(file) == compiledBase_;
  }

  std::string fileFor(std::string_view reported) const {
    return reported.empty() || isCompiledFile(reported) ? context_.sourceName : std::string(reported);
  }

  void add(Parsed p, bool aboutCandidate) {
    if (p.skip) return;
    out_.push_back(Diagnostic{.file = aboutCandidate ? context_.sourceName : fileFor(p.file),
                              .line = p.line,
                              .column = p.column,
                              .severity = p.severity,
                              .message = std::move(p.message),
                              .code = std::move(p.code)});
  }

  // The column a caret points at. The front end quotes the line indented by two blanks (nvcc
  // quotes it after preprocessing, so macros may be expanded): check against the real line.
  int caretColumn(const Parsed &header, std::string_view quoted, std::string_view caretLine) const {
    const int caret = static_cast<int>(caretLine.find('^'));
    const int fallback = caret >= 2 ? caret - 1 : caret + 1;
    if (!isCompiledFile(header.file) || header.line < 1 || header.line > static_cast<int>(sourceLines_.size()))
      return fallback;
    const std::string_view real = trimRight(sourceLines_[static_cast<std::size_t>(header.line - 1)]);
    const std::string_view shown = trimRight(quoted);
    if (shown.size() >= 2 && shown.substr(2) == real) return fallback;
    // The text from the caret on is usually untouched by expansion before it.
    if (static_cast<std::size_t>(caret) < shown.size()) {
      const std::string_view tail = shown.substr(static_cast<std::size_t>(caret));
      if (endsWith(real, tail)) return static_cast<int>(real.size() - tail.size()) + 1;
    }
    return fallback;
  }

  void frontEndRecord(Parsed header, std::vector<std::string_view> block) {
    std::size_t caret = block.size();
    for (std::size_t k = 0; k < block.size(); ++k)
      if (isCaretLine(block[k])) {
        caret = k;
        break;
      }
    if (caret < block.size() && caret > 0) header.column = caretColumn(header, block[caret - 1], block[caret]);

    std::vector<Diagnostic> notes;
    bool inContext = false;
    for (std::size_t k = 0; k < block.size(); ++k) {
      if (k == caret || k + 1 == caret) continue;
      const std::string_view text = trim(block[k]);
      if (startsWith(text, "detected during")) inContext = true;
      if (!inContext) {
        header.message += "\n" + std::string(text);
        continue;
      }
      if (text == "detected during:") continue;
      Diagnostic note{.file = context_.sourceName, .severity = Severity::Note, .message = std::string(text)};
      // "... at line 4" or "... at line 4 of other.h"
      if (const auto at = text.rfind(" at line "); at != std::string_view::npos) {
        std::string_view where = text.substr(at + 9);
        std::size_t digits = 0;
        while (digits < where.size() && isDigit(where[digits])) ++digits;
        note.line = toInt(where.substr(0, digits));
        if (startsWith(where.substr(digits), " of ")) note.file = fileFor(trim(where.substr(digits + 4)));
      }
      notes.push_back(std::move(note));
    }
    add(std::move(header), false);
    for (auto &n : notes) out_.push_back(std::move(n));
  }

  const DiagnosticContext &context_;
  std::vector<std::string_view> sourceLines_;
  std::string_view compiledBase_;
  std::vector<Diagnostic> out_;
};

}  // namespace

std::vector<Diagnostic> parseDiagnostics(std::string_view output, const DiagnosticContext &context) {
  return Parser(context).run(output);
}

bool hasErrors(const std::vector<Diagnostic> &diagnostics) {
  for (const auto &d : diagnostics)
    if (d.severity == Diagnostic::Severity::Error) return true;
  return false;
}

std::string_view severityName(Diagnostic::Severity severity) {
  switch (severity) {
    case Diagnostic::Severity::Error: return "error";
    case Diagnostic::Severity::Warning: return "warning";
    case Diagnostic::Severity::Note: return "note";
  }
  return "error";
}

std::string formatDiagnostic(const Diagnostic &d) {
  std::string out = d.file;
  if (d.line > 0) out += ":" + std::to_string(d.line);
  if (d.line > 0 && d.column > 0) out += ":" + std::to_string(d.column);
  out += out.empty() ? "" : ": ";
  out += std::string(severityName(d.severity)) + ": " + d.message;
  if (!d.code.empty()) out += " [" + d.code + "]";
  return out;
}

std::string describeFailure(const std::string &what, const std::vector<Diagnostic> &diagnostics) {
  for (const auto &d : diagnostics)
    if (d.severity == Diagnostic::Severity::Error) return what + ": " + formatDiagnostic(d);
  return what;
}

}  // namespace kwb
