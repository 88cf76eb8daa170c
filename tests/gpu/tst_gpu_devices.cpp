// On a machine with a GPU: every figure `kwb devices` promises is read from the device.
// Skips, saying why, where there is no CUDA device.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "core/gpu/device_info.h"
#include "core/gpu/device_report.h"

class TestGpuDevices : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    inventory_ = kwb::probeGpus();
    if (!inventory_.hasDevices())
      QSKIP(qPrintable(QStringLiteral("no CUDA device here (%1)").arg(QString::fromStdString(inventory_.problem))));
    qInfo().noquote() << QString::fromStdString(kwb::formatInventory(inventory_));
  }

  void everyFigureIsKnown() {
    for (const auto &d : inventory_.devices) {
      QVERIFY(!d.name.empty());
      QVERIFY(!d.pciBusId.empty());
      QVERIFY(d.ccMajor >= 5);
      QVERIFY(d.smCount > 0);
      QVERIFY(d.totalMemoryBytes > (1ull << 30));
      QVERIFY(d.l2CacheBytes > 0);
      QVERIFY(d.memoryBusWidthBits > 0);
      QVERIFY(d.memoryClockKHz > 0);
      QVERIFY(d.peakBandwidthBytesPerSecond() > 1e11);
    }
    QVERIFY(inventory_.driverVersion >= 12000);
    QVERIFY(inventory_.problem.empty());
  }

  void theCommandLineAgrees() {
    const QString cli = qEnvironmentVariable("KWB_CLI");
    if (cli.isEmpty()) QSKIP("KWB_CLI is not set (run through ctest)");
    QProcess p;
    p.start(cli, {"devices", "--json"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    QCOMPARE(j["devices"].size(), inventory_.devices.size());
    QCOMPARE(j["devices"][0]["name"].get<std::string>(), inventory_.devices[0].name);
    QCOMPARE(j["devices"][0]["sm_count"].get<int>(), inventory_.devices[0].smCount);
  }

 private:
  kwb::GpuInventory inventory_;
};

QTEST_GUILESS_MAIN(TestGpuDevices)
#include "tst_gpu_devices.moc"
