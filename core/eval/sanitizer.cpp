#include "core/eval/sanitizer.h"
#include "core/eval/sanitizer_status.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <regex>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/compile/toolkit_programs.h"
#include "core/sandbox/sandbox.h"

namespace fs = std::filesystem;

namespace kwb {

namespace {

constexpr SanitizerTool kTools[] = {SanitizerTool::Memcheck, SanitizerTool::Racecheck, SanitizerTool::Initcheck,
                                    SanitizerTool::Synccheck};

// A count or line number from the report, bounded: the report shares a channel that candidate
// code can write to, so a number too long for an int must not throw.
int number(const std::string &digits) {
  int value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  (void)end;
  return error == std::errc() ? value : std::numeric_limits<int>::max();
}

bool executable(const fs::path &p) {
  std::error_code ec;
  return !p.empty() && fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// "softmax(const float *, float *)" → "softmax"; "void ns::k<int>(int *)" → "ns::k<int>".
std::string functionBaseName(const std::string &function) {
  std::string name = function.substr(0, function.find('('));
  if (const auto space = name.rfind(' '); space != std::string::npos) name = name.substr(space + 1);
  return name;
}

// The reported file names the compiled one by its file name alone: nvcc compiles a copy in a work
// directory (the name kept); NVRTC reports the name as given.
bool sameName(const std::string &reported, const std::string &compiled) {
  return !reported.empty() && !compiled.empty() && fs::path(reported).filename() == fs::path(compiled).filename();
}

bool named(const std::vector<std::string> &kernels, const std::string &function) {
  const std::string base = functionBaseName(function);
  return std::any_of(kernels.begin(), kernels.end(), [&](const std::string &k) { return k == base || k == function; });
}

// The locations a line names, in either form compute-sanitizer has used.
std::vector<SanitizerLocation> locationsIn(const std::string &line) {
  static const std::regex modern(R"(at (\S.*?)\+(0x[0-9a-fA-F]+)(?: in (\S+?):(\d+))?(?=$| and | \[|\s))");
  static const std::regex legacy(R"(at (0x[0-9a-fA-F]+) in (\S+?):(\d+):(\S.*?)(?=$| \[))");
  std::vector<SanitizerLocation> out;
  for (auto it = std::sregex_iterator(line.begin(), line.end(), legacy); it != std::sregex_iterator(); ++it) {
    const auto &m = *it;
    out.push_back(SanitizerLocation{m[4].str(), m[1].str(), m[2].str(), number(m[3].str())});
  }
  if (!out.empty()) return out;
  for (auto it = std::sregex_iterator(line.begin(), line.end(), modern); it != std::sregex_iterator(); ++it) {
    const auto &m = *it;
    SanitizerLocation l;
    l.function = m[1].str();
    l.offset = m[2].str();
    if (m[3].matched) {
      l.file = m[3].str();
      l.line = number(m[4].str());
    }
    out.push_back(std::move(l));
  }
  return out;
}

SanitizerOrigin originOf(const SanitizerFinding &f, const SanitizerAttribution &a) {
  if (f.apiError) {
    // The workbench calls the driver API only (cu...); the runtime API (cuda...) is a host
    // launcher's.
    return a.hostLauncher && f.details.find("API call to cuda") != std::string::npos ? SanitizerOrigin::Candidate
                                                                                     : SanitizerOrigin::Workbench;
  }
  // The exact names first (the reference is compiled under a name of its own, paths are not
  // stripped), then the file names alone: a candidate that shares the reference's file name is
  // still the candidate where its full name tells.
  for (const auto &l : f.locations) {
    if (!l.file.empty() && l.file == a.candidateFile) return SanitizerOrigin::Candidate;
    if (!l.file.empty() && l.file == a.referenceFile) return SanitizerOrigin::Reference;
  }
  for (const auto &l : f.locations) {
    if (sameName(l.file, a.candidateFile)) return SanitizerOrigin::Candidate;
    if (sameName(l.file, a.referenceFile)) return SanitizerOrigin::Reference;
  }
  for (const auto &l : f.locations) {
    if (named(a.candidateKernels, l.function) && !named(a.referenceKernels, l.function)) return SanitizerOrigin::Candidate;
    if (named(a.referenceKernels, l.function) && !named(a.candidateKernels, l.function)) return SanitizerOrigin::Reference;
  }
  // A kernel without line information that neither image names: a host launcher's kernels are
  // built into its library, so they are the candidate's; otherwise the workbench's own (its
  // comparison and fill kernels).
  if (!f.locations.empty() && f.locations.front().file.empty())
    return a.hostLauncher ? SanitizerOrigin::Candidate : SanitizerOrigin::Workbench;
  // With line information in a file that is neither: the candidate's (an include of its own).
  return SanitizerOrigin::Candidate;
}

}  // namespace

const char *sanitizerToolName(SanitizerTool tool) {
  switch (tool) {
    case SanitizerTool::Memcheck: return "memcheck";
    case SanitizerTool::Racecheck: return "racecheck";
    case SanitizerTool::Initcheck: return "initcheck";
    case SanitizerTool::Synccheck: return "synccheck";
  }
  return "memcheck";
}

std::optional<SanitizerTool> parseSanitizerTool(std::string_view name) {
  for (const auto tool : kTools)
    if (name == sanitizerToolName(tool)) return tool;
  return std::nullopt;
}

std::vector<SanitizerTool> allSanitizerTools() { return {std::begin(kTools), std::end(kTools)}; }

std::vector<SanitizerTool> parseSanitizerTools(std::string_view list) {
  if (list.empty() || list == "all") return allSanitizerTools();
  std::vector<SanitizerTool> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = std::min(list.find(',', start), list.size());
    const auto name = list.substr(start, comma - start);
    if (!name.empty()) {
      const auto tool = parseSanitizerTool(name);
      if (!tool)
        throw std::invalid_argument("unknown sanitizer tool '" + std::string(name) +
                                    "' (memcheck, racecheck, initcheck, synccheck or all)");
      if (std::find(out.begin(), out.end(), *tool) == out.end()) out.push_back(*tool);
    }
    start = comma + 1;
  }
  if (out.empty()) return allSanitizerTools();
  return out;
}

fs::path findComputeSanitizer() {
  if (const char *env = std::getenv("KWB_COMPUTE_SANITIZER"); env && *env) return executable(env) ? fs::path(env) : fs::path();
  for (const auto &home : cudaHomeCandidates()) {
    for (const auto &p : {home / "bin" / "compute-sanitizer", home / "compute-sanitizer" / "compute-sanitizer"})
      if (executable(p)) return p;
  }
  return findToolkitProgram("compute-sanitizer");
}

std::vector<std::string> sanitizerCommand(const fs::path &program, SanitizerTool tool) {
  std::vector<std::string> argv{program.string(), "--tool", sanitizerToolName(tool),
                                // The worker's stderr: read by the client line by line.
                                "--log-file", "/proc/self/fd/2",
                                // The host launcher's process too.
                                "--target-processes", "all",
                                // Device frames only: the host frames name the worker's internals.
                                "--show-backtrace", "device",
                                // Whole names: the candidate's and the reference's stay apart.
                                "--strip-paths", "no",
                                // The exit status says whether it found errors, whatever the
                                // report on the shared stderr says (kSanitizerErrorStatus).
                                "--error-exitcode", std::to_string(kSanitizerErrorStatus)};
  // Up to 10000 errors printed (100 by default): the first hundred are often one kernel's
  // threads at one line, and what comes after them, another line, another kernel, would be lost.
  argv.insert(argv.end(), {"--print-limit", "10000"});
  // A guard after every allocation: a read just past one tensor would otherwise land in the next.
  if (tool == SanitizerTool::Memcheck) argv.insert(argv.end(), {"--padding", "65536"});
  // A host launcher's process copies each tensor it maps onto itself so that its initcheck
  // knows the bytes were written (the worker wrote them, in another process): that copy reads
  // them first, and with API accesses checked every word of it was an error (100 printed, the
  // candidate's own finding never reached; H200, 2026-12-02,
  // tests/fixtures/sanitizer/uninit-launcher-initcheck-api.log). Kernels' reads are still checked;
  // a candidate's own cudaMemcpy of memory it never wrote is not.
  if (tool == SanitizerTool::Initcheck) argv.insert(argv.end(), {"--check-api-memory-access", "no"});
  return argv;
}

std::string sanitizerFolders(const fs::path &program) {
  std::vector<fs::path> folders;
  std::error_code ec;
  for (const auto &p : {program, fs::weakly_canonical(program, ec)}) {
    folders.push_back(p.parent_path());
    const auto beside = p.parent_path().parent_path() / "compute-sanitizer";
    if (fs::is_directory(beside, ec)) folders.push_back(beside);
  }
  std::string out;
  for (const auto &f : folders) {
    if (f.empty() || out.find(f.string()) != std::string::npos) continue;
    out += (out.empty() ? "" : ":") + f.string();
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> sanitizerWorkerEnvironment(const fs::path &program) {
  return {{"KWB_EXACT_ALLOCATIONS", "1"}, {"KWB_FENCE_OPEN", sanitizerFolders(program)}};
}

std::string SanitizerFinding::where() const {
  for (const auto &l : locations)
    if (!l.file.empty() && l.line > 0) return l.file + ":" + std::to_string(l.line);
  return locations.empty() ? std::string() : locations.front().function;
}

const char *sanitizerOriginName(SanitizerOrigin origin) {
  switch (origin) {
    case SanitizerOrigin::Candidate: return "candidate";
    case SanitizerOrigin::Reference: return "reference";
    case SanitizerOrigin::Workbench: return "workbench";
  }
  return "candidate";
}

std::size_t SanitizerReport::candidateFindings() const {
  return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(), [](const SanitizerFinding &f) {
    return f.origin == SanitizerOrigin::Candidate;
  }));
}

SanitizerReport parseSanitizerReport(SanitizerTool tool, const std::vector<std::string> &lines,
                                     const SanitizerAttribution &attribution) {
  // ("ERROR SUMMARY: N errors were not printed" follows the real one when the print limit was
  // reached: not a summary.)
  static const std::regex errorSummary(R"(^ERROR SUMMARY: (\d+) errors?\s*$)");
  static const std::regex raceSummary(R"(^RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\))");
  static const std::regex threadBlock(R"(by thread \(([^)]*)\) in block \(([^)]*)\))");
  static const std::regex hazards(R"(\[(\d+) hazards?\])");
  SanitizerReport report;
  report.tool = tool;
  std::optional<SanitizerFinding> open;
  auto close = [&] {
    if (!open) return;
    if (open->apiError || !open->locations.empty()) {
      open->origin = originOf(*open, attribution);
      auto same = std::find_if(report.findings.begin(), report.findings.end(), [&](const SanitizerFinding &f) {
        return f.what == open->what && f.locations == open->locations && f.warning == open->warning;
      });
      if (same != report.findings.end()) {
        ++same->occurrences;
        same->hazards += open->hazards;
      } else {
        report.findings.push_back(std::move(*open));
      }
    } else {
      report.notes.push_back(open->details);
    }
    open.reset();
  };
  for (const auto &raw : lines) {
    if (raw.compare(0, kSanitizerLinePrefix.size(), kSanitizerLinePrefix) != 0) continue;
    if (report.log.size() < SanitizerReport::kMaxLogLines) report.log.push_back(raw);
    const std::string rest = raw.substr(kSanitizerLinePrefix.size());
    const std::string text = trim(rest);
    if (text.empty()) {  // "=========" alone ends a finding
      close();
      continue;
    }
    const bool continuation = rest.size() > 1 && rest[0] == ' ' && rest[1] == ' ';
    if (continuation && open) {
      if (text.rfind("Host Frame:", 0) == 0) continue;  // the worker's internals
      open->details += "\n" + text;
      for (auto &l : locationsIn(text)) open->locations.push_back(std::move(l));
      std::smatch m;
      if (open->thread.empty() && std::regex_search(text, m, threadBlock)) {
        open->thread = "(" + m[1].str() + ")";
        open->block = "(" + m[2].str() + ")";
      }
      if (std::regex_search(text, m, hazards)) open->hazards += number(m[1].str());
      continue;
    }
    close();
    std::smatch m;
    if (text == "COMPUTE-SANITIZER") {
      report.started = true;
    } else if (std::regex_search(text, m, raceSummary)) {
      report.completed = true;
      report.errors = number(m[2].str());
      report.warnings = number(m[3].str());
    } else if (std::regex_search(text, m, errorSummary)) {
      report.completed = true;
      report.errors = number(m[1].str());
    } else {
      // A headline; what follows it says whether it is a finding (it names code) or a note.
      SanitizerFinding f;
      f.tool = tool;
      f.warning = text.rfind("Warning:", 0) == 0;
      f.what = text;
      // Racecheck names the first access on the headline: "... between Write access at F+0x90 in X:8".
      if (const auto at = f.what.find(" at "); at != std::string::npos && f.what.find("Race reported") != std::string::npos)
        f.what = f.what.substr(0, at);
      for (const char *label : {"Error: ", "Warning: "})
        if (f.what.rfind(label, 0) == 0) f.what = f.what.substr(std::string_view(label).size());
      // "Program hit" (an API call's error) and "Host API memory access error" (initcheck: a
      // copy of memory never written) name a call, not a source line.
      f.apiError = text.rfind("Program hit", 0) == 0 || text.rfind("Host API memory access error", 0) == 0;
      f.details = text;
      f.locations = locationsIn(text);
      if (std::regex_search(text, m, hazards)) f.hazards += number(m[1].str());
      open = std::move(f);
    }
  }
  close();
  return report;
}

void holdToExitStatus(SanitizerReport &report, int exitStatus) {
  report.notes.push_back(exitStatus < 0 ? std::string("compute-sanitizer did not exit on its own")
                                        : "compute-sanitizer exited with status " + std::to_string(exitStatus));
  if (exitStatus != kSanitizerErrorStatus) return;
  const bool named = std::any_of(report.findings.begin(), report.findings.end(),
                                 [](const SanitizerFinding &f) { return !f.warning; });
  if (named) return;
  SanitizerFinding f;
  f.tool = report.tool;
  f.what = "compute-sanitizer found errors (its exit status says so), but its report names none: the "
           "candidate's output on the same stream may have overwritten it";
  f.origin = SanitizerOrigin::Candidate;
  f.details = f.what;
  report.findings.push_back(std::move(f));
}

std::size_t SanitizerReport::candidateErrors() const {
  return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(), [](const SanitizerFinding &f) {
    return f.origin == SanitizerOrigin::Candidate && !f.warning;
  }));
}

bool SanitizeResult::complete() const {
  return problem.empty() && !reports.empty() &&
         std::all_of(reports.begin(), reports.end(), [](const SanitizerReport &r) { return r.completed && r.problem.empty(); });
}

std::size_t SanitizeResult::candidateErrors() const {
  std::size_t n = 0;
  for (const auto &r : reports) n += r.candidateErrors();
  return n;
}

std::size_t SanitizeResult::candidateWarnings() const {
  std::size_t n = 0;
  for (const auto &r : reports) n += r.candidateFindings() - r.candidateErrors();
  return n;
}

std::string SanitizeResult::summary() const {
  if (!problem.empty()) return "not sanitized: " + problem;
  std::string tools, failing, unfinished;
  for (const auto &r : reports) {
    const std::string name = sanitizerToolName(r.tool);
    tools += (tools.empty() ? "" : ", ") + name;
    if (!r.completed || !r.problem.empty())
      unfinished += (unfinished.empty() ? "" : "; ") + name + ": " + (r.problem.empty() ? "no summary" : r.problem);
    else if (const auto n = r.candidateErrors())
      failing += (failing.empty() ? "" : ", ") + name + " " + std::to_string(n);
  }
  const auto errors = candidateErrors();
  std::string out;
  if (errors) out = std::to_string(errors) + (errors == 1 ? " error" : " errors") + " in the candidate's code (" + failing + ")";
  if (!unfinished.empty()) out += std::string(out.empty() ? "" : "; ") + "incomplete: " + unfinished;
  if (out.empty()) out = "clean (" + tools + ")";
  if (const auto w = candidateWarnings()) out += ", " + std::to_string(w) + (w == 1 ? " warning" : " warnings");
  return out;
}

void to_json(nlohmann::json &j, const SanitizerLocation &v) {
  j = {{"function", v.function}, {"offset", v.offset}, {"file", v.file}, {"line", v.line}};
}

void to_json(nlohmann::json &j, const SanitizerFinding &v) {
  j = {{"tool", sanitizerToolName(v.tool)},
       {"severity", v.warning ? "warning" : "error"},
       {"what", v.what},
       {"where", v.where()},
       {"locations", v.locations},
       {"origin", sanitizerOriginName(v.origin)},
       {"api_error", v.apiError},
       {"details", v.details}};
  if (!v.thread.empty()) j["thread"] = v.thread;
  if (!v.block.empty()) j["block"] = v.block;
  if (v.hazards) j["hazards"] = v.hazards;
  j["occurrences"] = v.occurrences;
}

void from_json(const nlohmann::json &j, SanitizerLocation &v) {
  v.function = j.value("function", std::string());
  v.offset = j.value("offset", std::string());
  v.file = j.value("file", std::string());
  v.line = j.value("line", 0);
}

namespace {
SanitizerTool toolOf(const nlohmann::json &j) {
  return parseSanitizerTool(j.value("tool", std::string())).value_or(SanitizerTool::Memcheck);
}
}  // namespace

void from_json(const nlohmann::json &j, SanitizerFinding &v) {
  v.tool = toolOf(j);
  v.warning = j.value("severity", std::string()) == "warning";
  v.what = j.value("what", std::string());
  v.locations = j.value("locations", std::vector<SanitizerLocation>{});
  const auto origin = j.value("origin", std::string("candidate"));
  v.origin = origin == "reference" ? SanitizerOrigin::Reference
             : origin == "workbench" ? SanitizerOrigin::Workbench
                                     : SanitizerOrigin::Candidate;
  v.apiError = j.value("api_error", false);
  v.details = j.value("details", std::string());
  v.thread = j.value("thread", std::string());
  v.block = j.value("block", std::string());
  v.hazards = j.value("hazards", 0LL);
  v.occurrences = j.value("occurrences", 1);
}

void to_json(nlohmann::json &j, const SanitizerReport &v) {
  j = {{"tool", sanitizerToolName(v.tool)},
       {"started", v.started},
       {"completed", v.completed},
       {"errors", v.errors},
       {"warnings", v.warnings},
       {"candidate_errors", v.candidateErrors()},
       {"candidate_findings", v.candidateFindings()},
       {"findings", v.findings},
       {"notes", v.notes},
       {"log", v.log},
       {"worker_log", v.workerLog},
       {"evaluation", v.evaluation},
       {"seconds", v.seconds}};
  if (!v.problem.empty()) j["problem"] = v.problem;
}

void from_json(const nlohmann::json &j, SanitizerReport &v) {
  v.tool = toolOf(j);
  v.started = j.value("started", false);
  v.completed = j.value("completed", false);
  v.errors = j.value("errors", -1);
  v.warnings = j.value("warnings", 0);
  v.findings = j.value("findings", std::vector<SanitizerFinding>{});
  v.notes = j.value("notes", std::vector<std::string>{});
  v.log = j.value("log", std::vector<std::string>{});
  v.workerLog = j.value("worker_log", std::vector<std::string>{});
  v.problem = j.value("problem", std::string());
  v.evaluation = j.value("evaluation", std::string());
  v.seconds = j.value("seconds", 0.0);
}

void to_json(nlohmann::json &j, const SanitizeResult &v) {
  j = {{"config", v.config},         {"seed", v.seed},
       {"program", v.program},       {"reports", v.reports},
       {"seconds", v.seconds},       {"clean", v.clean()},
       {"complete", v.complete()},   {"candidate_errors", v.candidateErrors()},
       {"summary", v.summary()}};
  if (!v.problem.empty()) j["problem"] = v.problem;
}

void from_json(const nlohmann::json &j, SanitizeResult &v) {
  v.config = j.value("config", std::string());
  v.seed = j.value("seed", std::uint64_t{0});
  v.program = j.value("program", std::string());
  v.reports = j.value("reports", std::vector<SanitizerReport>{});
  v.problem = j.value("problem", std::string());
  v.seconds = j.value("seconds", 0.0);
}

}  // namespace kwb
