// The metric catalogue through CUPTI's Profiler Host API, on the CPU alone (no GPU, no driver):
// supported chips, the GH100 catalogue, the default and detailed sets and their pass counts
// (measured with CUDA 13.0's CUPTI: see core/profile/metric_sets.h), config images, unknown
// metric names with suggestions, and a clear error when libcupti is absent.
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "core/profile/cupti_profiler.h"
#include "core/profile/metric_catalog.h"
#include "core/profile/metric_sets.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;
using namespace kwb::profile;

namespace {

bool contains(const std::string &haystack, const std::string &needle) { return haystack.find(needle) != std::string::npos; }

using kwb::test::outputDir;

}  // namespace

class TestProfileCatalog : public QObject {
  Q_OBJECT

  std::shared_ptr<const CuptiProfilerLibrary> library_;
  std::unique_ptr<MetricCatalog> gh100_;

 private slots:
  // Several kernels of one launch make one value per metric: durations add up, percentages are
  // weighted by each kernel's time.
  void rangesCombine() {
    const std::vector<std::string> m = {"gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed"};
    const auto one = kwb::profile::combineRanges(m, {{100.0, 50.0}});
    QCOMPARE(one[0], 100.0);
    const auto two = kwb::profile::combineRanges(m, {{100.0, 80.0}, {300.0, 40.0}});
    QCOMPARE(two[0], 400.0);
    QCOMPARE(two[1], 50.0);  // (100*80 + 300*40) / 400
    const auto noDuration = kwb::profile::combineRanges({"lts__t_sector_hit_rate.pct"}, {{10.0}, {30.0}});
    QCOMPARE(noDuration[0], 20.0);
  }

  void initTestCase() {
    // The toolkit's CUPTI is part of this project's build requirements: no skip here.
    try {
      library_ = CuptiProfilerLibrary::open();
      gh100_ = std::make_unique<MetricCatalog>(library_, "GH100");
    } catch (const ProfileError &e) {
      QFAIL(qPrintable(QString("CUPTI's host API is unusable here (%1): %2").arg(e.reason().c_str(), e.what())));
    }
    qInfo("libcupti: %s", library_->path().c_str());
  }

  void supportedChipsIncludeHopper() {
    const auto chips = library_->supportedChips();
    QVERIFY2(chips.size() > 5, "CUPTI lists few chips");
    QVERIFY(std::find(chips.begin(), chips.end(), "GH100") != chips.end());
    QVERIFY(std::find(chips.begin(), chips.end(), "GA100") != chips.end());
  }

  void unknownChipNamesTheSupportedOnes() {
    try {
      MetricCatalog bogus(library_, "GX999");
      QFAIL("a catalogue for chip GX999 was made");
    } catch (const ProfileError &e) {
      QCOMPARE(QString::fromStdString(e.reason()), QString("unknown-chip"));
      QVERIFY2(contains(e.what(), "GX999") && contains(e.what(), "GH100"), e.what());
    }
  }

  void catalogueListsBaseAndSubMetrics() {
    const auto &bases = gh100_->baseMetrics();
    QVERIFY2(bases.size() > 1000, qPrintable(QString("only %1 base metrics").arg(bases.size())));
    QVERIFY(std::is_sorted(bases.begin(), bases.end(), [](const auto &a, const auto &b) { return a.name < b.name; }));
    auto find = [&](const std::string &n) {
      return std::find_if(bases.begin(), bases.end(), [&](const BaseMetric &b) { return b.name == n; });
    };
    QVERIFY(find("dram__throughput") != bases.end());
    QVERIFY(find("dram__throughput")->type == MetricType::Throughput);
    QVERIFY(find("lts__t_sector_hit_rate")->type == MetricType::Ratio);
    QVERIFY(find("gpu__time_duration")->type == MetricType::Counter);

    const auto subs = gh100_->subMetrics("dram__throughput");
    QVERIFY(std::find(subs.begin(), subs.end(), ".avg.pct_of_peak_sustained_elapsed") != subs.end());
    const auto ratioSubs = gh100_->subMetrics("lts__t_sector_hit_rate");
    QVERIFY(std::find(ratioSubs.begin(), ratioSubs.end(), ".pct") != ratioSubs.end());
    QVERIFY(gh100_->subMetrics("no__such_metric").empty());
  }

  void metricProperties() {
    const auto p = gh100_->properties("dram__throughput.avg.pct_of_peak_sustained_elapsed");
    QVERIFY(p.has_value());
    QCOMPARE(QString::fromStdString(p->hardwareUnit), QString("dram"));
    QCOMPARE(QString::fromStdString(p->dimensionUnit), QString("percent"));
    QVERIFY(p->type == MetricType::Throughput);
    QVERIFY(!p->description.empty());
    const auto d = gh100_->properties("gpu__time_duration.sum");
    QVERIFY(d.has_value());
    QCOMPARE(QString::fromStdString(d->dimensionUnit), QString("nanosecond"));
    QVERIFY(!gh100_->properties("dram__throughput.bogus").has_value());
    QVERIFY(!gh100_->properties("").has_value());
  }

  void defaultSetExistsAndTakesTwoPasses() {
    const auto &set = defaultMetricSet();
    QCOMPARE(set.size(), std::size_t{5});
    for (const auto &m : set) QVERIFY2(gh100_->exists(m), m.c_str());
    const auto c = gh100_->configure(set);
    QVERIFY(!c.configImage.empty());
    QCOMPARE(c.chip, std::string("GH100"));
    QCOMPARE(c.passes, kDefaultSetPassesGH100);
    QCOMPARE(c.passes, std::size_t{2});
  }

  void detailedSetPasses() {
    const auto &set = detailedMetricSet();
    QCOMPARE(set.size(), defaultMetricSet().size() + 1 + warpStallReasons().size());
    for (const auto &m : set) QVERIFY2(gh100_->exists(m), m.c_str());
    const auto c = gh100_->configure(set);
    QCOMPARE(c.passes, kDetailedSetPassesGH100);
    QCOMPARE(c.passes, std::size_t{14});
  }

  // The single-metric pass counts TECH-NOTES lists, re-measured.
  void singleMetricPasses_data() {
    QTest::addColumn<QString>("metric");
    QTest::addColumn<int>("passes");
    QTest::newRow("duration") << "gpu__time_duration.sum" << 1;
    QTest::newRow("dram") << "dram__throughput.avg.pct_of_peak_sustained_elapsed" << 1;
    QTest::newRow("occupancy") << "sm__warps_active.avg.pct_of_peak_sustained_active" << 1;
    QTest::newRow("l1") << "l1tex__t_sector_hit_rate.pct" << 1;
    QTest::newRow("l2") << "lts__t_sector_hit_rate.pct" << 2;
    QTest::newRow("sm") << "sm__throughput.avg.pct_of_peak_sustained_elapsed" << 8;
  }
  void singleMetricPasses() {
    QFETCH(QString, metric);
    QFETCH(int, passes);
    const auto c = gh100_->configure({metric.toStdString()});
    QCOMPARE(static_cast<int>(c.passes), passes);
  }

  void setsByName() {
    QVERIFY(metricSet("default").has_value());
    QCOMPARE(metricSet("detailed")->size(), detailedMetricSet().size());
    QVERIFY(!metricSet("everything").has_value());
  }

  // The detailed set leaves out the stall reasons a chip lacks (gmma is Hopper's; GB100 has no
  // imc_miss) and still configures there; on GH100 it is the whole list.
  void setsAdaptToTheChip() {
    QCOMPARE(*metricSet("detailed", *gh100_), detailedMetricSet());
    QCOMPARE(*metricSet("default", *gh100_), defaultMetricSet());
    MetricCatalog gb100(library_, "GB100");
    const auto set = *metricSet("detailed", gb100);
    const auto has = [&](const std::string &reason) {
      return std::find(set.begin(), set.end(), "smsp__warps_issue_stalled_" + reason + ".avg.per_cycle_active") != set.end();
    };
    QVERIFY(!has("gmma"));
    QVERIFY(!has("imc_miss"));
    QVERIFY(has("long_scoreboard"));
    QCOMPARE(set.size(), detailedMetricSet().size() - 2);
    QVERIFY(gb100.configure(set).passes > 0);
    QVERIFY_THROWS_EXCEPTION(ProfileError, gb100.validate(detailedMetricSet()));
    MetricCatalog ga100(library_, "GA100");
    const auto ampere = *metricSet("detailed", ga100);
    QCOMPARE(ampere.size(), detailedMetricSet().size() - 1);  // no gmma before Hopper
    QVERIFY(ga100.configure(ampere).passes > 0);
    QVERIFY(!metricSet("everything", ga100).has_value());
  }

  void displayLabels() {
    const auto dram = metricDisplay("dram__throughput.avg.pct_of_peak_sustained_elapsed");
    QCOMPARE(QString::fromStdString(dram.label), QString("DRAM throughput"));
    QCOMPARE(QString::fromStdString(dram.unit), QString("%"));
    QCOMPARE(QString::fromStdString(metricDisplay("gpu__time_duration.sum").unit), QString("ns"));
    const auto stall = metricDisplay("smsp__warps_issue_stalled_long_scoreboard.avg.per_cycle_active");
    QCOMPARE(QString::fromStdString(stall.label), QString("Stall: long scoreboard"));
    for (const auto &m : detailedMetricSet()) QVERIFY2(!metricDisplay(m).label.empty() && !metricDisplay(m).unit.empty(), m.c_str());
    // Not in the known list: made from the name and the catalogue.
    const auto bytes = metricDisplay("dram__bytes_read.sum", gh100_.get());
    QCOMPARE(QString::fromStdString(bytes.label), QString("bytes read"));
    QCOMPARE(QString::fromStdString(bytes.unit), QString("bytes"));
  }

  void unknownMetricNamedWithSuggestion() {
    // A typo in the base name.
    try {
      gh100_->configure({"gpu__time_duration.sum", "dram__througput.avg.pct_of_peak_sustained_elapsed"});
      QFAIL("a misspelt metric was accepted");
    } catch (const ProfileError &e) {
      QCOMPARE(QString::fromStdString(e.reason()), QString("unknown-metric"));
      QVERIFY2(contains(e.what(), "'dram__througput.avg.pct_of_peak_sustained_elapsed'"), e.what());
      QVERIFY2(contains(e.what(), "did you mean 'dram__throughput.avg.pct_of_peak_sustained_elapsed'"), e.what());
      QVERIFY2(!contains(e.what(), "'gpu__time_duration.sum'"), e.what());  // the good one is not named
    }
    // A known base with a wrong sub-metric.
    const auto close = gh100_->suggestions("lts__t_sector_hit_rate.pcnt");
    QVERIFY(!close.empty());
    QCOMPARE(QString::fromStdString(close.front()), QString("lts__t_sector_hit_rate.pct"));
    // Several unknown names: each is named.
    try {
      gh100_->validate({"bogus__one.sum", "sm__warps_actve.avg.pct_of_peak_sustained_active"});
      QFAIL("unknown metrics were accepted");
    } catch (const ProfileError &e) {
      QVERIFY2(contains(e.what(), "'bogus__one.sum'") && contains(e.what(), "'sm__warps_actve"), e.what());
      QVERIFY2(contains(e.what(), "'sm__warps_active.avg.pct_of_peak_sustained_active'"), e.what());
      QVERIFY2(contains(e.what(), "--list-metrics"), e.what());
    }
    // A base name alone is not a metric CUPTI collects: a sub-metric is suggested.
    QVERIFY(!gh100_->exists("dram__throughput"));
    QVERIFY(gh100_->isBaseMetric("dram__throughput"));
    try {
      gh100_->configure({"lts__t_sector_hit_rate"});
      QFAIL("a base metric name was accepted");
    } catch (const ProfileError &e) {
      QCOMPARE(QString::fromStdString(e.reason()), QString("unknown-metric"));
      QVERIFY2(contains(e.what(), "'lts__t_sector_hit_rate' is a base metric") && contains(e.what(), "add a sub-metric"),
               e.what());
      QVERIFY2(contains(e.what(), "'lts__t_sector_hit_rate.pct'"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(ProfileError, gh100_->validate({}));
    QVERIFY_THROWS_EXCEPTION(ProfileError, gh100_->validate({"gpu__time_duration.sum", "gpu__time_duration.sum"}));
  }

  void configImagesDifferBySet() {
    const auto a = gh100_->configure({"gpu__time_duration.sum"});
    const auto b = gh100_->configure(defaultMetricSet());
    QVERIFY(!a.configImage.empty() && !b.configImage.empty());
    QVERIFY(a.configImage != b.configImage);
    QCOMPARE(a.passes, std::size_t{1});
    QCOMPARE(library_->passes(b.configImage), b.passes);
  }

  void editDistanceCounts() {
    QCOMPARE(editDistance("", "abc"), std::size_t{3});
    QCOMPARE(editDistance("kitten", "sitting"), std::size_t{3});
    QCOMPARE(editDistance("same", "same"), std::size_t{0});
  }

  void missingLibcuptiIsClear() {
    const fs::path empty = outputDir() / "profile-no-cupti";
    fs::remove_all(empty);
    fs::create_directories(empty);
    try {
      CuptiProfilerLibrary::open({empty.string()});
      QFAIL("libcupti was opened from an empty folder");
    } catch (const ProfileError &e) {
      QCOMPARE(QString::fromStdString(e.reason()), QString("no-cupti"));
      QVERIFY2(contains(e.what(), "libcupti"), e.what());
      QVERIFY2(contains(e.what(), empty.string()), e.what());
      QVERIFY2(contains(e.what(), "CUDA_HOME"), e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestProfileCatalog)
#include "tst_profile_catalog.moc"
