// The GPUs dock (issue 7): it exists in the real window, says why there is no GPU on a machine
// without one (from `kwb-worker --stats --json`, run off the GUI thread), shows recorded NVML
// figures of two H200s, and the "GPUs to use" setting round-trips through the settings and the
// Settings dialog. (The model alone: tests/models/tst_gpu_device_model.cpp.)
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

#include "ui/settings/app_settings.h"
#include "ui/views/cuda_editor.h"
#include "ui/views/devices_panel.h"
#include "ui/models/evaluation_run.h"
#include "ui/services/evaluation_service.h"
#include "ui/services/tuning_service.h"
#include "ui/views/log_panel.h"
#include "ui/main_window.h"
#include "window_parts.h"
#include "core/gpu/worker_gpu_report.h"
#include "helpers/model_cells.h"
#include "ui/models/gpu_device_model.h"
#include "ui/settings/settings_dialog.h"
#include "core/paths/install_paths.h"
#include "core/task/manifest_parser.h"
#include "helpers/loopback_sshd.h"
#include "helpers/one_node_slurm.h"

using kwb::ui::CudaEditor;
using kwb::ui::DevicesPanel;
using kwb::ui::GpuDeviceModel;
using kwb::ui::MainWindow;
using kwb::ui::PoolDeviceRow;

using kwb::test::cell;
using kwb::test::readBytes;

namespace {

const QString kFixture = QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/gpu/stats_2x_h200.json");

}  // namespace

class TestGpusDock : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void dockShowsTheNoDeviceReason();
  void windowPanelShowsFedStats();
  void poolDeviceTakenOutIsReported();
  void gpuChoiceRoundTrips();
  void remoteWorkersInTheDock();
  void slurmWorkersInTheDock();

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
  DevicesPanel *panel = partOf<kwb::ui::DevicesPanel>(*window_);
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
  QVERIFY(window_->findChild<QLabel *>(QStringLiteral("gpuSummaryLabel"))->isHidden());
  // It goes on refreshing, every 2 s.
  QVERIFY(refreshed.wait(10000));
}

void TestGpusDock::windowPanelShowsFedStats() {
  DevicesPanel *panel = partOf<kwb::ui::DevicesPanel>(*window_);
  // Stop the live refresh so the recorded figures stay.
  panel->stop();
  QVERIFY(!panel->isRefreshing());
  panel->model()->setStats(std::get<kwb::GpuStatsReport>(kwb::parseGpuStats(readBytes(kFixture).toStdString())));
  QCOMPARE(panel->view()->model()->rowCount(), 2);
  QVERIFY(!panel->view()->isHidden());
  QVERIFY(panel->messageLabel()->isHidden());
}

// "GPUs to use: 0" on a machine without GPU 0: every run on it says "no CUDA device", the pool
// takes the device out after 3 in a row, and the dock and the Log say why; runs go on,
// compile-only, after that.
void TestGpusDock::poolDeviceTakenOutIsReported() {
  QVERIFY(window_->openTask(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax")));
  partOf<kwb::ui::EvaluationService>(*window_)->setDevices({0});
  QSignalSpy finished(window_.get(), &MainWindow::runFinished);
  QSignalSpy message(partOf<kwb::ui::EvaluationService>(*window_), &kwb::ui::EvaluationService::deviceMessage);
  for (int i = 0; i < 3; ++i) {
    QVERIFY(window_->runCurrent());
    QVERIFY(finished.wait(120000));
    const auto run = finished.takeFirst().at(0).value<kwb::ui::EvaluationRun>();
    QVERIFY2(run.outcome == kwb::Outcome::NotRun || run.outcome == kwb::Outcome::Error,
             qPrintable(QLatin1String(kwb::toString(run.outcome)) + QStringLiteral(": ") + run.message));
  }
  if (message.isEmpty()) QVERIFY(message.wait(10000));
  const QString text = message.front().at(0).toString();
  QVERIFY2(text.contains(QStringLiteral("GPU 0 taken out of the pool")), qPrintable(text));
  QVERIFY2(window_->log()->text().contains(text), qPrintable(window_->log()->text()));
  const auto states = partOf<kwb::ui::EvaluationService>(*window_)->deviceStates();
  QCOMPARE(states.size(), 1);
  QVERIFY(states.front().removed);
  // The dock (fed the recorded figures above, where GPU 0 exists) shows it.
  const GpuDeviceModel *model = partOf<kwb::ui::DevicesPanel>(*window_)->model();
  // (deviceMessage came with devicesChanged, which the window turns into the model's pool state.)
  QVERIFY2(cell(model, 0, GpuDeviceModel::State).startsWith(QStringLiteral("removed: GPU 0 taken out")),
           qPrintable(cell(model, 0, GpuDeviceModel::State)));
  // Runs go on without the pool's GPU: compiled, not run.
  QVERIFY(window_->runCurrent());
  QVERIFY(finished.wait(120000));
  const auto run = finished.takeFirst().at(0).value<kwb::ui::EvaluationRun>();
  QVERIFY2(run.outcome == kwb::Outcome::NotRun,
           qPrintable(QLatin1String(kwb::toString(run.outcome)) + QStringLiteral(": ") + run.message));

  // Cancel works on a pool run too: from the first progress report (the pool's device thread
  // reports it), as a user pressing Cancel mid-run.
  partOf<kwb::ui::EvaluationService>(*window_)->setDevices({1});
  CudaEditor *editor = window_->currentEditor();
  QVERIFY(editor);
  const QString original = editor->text();
  editor->setText(original + QStringLiteral("\n// pool cancel %1\n").arg(QDateTime::currentMSecsSinceEpoch()));
  bool cancelled = false;
  const auto connection = connect(partOf<kwb::ui::EvaluationService>(*window_), &kwb::ui::EvaluationService::progress, this,
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
  qInfo("pool run cancelled mid-run ended as %s: %s", kwb::toString(cancelledRun.outcome),
        qPrintable(cancelledRun.message));
  QVERIFY2(cancelledRun.outcome == kwb::Outcome::Cancelled || cancelledRun.outcome == kwb::Outcome::NotRun,
           qPrintable(QLatin1String(kwb::toString(cancelledRun.outcome)) + QStringLiteral(": ") + cancelledRun.message));
  QVERIFY(!window_->isRunning());
  QVERIFY(window_->actions().run->isEnabled());
  editor->setText(original);
  editor->setModified(false);
  partOf<kwb::ui::EvaluationService>(*window_)->setDevices({});
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

// Settings ▸ GPU ▸ Workers (issue 22): a spec that does not parse is refused with the reason, one
// that does is kept; the dock, pointed at a real sshd on loopback, says where its GPUs are and
// shows the far side's own answer (here: no CUDA device, and why).
void TestGpusDock::remoteWorkersInTheDock() {
  namespace settings = kwb::ui::settings;
  QTemporaryDir runtime;
  QVERIFY(runtime.isValid());
  qputenv("XDG_RUNTIME_DIR", runtime.path().toUtf8());
  kwb::test::LoopbackSshd sshd;
  QVERIFY2(sshd.problem().empty(), sshd.problem().c_str());
  qputenv("KWB_SSH_COMMAND", QByteArray::fromStdString(sshd.sshCommand()));
  const auto worker = kwb::workerExecutable();
  QVERIFY(worker);
  const QString spec = QStringLiteral("ssh://%1%2").arg(QLatin1String(kwb::test::LoopbackSshd::kHost),
                                                       QString::fromStdString(worker->string()));

  kwb::ui::SettingsDialog dialog;
  dialog.load();
  QCOMPARE(dialog.workersField()->text(), QString());
  QCOMPARE(dialog.workersField()->placeholderText(), QStringLiteral("local (this machine)"));
  dialog.workersField()->setText(QStringLiteral("tcp://gpu-box"));
  QSignalSpy applied(&dialog, &kwb::ui::SettingsDialog::applied);
  QVERIFY(!dialog.apply());
  QCOMPARE(applied.size(), 0);
  auto *problem = dialog.findChild<QLabel *>(QStringLiteral("workersProblem"));
  QVERIFY(problem && !problem->isHidden());
  QVERIFY2(problem->text().contains(QStringLiteral("expected local, ssh://")), qPrintable(problem->text()));
  QCOMPARE(settings::workersSpec(), QString());
  // Several hosts in one pool (issue 49): a list of hosts is taken; Slurm in a list is not.
  dialog.workersField()->setText(QStringLiteral("ssh://gpu-a,slurm:partition=gpu,gpus=2"));
  QVERIFY(!dialog.apply());
  QVERIFY2(problem->text().contains(QStringLiteral("a Slurm launcher stands alone")), qPrintable(problem->text()));
  auto *evaluation = partOf<kwb::ui::EvaluationService>(*window_);
  QVERIFY(evaluation->setWorkers(QStringLiteral("ssh://gpu-a,ssh://ana@gpu-b:2222")));
  QCOMPARE(evaluation->workersDescription(), QStringLiteral("ssh://gpu-a, ssh://ana@gpu-b:2222"));
  QVERIFY(!evaluation->setWorkers(QStringLiteral("ssh://gpu-a,ssh://gpu-a")));
  QVERIFY(evaluation->setWorkers(QString()));
  QCOMPARE(evaluation->workersDescription(), QStringLiteral("local"));
  dialog.workersField()->setText(spec);
  QVERIFY(dialog.apply());
  QCOMPARE(settings::workersSpec(), spec);

  DevicesPanel *panel = partOf<kwb::ui::DevicesPanel>(*window_);
  std::string why;
  panel->setLauncher(*kwb::worker::parseWorkerLauncher(spec.toStdString(), why));
  QVERIFY(!panel->whereLabel()->isHidden());
  QVERIFY2(panel->whereLabel()->text().contains(QStringLiteral("ssh://kwbtest")), qPrintable(panel->whereLabel()->text()));
  QSignalSpy refreshed(panel, &DevicesPanel::refreshed);
  panel->start(QString::fromStdString(worker->string()));  // the far side's kwb-worker --stats --json
  QVERIFY(refreshed.wait(60000));
  if (panel->model()->rowCount() == 0) {
    const QString text = panel->messageLabel()->text();
    QVERIFY2(text.startsWith(QStringLiteral("No CUDA device: ")), qPrintable(text));
  }
  panel->stop();
  panel->setLauncher({});
  QVERIFY(panel->whereLabel()->isHidden());
  // Several hosts: a line per host under the table (the pool's words, kwb::describePoolHost).
  QVERIFY(panel->hostsLabel()->isHidden());
  panel->setHostLines({QStringLiteral("ssh://gpu-a: 1 GPU · 3 done"), QStringLiteral("ssh://gpu-b: 1 GPU · 2 done")});
  QVERIFY(!panel->hostsLabel()->isHidden());
  QCOMPARE(panel->hostsLabel()->text(), QStringLiteral("ssh://gpu-a: 1 GPU · 3 done\nssh://gpu-b: 1 GPU · 2 done"));
  QVERIFY(evaluation->hostLines().isEmpty());  // one host (or none yet): no such lines
  panel->setHostLines({});
  QVERIFY(panel->hostsLabel()->isHidden());

  // The window's other GPU work follows the setting too: a tuning run starts its workers there
  // (a wrapper on the far side counts the relays it starts).
  const QString counter = runtime.filePath(QStringLiteral("relays.txt"));
  const QString wrapper = runtime.filePath(QStringLiteral("kwb-worker-counted"));
  {
    QFile script(wrapper);
    QVERIFY(script.open(QIODevice::WriteOnly));
    // Only relays count (the GPU probe and the dock's figures run the far kwb-worker too).
    script.write(QStringLiteral("#!/bin/sh\n[ \"$1\" = --relay ] && echo relay >> '%1'\nexec '%2' \"$@\"\n")
                     .arg(counter, QString::fromStdString(worker->string()))
                     .toUtf8());
  }
  QVERIFY(QFile::setPermissions(wrapper, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
  settings::setWorkersSpec(QStringLiteral("ssh://%1%2").arg(QLatin1String(kwb::test::LoopbackSshd::kHost), wrapper));
  window_->applySettings();
  const auto task = kwb::loadTask(KWB_SOURCE_DIR "/kernels/softmax");
  QFile starter(QString::fromStdString((task.folder / task.starterSource()).string()));
  QVERIFY(starter.open(QIODevice::ReadOnly));
  kwb::ui::TuneRequest tune;
  tune.taskFolder = QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax");
  tune.source = QString::fromUtf8(starter.readAll());
  tune.sourceName = QString::fromStdString(task.starterSource().string());
  tune.configs = {QStringLiteral("small")};
  tune.budget = 2;
  QSignalSpy tuned(partOf<kwb::ui::TuningService>(*window_), &kwb::ui::TuningService::finished);
  QVERIFY(partOf<kwb::ui::TuningService>(*window_)->run(tune));
  QVERIFY(tuned.wait(180000));
  const auto summary = tuned.takeFirst().at(0).value<kwb::ui::TuneSummary>();
  QVERIFY2(summary.stop == QStringLiteral("no-device") || summary.stop == QStringLiteral("done"),
           qPrintable(summary.stop + QStringLiteral(": ") + summary.message));
  QFile relays(counter);
  QVERIFY2(relays.open(QIODevice::ReadOnly), "the tuning run started no worker through ssh");
  QVERIFY(relays.readAll().count("relay") >= 1);
  settings::setWorkersSpec(QString());
  window_->applySettings();
  dialog.workersField()->clear();
  QVERIFY(dialog.apply());
  QCOMPARE(settings::workersSpec(), QString());
}

// Workers through Slurm (issue 22): the dock lists the evaluation pool's workers, a job step with
// one GPU each, with where each runs (node, step, CUDA_VISIBLE_DEVICES) and what happened there;
// it polls nothing through Slurm. Going back to local gives the pool's allocation back at once.
void TestGpusDock::slurmWorkersInTheDock() {
  namespace settings = kwb::ui::settings;
  kwb::test::OneNodeSlurm cluster;
  // packaging/install-deps.sh installs Slurm and munge; CI runs as root: no reason to skip.
  QVERIFY2(cluster.problem().empty(), cluster.problem().c_str());
  const auto worker = kwb::workerExecutable();
  QVERIFY(worker);
  settings::setWorkersSpec(QStringLiteral("slurm:partition=%1,gpus=2,time=00:10:00,worker=%2")
                               .arg(QLatin1String(kwb::test::OneNodeSlurm::kPartition), QString::fromStdString(worker->string())));
  window_->applySettings();
  DevicesPanel *panel = partOf<kwb::ui::DevicesPanel>(*window_);
  const GpuDeviceModel *model = panel->model();
  QVERIFY(model->poolRowsOnly());
  QVERIFY2(panel->whereLabel()->text().contains(QStringLiteral("GPUs on slurm (partition kwb, 2 GPUs")),
           qPrintable(panel->whereLabel()->text()));
  QVERIFY(!panel->view()->isColumnHidden(GpuDeviceModel::Where));
  QCOMPARE(model->rowCount(), 0);
  QVERIFY2(panel->messageLabel()->text().contains(QStringLiteral("asks Slurm for its workers")),
           qPrintable(panel->messageLabel()->text()));

  // The node's GPUs are stand-ins (no CUDA device behind them): the pool's two are named.
  partOf<kwb::ui::EvaluationService>(*window_)->setDevices({0, 1});
  QVERIFY(window_->openTask(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax")));
  QSignalSpy finished(window_.get(), &MainWindow::runFinished);
  QSignalSpy summary(panel, &DevicesPanel::summaryChanged);
  QVERIFY(window_->runCurrent());
  QVERIFY(finished.wait(180000));
  const auto run = finished.takeFirst().at(0).value<kwb::ui::EvaluationRun>();
  QVERIFY2(run.outcome == kwb::Outcome::NotRun, qPrintable(QLatin1String(kwb::toString(run.outcome)) + QStringLiteral(": ") + run.message));
  if (model->rowCount() != 2) QVERIFY(summary.wait(10000));
  QCOMPARE(model->rowCount(), 2);
  QCOMPARE(summary.last().at(0).toString(), QStringLiteral("2 GPU workers"));
  std::vector<std::string> jobs;
  for (int row = 0; row < 2; ++row) {
    const QString where = cell(model, row, GpuDeviceModel::Where);
    QVERIFY2(where.contains(QStringLiteral(" · Slurm step ")) && where.contains(QStringLiteral("CUDA_VISIBLE_DEVICES=")),
             qPrintable(where));
    QCOMPARE(cell(model, row, GpuDeviceModel::Load), QStringLiteral("—"));
    jobs.push_back(where.section(QStringLiteral("Slurm step "), 1).section(QLatin1Char('.'), 0, 0).toStdString());
  }
  QCOMPARE(jobs[0], jobs[1]);  // both steps in the pool's one allocation
  // The run went to GPU 0, found no CUDA device there, and moved to GPU 1: the dock says so.
  const QString first = cell(model, 0, GpuDeviceModel::State);
  QVERIFY2(first.contains(QStringLiteral("no CUDA device")) && first.contains(QStringLiteral("(moved to GPU 1)")), qPrintable(first));
  bool held = false;
  for (const auto &line : cluster.jobs()) held = held || (line.rfind(jobs[0] + " ", 0) == 0 && line.find(" RUNNING") != std::string::npos);
  QVERIFY(held);

  // Back to local: the pool (and the allocation) go now, not at the next run.
  settings::setWorkersSpec(QString());
  QSignalSpy changed(partOf<kwb::ui::EvaluationService>(*window_), &kwb::ui::EvaluationService::devicesChanged);
  window_->applySettings();
  QVERIFY(changed.wait(60000));
  QVERIFY(!model->poolRowsOnly());
  QVERIFY(partOf<kwb::ui::EvaluationService>(*window_)->deviceStates().isEmpty());
  for (const auto &line : cluster.jobs())
    QVERIFY2(line.rfind(jobs[0] + " ", 0) != 0 || line.find(" RUNNING") == std::string::npos, line.c_str());

  // An allocation Slurm refuses: the run is compiled only, and the dock says why instead of rows.
  settings::setWorkersSpec(QStringLiteral("slurm:partition=nosuch,gpus=1,time=00:10:00,worker=%1")
                               .arg(QString::fromStdString(worker->string())));
  window_->applySettings();
  QVERIFY(window_->runCurrent());
  QVERIFY(finished.wait(180000));
  const auto refused = finished.takeFirst().at(0).value<kwb::ui::EvaluationRun>();
  QVERIFY2(refused.outcome == kwb::Outcome::NotRun, qPrintable(refused.message));
  // The run says why, and did not ask Slurm again for a worker of its own.
  QVERIFY2(refused.message.contains(QStringLiteral("salloc refused the allocation")), qPrintable(refused.message));
  QCOMPARE(model->rowCount(), 0);
  QVERIFY2(panel->messageLabel()->text().contains(QStringLiteral("salloc refused the allocation")),
           qPrintable(panel->messageLabel()->text()));
  settings::setWorkersSpec(QString());
  window_->applySettings();
  partOf<kwb::ui::EvaluationService>(*window_)->setDevices({});
}

QTEST_MAIN(TestGpusDock)
#include "tst_gpus_dock.moc"
