// The GPUs dock (issue 7): it exists in the real window, says why there is no GPU on a machine
// without one (from `kwb-worker --stats --json`, run off the GUI thread), shows one row per GPU
// from recorded NVML figures of two H200s, joins the evaluation pool's state, and the "GPUs to
// use" setting round-trips through the settings and the Settings dialog.
#include "isolated_home.h"
#include <memory>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QDateTime>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/app_settings.h"
#include "ui/cuda_editor.h"
#include "ui/devices_panel.h"
#include "ui/evaluation_run.h"
#include "ui/evaluation_service.h"
#include "ui/log_panel.h"
#include "ui/main_window.h"
#include "ui/models/gpu_device_model.h"
#include "ui/settings_dialog.h"

using kwb::ui::CudaEditor;
using kwb::ui::DevicesPanel;
using kwb::ui::GpuDeviceModel;
using kwb::ui::MainWindow;
using kwb::ui::PoolDeviceRow;

namespace {

const QString kFixture = QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/gpu/stats_2x_h200.json");

QByteArray readFile(const QString &path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

QString cell(const QAbstractItemModel *model, int row, int column) {
  return model->index(row, column).data().toString();
}

}  // namespace

class TestGpusDock : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void dockShowsTheNoDeviceReason();
  void recordedStatsShowOneRowPerGpu();
  void poolStateAndJobJoinTheRows();
  void windowPanelShowsFedStats();
  void poolDeviceTakenOutIsReported();
  void gpuChoiceRoundTrips();

 private:
  QString tempPath(const QString &name) const { return home_->path(name); }

  std::unique_ptr<IsolatedHome> home_;
  std::unique_ptr<MainWindow> window_;
};

void TestGpusDock::initTestCase() {
  home_ = std::make_unique<IsolatedHome>();
  QVERIFY(home_->isValid());
  window_ = std::make_unique<MainWindow>(tempPath(QStringLiteral("workspace/gpus.kwb")));
  window_->show();
  QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
}

void TestGpusDock::dockShowsTheNoDeviceReason() {
  auto *dock = window_->findChild<QDockWidget *>(QStringLiteral("gpusDock"));
  QVERIFY(dock);
  QCOMPARE(dock->windowTitle(), QStringLiteral("GPUs"));
  DevicesPanel *panel = window_->devicesPanel();
  QVERIFY(panel);
  QCOMPARE(dock->widget(), panel);
  QVERIFY(panel->isRefreshing());
  // The first answer of `kwb-worker --stats --json`.
  QSignalSpy refreshed(panel, &DevicesPanel::refreshed);
  QVERIFY(refreshed.wait(60000));
  if (panel->model()->rowCount() > 0) QSKIP("this machine has a GPU: the no-device message cannot be checked here");
  const QString text = panel->messageLabel()->text();
  QVERIFY2(text.startsWith(QStringLiteral("No CUDA device: ")), qPrintable(text));
  QVERIFY2(text.size() > QStringLiteral("No CUDA device: ").size() + 3, qPrintable(text));
  QVERIFY(!panel->messageLabel()->isHidden());
  QVERIFY(panel->view()->isHidden());
  QVERIFY(window_->gpuSummaryLabel()->isHidden());
  // It goes on refreshing, every 2 s.
  QVERIFY(refreshed.wait(10000));
}

void TestGpusDock::recordedStatsShowOneRowPerGpu() {
  GpuDeviceModel model;
  QAbstractItemModelTester tester(&model);
  const QByteArray json = readFile(kFixture);
  QVERIFY(!json.isEmpty());
  QString error;
  QVERIFY2(model.setStatsJson(json, &error), qPrintable(error));
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

  // Not stats: the model keeps what it had.
  QVERIFY(!model.setStatsJson("{\"devices\": 3}", &error));
  QVERIFY(!error.isEmpty());
  QCOMPARE(model.rowCount(), 2);
  // The worker's no-device answer.
  QVERIFY(model.setStatsJson(R"({"devices": [], "problem": "no CUDA driver: libcuda is not installed"})"));
  QCOMPARE(model.rowCount(), 0);
  QCOMPARE(model.noDeviceText(), QStringLiteral("No CUDA device: no CUDA driver: libcuda is not installed"));
  QVERIFY(model.summary().isEmpty());
}

void TestGpusDock::poolStateAndJobJoinTheRows() {
  GpuDeviceModel model;
  QAbstractItemModelTester tester(&model);
  QVERIFY(model.setStatsJson(readFile(kFixture)));
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

void TestGpusDock::windowPanelShowsFedStats() {
  DevicesPanel *panel = window_->devicesPanel();
  // Stop the live refresh so the recorded figures stay.
  panel->stop();
  QVERIFY(!panel->isRefreshing());
  QVERIFY(panel->model()->setStatsJson(readFile(kFixture)));
  QCOMPARE(panel->view()->model()->rowCount(), 2);
  QVERIFY(!panel->view()->isHidden());
  QVERIFY(panel->messageLabel()->isHidden());
}

// "GPUs to use: 0" on a machine without GPU 0: every run on it says "no CUDA device", the pool
// takes the device out after 3 in a row, and the dock and the Log say why; runs go on,
// compile-only, after that.
void TestGpusDock::poolDeviceTakenOutIsReported() {
  QVERIFY(window_->openTask(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax")));
  window_->evaluation()->setDevices({0});
  QSignalSpy finished(window_.get(), &MainWindow::runFinished);
  QSignalSpy message(window_->evaluation(), &kwb::ui::EvaluationService::deviceMessage);
  for (int i = 0; i < 3; ++i) {
    QVERIFY(window_->runCurrent());
    QVERIFY(finished.wait(120000));
    const auto run = finished.takeFirst().at(0).value<kwb::ui::EvaluationRun>();
    QVERIFY2(run.outcome == QStringLiteral("not-run") || run.outcome == QStringLiteral("error"),
             qPrintable(run.outcome + QStringLiteral(": ") + run.message));
  }
  if (message.isEmpty()) QVERIFY(message.wait(10000));
  const QString text = message.front().at(0).toString();
  QVERIFY2(text.contains(QStringLiteral("GPU 0 taken out of the pool")), qPrintable(text));
  QVERIFY2(window_->log()->text().contains(text), qPrintable(window_->log()->text()));
  const auto states = window_->evaluation()->deviceStates();
  QCOMPARE(states.size(), 1);
  QVERIFY(states.front().removed);
  // The dock (fed the recorded figures above, where GPU 0 exists) shows it.
  const GpuDeviceModel *model = window_->devicesPanel()->model();
  // (deviceMessage came with devicesChanged, which the window turns into the model's pool state.)
  QVERIFY2(cell(model, 0, GpuDeviceModel::State).startsWith(QStringLiteral("removed: GPU 0 taken out")),
           qPrintable(cell(model, 0, GpuDeviceModel::State)));
  // Runs go on without the pool's GPU: compiled, not run.
  QVERIFY(window_->runCurrent());
  QVERIFY(finished.wait(120000));
  const auto run = finished.takeFirst().at(0).value<kwb::ui::EvaluationRun>();
  QVERIFY2(run.outcome == QStringLiteral("not-run"), qPrintable(run.outcome + QStringLiteral(": ") + run.message));

  // Cancel works on a pool run too: from the first progress report (the pool's device thread
  // reports it), as a user pressing Cancel mid-run.
  window_->evaluation()->setDevices({1});
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  const QString original = editor->text();
  editor->setText(original + QStringLiteral("\n// pool cancel %1\n").arg(QDateTime::currentMSecsSinceEpoch()));
  bool cancelled = false;
  const auto connection = connect(window_->evaluation(), &kwb::ui::EvaluationService::progress, this,
                                  [&](const kwb::ui::EvaluationStep &) {
                                    if (cancelled) return;
                                    cancelled = true;
                                    window_->cancelRun();
                                  });
  QVERIFY(window_->runCurrent());
  QVERIFY(finished.wait(120000));
  disconnect(connection);
  QVERIFY(cancelled);
  const auto cancelledRun = finished.takeFirst().at(0).value<kwb::ui::EvaluationRun>();
  qInfo("pool run cancelled mid-run ended as %s: %s", qPrintable(cancelledRun.outcome), qPrintable(cancelledRun.message));
  QVERIFY2(cancelledRun.outcome == QStringLiteral("cancelled") || cancelledRun.outcome == QStringLiteral("not-run"),
           qPrintable(cancelledRun.outcome + QStringLiteral(": ") + cancelledRun.message));
  QVERIFY(!window_->isRunning());
  QVERIFY(window_->runAction()->isEnabled());
  editor->setText(original);
  editor->setModified(false);
  window_->evaluation()->setDevices({});
}

void TestGpusDock::gpuChoiceRoundTrips() {
  namespace settings = kwb::ui::settings;
  QVERIFY(settings::gpuDevices().isEmpty());  // default: every visible GPU
  settings::setGpuDevices({2, 0, 2});
  QCOMPARE(settings::gpuDevices(), (QList<int>{0, 2}));
  QCOMPARE(settings::formatGpuDevices(settings::gpuDevices()), QStringLiteral("0, 2"));
  QList<int> parsed;
  QVERIFY(settings::parseGpuDevices(QStringLiteral(" 3,1  1 "), &parsed));
  QCOMPARE(parsed, (QList<int>{1, 3}));
  QString error;
  QVERIFY(!settings::parseGpuDevices(QStringLiteral("0, x"), &parsed, &error));
  QVERIFY(error.contains(QStringLiteral("'x'")));

  kwb::ui::SettingsDialog dialog;
  dialog.load();
  QCOMPARE(dialog.gpusField()->text(), QStringLiteral("0, 2"));
  dialog.gpusField()->setText(QStringLiteral("1"));
  QSignalSpy applied(&dialog, &kwb::ui::SettingsDialog::applied);
  dialog.apply();
  QCOMPARE(applied.size(), 1);
  QCOMPARE(settings::gpuDevices(), (QList<int>{1}));
  dialog.gpusField()->clear();
  dialog.apply();
  QVERIFY(settings::gpuDevices().isEmpty());
  QVERIFY(!QSettings(QStringLiteral("KernelWorkbench"), QStringLiteral("kernel-workbench")).contains(QStringLiteral("gpu/devices")));
  QCOMPARE(dialog.gpusField()->placeholderText(), QStringLiteral("all visible GPUs"));
}

QTEST_MAIN(TestGpusDock)
#include "tst_gpus_dock.moc"
