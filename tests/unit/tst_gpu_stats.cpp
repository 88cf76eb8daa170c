// `kwb-worker --stats --json` (live GPU figures for the devices panel): on a machine without a GPU
// or NVML it prints an empty list with the reason and exits 0; the JSON form of one device's
// figures has every field the GUI reads.
#include <QtTest>

#include <QProcess>

#include <nlohmann/json.hpp>

#include "core/gpu/device_stats.h"

class TestGpuStats : public QObject {
  Q_OBJECT
 private slots:
  void workerStatsJson() {
    const QString worker = qEnvironmentVariable("KWB_WORKER");
    QVERIFY2(!worker.isEmpty(), "KWB_WORKER is not set");
    QProcess p;
    p.start(worker, {QStringLiteral("--stats"), QStringLiteral("--json")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 0);
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QVERIFY(j.contains("devices") && j["devices"].is_array());
    QVERIFY(j.contains("problem") && j["problem"].is_string());
    if (!j["devices"].empty()) QSKIP("this machine has a GPU: the no-device answer cannot be checked here");
    QVERIFY2(!j["problem"].get<std::string>().empty(), j.dump().c_str());
  }

  void statsToJson() {
    kwb::GpuStatsReport r;
    kwb::GpuStats s;
    s.ordinal = 1;
    s.name = "NVIDIA H200";
    s.pciBusId = "00000000:19:00.0";
    s.utilizationPercent = 37;
    s.memoryUsedBytes = 1ull << 30;
    s.memoryTotalBytes = 150754820096ull;
    s.temperatureC = 61;
    s.smClockMHz = 1980;
    s.clockEventReasons = 0x4;
    s.clockEventText = "sw-power-cap";
    s.throttled = true;
    r.devices.push_back(s);
    const nlohmann::json j = r;
    QCOMPARE(j["devices"].size(), std::size_t(1));
    const auto &d = j["devices"][0];
    QCOMPARE(d["name"].get<std::string>(), std::string("NVIDIA H200"));
    QCOMPARE(d["utilization_percent"].get<int>(), 37);
    QCOMPARE(d["memory_total_bytes"].get<std::uint64_t>(), 150754820096ull);
    QCOMPARE(d["temperature_c"].get<int>(), 61);
    QCOMPARE(d["sm_clock_mhz"].get<int>(), 1980);
    QCOMPARE(d["clock_event_text"].get<std::string>(), std::string("sw-power-cap"));
    QVERIFY(d["throttled"].get<bool>());
    QCOMPARE(j["problem"].get<std::string>(), std::string());
  }
};

QTEST_GUILESS_MAIN(TestGpuStats)
#include "tst_gpu_stats.moc"
