#pragma once
// compute-sanitizer, the CUDA toolkit's checker, as kwb eval --sanitize uses it (issue 15, gap
// 6): a race that the double run does not catch (a missing barrier whose effect the scheduler
// hides) still shows as a hazard in racecheck. The worker is started under compute-sanitizer,
// inside the same sandbox as always, and runs one ordinary `evaluate` request (smallest
// configuration, one seed); the tool's report comes back on the worker's stderr and is read
// here into findings with their source lines. Pure functions; no Qt, no process here
// (Evaluator::sanitize runs it).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kwb {

enum class SanitizerTool { Memcheck, Racecheck, Initcheck, Synccheck };
const char *sanitizerToolName(SanitizerTool tool);  // "memcheck", ...
std::optional<SanitizerTool> parseSanitizerTool(std::string_view name);
// The four, in the order they run.
std::vector<SanitizerTool> allSanitizerTools();
// "memcheck,racecheck" → the tools; "all" or empty → all four. Throws std::invalid_argument
// naming the unknown tool.
std::vector<SanitizerTool> parseSanitizerTools(std::string_view list);

// Every line compute-sanitizer writes starts with this (its own report, not the program's).
inline constexpr std::string_view kSanitizerLinePrefix = "=========";

// The toolkit's compute-sanitizer: $KWB_COMPUTE_SANITIZER, then <toolkit>/bin and
// <toolkit>/compute-sanitizer of each toolkit home, then $PATH. Empty when none.
std::filesystem::path findComputeSanitizer();

// The command line that runs a program under `tool`, up to (not including) the program: the
// report goes to the program's stderr (the worker's stderr reaches the client line by line;
// its stdout is the protocol channel and stays clean), child processes are followed (a host
// launcher's process), and racecheck reports hazards with their source lines.
std::vector<std::string> sanitizerCommand(const std::filesystem::path &program, SanitizerTool tool);
// The folders compute-sanitizer loads its libraries from (its own, links resolved, and the
// toolkit's compute-sanitizer folder beside bin/), colon-separated.
std::string sanitizerFolders(const std::filesystem::path &program);
// What a worker under the tool is given besides: tensors in allocations of their own size (a read
// past a tensor's end is out of bounds) and the tool's folders open behind a host launcher's fence.
std::vector<std::pair<std::string, std::string>> sanitizerWorkerEnvironment(const std::filesystem::path &program);

// One place in the code a finding points at.
struct SanitizerLocation {
  std::string function;  // "softmax(const float *, float *, long long)" as reported
  std::string offset;    // "0x1a0"
  std::string file;      // as compiled (the candidate's source name); empty without line info
  int line = 0;          // 1-based; 0 without line info

  bool operator==(const SanitizerLocation &) const = default;
};

// Whose code a finding is in.
enum class SanitizerOrigin { Candidate, Reference, Workbench };
const char *sanitizerOriginName(SanitizerOrigin origin);  // "candidate", "reference", "workbench"

struct SanitizerFinding {
  SanitizerTool tool = SanitizerTool::Memcheck;
  bool warning = false;      // racecheck's "Warning:" (an error otherwise)
  std::string what;          // the headline: "Invalid __global__ read of size 4 bytes", ...
  std::vector<SanitizerLocation> locations;  // where (racecheck: both accesses)
  std::string thread, block; // "(255,0,0)", "(0,0,0)" where reported
  long long hazards = 0;     // racecheck: how many hazards this line stands for
  // How many reports said the same at the same places (one per thread, for most tools): kept
  // once, with the first thread and block.
  int occurrences = 1;
  bool apiError = false;     // "Program hit ... on CUDA API call to ...": host side
  SanitizerOrigin origin = SanitizerOrigin::Candidate;
  std::string details;       // the report's lines for this finding, prefix removed

  // "candidate.cu:12" of the first location with a line, else the function, else "".
  std::string where() const;
};

// What tells the candidate's findings from the reference's and the workbench's own.
struct SanitizerAttribution {
  std::string candidateFile;                 // the source name the candidate was compiled with
  std::vector<std::string> candidateKernels; // kernels of the candidate's image
  std::string referenceFile;                 // the source name the reference was compiled with
  std::vector<std::string> referenceKernels;
  bool hostLauncher = false;                 // API errors from kwb_launch are the candidate's
};

// One tool's run as read from its report.
struct SanitizerReport {
  SanitizerTool tool = SanitizerTool::Memcheck;
  bool started = false;     // the "COMPUTE-SANITIZER" banner was seen
  bool completed = false;   // its summary line was seen: the program ran to the end under it
  int errors = -1;          // from the summary (racecheck: errors among the displayed hazards)
  int warnings = 0;         // racecheck's warnings
  std::vector<SanitizerFinding> findings;
  std::vector<std::string> notes;  // what the tool said besides findings (internal errors, ...)
  std::vector<std::string> log;    // the tool's own lines as written (the first kMaxLogLines)
  std::vector<std::string> workerLog;  // the worker's last stderr lines under the tool
  static constexpr std::size_t kMaxLogLines = 400;
  // Filled by the run, not the parser:
  std::string problem;      // why the tool's run says nothing (did not start, did not finish)
  std::string evaluation;   // how the evaluate request under it ended ("correct", "runtime-error: ...")
  double seconds = 0.0;     // the tool's whole run: worker start to exit

  // Findings in the candidate's code (errors and warnings).
  std::size_t candidateFindings() const;
  std::size_t candidateErrors() const;  // errors only
};

// kwb eval --sanitize's part of an evaluation result: every tool run at one configuration and
// seed.
struct SanitizeResult {
  std::string config;            // the smallest configuration (fewest tensor bytes)
  std::uint64_t seed = 0;
  std::string program;           // the compute-sanitizer used
  std::vector<SanitizerReport> reports;  // one per tool, in the order run
  std::string problem;           // why nothing ran (no compute-sanitizer, no GPU, ...)
  double seconds = 0.0;

  // Every tool ran to its summary.
  bool complete() const;
  std::size_t candidateErrors() const;
  std::size_t candidateWarnings() const;
  // Complete, and no error in the candidate's code.
  bool clean() const { return complete() && candidateErrors() == 0; }
  // "clean (memcheck, racecheck, initcheck, synccheck)", "3 errors in the candidate: racecheck ...".
  std::string summary() const;
};

// Reads compute-sanitizer's report: `lines` are the worker's stderr lines (others than the
// tool's are skipped). Tolerates both location forms compute-sanitizer has used:
// "at FUNC+0xOFF in FILE:LINE" and "at 0xOFF in FILE:LINE:FUNC".
SanitizerReport parseSanitizerReport(SanitizerTool tool, const std::vector<std::string> &lines,
                                     const SanitizerAttribution &attribution);

void to_json(nlohmann::json &j, const SanitizerLocation &v);
void from_json(const nlohmann::json &j, SanitizerLocation &v);
void to_json(nlohmann::json &j, const SanitizerFinding &v);
void from_json(const nlohmann::json &j, SanitizerFinding &v);
void to_json(nlohmann::json &j, const SanitizerReport &v);
void from_json(const nlohmann::json &j, SanitizerReport &v);
void to_json(nlohmann::json &j, const SanitizeResult &v);
void from_json(const nlohmann::json &j, SanitizeResult &v);

}  // namespace kwb
