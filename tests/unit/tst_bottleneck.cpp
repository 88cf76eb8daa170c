// The profiler's bottleneck summary (core/profile/bottleneck.h) that agent prompts carry: the
// softmax lineage's detailed profiles measured on the H200 (tests/fixtures/profile), and made-up
// figures for the limiters the lineage does not reach.
#include <QtTest>

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/profile/bottleneck.h"

using namespace kwb;
using namespace kwb::profile;

namespace {

std::vector<ProfileResult> lineageProfiles() {
  std::ifstream in(KWB_SOURCE_DIR "/tests/fixtures/profile/softmax-h200-lineage-detailed.json");
  const auto j = nlohmann::json::parse(in);
  std::vector<ProfileResult> out;
  for (const auto &step : j.at("steps")) out.push_back(step.get<ProfileResult>());
  return out;
}

ProfileResult made(double dram, std::optional<double> sm, std::vector<std::pair<std::string, double>> stalls = {}) {
  ProfileResult r;
  r.outcome = Outcome::Profiled;
  r.config = "big";
  r.passes = 14;
  r.metrics.push_back({"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput", "%", dram});
  if (sm) r.metrics.push_back({"sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput", "%", *sm});
  for (const auto &[reason, v] : stalls)
    r.metrics.push_back({"smsp__warps_issue_stalled_" + reason + ".avg.per_cycle_active", reason, "", v});
  return r;
}

}  // namespace

class TestBottleneck : public QObject {
  Q_OBJECT

 private slots:
  void softmaxLineageIsMemoryBound() {
    const auto steps = lineageProfiles();
    QCOMPARE(steps.size(), std::size_t(5));
    // 01-naive: DRAM 79.7%, SM 21.0%; long scoreboard 9.61 of 10.9 warps per cycle, then wait,
    // then barrier ("selected" is issuing, not a stall).
    QCOMPARE(toString(limiterOf(steps[0])), toString(Limiter::Memory));
    const std::string s = bottleneckSummary(steps[0]);
    QVERIFY2(s.rfind("Profile (h200, 14 passes): memory-bound: DRAM at 80% of peak; SM at 21% of peak; achieved "
                     "occupancy 72%; L1 hit 1%, L2 hit 29%; warps mostly stalled on long scoreboard (",
                     0) == 0,
             s.c_str());
    QVERIFY2(s.find("), wait (") != std::string::npos && s.find("), barrier (") != std::string::npos, s.c_str());
    QVERIFY2(s.find("\nWhat helps: move fewer bytes") != std::string::npos, s.c_str());
    QVERIFY(s.find("selected") == std::string::npos);
    for (const auto &step : steps) QCOMPARE(toString(limiterOf(step)), toString(Limiter::Memory));  // 70.7% .. 84.6% DRAM
  }

  void limiters() {
    QCOMPARE(toString(limiterOf(made(20, 85))), toString(Limiter::Compute));
    QCOMPARE(toString(limiterOf(made(70, 70))), toString(Limiter::Compute));  // a tie: compute (the DRAM figure must lead)
    QCOMPARE(toString(limiterOf(made(15, 25))), toString(Limiter::Latency));
    QCOMPARE(toString(limiterOf(made(45, 30))), toString(Limiter::Balanced));
    QCOMPARE(toString(limiterOf(made(65, std::nullopt))), toString(Limiter::Memory));    // the default set: no SM figure
    QCOMPARE(toString(limiterOf(made(20, std::nullopt))), toString(Limiter::Latency));
    QCOMPARE(toString(limiterOf(made(50, std::nullopt))), toString(Limiter::Balanced));
    ProfileResult none;
    none.outcome = Outcome::Profiled;
    QCOMPARE(toString(limiterOf(none)), toString(Limiter::Unknown));
    const std::string s = bottleneckSummary(made(10, 20, {{"barrier", 3}, {"selected", 1}, {"long_scoreboard", 1}}));
    QVERIFY2(s.find("latency-bound") != std::string::npos, s.c_str());
    QVERIFY2(s.find("warps mostly stalled on barrier (60% of warp cycles), long scoreboard (20% of warp cycles)\n") !=
                 std::string::npos,
             s.c_str());
    QVERIFY2(s.find("fewer barriers") != std::string::npos, s.c_str());
  }

  void notProfiledSaysWhy() {
    ProfileResult r;
    r.outcome = Outcome::NotProfiled;
    r.reason = "insufficient-privileges";
    r.message = "the driver allows GPU counters to administrators only";
    r.config = "h200";
    QCOMPARE(bottleneckSummary(r), std::string("Profile (h200): not profiled: not-profiled (insufficient-privileges) "
                                               "\u2014 the driver allows GPU counters to administrators only\n"));
    QCOMPARE(toString(limiterOf(r)), toString(Limiter::Unknown));
  }
};

QTEST_GUILESS_MAIN(TestBottleneck)
#include "tst_bottleneck.moc"
