#pragma once
// The kernel in an LLM's answer (issue 16: answer parsing copes with several code blocks, none,
// prose around code, truncated output; each gives a named outcome the session records and the
// next prompt's feedback names). Pure functions, no I/O.
//
// Rules, in order:
// - Fenced blocks (``` or ~~~, three or more, up to three spaces of indent; the closing fence the
//   same character, at least as long). A block left open at the end of the answer was cut off:
//   outcome Truncated, its text kept as `source` for the record.
// - Among closed blocks, those in a C-family language or none ("cuda", "cu", "cpp", "c++", "c",
//   "cuh", "h", "") that define the expected kernel (`name(` after `__global__`) or `kwb_launch`;
//   of those the last (answers that revise themselves end with the revision). No such block but
//   one with a `__global__`: the last of those, outcome MissingKernel (it names another kernel).
//   Blocks only in other languages (a shell line, a Python harness): NoCode.
// - No fence at all: the answer's code from its first line that starts C-family code (#include,
//   #define, #pragma, extern, template, __global__, __device__, static, typedef, namespace,
//   struct, constexpr) to its last line that closes a brace; outcome Code (or MissingKernel)
//   with a note that it was unfenced. No such line: NoCode.
// - Nothing but whitespace: Empty.
// A finish reason of "length" or "max_tokens" (the server cut the answer) makes an answer whose
// code is complete a Code outcome with a note; a cut inside the code is Truncated.
#include <cstddef>
#include <string>
#include <string_view>

#include "core/task/task.h"

namespace kwb::agent {

enum class AnswerOutcome { Code, MissingKernel, NoCode, Truncated, Empty };
std::string_view answerOutcomeName(AnswerOutcome outcome);  // "code", "missing-kernel", "no-code", "truncated", "empty"

struct ParsedAnswer {
  AnswerOutcome outcome = AnswerOutcome::Empty;
  std::string source;        // the chosen code (Code, MissingKernel, Truncated), else empty
  std::string language;      // the chosen fence's info word, lower case ("" unfenced or none given)
  std::size_t blocks = 0;    // fenced blocks in the answer, an unclosed last one included
  std::size_t chosen = 0;    // the chosen block, 1-based (0: none, or unfenced code)
  bool unfenced = false;     // the code was taken from an answer without fences
  std::string note;          // what was chosen and why, in words, when it was not plain
};

// The kernel an answer for `task` must define, for parseAnswer: its [launch] kernel's name; empty
// when it has no [launch] (any __global__ or kwb_launch will do).
std::string expectedKernel(const Task &task);

// `kernel`: the task's [launch] kernel name (empty: any __global__ or kwb_launch will do).
ParsedAnswer parseAnswer(std::string_view text, std::string_view kernel, std::string_view finishReason = {});

}  // namespace kwb::agent
