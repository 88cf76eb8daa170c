#include "core/compile/compile_types.h"

#include <algorithm>

#include <cctype>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/compile/diagnostics.h"
#include "core/text/json_fields.h"

namespace kwb {

namespace {

bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The source with comments, string and character literals blanked out (newlines kept), so a
// name mentioned in a comment or a message does not count.
std::string codeOnly(const std::string &source) {
  std::string out = source;
  enum class State { Code, LineComment, BlockComment, String, Char } state = State::Code;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char c = source[i];
    const char next = i + 1 < source.size() ? source[i + 1] : '\0';
    switch (state) {
      case State::Code:
        if (c == '/' && next == '/') {
          state = State::LineComment;
          out[i] = ' ';
        } else if (c == '/' && next == '*') {
          state = State::BlockComment;
          out[i] = out[i + 1] = ' ';
          ++i;
        } else if (c == '"') {
          state = State::String;
        } else if (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(source[i - 1])))) {
          state = State::Char;  // not a digit separator (1'000)
        }
        break;
      case State::LineComment:
        if (c == '\n') state = State::Code; else out[i] = ' ';
        break;
      case State::BlockComment:
        if (c == '*' && next == '/') {
          out[i] = out[i + 1] = ' ';
          ++i;
          state = State::Code;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
      case State::String:
      case State::Char:
        if (c == '\\' && next != '\0') {
          out[i] = ' ';
          if (next != '\n') out[i + 1] = ' ';
          ++i;
        } else if ((state == State::String && c == '"') || (state == State::Char && c == '\'')) {
          state = State::Code;
        } else if (c == '\n') {
          state = State::Code;  // unterminated literal: stop at the line's end
        } else {
          out[i] = ' ';
        }
        break;
    }
  }
  return out;
}

}  // namespace

SourceForm detectSourceForm(const std::string &source) {
  static constexpr std::string_view kEntry = "kwb_launch";
  const std::string code = codeOnly(source);
  for (std::size_t pos = code.find(kEntry); pos != std::string::npos; pos = code.find(kEntry, pos + 1)) {
    if (pos > 0 && isIdentifierChar(code[pos - 1])) continue;
    std::size_t after = pos + kEntry.size();
    if (after < code.size() && isIdentifierChar(code[after])) continue;
    while (after < code.size() && std::isspace(static_cast<unsigned char>(code[after]))) ++after;
    if (after < code.size() && code[after] == '(') return SourceForm::HostLauncher;
  }
  return SourceForm::DeviceOnly;
}

std::vector<Diagnostic> byteProblems(const std::string &source, const std::string &sourceName) {
  std::vector<Diagnostic> out;
  for (const char byte : {'\0', '\xff'}) {
    const auto at = source.find(byte);
    if (at == std::string::npos) continue;
    const auto lineStart = source.rfind('\n', at == 0 ? 0 : at - 1);
    const int line = 1 + static_cast<int>(std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const int column = static_cast<int>(at - (lineStart == std::string::npos || at == 0 ? 0 : lineStart + 1)) + 1;
    out.push_back(Diagnostic{
        .file = sourceName,
        .line = line,
        .column = column,
        .severity = Diagnostic::Severity::Error,
        .message = byte == '\0' ? "a NUL byte: NVRTC would drop everything after it; save the source as UTF-8 text"
                                 : "a 0xFF byte, which is not UTF-8: NVRTC reads it as the end of the source and would "
                                   "drop everything after it; save the source as UTF-8 text"});
  }
  std::sort(out.begin(), out.end(), [](const Diagnostic &a, const Diagnostic &b) { return a.line < b.line; });
  return out;
}

std::vector<Diagnostic> includeProblems(const std::string &source, const std::string &sourceName) {
  std::vector<Diagnostic> out;
  const std::string code = codeOnly(source);
  int line = 1;
  for (std::size_t start = 0; start < code.size(); ++line) {
    std::size_t end = code.find('\n', start);
    if (end == std::string::npos) end = code.size();
    std::size_t i = start;
    auto skipSpace = [&] {
      while (i < end && (code[i] == ' ' || code[i] == '\t')) ++i;
    };
    skipSpace();
    if (i < end && code[i] == '#') {
      ++i;
      skipSpace();
      if (code.compare(i, 7, "include") == 0) {
        const std::size_t directive = i;
        i += 7;
        if (code.compare(i, 5, "_next") == 0) i += 5;
        skipSpace();
        auto problem = [&](std::string message) {
          out.push_back(Diagnostic{.file = sourceName,
                                   .line = line,
                                   .column = static_cast<int>(directive - start),
                                   .severity = Diagnostic::Severity::Error,
                                   .message = std::move(message)});
        };
        if (i < end && source[i] == '<') {
          const std::size_t close = source.find('>', i);
          const std::string name = close == std::string::npos || close > end ? "" : source.substr(i + 1, close - i - 1);
          if (name.empty() || name.front() == '/' || name.find("..") != std::string::npos)
            problem("#include <" + name + ">: only the CUDA toolkit's own headers can be included (a name such as "
                    "<cuda_fp16.h>, with no absolute path and no '..')");
        } else if (i < end && source[i] == '"') {
          const std::size_t close = source.find('"', i + 1);
          const std::string name = close == std::string::npos || close > end ? "" : source.substr(i + 1, close - i - 1);
          problem("#include \"" + name + "\": a candidate is one self-contained file; only the CUDA toolkit's "
                  "headers can be included, as <name.h>");
        } else {
          problem("#include with a computed name: only the CUDA toolkit's headers can be included, as <name.h>");
        }
      }
    }
    start = end + 1;
  }
  return out;
}

const char *sourceFormName(SourceForm form) {
  return form == SourceForm::DeviceOnly ? "device-only" : "host-launcher";
}

using nlohmann::json;
using json_fields::field;

void to_json(json &j, SourceForm form) { j = sourceFormName(form); }
void from_json(const json &j, SourceForm &form) {
  form = j.is_string() && j.get<std::string>() == "host-launcher" ? SourceForm::HostLauncher : SourceForm::DeviceOnly;
}

void to_json(json &j, Diagnostic::Severity severity) { j = std::string(severityName(severity)); }
void from_json(const json &j, Diagnostic::Severity &severity) {
  const std::string name = j.is_string() ? j.get<std::string>() : std::string();
  severity = name == "warning" ? Diagnostic::Severity::Warning
             : name == "note"  ? Diagnostic::Severity::Note
                               : Diagnostic::Severity::Error;
}

namespace {

constexpr auto kDiagnosticFields = std::tuple{
    field("file", &Diagnostic::file),         field("line", &Diagnostic::line),
    field("column", &Diagnostic::column),     field("severity", &Diagnostic::severity),
    field("message", &Diagnostic::message),   field("code", &Diagnostic::code)};

constexpr auto kKernelFields = std::tuple{
    field("name", &KernelResources::name),
    field("registers", &KernelResources::registers),
    field("shared_static_bytes", &KernelResources::sharedStaticBytes),
    field("constant_bytes", &KernelResources::constantBytes),
    field("stack_frame_bytes", &KernelResources::stackFrameBytes),
    field("spill_store_bytes", &KernelResources::spillStoreBytes),
    field("spill_load_bytes", &KernelResources::spillLoadBytes),
    field("barriers", &KernelResources::barriers)};

constexpr auto kCompileFields = std::tuple{
    field("ok", &CompileResult::ok),           field("form", &CompileResult::form),
    field("diagnostics", &CompileResult::diagnostics), field("kernels", &CompileResult::kernels),
    field("cache_hit", &CompileResult::cacheHit), field("seconds", &CompileResult::seconds),
    field("toolkit", &CompileResult::toolkitVersion), field("sandbox", &CompileResult::sandbox),
    field("sandbox_reason", &CompileResult::sandboxReason)};

}  // namespace

// A diagnostic also carries the line it prints as ("text"), for readers of --json.
void to_json(json &j, const Diagnostic &v) {
  json_fields::writeFields(j, v, kDiagnosticFields);
  j["text"] = formatDiagnostic(v);
}
void from_json(const json &j, Diagnostic &v) { json_fields::readFields(j, v, kDiagnosticFields); }
void to_json(json &j, const KernelResources &v) { json_fields::writeFields(j, v, kKernelFields); }
void from_json(const json &j, KernelResources &v) { json_fields::readFields(j, v, kKernelFields); }
void to_json(json &j, const CompileResult &v) { json_fields::writeFields(j, v, kCompileFields); }
void from_json(const json &j, CompileResult &v) { json_fields::readFields(j, v, kCompileFields); }

}  // namespace kwb
