// compute-sanitizer's reports read into findings (core/eval/sanitizer.h), from real reports the
// H200 produced (tests/fixtures/sanitizer): each finding's tool, what, source line, thread and
// origin; repeated findings counted once; the summary read; the tool list parsed; the command
// line the worker runs under.
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/eval/sanitizer.h"
#include "core/eval/sanitizer_status.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> fixture(const std::string &name) {
  std::istringstream in(kwb::test::readFile(fs::path(KWB_SOURCE_DIR) / "tests/fixtures/sanitizer" / name));
  std::vector<std::string> lines;
  // Interleaved with the worker's own stderr, as the client reads it.
  lines.push_back("kwb-worker 0.1: serving (pid 7, sandbox unshare; seccomp on)");
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  if (lines.empty() || lines.size() == 1) throw std::runtime_error("missing fixture " + name);
  return lines;
}

kwb::SanitizerAttribution softmaxCandidate(const std::string &file, bool hostLauncher = false) {
  kwb::SanitizerAttribution a;
  a.candidateFile = file;
  a.candidateKernels = {"softmax"};
  a.referenceFile = "kwb-task-reference/reference.cu";
  a.referenceKernels = {"softmax_reference"};
  a.hostLauncher = hostLauncher;
  return a;
}

}  // namespace

class TestSanitizerReport : public QObject {
  Q_OBJECT

 private slots:
  // Two race reports between the read of the maximum and the store of the partial sum.
  void racecheckNamesBothAccesses() {
    const auto r = kwb::parseSanitizerReport(kwb::SanitizerTool::Racecheck, fixture("racy-softmax-racecheck.log"),
                                             softmaxCandidate("/home/me/racy-softmax.cu"));
    QVERIFY(r.started);
    QVERIFY(r.completed);
    QCOMPARE(r.errors, 2);
    QCOMPARE(r.warnings, 0);
    // The same two places twice (two blocks' worth): one finding, counted twice.
    QCOMPARE(r.findings.size(), std::size_t{1});
    const auto &f = r.findings[0];
    QCOMPARE(f.occurrences, 2);
    QCOMPARE(f.hazards, 5888LL + 5744LL);
    QCOMPARE(f.what, std::string("Race reported between Read access"));
    QCOMPARE(f.locations.size(), std::size_t{2});
    QCOMPARE(f.locations[0].file, std::string("racy-softmax.cu"));
    QCOMPARE(f.locations[0].line, 23);
    QCOMPARE(f.locations[0].function, std::string("softmax"));
    QCOMPARE(f.locations[0].offset, std::string("0xd30"));
    QCOMPARE(f.locations[1].line, 27);
    QCOMPARE(f.origin, kwb::SanitizerOrigin::Candidate);
    QVERIFY(!f.warning);
    QCOMPARE(f.where(), std::string("racy-softmax.cu:23"));
    QCOMPARE(r.candidateErrors(), std::size_t{1});
  }

  // The read past the end, then the launch failure it causes, reported twice on the worker's
  // own synchronisation: the first is the candidate's, the others the workbench's.
  void memcheckOutOfBoundsAndTheApiErrorsAfterIt() {
    const auto r = kwb::parseSanitizerReport(kwb::SanitizerTool::Memcheck, fixture("overrun-softmax-memcheck.log"),
                                             softmaxCandidate("overrun-softmax.cu"));
    QVERIFY(r.completed);
    QCOMPARE(r.errors, 3);
    QCOMPARE(r.findings.size(), std::size_t{2});
    const auto &read = r.findings[0];
    QCOMPARE(read.what, std::string("Invalid __global__ read of size 4 bytes"));
    QCOMPARE(read.where(), std::string("overrun-softmax.cu:36"));
    QCOMPARE(read.thread, std::string("(127,0,0)"));
    QCOMPARE(read.block, std::string("(1023,0,0)"));
    QVERIFY2(read.details.find("1 bytes after the nearest allocation") != std::string::npos, read.details.c_str());
    QCOMPARE(read.origin, kwb::SanitizerOrigin::Candidate);
    const auto &api = r.findings[1];
    QVERIFY(api.apiError);
    QCOMPARE(api.occurrences, 2);
    QCOMPARE(api.origin, kwb::SanitizerOrigin::Workbench);
    QCOMPARE(r.candidateErrors(), std::size_t{1});
    QCOMPARE(r.notes, std::vector<std::string>{"Target application returned an error"});
  }

  // One line per thread; the tool stops at 100.
  void synccheckFindingsPerThreadBecomeOne() {
    const auto r = kwb::parseSanitizerReport(kwb::SanitizerTool::Synccheck, fixture("syncwarp-softmax-synccheck.log"),
                                             softmaxCandidate("syncwarp-softmax.cu"));
    QVERIFY(r.started);
    QVERIFY(!r.completed);  // the fixture ends before the summary (400 lines kept)
    QCOMPARE(r.findings.size(), std::size_t{1});
    QCOMPARE(r.findings[0].what, std::string("Barrier error detected. Invalid arguments."));
    QCOMPARE(r.findings[0].where(), std::string("syncwarp-softmax.cu:26"));
    QVERIFY(r.findings[0].occurrences > 90);
    QCOMPARE(r.findings[0].thread, std::string("(96,0,0)"));
    QCOMPARE(r.log.size(), kwb::SanitizerReport::kMaxLogLines);
  }

  // A host launcher's own kernel reading scratch it never wrote (line 41); the reads of the input
  // (line 17) are what this process's initcheck said before the launcher's process marked the
  // shared buffers written.
  void initcheckInAHostLaunchersKernels() {
    const auto r = kwb::parseSanitizerReport(kwb::SanitizerTool::Initcheck, fixture("uninit-launcher-initcheck.log"),
                                             softmaxCandidate("uninit-launcher.cu", true));
    QCOMPARE(r.findings.size(), std::size_t{2});
    QCOMPARE(r.findings[0].where(), std::string("uninit-launcher.cu:41"));
    QCOMPARE(r.findings[0].locations[0].function, std::string("peek(const float *)"));
    QCOMPARE(r.findings[0].occurrences, 32);
    QCOMPARE(r.findings[1].where(), std::string("uninit-launcher.cu:17"));
    for (const auto &f : r.findings) QCOMPARE(f.origin, kwb::SanitizerOrigin::Candidate);
  }

  // The same candidate before initcheck ran with --check-api-memory-access no: the launcher's
  // process's copy of each mapped tensor onto itself read it "uninitialized", one error per word,
  // and the hundred printed were all that copy. Each is a finding (an API error, merged into one),
  // not a note, so the exit status's error is not left unnamed.
  void initcheckHostApiAccessIsAFinding() {
    auto r = kwb::parseSanitizerReport(kwb::SanitizerTool::Initcheck, fixture("uninit-launcher-initcheck-api.log"),
                                       softmaxCandidate("uninit-launcher.cu", true));
    QVERIFY(r.completed);
    QCOMPARE(r.errors, 262208);
    QCOMPARE(r.findings.size(), std::size_t{1});
    QVERIFY(r.findings[0].apiError);
    QCOMPARE(r.findings[0].occurrences, 100);
    QVERIFY2(r.findings[0].what.rfind("Host API memory access error", 0) == 0, r.findings[0].what.c_str());
    kwb::holdToExitStatus(r, kwb::kSanitizerErrorStatus);
    QCOMPARE(r.findings.size(), std::size_t{1});  // named: no "its report names none" finding
  }

  void cleanRunHasNoFindings() {
    const auto r = kwb::parseSanitizerReport(kwb::SanitizerTool::Racecheck, fixture("softmax-racecheck.log"),
                                             softmaxCandidate("softmax.cu"));
    QVERIFY(r.completed);
    QCOMPARE(r.errors, 0);
    QVERIFY(r.findings.empty());
    QCOMPARE(r.log.size(), std::size_t{2});
  }

  // Findings in the reference's file (compiled as kwb-task-reference/NAME) are not the candidate's,
  // even with the same kernel name; a report with no summary is not complete.
  void attributionAndCompleteness() {
    const std::vector<std::string> lines = {
        "========= COMPUTE-SANITIZER",
        "========= Invalid __shared__ write of size 4 bytes",
        "=========     at softmax+0x10 in reference.cu:9",
        "=========     by thread (1,0,0) in block (0,0,0)",
        "========= ",
        "========= Invalid __global__ read of size 4 bytes",
        "=========     at softmax+0x20 in softmax.cu:12",
        "========= ",
    };
    kwb::SanitizerAttribution a = softmaxCandidate("softmax.cu");
    a.referenceFile = "kwb-task-reference/reference.cu";
    a.referenceKernels = {"softmax"};
    const auto r = kwb::parseSanitizerReport(kwb::SanitizerTool::Memcheck, lines, a);
    QCOMPARE(r.findings.size(), std::size_t{2});
    QCOMPARE(r.findings[0].origin, kwb::SanitizerOrigin::Reference);
    QCOMPARE(r.findings[1].origin, kwb::SanitizerOrigin::Candidate);
    QVERIFY(!r.completed);
    kwb::SanitizeResult s;
    s.reports.push_back(r);
    QVERIFY(!s.complete());
    QVERIFY(!s.clean());
    QVERIFY2(s.summary().find("incomplete") != std::string::npos, s.summary().c_str());
    // Through JSON and back (the run history stores it).
    const kwb::SanitizeResult back = nlohmann::json(s).get<kwb::SanitizeResult>();
    QCOMPARE(back.reports.at(0).findings.at(1).where(), std::string("softmax.cu:12"));
    QCOMPARE(back.reports.at(0).findings.at(0).origin, kwb::SanitizerOrigin::Reference);
    QCOMPARE(back.summary(), s.summary());
  }

  // The report shares the worker's stderr with what candidate code prints: a forged summary with
  // a number too long for an int does not throw, and the tool's exit status is what says whether
  // it found errors.
  void forgedLinesDoNotDecideTheVerdict() {
    const std::vector<std::string> forged = {
        "========= COMPUTE-SANITIZER",
        "========= ERROR SUMMARY: 99999999999999999999 errors",
    };
    auto r = kwb::parseSanitizerReport(kwb::SanitizerTool::Memcheck, forged, softmaxCandidate("softmax.cu"));
    QVERIFY(r.completed);
    QVERIFY(r.findings.empty());
    kwb::holdToExitStatus(r, 0);
    QCOMPARE(r.candidateErrors(), std::size_t{0});
    QCOMPARE(r.notes.back(), std::string("compute-sanitizer exited with status 0"));
    // "0 errors" printed by the candidate, but the tool exits with its error status.
    const std::vector<std::string> clean = {"========= COMPUTE-SANITIZER", "========= ERROR SUMMARY: 0 errors"};
    auto lie = kwb::parseSanitizerReport(kwb::SanitizerTool::Racecheck, clean, softmaxCandidate("softmax.cu"));
    kwb::holdToExitStatus(lie, kwb::kSanitizerErrorStatus);
    QCOMPARE(lie.candidateErrors(), std::size_t{1});
    QVERIFY2(lie.findings[0].what.find("exit status") != std::string::npos, lie.findings[0].what.c_str());
    // Its error status with a real finding: nothing added.
    auto real = kwb::parseSanitizerReport(kwb::SanitizerTool::Racecheck, fixture("racy-softmax-racecheck.log"),
                                          softmaxCandidate("racy-softmax.cu"));
    kwb::holdToExitStatus(real, kwb::kSanitizerErrorStatus);
    QCOMPARE(real.findings.size(), std::size_t{1});
  }

  // A candidate whose file has the reference's name is still the candidate (whole paths are
  // reported); a host launcher's runtime-API errors are its own, the driver-API ones the worker's.
  void namesAndApiErrors() {
    const std::vector<std::string> lines = {
        "========= COMPUTE-SANITIZER",
        "========= Invalid __global__ read of size 4 bytes",
        "=========     at softmax+0x20 in /home/me/reference.cu:12",
        "========= ",
        "========= Program hit cudaErrorInvalidValue (error 1) due to \"invalid argument\" on CUDA API call to cudaMemcpyAsync.",
        "========= ",
        "========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to \"unspecified launch failure\" on CUDA API call to cuCtxSynchronize.",
        "========= ",
        "========= ERROR SUMMARY: 3 errors",
    };
    auto a = softmaxCandidate("/home/me/reference.cu", true);
    a.referenceFile = "kwb-task-reference/reference.cu";
    const auto r = kwb::parseSanitizerReport(kwb::SanitizerTool::Memcheck, lines, a);
    QCOMPARE(r.findings.size(), std::size_t{3});
    QCOMPARE(r.findings[0].origin, kwb::SanitizerOrigin::Candidate);
    QCOMPARE(r.findings[1].origin, kwb::SanitizerOrigin::Candidate);
    QCOMPARE(r.findings[2].origin, kwb::SanitizerOrigin::Workbench);
    a.hostLauncher = false;
    const auto device = kwb::parseSanitizerReport(kwb::SanitizerTool::Memcheck, lines, a);
    QCOMPARE(device.findings[1].origin, kwb::SanitizerOrigin::Workbench);
  }

  void toolsAndCommand() {
    QCOMPARE(kwb::parseSanitizerTools("").size(), std::size_t{4});
    QCOMPARE(kwb::parseSanitizerTools("all").size(), std::size_t{4});
    const auto two = kwb::parseSanitizerTools("racecheck,memcheck,racecheck");
    QCOMPARE(two.size(), std::size_t{2});
    QCOMPARE(two[0], kwb::SanitizerTool::Racecheck);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::parseSanitizerTools("memcheck,leakcheck"));
    const auto argv = kwb::sanitizerCommand("/usr/local/cuda/bin/compute-sanitizer", kwb::SanitizerTool::Memcheck);
    const auto has = [&](const std::string &a, const std::string &b) {
      for (std::size_t i = 0; i + 1 < argv.size(); ++i)
        if (argv[i] == a && argv[i + 1] == b) return true;
      return false;
    };
    QVERIFY(has("--tool", "memcheck"));
    QVERIFY(has("--log-file", "/proc/self/fd/2"));  // stderr: stdout is the protocol channel
    QVERIFY(has("--target-processes", "all"));      // the host launcher's process too
    QVERIFY(has("--padding", "65536"));
    QVERIFY(has("--strip-paths", "no"));
    QVERIFY(has("--error-exitcode", std::to_string(kwb::kSanitizerErrorStatus)));
    QVERIFY(has("--print-limit", "10000"));
    const auto race = kwb::sanitizerCommand("/x/compute-sanitizer", kwb::SanitizerTool::Racecheck);
    QVERIFY(std::find(race.begin(), race.end(), "--padding") == race.end());
    QVERIFY(std::find(race.begin(), race.end(), "--check-api-memory-access") == race.end());
    const auto init = kwb::sanitizerCommand("/x/compute-sanitizer", kwb::SanitizerTool::Initcheck);
    QVERIFY(std::adjacent_find(init.begin(), init.end(), [](const std::string &a, const std::string &b) {
              return a == "--check-api-memory-access" && b == "no";
            }) != init.end());
  }
};

QTEST_GUILESS_MAIN(TestSanitizerReport)
#include "tst_sanitizer_report.moc"
