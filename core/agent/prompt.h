#pragma once
// What an agent session tells the model (issue 16, "Prompts"): the task's specification from
// its manifest, the feedback of an evaluation trimmed to what matters, and templates with
// {{placeholders}} filled in. Pure functions over the task and the result; the templates'
// files (resources/prompts/, and the user's copies) are read by the session.
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/eval/evaluation_result.h"
#include "core/task/task.h"

namespace kwb::agent {

// A template that names a placeholder nobody fills: the message gives the template's name, the
// line, the placeholder and the ones that exist ("repair.md:12: unknown placeholder
// {{feedbak}}; known: feedback, incumbent, task").
class PromptTemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `text` with every {{name}} (letters, digits, '_', optional spaces inside the braces) replaced
// by values.at(name). Braces that do not hold a name are left as they are (CUDA code has
// "{{" in initialisers). Throws PromptTemplateError for a name `values` lacks.
std::string renderTemplate(std::string_view text, const std::map<std::string, std::string> &values,
                           std::string_view templateName);

// The task as the model needs it, in Markdown: what it computes, each tensor (type, shape,
// role, how inputs are generated, how outputs are compared), the configurations, how a
// device-only candidate is launched (kernel name, grid, block, arguments in order), the
// tunables, the host-launcher alternative, the vendor libraries allowed, the cost model.
std::string taskSpec(const Task &task);

struct FeedbackLimits {
  std::size_t diagnostics = 12;   // compiler errors and warnings shown, errors first
  std::size_t failingSeeds = 3;   // per configuration
  std::size_t messageChars = 600; // any one message, cut with "…" beyond
};

// An evaluation's feedback for the next turn: the outcome, the compiler's errors (trimmed,
// with FILE:LINE), each configuration's verdict and, where it failed, the failing seeds'
// reports (first mismatching indices included); where it was timed, the medians, speedup and
// `roofline` (the caller's placement words, "at 71% of the memory bound; 1.4x headroom");
// the sanitizer's findings when it ran.
std::string evaluationFeedback(const EvaluationResult &result, const FeedbackLimits &limits = {},
                               const std::string &roofline = {});
// compute-sanitizer's part of it: the summary and the findings in the candidate's code.
std::string sanitizerFeedback(const SanitizeResult &sanitize, const FeedbackLimits &limits = {});

}  // namespace kwb::agent
