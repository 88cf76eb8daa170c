#include "core/agent/answer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <regex>
#include <vector>

namespace kwb::agent {

namespace {

struct Block {
  std::string language;
  std::string code;
  bool closed = false;
};

std::string_view trimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::string_view trim(std::string_view s) {
  s = trimLeft(s);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> linesOf(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      if (start < text.size()) lines.push_back(text.substr(start));
      break;
    }
    std::string_view line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = nl + 1;
  }
  return lines;
}

// A fence line: its character, run length and what follows; nullopt for any other line.
struct Fence {
  char c;
  std::size_t length;
  std::string_view rest;
};
std::optional<Fence> fenceOf(std::string_view line) {
  std::size_t indent = 0;
  while (indent < line.size() && indent < 4 && line[indent] == ' ') ++indent;
  if (indent > 3) return std::nullopt;
  line.remove_prefix(indent);
  if (line.empty() || (line[0] != '`' && line[0] != '~')) return std::nullopt;
  std::size_t n = 0;
  while (n < line.size() && line[n] == line[0]) ++n;
  if (n < 3) return std::nullopt;
  return Fence{line[0], n, trim(line.substr(n))};
}

std::vector<Block> fencedBlocks(const std::vector<std::string_view> &lines) {
  std::vector<Block> blocks;
  std::optional<Fence> open;
  for (const auto line : lines) {
    const auto fence = fenceOf(line);
    if (!open) {
      if (!fence) continue;
      open = fence;
      Block b;
      const auto info = fence->rest;
      const auto word = info.substr(0, std::min(info.find_first_of(" \t{"), info.size()));
      for (char ch : word) b.language += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      blocks.push_back(std::move(b));
      continue;
    }
    if (fence && fence->c == open->c && fence->length >= open->length && fence->rest.empty()) {
      blocks.back().closed = true;
      open.reset();
      continue;
    }
    blocks.back().code.append(line).push_back('\n');
  }
  return blocks;
}

bool cFamily(const std::string &language) {
  static const std::array<const char *, 9> names = {"", "cuda", "cu", "cpp", "c++", "c", "cuh", "h", "cxx"};
  return std::find(names.begin(), names.end(), language) != names.end();
}

bool definesKernel(const std::string &code, std::string_view kernel) {
  if (std::regex_search(code, std::regex(R"(\bkwb_launch\s*\()"))) return true;
  if (kernel.empty()) return code.find("__global__") != std::string::npos;
  // Identifiers only reach here (the manifest's kernel names are identifiers).
  return std::regex_search(code, std::regex("__global__[^;{}]*\\b" + std::string(kernel) + "\\s*\\("));
}

bool startsCode(std::string_view line) {
  static const std::array<const char *, 14> starts = {"#include", "#define",  "#pragma",    "extern ",
                                                      "template", "__global__", "__device__", "static ",
                                                      "typedef ", "namespace ", "struct ",  "constexpr ",
                                                      "using ",   "#if"};
  line = trimLeft(line);
  return std::any_of(starts.begin(), starts.end(), [&](const char *s) { return line.rfind(s, 0) == 0; });
}

bool cutByServer(std::string_view finishReason) { return finishReason == "length" || finishReason == "max_tokens"; }

}  // namespace

std::string_view answerOutcomeName(AnswerOutcome outcome) {
  switch (outcome) {
    case AnswerOutcome::Code: return "code";
    case AnswerOutcome::MissingKernel: return "missing-kernel";
    case AnswerOutcome::NoCode: return "no-code";
    case AnswerOutcome::Truncated: return "truncated";
    case AnswerOutcome::Empty: return "empty";
  }
  return "empty";
}

ParsedAnswer parseAnswer(std::string_view text, std::string_view kernel, std::string_view finishReason) {
  ParsedAnswer a;
  if (trim(text).empty()) {
    a.note = cutByServer(finishReason) ? "the answer was cut before it said anything" : "";
    return a;
  }
  const auto lines = linesOf(text);
  const auto blocks = fencedBlocks(lines);
  a.blocks = blocks.size();
  const std::string want = kernel.empty() ? std::string("a __global__ kernel or kwb_launch")
                                          : "'" + std::string(kernel) + "' or kwb_launch";
  if (!blocks.empty() && !blocks.back().closed) {
    a.outcome = AnswerOutcome::Truncated;
    a.chosen = blocks.size();
    a.source = blocks.back().code;
    a.language = blocks.back().language;
    a.note = "the answer ends inside code block " + std::to_string(blocks.size()) +
             (cutByServer(finishReason) ? " (the server cut it: finish reason " + std::string(finishReason) + ")"
                                        : " (its closing fence never came)");
    return a;
  }
  auto take = [&](std::size_t i, AnswerOutcome outcome) {
    a.outcome = outcome;
    a.chosen = i + 1;
    a.source = blocks[i].code;
    a.language = blocks[i].language;
  };
  if (!blocks.empty()) {
    std::optional<std::size_t> defining, global;
    std::size_t cBlocks = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (!cFamily(blocks[i].language)) continue;
      ++cBlocks;
      if (definesKernel(blocks[i].code, kernel)) defining = i;
      if (blocks[i].code.find("__global__") != std::string::npos) global = i;
    }
    if (defining) {
      take(*defining, AnswerOutcome::Code);
      if (blocks.size() > 1)
        a.note = std::to_string(blocks.size()) + " code blocks: block " + std::to_string(a.chosen) +
                 (cBlocks > 1 ? ", the last that defines " : ", the one that defines ") + want + ", taken";
    } else if (global) {
      take(*global, AnswerOutcome::MissingKernel);
      a.note = "no code block defines " + want + "; block " + std::to_string(a.chosen) + " has other kernels";
    } else {
      a.outcome = AnswerOutcome::NoCode;
      a.note = std::to_string(blocks.size()) + " code block" + (blocks.size() == 1 ? "" : "s") +
               ", none of them CUDA or C++ with a kernel";
    }
    if (a.outcome != AnswerOutcome::NoCode && cutByServer(finishReason))
      a.note += std::string(a.note.empty() ? "" : "; ") + "the server cut the answer after its code";
    return a;
  }
  // No fence: the code between its first C-family line and its last closing brace.
  std::optional<std::size_t> first, last;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!first && startsCode(lines[i])) first = i;
    const auto t = trim(lines[i]);
    if (first && !t.empty() && (t.back() == '}' || t == "};")) last = i;
  }
  if (!first || !last || *last < *first) {
    a.outcome = cutByServer(finishReason) && first ? AnswerOutcome::Truncated : AnswerOutcome::NoCode;
    a.note = first ? "code without a fence that never closes its braces" : "no code in the answer";
    if (a.outcome == AnswerOutcome::Truncated)
      for (std::size_t i = *first; i < lines.size(); ++i) a.source.append(lines[i]).push_back('\n');
    a.unfenced = a.outcome == AnswerOutcome::Truncated;
    return a;
  }
  for (std::size_t i = *first; i <= *last; ++i) a.source.append(lines[i]).push_back('\n');
  a.unfenced = true;
  a.outcome = definesKernel(a.source, kernel) ? AnswerOutcome::Code : AnswerOutcome::MissingKernel;
  a.note = "no code fence: lines " + std::to_string(*first + 1) + "-" + std::to_string(*last + 1) + " taken as code";
  if (a.outcome == AnswerOutcome::MissingKernel) a.note += ", which do not define " + want;
  return a;
}

std::string expectedKernel(const Task &task) { return task.launch ? task.launch->kernel : std::string(); }

}  // namespace kwb::agent
