#include "core/agent/prompt.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>
#include <vector>

#include "core/eval/outcome.h"

namespace kwb::agent {

namespace {

bool nameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string cut(const std::string &text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // not inside a UTF-8 sequence
  return text.substr(0, end) + "\u2026";
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string joined(const std::vector<std::string> &items, const std::string &sep = ", ") {
  std::string out;
  for (const auto &i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}


std::string dimsText(const std::vector<Expression> &dims) {
  std::vector<std::string> parts;
  for (const auto &e : dims) parts.push_back(e.text());
  return "[" + joined(parts) + "]";
}

std::string generatorText(const Generator &g) {
  const auto names = generatorParameterNames(g.kind);
  std::string out(generatorKindName(g.kind));
  out += "(";
  if (names.first) out += std::string(names.first) + " " + number(g.a);
  if (names.second) out += std::string(", ") + names.second + " " + number(g.b);
  out += ")";
  if (const std::string extras = generatorExtrasText(g); !extras.empty()) out += " " + extras;
  return out;
}

std::string roleText(TensorRole role) {
  switch (role) {
    case TensorRole::In: return "input";
    case TensorRole::Out: return "output";
    case TensorRole::InOut: return "input and output (updated in place)";
  }
  return "input";
}


const char *severityText(Diagnostic::Severity s) {
  switch (s) {
    case Diagnostic::Severity::Error: return "error";
    case Diagnostic::Severity::Warning: return "warning";
    case Diagnostic::Severity::Note: return "note";
  }
  return "error";
}

}  // namespace

std::string renderTemplate(std::string_view text, const std::map<std::string, std::string> &values,
                           std::string_view templateName) {
  std::string out;
  out.reserve(text.size());
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "{{") == 0) {
      std::size_t j = i + 2;
      while (j < text.size() && text[j] == ' ') ++j;
      const std::size_t nameStart = j;
      while (j < text.size() && nameChar(text[j])) ++j;
      const std::size_t nameEnd = j;
      while (j < text.size() && text[j] == ' ') ++j;
      if (nameEnd > nameStart && text.compare(j, 2, "}}") == 0) {
        const std::string name(text.substr(nameStart, nameEnd - nameStart));
        const auto it = values.find(name);
        if (it == values.end()) {
          std::vector<std::string> known;
          for (const auto &[k, v] : values) known.push_back(k);
          throw PromptTemplateError(std::string(templateName) + ":" + std::to_string(line) + ": unknown placeholder {{" +
                                    name + "}}; known: " + (known.empty() ? std::string("none") : joined(known)));
        }
        out += it->second;
        i = j + 2;
        continue;
      }
    }
    if (text[i] == '\n') ++line;
    out += text[i++];
  }
  return out;
}

std::string taskSpec(const Task &task) {
  std::ostringstream s;
  s << "Task `" << task.name << "`" << (task.description.empty() ? "" : ": " + task.description) << "\n\n";
  s << "Tensors:\n";
  for (const auto &t : task.tensors) {
    s << "- `" << t.name << "`: " << dtypeName(t.dtype) << " " << dimsText(t.shape) << ", " << roleText(t.role);
    if (!t.state.empty()) s << "; a module weight (the PyTorch model's `" << t.state << "`)";
    if (t.draw > 0) s << "; the random tensor the PyTorch model's forward draws (its random call " << t.draw << ")";
    if (t.init) {
      std::vector<std::string> gens{generatorText(*t.init)};
      for (const auto &g : t.moreInits) gens.push_back(generatorText(g));
      s << "; values " << joined(gens, " / ") << (gens.size() > 1 ? " (the seeds cycle through them)" : "");
    }
    if (t.tolerance)
      s << "; compared " << (t.tolerance->exact ? std::string("exactly")
                                                : "within rtol " + number(t.tolerance->rtol) + ", atol " +
                                                      number(t.tolerance->atol) + " (NaN never passes)");
    s << "\n";
  }
  s << "\nSizes: " << joined(task.sizeNames) << ". Configurations (every one is checked):\n";
  for (const auto &c : task.configs) {
    std::vector<std::string> v;
    for (const auto &n : task.sizeNames)
      if (const auto it = c.values.find(n); it != c.values.end()) v.push_back(n + " = " + std::to_string(it->second));
    s << "- " << c.name << ": " << joined(v) << "\n";
  }
  if (task.launch) {
    const auto &l = *task.launch;
    s << "\nA device-only candidate defines `extern \"C\" __global__ void " << l.kernel << "(...)`, launched with grid "
      << dimsText(l.grid) << ", block " << dimsText(l.block);
    if (!l.sharedBytes.empty() && l.sharedBytes.text() != "0")
      s << ", " << l.sharedBytes.text() << " bytes of dynamic shared memory";
    s << "; its arguments, in order: " << joined(l.args)
      << " (tensors as device pointers, sizes as `long long`).\n";
  }
  if (!task.tunables.empty()) {
    s << "Tunables (compiled in as -DNAME=value; the launch expressions may use them):";
    for (const auto &t : task.tunables) {
      std::vector<std::string> v;
      for (auto x : t.values) v.push_back(std::to_string(x));
      s << " " << t.name << " in {" << joined(v) << "}";
    }
    s << ".\n";
  }
  std::vector<std::string> argOrder;
  if (task.launch) argOrder = task.launch->args;
  else argOrder = task.reference.launch.args;
  s << "Or a host launcher: `extern \"C\" cudaError_t kwb_launch(void *const *args, cudaStream_t stream)`, where "
       "args[i] points at the i-th of "
    << joined(argOrder)
    << " (a device pointer for a tensor, a long long for a size); launch on `stream`; everything until the work ends "
       "is timed (host work, copies, every stream).\n";
  s << "Vendor libraries allowed: " << (task.allowedLibraries.empty() ? std::string("none") : joined(task.allowedLibraries))
    << ".\n";
  s << "Cost model: flops = " << task.flops.text() << ", bytes = " << task.bytes.text() << ".\n";
  return s.str();
}

std::string sanitizerFeedback(const SanitizeResult &sanitize, const FeedbackLimits &limits) {
  std::ostringstream s;
  s << "Sanitizer: " << cut(sanitize.summary(), limits.messageChars) << "\n";
  std::size_t shown = 0;
  for (const auto &r : sanitize.reports)
    for (const auto &f : r.findings) {
      if (f.origin != SanitizerOrigin::Candidate || shown >= limits.diagnostics) continue;
      ++shown;
      const std::string where = f.where();
      s << "  " << (where.empty() ? "" : where + ": ") << sanitizerToolName(f.tool) << ": " << cut(f.what, limits.messageChars)
        << "\n";
    }
  return s.str();
}

std::string evaluationFeedback(const EvaluationResult &result, const FeedbackLimits &limits,
                               const std::string &roofline) {
  std::ostringstream s;
  s << "Outcome: " << toString(result.outcome) << " \u2014 " << cut(result.message, limits.messageChars) << "\n";
  const auto &diags = result.candidate.diagnostics;
  if (!result.candidate.ok || !diags.empty()) {
    std::vector<const Diagnostic *> shown;
    for (auto severity : {Diagnostic::Severity::Error, Diagnostic::Severity::Warning})
      for (const auto &d : diags)
        if (d.severity == severity && shown.size() < limits.diagnostics) shown.push_back(&d);
    const auto errors = std::count_if(diags.begin(), diags.end(), [](const Diagnostic &d) {
      return d.severity == Diagnostic::Severity::Error;
    });
    s << "Compile: " << (result.candidate.ok ? "compiled" : "failed") << ", " << errors << " error(s), "
      << diags.size() - static_cast<std::size_t>(errors) << " other diagnostic(s)\n";
    for (const auto *d : shown) {
      std::string where = d->file;
      if (d->line > 0) where += ":" + std::to_string(d->line) + (d->column > 0 ? ":" + std::to_string(d->column) : "");
      s << "  " << (where.empty() ? "" : where + ": ") << severityText(d->severity) << ": "
        << cut(d->message, limits.messageChars) << "\n";
    }
    if (diags.size() > shown.size()) s << "  (" << diags.size() - shown.size() << " more not shown)\n";
  }
  for (const auto &c : result.configs) {
    s << "Configuration " << c.config << ": " << toString(c.outcome);
    if (!c.reason.empty()) s << " (" << c.reason << ")";
    if (c.outcome != Outcome::Correct && !c.message.empty()) s << ": " << cut(c.message, limits.messageChars);
    s << "\n";
    std::size_t failing = 0;
    for (const auto &seed : c.seeds) {
      if (seed.passed) continue;
      if (++failing > limits.failingSeeds) {
        s << "  (more seeds failed)\n";
        break;
      }
      s << "  seed " << seed.seed << ": " << cut(seed.summary, limits.messageChars) << "\n";
    }
    if (c.timing && c.timing->ok) {
      const auto &t = *c.timing;
      s << "  timed: candidate " << number(t.candidate.median) << " ms (spread " << number(100 * t.candidate.relativeSpread)
        << "%)";
      if (t.referenceTimed) s << ", reference " << number(t.reference.median) << " ms, speedup " << number(t.speedup) << "x";
      if (!roofline.empty()) s << "; " << roofline;
      s << "\n";
    } else if (c.timing && !c.timing->error.empty()) {
      s << "  not timed: " << cut(c.timing->error, limits.messageChars) << "\n";
    }
  }
  if (result.sanitize) s << sanitizerFeedback(*result.sanitize, limits);
  return s.str();
}

}  // namespace kwb::agent
