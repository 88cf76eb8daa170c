#include "ui/views/devices_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "core/gpu/worker_gpu_report.h"
#include "ui/services/worker_command.h"

namespace kwb::ui {

DevicesPanel::DevicesPanel(QWidget *parent) : QWidget(parent) {
  model_ = new GpuDeviceModel(this);
  command_ = new WorkerCommand(tr("GPU stats"), this);
  timer_ = new QTimer(this);
  timer_->setSingleShot(true);

  where_ = new QLabel(this);
  where_->setObjectName(QStringLiteral("gpuDevicesWhere"));
  where_->setWordWrap(true);
  where_->hide();
  hosts_ = new QLabel(this);
  hosts_->setObjectName(QStringLiteral("gpuDevicesHosts"));
  hosts_->setWordWrap(true);
  hosts_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  hosts_->hide();
  message_ = new QLabel(this);
  message_->setObjectName(QStringLiteral("gpuDevicesMessage"));
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->setText(tr("Reading GPU figures…"));
  view_ = new QTableView(this);
  view_->setObjectName(QStringLiteral("gpuDevicesView"));
  view_->setModel(model_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->setWordWrap(false);
  view_->hide();

  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(where_);
  layout->addWidget(message_);
  layout->addWidget(view_);
  layout->addWidget(hosts_);

  connect(timer_, &QTimer::timeout, this, &DevicesPanel::refreshNow);
  connect(command_, &WorkerCommand::succeeded, this, &DevicesPanel::onStats);
  connect(command_, &WorkerCommand::failed, this, &DevicesPanel::onFailed);
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    const bool rows = model_->rowCount() > 0;
    view_->setVisible(rows);
    message_->setVisible(!rows);
    message_->setText(model_->noDeviceText());
    if (rows) view_->resizeColumnsToContents();
  });
}

void DevicesPanel::start(const QString &program, int intervalMs) {
  program_ = program;
  active_ = true;
  timer_->setInterval(intervalMs);
  timer_->stop();
  refreshNow();
}

void DevicesPanel::setHostLines(const QStringList &lines) {
  hosts_->setText(lines.join(QLatin1Char('\n')));
  hosts_->setVisible(!lines.isEmpty());
}

void DevicesPanel::setLauncher(const kwb::worker::WorkerLauncher &launcher) {
  command_->setLauncher(launcher);
  where_->setVisible(launcher.remote());
  const bool slurm = launcher.kind == kwb::worker::WorkerLauncher::Kind::Slurm;
  where_->setText(slurm ? tr("GPUs on %1: the evaluation pool's workers, a job step with one GPU each "
                             "(code compiled here)")
                              .arg(QString::fromStdString(launcher.describe()))
                        : tr("GPUs on %1 (workers started there; code compiled here)")
                              .arg(QString::fromStdString(launcher.describe())));
  view_->setColumnHidden(GpuDeviceModel::Where, !launcher.remote());
  // An answer on its way is from the old place: dropped, and asked again here.
  command_->cancel();
  model_->setPoolRowsOnly(slurm);
  if (slurm) {
    timer_->stop();
    message_->setText(model_->noDeviceText());
    noteSummary();
    return;
  }
  if (active_) refreshNow();
}

void DevicesPanel::setPoolDevices(const QList<PoolDeviceRow> &devices, const QString &problem) {
  model_->setPoolDevices(devices);
  if (!model_->poolRowsOnly()) return;
  if (!problem.isEmpty()) model_->setPoolProblem(problem);
  if (model_->rowCount() == 0) message_->setText(model_->noDeviceText());
  noteSummary();
}

void DevicesPanel::noteSummary() {
  const QString summary = model_->summary();
  if (summary != lastSummary_) {
    lastSummary_ = summary;
    emit summaryChanged(summary);
  }
}

void DevicesPanel::stop() {
  active_ = false;
  timer_->stop();
  command_->cancel();
}

bool DevicesPanel::isRefreshing() const {
  return active_;
}

void DevicesPanel::refreshNow() {
  if (command_->isRunning() || model_->poolRowsOnly()) return;
  command_->start(program_, {QStringLiteral("--stats"), QStringLiteral("--json")}, kStatsTimeoutMs);
}

void DevicesPanel::onStats(const QByteArray &json) {
  auto answer = kwb::parseGpuStats(std::string_view(json.constData(), static_cast<std::size_t>(json.size())));
  if (const auto *report = std::get_if<kwb::GpuStatsReport>(&answer))
    model_->setStats(*report);
  else
    model_->setFailure(tr("kwb-worker --stats --json answered something unreadable: %1")
                           .arg(QString::fromStdString(std::get<std::string>(answer))));
  afterAnswer();
}

void DevicesPanel::onFailed(const QString &summary, const QString &detail) {
  model_->setFailure(detail.isEmpty() ? summary : detail);
  // Not found or not startable: asking again every 2 s would not change that.
  if (program_.isEmpty()) active_ = false;
  afterAnswer();
}

void DevicesPanel::afterAnswer() {
  if (model_->rowCount() == 0) message_->setText(model_->noDeviceText());
  noteSummary();
  if (active_) timer_->start();
  emit refreshed();
}

}  // namespace kwb::ui
