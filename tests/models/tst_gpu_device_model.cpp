// GpuDeviceModel alone: one row per GPU from recorded NVML figures of two H200s (as
// `kwb-worker --stats --json` printed them, read by kwb::parseGpuStats), the no-device answer,
// and the evaluation pool's state and job joined by CUDA ordinal.
#include <QAbstractItemModelTester>
#include <QFile>
#include <QtTest>

#include "core/gpu/worker_gpu_report.h"
#include "helpers/model_cells.h"
#include "ui/models/gpu_device_model.h"

using kwb::ui::GpuDeviceModel;
using kwb::ui::PoolDeviceRow;

using kwb::test::cell;
using kwb::test::readBytes;

namespace {

const QString kFixture = QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/gpu/stats_2x_h200.json");

}  // namespace

class TestGpuDeviceModel : public QObject {
  Q_OBJECT

 private slots:
  void recordedStatsShowOneRowPerGpu() {
    GpuDeviceModel model;
    QAbstractItemModelTester tester(&model);
    const QByteArray json = readBytes(kFixture);
    QVERIFY(!json.isEmpty());
    auto read = kwb::parseGpuStats(json.toStdString());
    QVERIFY2(std::holds_alternative<kwb::GpuStatsReport>(read), (std::holds_alternative<std::string>(read) ? std::get<std::string>(read).c_str() : ""));
    model.setStats(std::get<kwb::GpuStatsReport>(read));
    QCOMPARE(model.rowCount(), 2);
    QVERIFY(model.noDeviceText().isEmpty());
    QCOMPARE(cell(&model, 0, GpuDeviceModel::Gpu), QStringLiteral("0: NVIDIA H200"));
    QCOMPARE(cell(&model, 0, GpuDeviceModel::Load), QStringLiteral("74%"));
    QCOMPARE(cell(&model, 0, GpuDeviceModel::Memory), QStringLiteral("17 GiB / 140 GiB"));
    QCOMPARE(cell(&model, 0, GpuDeviceModel::Temperature), QStringLiteral("58 °C"));
    QCOMPARE(cell(&model, 0, GpuDeviceModel::SmClock), QStringLiteral("1980 MHz"));
    QCOMPARE(cell(&model, 1, GpuDeviceModel::Gpu), QStringLiteral("1: NVIDIA H200"));
    QCOMPARE(cell(&model, 1, GpuDeviceModel::Load), QStringLiteral("0%"));
    QCOMPARE(cell(&model, 1, GpuDeviceModel::Memory), QStringLiteral("539 MiB / 140 GiB"));
    QCOMPARE(cell(&model, 1, GpuDeviceModel::SmClock), QStringLiteral("345 MHz"));
    QVERIFY(model.index(1, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("gpu-idle")));
    QCOMPARE(model.summary(), QStringLiteral("2 GPUs · 37% · 58 °C"));
    // No pool yet: no state.
    QCOMPARE(cell(&model, 0, GpuDeviceModel::State), QStringLiteral("—"));

    // Not stats: the reader says why.
    const auto notStats = kwb::parseGpuStats("{\"devices\": 3}");
    QVERIFY(std::holds_alternative<std::string>(notStats));
    QVERIFY(!std::get<std::string>(notStats).empty());
    // The worker's no-device answer.
    const auto none = kwb::parseGpuStats(R"({"devices": [], "problem": "no CUDA driver: libcuda is not installed"})");
    QVERIFY(std::holds_alternative<kwb::GpuStatsReport>(none));
    model.setStats(std::get<kwb::GpuStatsReport>(none));
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.noDeviceText(), QStringLiteral("No CUDA device: no CUDA driver: libcuda is not installed"));
    QVERIFY(model.summary().isEmpty());
  }

  void poolStateAndJobJoinTheRows() {
    GpuDeviceModel model;
    QAbstractItemModelTester tester(&model);
    model.setStats(std::get<kwb::GpuStatsReport>(kwb::parseGpuStats(readBytes(kFixture).toStdString())));
    PoolDeviceRow busy;
    busy.device = 0;
    busy.busy = true;
    busy.done = 3;
    busy.job = QStringLiteral("softmax · softmax.cu");
    PoolDeviceRow removed;
    removed.device = 1;
    removed.removed = true;
    removed.message = QStringLiteral("GPU 1 taken out of the pool after 3 failures in a row: the GPU worker did not start");
    model.setPoolDevices({busy, removed});
    QCOMPARE(cell(&model, 0, GpuDeviceModel::State), QStringLiteral("busy"));
    QCOMPARE(cell(&model, 0, GpuDeviceModel::Job), QStringLiteral("softmax · softmax.cu"));
    QCOMPARE(cell(&model, 1, GpuDeviceModel::State), QStringLiteral("removed: ") + removed.message);
    QVERIFY(cell(&model, 1, GpuDeviceModel::Job).isEmpty());
    busy.busy = false;
    busy.job.clear();
    model.setPoolDevices({busy});
    QCOMPARE(cell(&model, 0, GpuDeviceModel::State), QStringLiteral("ready"));
    QCOMPARE(cell(&model, 1, GpuDeviceModel::State), QStringLiteral("not used"));
  }
};

QTEST_MAIN(TestGpuDeviceModel)
#include "tst_gpu_device_model.moc"
