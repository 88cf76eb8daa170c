#include "core/agent/deoptimize.h"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/agent/answer.h"
#include "core/agent/prompt.h"
#include "core/agent/prompt_templates.h"
#include "core/agent/session.h"
#include "core/lineage/kernel_features.h"
#include "core/lineage/lineage_build.h"

namespace kwb::agent {
namespace {

// The model's "Removed: ..." line, trimmed ("" without one).
std::string removedLine(const std::string &text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.front() == ' ' || line.front() == '*' || line.front() == '#')) line.erase(0, 1);
    if (line.rfind("Removed:", 0) == 0) {
      line.erase(0, 8);
      while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.erase(0, 1);
      while (!line.empty() && (std::isspace(static_cast<unsigned char>(line.back())) || line.back() == '*')) line.pop_back();
      return line.substr(0, 160);
    }
    if (line.rfind("```", 0) == 0) break;  // only before the code
    start = end + 1;
  }
  return {};
}

bool saysNothingLeft(const std::string &text) {
  std::string upper;
  for (char c : text.substr(0, 400)) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper.find("NOTHING LEFT") != std::string::npos;
}

std::string slug(const std::string &text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-') out += '-';
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? std::string("step") : out;
}

}  // namespace

std::vector<llm::Message> deoptimizeMessages(const Task &task, const std::string &kernel,
                                             const std::vector<DeoptimizeStep> &rejectedHere,
                                             const std::filesystem::path &promptsUserDir,
                                             const std::filesystem::path &promptsBundledDir) {
  const auto system = loadPromptTemplate("system", promptsUserDir, promptsBundledDir);
  const auto deopt = loadPromptTemplate("deoptimize", promptsUserDir, promptsBundledDir);
  std::string rejected;
  for (const auto &s : rejectedHere)
    rejected += "- " + (s.technique.empty() ? std::string("(no technique named)") : s.technique) + ": " +
                (s.reason.size() > 400 ? s.reason.substr(0, 400) + "..." : s.reason) + "\n";
  if (!rejected.empty())
    rejected = "Earlier answers for this same kernel were rejected; take out something else, or do it correctly:\n" +
               rejected;
  const std::map<std::string, std::string> values = {{"task", taskSpec(task)}, {"kernel", kernel}, {"rejected", rejected}};
  return {llm::Message{.role = "system", .content = system.text},
          llm::Message{.role = "user", .content = renderTemplate(deopt.text, values, "deoptimize.md")}};
}

Deoptimization deoptimize(const Task &task, const std::string &expert, const DeoptimizeServices &services,
                          const DeoptimizeSettings &settings) {
  Deoptimization d;
  auto progress = [&](const std::string &line) {
    if (services.onProgress) services.onProgress(line);
  };
  auto cancelled = [&] { return services.cancel && services.cancel->cancelled(); };
  EvaluationOptions options;
  options.arch = settings.arch;
  options.time = true;
  options.timeTorch = false;  // steps are compared with each other, not with PyTorch
  options.timingCap = settings.timingCap;
  options.tunables = settings.tunables;

  progress("gating the expert kernel");
  options.sourceName = "expert.cu";
  const auto first = services.evaluator->evaluate(task, expert, options);
  if (cancelled() || first.outcome == Outcome::Cancelled) {
    d.cancelled = true;
    d.stopReason = "cancelled";
    return d;
  }
  d.onGpu = first.outcome != Outcome::NotRun;
  if (first.outcome != Outcome::Correct && first.outcome != Outcome::NotRun) {
    d.stopReason = "the expert kernel itself is " + std::string(toString(first.outcome)) + ": " + first.message;
    return d;
  }
  d.versions.push_back(expert);
  d.ms.push_back(objectiveMs(first));
  // Read forward, every step must pay at the configuration the lineage targets: a version is
  // kept only when it is slower there than the one it was taken from.
  d.targetConfig = largestConfiguration(task);
  auto targetMs = [&](const EvaluationResult &r) -> std::optional<double> {
    for (const auto &c : r.configs)
      if (c.config == d.targetConfig && c.timing && c.timing->ok && c.timing->candidate.median > 0)
        return c.timing->candidate.median;
    return std::nullopt;
  };
  std::optional<double> currentTargetMs = targetMs(first);

  std::vector<DeoptimizeStep> rejectedHere;
  for (int request = 1;; ++request) {
    if (request > settings.maxSteps) {
      d.stopReason = "step limit (" + std::to_string(settings.maxSteps) + ")";
      break;
    }
    if (cancelled()) {
      d.cancelled = true;
      d.stopReason = "cancelled";
      break;
    }
    progress("request " + std::to_string(request) + ": one technique out of version " + std::to_string(d.versions.size()));
    llm::ChatRequest chat;
    chat.messages = deoptimizeMessages(task, d.versions.back(), rejectedHere, services.promptsUserDir,
                                       services.promptsBundledDir);
    chat.maxTokens = settings.maxTokens;
    const auto reply = services.provider->chat(std::move(chat), {}, services.cancel);
    if (reply.cancelled || cancelled()) {
      d.cancelled = true;
      d.stopReason = "cancelled";
      break;
    }
    if (!reply.ok()) {
      d.stopReason = "the model's answer did not arrive: " +
                     (reply.error.empty() ? std::string("the stream broke") : reply.error);
      break;
    }
    DeoptimizeStep step;
    step.request = request;
    step.fromVersion = static_cast<int>(d.versions.size()) - 1;
    const std::string &text = reply.response.text;
    step.technique = removedLine(text);
    const auto parsed = parseAnswer(text, expectedKernel(task), reply.response.finishReason);
    if (parsed.outcome != AnswerOutcome::Code && parsed.outcome != AnswerOutcome::MissingKernel && saysNothingLeft(text)) {
      d.stopReason = "nothing left";
      break;
    }
    step.outcome = std::string(answerOutcomeName(parsed.outcome));
    if (parsed.outcome != AnswerOutcome::Code && parsed.outcome != AnswerOutcome::MissingKernel) {
      step.reason = "the answer holds no usable code (" + step.outcome + ")";
    } else if (parsed.source == d.versions.back()) {
      step.source = parsed.source;
      step.reason = "the answer is the kernel unchanged";
    } else {
      step.source = parsed.source;
      char name[48];
      std::snprintf(name, sizeof name, "deopt-%02d.cu", request);
      options.sourceName = name;
      progress("gating request " + std::to_string(request) + " (" +
               (step.technique.empty() ? std::string("no technique named") : step.technique) + ")");
      const auto r = services.evaluator->evaluate(task, step.source, options);
      if (cancelled() || r.outcome == Outcome::Cancelled) {
        d.cancelled = true;
        d.stopReason = "cancelled";
        break;
      }
      step.outcome = toString(r.outcome);
      step.ms = objectiveMs(r);
      step.targetMs = targetMs(r);
      const bool gated = d.onGpu ? (r.outcome == Outcome::Correct && step.ms.has_value()) : r.outcome == Outcome::NotRun;
      const bool slower = !d.onGpu || !settings.requireSlower || !currentTargetMs ||
                          (step.targetMs && *step.targetMs > *currentTargetMs);
      if (gated && slower) {
        step.accepted = true;
        step.reason = d.onGpu ? "correct on every configuration and seed, timed" : "compiled (no GPU: not checked)";
        if (d.onGpu && step.targetMs && currentTargetMs) {
          char text[128];
          std::snprintf(text, sizeof text, "; %.4g ms at %s against %.4g ms: it pays x%.2f read forward", *step.targetMs,
                        d.targetConfig.c_str(), *currentTargetMs, *step.targetMs / *currentTargetMs);
          step.reason += text;
        }
      } else if (gated) {
        char text[256];
        std::snprintf(text, sizeof text,
                      "correct, but not slower: %.4g ms at %s against %.4g ms of the kernel it was taken from; read "
                      "forward, this step would not pay",
                      step.targetMs.value_or(0), d.targetConfig.c_str(), *currentTargetMs);
        step.reason = text;
      } else {
        step.reason = step.outcome + (r.message.empty() ? std::string() : ": " + r.message);
      }
    }
    if (step.accepted) {
      currentTargetMs = step.targetMs;
      d.versions.push_back(step.source);
      d.techniques.push_back(step.technique.empty() ? "(technique not named)" : step.technique);
      d.ms.push_back(step.ms);
      rejectedHere.clear();
    } else {
      rejectedHere.push_back(step);
    }
    progress("request " + std::to_string(request) + ": " + (step.accepted ? "accepted" : "rejected") + ": " + step.reason);
    d.steps.push_back(std::move(step));
    if (services.onStep) {
      d.stopReason = "in progress: " + std::to_string(request) + " answers so far";
      services.onStep(d);
      d.stopReason.clear();
    }
  }
  return d;
}

std::vector<std::filesystem::path> writeForwardVersions(const Deoptimization &d, const std::filesystem::path &dir,
                                                        const std::string &expertName,
                                                        const std::map<std::string, std::int64_t> &tunables) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  for (const auto &entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".cu" || entry.path().filename() == "deoptimize.json" ||
        entry.path().filename() == "lineage.toml")
      fs::remove(entry.path(), ec);
  auto tomlString = [](const std::string &text) {
    std::string out = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';  // no control character in a basic string
      out += c;
    }
    return out + "\"";
  };
  // At most `n` bytes of `text`, not cutting a UTF-8 character.
  auto clipped = [](const std::string &text, std::size_t n) {
    if (text.size() <= n) return text;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    return text.substr(0, n) + "...";
  };
  std::string toml = "# De-optimized from " + expertName + " (stop: " + d.stopReason + "); the plainest version first.\n" +
                     "# kwb lineage build TASK --from-versions " + dir.filename().string() +
                     " gates each forward step again and lifts its card.\n";
  std::vector<fs::path> files;
  const std::size_t n = d.versions.size();
  for (std::size_t k = 0; k < n; ++k) {
    // Forward position k holds versions[n - 1 - k]; it adds what was taken out to reach the one before it.
    const std::size_t v = n - 1 - k;
    char prefix[24];
    std::snprintf(prefix, sizeof prefix, "%02zu-", k + 1);
    std::string header;
    std::string name;
    if (k == 0) {
      name = "plainest";
      header = "// Step 1 of " + std::to_string(n) + " (de-optimized from " + expertName + ")\n// Adds: the plainest version the model reached\n// Relies on: nothing\n";
    } else {
      const std::string &technique = d.techniques[v];
      name = v == 0 ? "expert" : slug(technique);
      // What the step relies on: the features of the kernel before it that it keeps.
      const auto before = detectFeatures(d.versions[v + 1]), after = detectFeatures(d.versions[v]);
      std::string kept;
      for (const auto &f : before)
        if (after.count(f)) kept += (kept.empty() ? "" : ", ") + f;
      header = "// Step " + std::to_string(k + 1) + " of " + std::to_string(n) + (v == 0 ? " (" + expertName + ")" : "") +
               "\n// Adds: " + technique + "\n// Relies on: " + (kept.empty() ? std::string("nothing") : kept) + "\n";
    }
    const fs::path file = dir / (prefix + name + ".cu");
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << header << "\n" << d.versions[v];  // the blank line ends the header: the version's own comments stay its own
    if (!out) throw std::runtime_error("cannot write " + file.string());
    files.push_back(file);
    toml += "\n[[step]]\nfile = " + tomlString(file.filename().string()) + "\ntitle = " +
            tomlString(k == 0 ? std::string("plainest") : d.techniques[v]) + "\n";
    // Answers rejected when asked to take something out of this kernel: what breaks around it.
    std::string risks;
    if (k > 0)
      for (const auto &s : d.steps)
        // What broke (compile error, wrong, crashed); a correct answer that was not slower says the
        // technique does not pay, not that anything breaks.
        if (!s.accepted && s.fromVersion == static_cast<int>(v) && !s.source.empty() && s.outcome != "correct")
          risks += std::string(risks.empty() ? "" : ", ") +
                   tomlString("de-optimization request " + std::to_string(s.request) + " took out " +
                              (s.technique.empty() ? std::string("a technique it did not name") : s.technique) +
                              " and was rejected: " + clipped(s.reason, 300));
    if (!risks.empty()) toml += "risks = [" + risks + "]\n";
    if (!tunables.empty()) {
      toml += "[step.tunables]\n";
      for (const auto &[tunable, value] : tunables) toml += tunable + " = " + std::to_string(value) + "\n";
    }
  }
  std::ofstream(dir / "lineage.toml", std::ios::trunc) << toml;
  nlohmann::json log = {{"stop", d.stopReason}, {"on_gpu", d.onGpu}, {"expert", expertName}, {"steps", nlohmann::json::array()}};
  for (const auto &s : d.steps) {
    nlohmann::json j = {{"request", s.request}, {"technique", s.technique}, {"accepted", s.accepted},
                        {"outcome", s.outcome}, {"reason", s.reason}};
    if (s.ms) j["ms"] = *s.ms;
    log["steps"].push_back(j);
  }
  std::ofstream(dir / "deoptimize.json", std::ios::trunc) << log.dump(2) << "\n";
  return files;
}

DeoptimizedFolder::Use DeoptimizedFolder::use() const {
  if (deoptimization.cancelled) return Use::Cancelled;
  if (files.size() < 2) return Use::TooFewVersions;
  if (!deoptimization.onGpu) return Use::CompiledOnly;
  return Use::Build;
}

DeoptimizedFolder deoptimizeToFolder(const Task &task, const std::string &expert, const std::string &expertName,
                                     const std::filesystem::path &folder, DeoptimizeServices services,
                                     const DeoptimizeSettings &settings) {
  auto callersStep = std::move(services.onStep);
  services.onStep = [&](const Deoptimization &soFar) {
    writeForwardVersions(soFar, folder, expertName, settings.tunables);
    if (callersStep) callersStep(soFar);
  };
  DeoptimizedFolder out;
  out.deoptimization = deoptimize(task, expert, services, settings);
  out.files = writeForwardVersions(out.deoptimization, folder, expertName, settings.tunables);
  if (out.files.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(folder, ec);  // nothing to keep
  }
  return out;
}

}  // namespace kwb::agent
