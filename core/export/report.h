#pragma once
// The report export (issue 20 item 1): what the kernel computes, its final measurements with their
// spread, the speedup history, its roofline position, profiler metrics against the baseline, what
// led to it (experience, the session's model, settings and skill cards), and the exact toolkit,
// driver and GPU, as Markdown (charts as SVG files beside it) and as one self-contained HTML file
// (charts as embedded images). No Qt.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/export/kernel_export.h"
#include "core/profile/profiler.h"

namespace kwb {
class Workspace;
namespace memory {
class ExperienceStore;
}
}  // namespace kwb

namespace kwb::exporting {

struct HistoryPoint {
  std::int64_t run = 0;
  std::string at;        // when it finished (UTC, ISO 8601)
  std::string source;    // the file
  std::string outcome;
  double speedup = 0;    // geometric mean over the timed configurations; 0: not timed
  bool exported = false; // the run being exported
};

struct LedTo {
  std::string what;    // "effective, x1.32", "card warp-shuffle-reduction"
  std::string detail;  // the idea, the journal line
  double speedup = 0;
};

struct ReportContext {
  std::vector<HistoryPoint> history;  // the task's runs in the workspace, oldest first
  std::vector<LedTo> experience;      // the Case's ancestors in the memory, root first, then the Case
  std::vector<LedTo> lineage;         // the task's lineage steps up to this code, when it is one of them
  std::optional<profile::ProfileResult> profile, baselineProfile;  // the kernel's and the starter's
  std::string session;                // "model: ..., settings: ..." when an agent session wrote it
  std::vector<std::string> cards;     // skill cards the session's prompts carried
  std::string driver;                 // "13.0 (580.95), as probed when exported", or why unknown
};

// Reads the history from the workspace, the experience from the memory (the Case of this code and
// its ancestors) and the session's model, settings and cards, where each is given and knows the
// candidate.
ReportContext reportContextFor(const ExportInput &input, Workspace *workspace, memory::ExperienceStore *memory);

// Writes report.md, report.html and the charts (charts/*.svg) into `dir`. Throws ExportError.
ExportedPackage exportReport(const ExportInput &input, const ReportContext &context, const std::filesystem::path &dir,
                             bool overwrite = false);

// The charts alone (SVG documents), for tests and the window: the speedup history and the roofline.
std::string speedupHistorySvg(const std::vector<HistoryPoint> &history);
std::string rooflineSvg(const ExportInput &input);

}  // namespace kwb::exporting
