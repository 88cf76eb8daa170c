// The typed payloads that cross a boundary (worker -> client, core -> CLI --json and the run
// history, core -> UI): each struct's to_json/from_json pair. A round trip keeps every field; a
// payload an older version wrote (keys missing) reads back with defaults; a field of the wrong
// type is an error naming the key; outcome strings are one vocabulary.
#include <QtTest>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/eval/evaluation_result.h"
#include "core/gpu/worker_gpu_report.h"
#include "core/profile/profiler.h"
#include "core/tune/tuner.h"

namespace {

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A result with every part filled in, as a timed incorrect-then-correct run would give.
kwb::EvaluationResult richResult() {
  kwb::EvaluationResult r;
  r.outcome = kwb::Outcome::Incorrect;
  r.message = "small: seed 2: y: 12 of 1048576 elements differ";
  r.arch = "sm_90";
  r.device = "NVIDIA H200";
  r.deviceOrdinal = 1;
  r.sandbox = "bwrap";
  r.seconds = 4.25;
  r.candidate.ok = true;
  r.candidate.form = kwb::SourceForm::HostLauncher;
  r.candidate.diagnostics.push_back({"softmax.cu", 7, 9, kwb::Diagnostic::Severity::Warning, "unused i", "177-D"});
  r.candidate.kernels.push_back({"softmax", 40, 1024, 8, 16, 4, 4, 1});
  r.candidate.toolkitVersion = "13.0";
  r.candidate.cacheHit = true;
  r.candidate.seconds = 0.125;
  r.referenceDiagnostics.push_back({"reference.cu", 3, 1, kwb::Diagnostic::Severity::Note, "a note", ""});

  kwb::ConfigOutcome c;
  c.config = "small";
  c.outcome = kwb::Outcome::Incorrect;
  c.reason = "mismatch";
  c.message = "seed 2: ...";
  c.candidateLaunch = {{1024, 1, 1}, {128, 1, 1}, 4096};
  c.referenceLaunch = {{1024, 1, 1}, {256, 1, 1}, 0};
  kwb::Occupancy occupancy;
  occupancy.activeBlocksPerSM = 8;
  occupancy.activeWarpsPerSM = 32;
  occupancy.maxWarpsPerSM = 64;
  occupancy.occupancy = 0.5;
  occupancy.limiter = kwb::OccupancyLimiter::Registers;
  occupancy.explanation = "8 blocks of 128 threads per SM (50%)";
  c.occupancy = occupancy;
  kwb::SeedOutcome seed;
  seed.seed = 2;
  seed.summary = "y: 12 of 1048576 elements differ";
  seed.unwritten = 3;
  seed.inputsModified = true;
  seed.modifiedInputs = {"x"};
  seed.race = true;
  seed.outputReused = 5;
  seed.noKernelRan = true;
  seed.referenceCached = true;
  kwb::OutputCheck out;
  out.tensor = "y";
  kwb::ComparisonSummary cmp;
  cmp.checked = 1048576;
  cmp.mismatches = 12;
  cmp.firstMismatches = {{3, {0, 3}, "0.51", "0.49"}, {9, {0, 9}, "NaN", "0.1"}};
  cmp.maxAbsError = 0.021;
  cmp.maxAbsErrorIndex = 3;
  cmp.maxRelErrorIndex = 9;  // maxRelError empty: infinite
  cmp.relativeL2Error = 3.4e-6;
  cmp.nanInGot = 1;
  cmp.summary = "12 of 1048576 elements differ";
  out.comparison = cmp;
  out.unwritten = kwb::UnwrittenSummary{3, {5, 6, 7}, "3 unwritten"};
  out.race = kwb::RaceSummary{true, 4, 2, 0.5, "two runs differ"};
  seed.outputs.push_back(out);
  c.seeds.push_back(seed);
  r.configs.push_back(c);

  kwb::ConfigOutcome timed;
  timed.config = "h200";
  timed.outcome = kwb::Outcome::Correct;
  kwb::TimingOutcome t;
  t.ok = true;
  t.timer = "cupti";
  t.candidate.median = 0.2;
  t.candidate.q1 = 0.19;
  t.candidate.q3 = 0.21;
  t.candidate.count = 50;
  t.reference.median = 0.3;
  t.reference.count = 50;
  t.speedup = 1.5;
  t.suspicious = true;
  t.suspiciousReason = "faster than the memory roofline allows";
  t.stopReason = "converged";
  t.throttledSamples = 2;
  t.findings = {{"side-stream", "kernels ran on another stream"}};
  t.roofline = kwb::RooflineFloor{1e9, 2e9, 4.8e12, 1e14, 0.41};
  t.warmupCandidate = kwb::WarmupRecord{11, 8.5, true};
  t.warmupReference = kwb::WarmupRecord{10, 9.5, false};
  t.eventsCandidate = kwb::EventTimes{0.25, 0.01, 0.24};
  t.l2FlushBytes = 125829120;
  t.rechecks = {{0, "y", true, "all match", 0}};
  t.seconds = 0.9;
  timed.timing = t;
  r.configs.push_back(timed);

  kwb::ConfigOutcome untimed;
  untimed.config = "odd";
  untimed.outcome = kwb::Outcome::Correct;
  kwb::TimingOutcome nt;
  nt.error = "runtime-error: CUDA_ERROR_LAUNCH_FAILED";
  untimed.timing = nt;
  r.configs.push_back(untimed);
  return r;
}

// Whether every key and value of `old` is in `now` (arrays element by element): the form an
// earlier version wrote is kept, new fields aside.
bool keeps(const nlohmann::json &old, const nlohmann::json &now, std::string &where) {
  if (old.is_object()) {
    if (!now.is_object()) return false;
    for (const auto &[key, value] : old.items()) {
      if (!now.contains(key)) {
        where += "." + key + " (missing)";
        return false;
      }
      if (!keeps(value, now[key], where += "." + key)) return false;
      where.resize(where.size() - key.size() - 1);
    }
    return true;
  }
  if (old.is_array()) {
    if (!now.is_array() || now.size() != old.size()) return false;
    for (std::size_t i = 0; i < old.size(); ++i)
      if (!keeps(old[i], now[i], where)) return false;
    return true;
  }
  if (old.is_number() && now.is_number()) return old.get<double>() == now.get<double>();
  return old == now;
}

}  // namespace

class TestPayloadJson : public QObject {
  Q_OBJECT

 private slots:
  void outcomesAreOneVocabulary() {
    for (auto o : {kwb::Outcome::Correct, kwb::Outcome::Incorrect, kwb::Outcome::CompileError,
                   kwb::Outcome::LoadError, kwb::Outcome::RuntimeError, kwb::Outcome::Timeout, kwb::Outcome::NotRun,
                   kwb::Outcome::Unsupported, kwb::Outcome::Cancelled, kwb::Outcome::Error, kwb::Outcome::Profiled,
                   kwb::Outcome::NotProfiled}) {
      QCOMPARE(kwb::parseOutcome(kwb::toString(o)).value(), o);
      QCOMPARE(nlohmann::json(o).get<kwb::Outcome>(), o);
    }
    QCOMPARE(std::string(kwb::toString(kwb::Outcome::CompileError)), std::string("compile-error"));
    QVERIFY(!kwb::parseOutcome("measured").has_value());
    QCOMPARE(nlohmann::json("measured").get<kwb::Outcome>(), kwb::Outcome::Error);
  }

  void evaluationResultRoundTrips() {
    const kwb::EvaluationResult r = richResult();
    const nlohmann::json j = r;
    const auto back = j.get<kwb::EvaluationResult>();
    // Everything the JSON carries comes back: written again, the same JSON.
    QCOMPARE(nlohmann::json(back).dump(), j.dump());
    QCOMPARE(back.outcome, kwb::Outcome::Incorrect);
    QCOMPARE(back.candidate.form, kwb::SourceForm::HostLauncher);
    QCOMPARE(back.candidate.diagnostics.at(0).severity, kwb::Diagnostic::Severity::Warning);
    QCOMPARE(back.candidate.kernels.at(0).spillLoadBytes, 4);
    const auto &seed = back.configs.at(0).seeds.at(0);
    QCOMPARE(seed.modifiedInputs, std::vector<std::string>{"x"});
    QVERIFY(!seed.outputs.at(0).comparison->maxRelError.has_value());
    QCOMPARE(seed.outputs.at(0).comparison->firstMismatches.at(1).got, std::string("NaN"));
    QCOMPARE(seed.outputs.at(0).race->beyondRounding, std::uint64_t{2});
    QCOMPARE(back.configs.at(0).occupancy->limiter, kwb::OccupancyLimiter::Registers);
    const auto &t = *back.configs.at(1).timing;
    QVERIFY(t.ok && t.referenceTimed);
    QCOMPARE(t.candidate.q3, 0.21);
    QCOMPARE(t.roofline->floorMs, 0.41);
    QCOMPARE(t.warmupReference->launches, std::uint64_t{10});
    QVERIFY(!t.eventsReference.has_value());
    QCOMPARE(t.findings.at(0).reason, std::string("side-stream"));
    // Not timed: the error, and none of the timed fields.
    const auto &nt = *back.configs.at(2).timing;
    QVERIFY(!nt.ok);
    QCOMPARE(nt.error, std::string("runtime-error: CUDA_ERROR_LAUNCH_FAILED"));
    QVERIFY(!j["configs"][2]["timing"].contains("candidate"));
    // The wire form a reader of --json sees.
    QCOMPARE(j["configs"][1]["timing"]["candidate"]["median_ms"].get<double>(), 0.2);
    QVERIFY(!j["configs"][2].contains("occupancy"));  // left out, not null
    QVERIFY(j["configs"][0]["seeds"][0]["outputs"][0]["comparison"]["max_rel_error"].is_null());
  }

  // `kwb eval --json` as it printed a real timed run on the H200 before the payloads were typed:
  // read back and written again, every key keeps its value.
  void recordedEvaluationKeepsItsForm() {
    const auto recorded =
        nlohmann::json::parse(readText(KWB_SOURCE_DIR "/tests/gpu/results/2026-11-29-h200-softmax-h200-time.json"));
    const auto r = recorded.get<kwb::EvaluationResult>();
    QCOMPARE(r.outcome, kwb::Outcome::Correct);
    QVERIFY(r.candidate.cacheHit);
    QCOMPARE(r.configs.at(0).occupancy->limiter, kwb::OccupancyLimiter::Warps);
    QVERIFY(r.configs.at(0).timing->ok);
    QVERIFY(r.configs.at(0).timing->candidate.median > 0);
    QVERIFY(r.configs.at(0).seeds.at(0).outputs.at(0).comparison->passed);
    std::string where;
    QVERIFY2(keeps(recorded, nlohmann::json(r), where), where.c_str());
  }

  void candidateTimedAloneHasNoReference() {
    kwb::EvaluationResult r;
    kwb::ConfigOutcome c;
    kwb::TimingOutcome t;
    t.ok = true;
    t.referenceTimed = false;
    t.candidate.median = 1.0;
    c.timing = t;
    r.configs.push_back(c);
    const nlohmann::json j = r;
    QVERIFY(j["configs"][0]["timing"]["reference"].is_null());
    QVERIFY(j["configs"][0]["timing"]["speedup"].is_null());
    QVERIFY(!j.get<kwb::EvaluationResult>().configs[0].timing->referenceTimed);
  }

  // The run history keeps results as text: what an earlier version stored reads back, and text
  // that is not a result says so instead of vanishing.
  void storedResultsReadBack() {
    const auto old = kwb::parseEvaluationResult(R"json({"outcome": "correct", "message": "correct on 1 configuration(s)",
      "compile": {"ok": true, "form": "device-only"},
      "configs": [{"config": "small", "outcome": "correct", "seeds": [{"seed": 1, "passed": true}],
                   "timing": {"ok": true, "candidate": {"median_ms": 0.06}, "reference": null, "speedup": null}}]})json");
    QCOMPARE(old.outcome, kwb::Outcome::Correct);
    QCOMPARE(old.configs.at(0).seeds.at(0).seed, std::uint64_t{1});
    QVERIFY(old.configs.at(0).seeds.at(0).outputs.empty());
    QCOMPARE(old.configs.at(0).timing->candidate.median, 0.06);
    QVERIFY(!old.configs.at(0).timing->referenceTimed);

    const auto broken = kwb::parseEvaluationResult("{not json");
    QCOMPARE(broken.outcome, kwb::Outcome::Error);
    QVERIFY(broken.message.find("not valid JSON") != std::string::npos);
    const auto wrongType = kwb::parseEvaluationResult(R"({"outcome": "correct", "configs": [{"seeds": "many"}]})");
    QCOMPARE(wrongType.outcome, kwb::Outcome::Error);
    QVERIFY2(wrongType.message.find("seeds") != std::string::npos, wrongType.message.c_str());
    QCOMPARE(kwb::parseEvaluationResult(kwb::evaluationResultText(richResult())).message, richResult().message);
  }

  void profileResultReadsTheWorkersReply() {
    // The worker's `profile` reply (PROTOCOL.md) carries the same keys; its verdict is not ours.
    const auto r = nlohmann::json::parse(R"({"config": "h200", "seed": 1, "device": "NVIDIA H200",
      "device_ordinal": 0, "verdict": "profiled", "candidate_kernels": ["softmax"], "chip": "GH100",
      "passes": 2, "passes_run": 2, "ranges": 1, "ranges_dropped": 0,
      "metrics": [{"name": "dram__throughput.avg.pct_of_peak_sustained_elapsed", "label": "DRAM throughput",
                   "unit": "%", "value": 91.4}]})").get<kwb::profile::ProfileResult>();
    QCOMPARE(r.passesRun, std::size_t{2});
    QCOMPARE(r.candidateKernels, std::vector<std::string>{"softmax"});
    QCOMPARE(r.metrics.at(0).value, 91.4);
    kwb::profile::ProfileResult p = r;
    p.outcome = kwb::Outcome::NotProfiled;
    p.reason = "insufficient-privileges";
    const nlohmann::json j = p;
    QCOMPARE(j["outcome"].get<std::string>(), std::string("not-profiled"));
    QCOMPARE(nlohmann::json(j.get<kwb::profile::ProfileResult>()).dump(), j.dump());
  }

  void tunedPointsRoundTrip() {
    kwb::tune::PointResult p;
    p.outcome = kwb::Outcome::Correct;
    p.objectiveMs = 0.5;
    p.configMs = {{"small", 0.25}, {"h200", 1.0}};
    p.registers = 32;
    const nlohmann::json j = p;
    const auto back = j.get<kwb::tune::PointResult>();
    QCOMPARE(back.outcome, kwb::Outcome::Correct);
    QCOMPARE(back.objectiveMs.value(), 0.5);
    QCOMPARE(back.configMs.at("h200"), 1.0);
    QCOMPARE(back.registers, 32);
    kwb::tune::PointResult unknown;
    QVERIFY(!nlohmann::json(unknown).contains("registers"));
    QVERIFY(!nlohmann::json(unknown).contains("objective_ms"));
    QCOMPARE(nlohmann::json(unknown).get<kwb::tune::PointResult>().registers, -1);
  }

  void gpuReportsReadBack() {
    // Recorded on the H200: `kwb-worker --devices --json`.
    const auto recorded = readText(KWB_SOURCE_DIR "/tests/gpu/results/2026-11-29-h200-kwb-devices.json");
    QVERIFY(!recorded.empty());
    const auto read = kwb::parseGpuInventory(recorded);
    QVERIFY2(std::holds_alternative<kwb::GpuInventory>(read), (std::holds_alternative<std::string>(read) ? std::get<std::string>(read).c_str() : ""));
    const auto &inventory = std::get<kwb::GpuInventory>(read);
    QVERIFY(inventory.hasDevices());
    QCOMPARE(inventory.devices.front().ccMajor, 9);
    QCOMPARE(inventory.devices.front().ccMinor, 0);
    // Written again, it reads the same.
    const nlohmann::json again = inventory;
    QCOMPARE(std::get<kwb::GpuInventory>(kwb::parseGpuInventory(again.dump())).devices.front().smCount,
             inventory.devices.front().smCount);

    const auto notJson = kwb::parseGpuInventory("GPU 0: H200");
    QVERIFY(std::get<std::string>(notJson).find("not JSON") == 0);
    QCOMPARE(std::get<std::string>(kwb::parseGpuInventory(R"({"devices": []})")),
             std::string("no \"libraries\" list"));
    QVERIFY(std::holds_alternative<std::string>(kwb::parseGpuStats(R"({"devices": [{"ordinal": "zero"}]})")));

    kwb::GpuStatsReport stats;
    stats.devices.push_back({});
    stats.devices.back().name = "NVIDIA H200";
    stats.devices.back().temperatureC = 58;
    const auto readStats = kwb::parseGpuStats(nlohmann::json(stats).dump());
    QCOMPARE(std::get<kwb::GpuStatsReport>(readStats).devices.at(0).temperatureC, 58);
  }
};

QTEST_GUILESS_MAIN(TestPayloadJson)
#include "tst_payload_json.moc"
