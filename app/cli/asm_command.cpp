#include "app/cli/asm_command.h"

#include "app/cli/candidate_input.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/compile/listing_request.h"
#include "core/task/manifest_parser.h"
#include "core/task/source_file.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

bool readText(const fs::path &p, std::string &text) {
  try {
    kwb::SourceReadOptions o;
    o.what = "file";
    text = kwb::readSourceFile(p, o);
    return true;
  } catch (const kwb::SourceFileError &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return false;
  }
}

}  // namespace

int asmCommand(const AsmArgs &args, bool asJson) {
  auto input = loadCandidate(args.task, args.candidate);
  if (!input) return kExitUsage;
  const kwb::Task &task = input->task;
  const fs::path &path = input->path;
  const std::string &source = input->text;
  std::map<std::string, std::int64_t> tunables = input->tunables;
  if (!parseTunableValues(args.sets, tunables, "--set")) return kExitUsage;
  const auto kind = args.ptx ? kwb::ListingKind::Ptx : kwb::ListingKind::Sass;
  const kwb::Compiler compiler;
  auto listingOf = [&](const fs::path &p, const std::string &text, kwb::ListingResult &out) {
    try {
      out = kwb::candidateListing(compiler, task, text, p.string(), args.arch, kind, tunables);
    } catch (const std::invalid_argument &e) {
      std::cerr << "kwb: " << e.what() << "\n";
      return kExitUsage;
    }
    if (!out.ok) {
      std::cerr << "kwb: " << p.string() << ": no " << (args.ptx ? "PTX" : "SASS") << ": " << out.error << "\n";
      return kExitFailed;
    }
    return 0;
  };
  kwb::ListingResult result;
  if (int rc = listingOf(path, source, result)) return rc;

  if (!args.diffWith.empty()) {
    std::string other;
    if (!readText(args.diffWith, other)) {
      std::cerr << "kwb: cannot read " << args.diffWith << "\n";
      return kExitUsage;
    }
    kwb::ListingResult second;
    if (int rc = listingOf(args.diffWith, other, second)) return rc;
    const auto diff = kwb::diffListings(result.text, second.text);
    int added = 0, removed = 0;
    for (const auto &d : diff) {
      added += d.kind == kwb::DiffLine::Kind::Added;
      removed += d.kind == kwb::DiffLine::Kind::Removed;
    }
    if (asJson) {
      json lines = json::array();
      for (const auto &d : diff)
        lines.push_back({{"kind", d.kind == kwb::DiffLine::Kind::Same ? "same" : d.kind == kwb::DiffLine::Kind::Added ? "added" : "removed"},
                         {"text", d.text}});
      std::cout << json{{"a", path.string()}, {"b", args.diffWith}, {"added", added}, {"removed", removed}, {"lines", lines}}.dump(2)
                << "\n";
    } else {
      std::cout << "--- " << path.string() << "\n+++ " << args.diffWith << "\n" << kwb::formatDiff(diff);
      std::cout << removed << " line(s) only in the first, " << added << " only in the second\n";
    }
    return 0;
  }

  const auto &lines = result.listing.lines;
  if (asJson) {
    json out = json::array();
    for (const auto &l : lines)
      if (args.line == 0 || l.sourceLine == args.line)
        out.push_back({{"text", l.text}, {"source_line", l.sourceLine}});
    std::cout << json{{"candidate", path.string()}, {"kind", args.ptx ? "ptx" : "sass"}, {"arch", args.arch},
                      {"has_line_info", result.listing.hasLineInfo}, {"lines", out}}.dump(2)
              << "\n";
    return 0;
  }
  if (args.line > 0) {
    const auto idx = result.listing.linesFor(args.line);
    if (idx.empty()) {
      std::cout << "no instruction comes from line " << args.line << " of " << path.string()
                << (result.listing.hasLineInfo ? "" : " (the listing has no line information)") << "\n";
      return 0;
    }
    for (int i : idx) std::cout << lines[i].text << "\n";
    return 0;
  }
  for (const auto &l : lines) {
    char gutter[16];
    if (l.sourceLine > 0) std::snprintf(gutter, sizeof gutter, "%5d | ", l.sourceLine);
    else std::snprintf(gutter, sizeof gutter, "      | ");
    std::cout << gutter << l.text << "\n";
  }
  return 0;
}
