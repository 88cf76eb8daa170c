// LEAP's rules as tables (core/agent/leap.h): Difficulty-Conditioned Pruning's verdict for every
// failure count of a group, with the thresholds the paper's best setting gives and with others;
// the rank-based reward of groups whose order is known by hand (easy and hard problems, speed
// within a turn, ties); the discounted credit of a line's turns.
#include <QtTest>

#include <numeric>
#include <random>
#include <stdexcept>

#include "core/agent/leap.h"

using kwb::agent::Attempt;
using kwb::agent::DcpSettings;
using kwb::agent::DcpVerdict;

namespace {

Attempt ok(std::size_t turn, std::optional<double> ms = std::nullopt) { return Attempt{true, turn, ms}; }
Attempt failed() { return Attempt{false, 3, std::nullopt}; }

}  // namespace

class TestLeap : public QObject {
  Q_OBJECT

 private slots:
  void pruningByFailureCount_data() {
    QTest::addColumn<int>("groupSize");
    QTest::addColumn<int>("failures");
    QTest::addColumn<int>("easyBelow");     // -1: the default
    QTest::addColumn<int>("hopelessAbove"); // -1: the default
    QTest::addColumn<QString>("verdict");
    // G = 8 with the paper's best setting: repair only where at least half failed.
    for (int f = 0; f <= 8; ++f)
      QTest::addRow("G8 F%d", f) << 8 << f << -1 << -1 << QString(f < 4 ? "easy" : "repair");
    // An odd group: at least half of 5 is 3.
    QTest::newRow("G5 F2") << 5 << 2 << -1 << -1 << "easy";
    QTest::newRow("G5 F3") << 5 << 3 << -1 << -1 << "repair";
    // Hopeless above 6 of 8.
    QTest::newRow("G8 F6 hopeless>6") << 8 << 6 << -1 << 6 << "repair";
    QTest::newRow("G8 F7 hopeless>6") << 8 << 7 << -1 << 6 << "hopeless";
    QTest::newRow("G8 F8 hopeless>6") << 8 << 8 << -1 << 6 << "hopeless";
    // Repair every group with a failure (the unpruned baseline).
    QTest::newRow("G8 F1 easy<1") << 8 << 1 << 1 << -1 << "repair";
    QTest::newRow("G8 F0 easy<1") << 8 << 0 << 1 << -1 << "easy";
    QTest::newRow("G1 F1") << 1 << 1 << -1 << -1 << "repair";
    QTest::newRow("G1 F0") << 1 << 0 << -1 << -1 << "easy";
  }
  void pruningByFailureCount() {
    QFETCH(int, groupSize);
    QFETCH(int, failures);
    QFETCH(int, easyBelow);
    QFETCH(int, hopelessAbove);
    QFETCH(QString, verdict);
    DcpSettings s;
    if (easyBelow >= 0) s.easyBelow = static_cast<std::size_t>(easyBelow);
    if (hopelessAbove >= 0) s.hopelessAbove = static_cast<std::size_t>(hopelessAbove);
    const auto d = kwb::agent::decideRepair(static_cast<std::size_t>(failures), static_cast<std::size_t>(groupSize), s);
    QCOMPARE(QString::fromUtf8(kwb::agent::dcpVerdictName(d.verdict).data()), verdict);
    QCOMPARE(d.failures, static_cast<std::size_t>(failures));
    QCOMPARE(d.repairTurns, std::size_t(d.verdict == DcpVerdict::Repair ? 2 : 0));
    QVERIFY(!d.reason.empty());
  }

  void decisionsSayWhyInWords() {
    DcpSettings s;
    QCOMPARE(kwb::agent::decideRepair(1, 8, s).reason, std::string("no repair: 7 of 8 correct \u2014 easy (fewer than 4 failed)"));
    QCOMPARE(kwb::agent::decideRepair(5, 8, s).reason,
             std::string("repair: 5 of 8 failed \u2014 up to 2 more turns for the failed ones"));
    QCOMPARE(kwb::agent::decideRepair(2, 8, s, "correct and faster").reason,
             std::string("no repair: 6 of 8 correct and faster \u2014 easy (fewer than 4 failed)"));
    s.hopelessAbove = 7;
    QCOMPARE(kwb::agent::decideRepair(8, 8, s).reason,
             std::string("no repair: 8 of 8 failed \u2014 hopeless for now (more than 7 failed)"));
    s.maxTurns = 2;
    QCOMPARE(kwb::agent::decideRepair(4, 8, s).reason, std::string("repair: 4 of 8 failed \u2014 up to 1 more turn for the failed ones"));
    s.maxTurns = 1;
    const auto one = kwb::agent::decideRepair(4, 8, s);
    QCOMPARE(one.repairTurns, std::size_t(0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::agent::decideRepair(0, 0, DcpSettings{}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::agent::decideRepair(9, 8, DcpSettings{}));
    s.maxTurns = 0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::agent::decideRepair(1, 8, s));
  }

  // Rewards computed by hand: (peers beaten - peers beating) / (G - 1).
  void rankRewardsByHand() {
    using V = std::vector<double>;
    auto near = [](const V &got, const V &want) {
      if (got.size() != want.size()) return false;
      for (std::size_t i = 0; i < got.size(); ++i)
        if (std::abs(got[i] - want[i]) > 1e-12) return false;
      return true;
    };
    // Turn 1 beats turn 2 beats the failures; the failures tie.
    QVERIFY(near(kwb::agent::rankRewards({ok(1), ok(2), failed(), failed()}), V{1.0, 1.0 / 3, -2.0 / 3, -2.0 / 3}));
    // Easy problem: a late success ranks below three early ones and earns less than nothing.
    QVERIFY(near(kwb::agent::rankRewards({ok(1), ok(1), ok(1), ok(2)}), V{1.0 / 3, 1.0 / 3, 1.0 / 3, -1.0}));
    // Hard problem: the one late fix beats every failure.
    QVERIFY(near(kwb::agent::rankRewards({ok(2), failed(), failed(), failed()}), V{1.0, -1.0 / 3, -1.0 / 3, -1.0 / 3}));
    // Within a turn the faster kernel ranks higher; within 1% they tie; no time: a tie.
    QVERIFY(near(kwb::agent::rankRewards({ok(1, 1.0), ok(1, 2.0)}), V{1.0, -1.0}));
    QVERIFY(near(kwb::agent::rankRewards({ok(1, 1.0), ok(1, 1.005)}), V{0.0, 0.0}));
    QVERIFY(near(kwb::agent::rankRewards({ok(1, 1.0), ok(1)}), V{0.0, 0.0}));
    // An earlier turn beats a faster later one.
    QVERIFY(near(kwb::agent::rankRewards({ok(1, 5.0), ok(2, 1.0)}), V{1.0, -1.0}));
    // All fail, or a group of one: nothing to rank.
    QVERIFY(near(kwb::agent::rankRewards({failed(), failed(), failed()}), V{0, 0, 0}));
    QVERIFY(near(kwb::agent::rankRewards({ok(1)}), V{0}));
    QVERIFY(kwb::agent::rankRewards({}).empty());
  }

  // Every pair is counted once each way: a group's rewards sum to zero and stay in [-1, 1].
  void rewardsAreZeroSumAndBounded() {
    std::mt19937 rng(11);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<Attempt> g(2 + rng() % 15);
      for (auto &a : g) {
        a.success = rng() % 2;
        a.turn = 1 + rng() % 3;
        if (rng() % 3) a.ms = 1.0 + (rng() % 100) / 10.0;
      }
      const auto r = kwb::agent::rankRewards(g);
      QVERIFY(std::abs(std::accumulate(r.begin(), r.end(), 0.0)) < 1e-9);
      for (double x : r) QVERIFY(x >= -1.0 && x <= 1.0);
    }
  }

  void creditPassedBackWithADiscount() {
    QCOMPARE(kwb::agent::turnCredits(1.0, 3, 0.5), (std::vector<double>{0.25, 0.5, 1.0}));
    QCOMPARE(kwb::agent::turnCredits(0.6, 1, 0.5), (std::vector<double>{0.6}));
    QCOMPARE(kwb::agent::turnCredits(0.6, 2, 1.0), (std::vector<double>{0.6, 0.6}));
    QCOMPARE(kwb::agent::turnCredits(0.6, 2, 0.0), (std::vector<double>{0.0, 0.6}));
    // A negative outcome is the whole line's.
    QCOMPARE(kwb::agent::turnCredits(-0.5, 3, 0.5), (std::vector<double>{-0.5, -0.5, -0.5}));
    QVERIFY(kwb::agent::turnCredits(1.0, 0, 0.5).empty());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::agent::turnCredits(1.0, 2, 1.5));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, kwb::agent::turnCredits(1.0, 2, -0.1));
  }
};

QTEST_GUILESS_MAIN(TestLeap)
#include "tst_leap.moc"
