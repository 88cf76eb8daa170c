#include "ui/views/lineage_panel.h"

#include "core/lineage/lineage_build.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QProgressBar>
#include <QPushButton>
#include <QPainter>
#include <QScrollArea>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "core/lineage/lineage_build.h"
#include "ui/models/lineage_steps_model.h"
#include "ui/services/skill_library_service.h"
#include "ui/views/side_by_side_diff.h"

namespace kwb::ui {

namespace {

bool unmeasured(const kwb::LineageStepRecord &step) {
  return LineageStepsModel::gateOf(step) == LineageStepsModel::Gate::NotMeasured;
}

constexpr int kStepWidth = 112, kBarArea = 70, kNode = 18, kMargin = 12;


QString number(double v, int digits) { return QString::number(v, 'f', digits); }

}  // namespace

LineagePath::LineagePath(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("lineagePath"));
  setMouseTracking(false);
}

void LineagePath::setModel(LineageStepsModel *model) {
  model_ = model;
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    if (selected_ >= model_->rowCount()) selected_ = -1;
    updateGeometry();
    resize(sizeHint());  // in a scroll area that does not resize it
    update();
  });
}

int LineagePath::steps() const { return model_ ? model_->rowCount() : 0; }

void LineagePath::select(int index) {
  if (index < 0 || index >= steps()) return;
  selected_ = index;
  update();
  emit stepSelected(index);
}

int LineagePath::barArea() const {
  // Bars for measured steps; a lineage read from its task (nothing measured) has none to draw,
  // and the path gives its height to the diff below.
  return model_ && model_->hasFigures() ? kBarArea : 0;
}

QRect LineagePath::nodeRect(int index) const {
  const int x = kMargin + index * kStepWidth + kStepWidth / 2 - kNode / 2;
  return {x, kMargin + barArea() + 8, kNode, kNode};
}

QSize LineagePath::sizeHint() const {
  // Empty: room for the sentence that says so.
  return {2 * kMargin + (steps() ? steps() * kStepWidth : 4 * kStepWidth), kMargin + barArea() + 8 + kNode + 44};
}

QSize LineagePath::minimumSizeHint() const { return sizeHint(); }

void LineagePath::mousePressEvent(QMouseEvent *e) {
  for (int i = 0; i < steps(); ++i) {
    const QRect column(kMargin + i * kStepWidth, 0, kStepWidth, height());
    if (column.contains(e->position().toPoint())) {
      select(i);
      return;
    }
  }
}

void LineagePath::paintEvent(QPaintEvent *) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), palette().base());
  const int count = steps();
  if (count == 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(8, 0, -8, 0), Qt::AlignCenter | Qt::TextWordWrap,
               tr("No lineage: Build lineage (or kwb lineage build TASK) builds one"));
    return;
  }
  auto speedupOf = [this](int row) {
    return model_->index(row, LineageStepsModel::StepColumn).data(LineageStepsModel::SpeedupVsPreviousRole);
  };
  // Bars: log2 of the speedup over the previous accepted step, for the configuration shown.
  double most = 1;
  for (int i = 0; i < count; ++i)
    if (const QVariant v = speedupOf(i); v.isValid()) most = std::max(most, std::abs(std::log2(v.toDouble())));
  const int baseline = kMargin + barArea();
  const int nodeY = nodeRect(0).center().y();
  p.setPen(QPen(palette().color(QPalette::Mid), 2));
  p.drawLine(nodeRect(0).center(), QPoint(nodeRect(count - 1).center().x(), nodeY));
  for (int i = 0; i < count; ++i) {
    const QModelIndex step = model_->index(i, LineageStepsModel::StepColumn);
    const QRect node = nodeRect(i);
    const int cx = node.center().x();
    if (const QVariant v = speedupOf(i); v.isValid()) {
      const double l = std::log2(v.toDouble());
      const int h = std::max(2, static_cast<int>(std::abs(l) / most * (kBarArea - 16)));
      const QRect bar(cx - 14, baseline - h, 28, h);
      p.fillRect(bar, l >= 0 ? QColor(0x22, 0xc5, 0x5e) : QColor(0xf9, 0x73, 0x16));
      p.setPen(palette().color(QPalette::Text));
      p.drawText(QRect(cx - kStepWidth / 2, baseline - h - 16, kStepWidth, 14), Qt::AlignCenter,
                 model_->index(i, LineageStepsModel::VsPreviousColumn).data().toString());
    }
    if (i == selected_) {
      p.setPen(QPen(palette().color(QPalette::Highlight), 3));
      p.setBrush(Qt::NoBrush);
      p.drawRoundedRect(QRect(cx - kStepWidth / 2 + 4, kMargin - 4, kStepWidth - 8, height() - kMargin), 6, 6);
    }
    p.setPen(Qt::NoPen);
    p.setBrush(step.data(Qt::DecorationRole).value<QColor>());  // the gate's colour
    p.drawEllipse(node);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(cx - kStepWidth / 2 + 4, node.bottom() + 4, kStepWidth - 8, 40), Qt::AlignHCenter | Qt::TextWordWrap,
               fontMetrics().elidedText(step.data().toString(), Qt::ElideRight, 2 * (kStepWidth - 8)));
  }
}

LineagePanel::LineagePanel(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("lineagePanel"));
  // A short bottom dock squeezes the panel rather than growing the window (tabbed with the others).
  setMinimumSize(200, 80);
  lineages_ = new QComboBox(this);
  lineages_->setObjectName(QStringLiteral("lineageBox"));
  configs_ = new QComboBox(this);
  configs_->setObjectName(QStringLiteral("lineageConfigBox"));
  // A lineage read from its task has no configurations' figures: the box says so, not blank.
  configs_->setPlaceholderText(tr("not measured"));
  configs_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("lineageSummary"));
  summary_->setWordWrap(true);
  steps_ = new LineageStepsModel(this);
  path_ = new LineagePath(this);
  path_->setModel(steps_);
  pathScroll_ = new QScrollArea(this);
  pathScroll_->setWidget(path_);
  pathScroll_->setWidgetResizable(false);
  // As tall as the path, when the page has the room; a short page scrolls it.
  pathScroll_->setMinimumHeight(60);
  pathScroll_->setMaximumHeight(path_->sizeHint().height() + 20);
  // The step beside its diff: its title, why it was not measured, what it adds (the lineage's
  // lesson, in a column that scrolls when it is long), then its figures, or why there are none.
  stepTitle_ = new QLabel(this);
  stepTitle_->setObjectName(QStringLiteral("lineageStepTitle"));
  stepTitle_->setWordWrap(true);
  stepTitle_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  stepTitle_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stepTitle_->setContentsMargins(4, 2, 4, 2);
  auto *stepScroll = new QScrollArea(this);
  stepScroll->setObjectName(QStringLiteral("lineageStepScroll"));
  stepScroll->setWidget(stepTitle_);
  stepScroll->setWidgetResizable(true);
  stepScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  stepScroll->setMinimumHeight(60);
  diff_ = new SideBySideDiff(this);
  figures_ = new QTableWidget(0, 3, this);
  figures_->setObjectName(QStringLiteral("lineageFigures"));
  figures_->setHorizontalHeaderLabels({tr("Figure"), tr("Before"), tr("After")});
  figures_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  figures_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  figures_->verticalHeader()->hide();
  figures_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  figures_->setWordWrap(false);
  figuresNote_ = new QLabel(this);
  figuresNote_->setObjectName(QStringLiteral("lineageFiguresNote"));
  figuresNote_->setWordWrap(true);
  figuresNote_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  figuresNote_->setStyleSheet(QStringLiteral("color: #6b7280;"));
  figuresNote_->setContentsMargins(4, 2, 4, 2);
  stepSplit_ = new QSplitter(Qt::Vertical, this);
  stepSplit_->setChildrenCollapsible(false);
  stepSplit_->addWidget(stepScroll);
  stepSplit_->addWidget(figures_);
  stepSplit_->setStretchFactor(0, 1);
  stepSplit_->setStretchFactor(1, 1);
  auto *stepColumn = new QWidget(this);
  auto *stepLayout = new QVBoxLayout(stepColumn);
  stepLayout->setContentsMargins(0, 0, 0, 0);
  stepLayout->setSpacing(2);
  stepLayout->addWidget(stepSplit_, 1);
  stepLayout->addWidget(figuresNote_);

  build_ = new QPushButton(tr("Build lineage"), this);
  build_->setObjectName(QStringLiteral("lineageBuild"));
  build_->setToolTip(tr("Gate, time and profile every step of the open task's bundled lineage on the GPU, store it "
                        "in the skill library and lift its cards"));
  deoptimize_ = new QPushButton(tr("De-optimize current kernel…"), this);
  deoptimize_->setObjectName(QStringLiteral("lineageDeoptimize"));
  deoptimize_->setToolTip(tr("The model takes one technique at a time out of the kernel in the editor (each answer "
                             "gated); the versions, read forward, are built as a lineage"));
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setObjectName(QStringLiteral("lineageBuildCancel"));
  progress_ = new QProgressBar(this);
  progress_->setObjectName(QStringLiteral("lineageBuildProgress"));
  buildStatus_ = new QLabel(this);
  buildStatus_->setObjectName(QStringLiteral("lineageBuildStatus"));
  buildStatus_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // One line, cut at the panel's edge; the whole text in its tooltip.
  buildStatus_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  setBuilding(false);
  connect(build_, &QPushButton::clicked, this, &LineagePanel::buildRequested);
  connect(deoptimize_, &QPushButton::clicked, this, &LineagePanel::deoptimizeRequested);
  connect(cancel_, &QPushButton::clicked, this, [this] {
    if (service_) service_->cancelBuild();
    setBuildStatus(tr("Cancelling…"));
  });

  auto *top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Lineage:"), this));
  top->addWidget(lineages_, 1);
  top->addWidget(new QLabel(tr("Configuration:"), this));
  top->addWidget(configs_);
  top->addWidget(build_);
  top->addWidget(deoptimize_);
  auto *buildRow = new QHBoxLayout;
  buildRow->addWidget(progress_);
  buildRow->addWidget(cancel_);
  buildRow->addWidget(buildStatus_, 1);
  // The diff has the page's width but the step's column, and the height under the path.
  auto *split = new QSplitter(Qt::Horizontal, this);
  split->setChildrenCollapsible(false);
  split->addWidget(diff_);
  split->addWidget(stepColumn);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  split->setSizes({740, 260});
  auto *layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(buildRow);
  layout->addWidget(summary_);
  layout->addWidget(pathScroll_);
  layout->addWidget(split, 1);

  connect(lineages_, &QComboBox::currentIndexChanged, this, [this] {
    configs_->blockSignals(true);
    configs_->clear();
    if (const auto *l = lineage(); l && !l->steps.empty())
      for (const auto &f : l->steps.front().figures) configs_->addItem(QString::fromStdString(f.config));
    // The largest configuration is the one a lineage is about: the last listed.
    configs_->setCurrentIndex(configs_->count() - 1);
    configs_->setEnabled(configs_->count() > 0);
    configs_->setToolTip(configs_->count() > 0 ? tr("The configuration whose figures the bars and the table show")
                                               : tr("This lineage was not measured: it has no configuration's figures"));
    configs_->blockSignals(false);
    steps_->setLineage(lineage(), configs_->currentText());
    pathScroll_->setMaximumHeight(path_->sizeHint().height() + 20);
    const auto *l = lineage();
    if (l && isPreview())
      summary_->setText(tr("%1's bundled lineage, read from the task: %2 steps with their code and diffs, not measured (%3). "
                           "Build lineage gates, times and stores it on a GPU.")
                            .arg(QString::fromStdString(l->name))
                            .arg(l->steps.size())
                            .arg(QString::fromStdString(l->steps.empty() ? std::string() : l->steps.front().reason)));
    else
      summary_->setText(l ? tr("%1 on %2 (%3): %4 of %5 steps passed the gate; built %6")
                                .arg(QString::fromStdString(l->name), QString::fromStdString(l->device),
                                     QString::fromStdString(l->arch))
                                .arg(l->acceptedSteps())
                                .arg(l->steps.size())
                                .arg(QString::fromStdString(l->builtAt))
                          : tr("No lineage in the library yet: Build lineage (or kwb lineage build TASK) builds one on a GPU."));
    if (l && !l->steps.empty()) path_->select(static_cast<int>(l->steps.size()) - 1);
    else showStep(-1);
  });
  connect(configs_, &QComboBox::currentIndexChanged, this, [this] {
    steps_->setLineage(lineage(), configs_->currentText());
    showStep(path_->selected());
  });
  connect(path_, &LineagePath::stepSelected, this, &LineagePanel::showStep);
  connect(path_, &LineagePath::stepSelected, this, [this] {
    // The user's pick, told to the window (not a step shown because the context asked for it).
    if (following_ || !context() || currentStep() == 0 || isPreview()) return;
    CandidateSelection s;
    s.origin = CandidateSelection::Origin::LineageStep;
    s.lineage = currentLineage();
    s.step = currentStep();
    s.run.taskFolder = context()->taskFolder();
    context()->select(s);
  });
}

void LineagePanel::attach(SkillLibraryService *service) {
  service_ = service;
  connect(service_, &SkillLibraryService::loaded, this, &LineagePanel::reload);
  connect(service_, &SkillLibraryService::buildProgress, this, [this](const QString &line, int done, int total) {
    setBuilding(true);
    progress_->setRange(0, total);  // 0, 0: busy, not counted
    progress_->setValue(done);
    setBuildStatus(line);
  });
  connect(service_, &SkillLibraryService::built, this, [this](const QString &name, const QString &summary) {
    setBuilding(false);
    setBuildStatus(tr("Built %1: %2").arg(name, summary));
    showLineage(name);
  });
  connect(service_, &SkillLibraryService::failed, this, [this](const QString &message) {
    if (!building_) return;
    setBuilding(false);
    setBuildStatus(message);
  });
  reload();
}

void LineagePanel::buildStarted(const QString &what) {
  setBuilding(true);
  progress_->setRange(0, 0);
  setBuildStatus(what);
}

void LineagePanel::showBuildMessage(const QString &message) { setBuildStatus(message); }

void LineagePanel::setBuildStatus(const QString &text) {
  buildStatus_->setText(text);
  buildStatus_->setToolTip(text);
}

QString LineagePanel::buildStatus() const { return buildStatus_->text(); }

void LineagePanel::setBuilding(bool building) {
  building_ = building;
  progress_->setVisible(building);
  cancel_->setVisible(building);
  build_->setEnabled(!building && buildAllowed_);
  deoptimize_->setEnabled(!building && deoptimizeAllowed_);
}

void LineagePanel::setGate(bool buildAllowed, const QString &buildWhy, bool deoptimizeAllowed, const QString &deoptimizeWhy) {
  if (buildTip_.isEmpty()) {
    buildTip_ = build_->toolTip();
    deoptimizeTip_ = deoptimize_->toolTip();
  }
  buildAllowed_ = buildAllowed;
  deoptimizeAllowed_ = deoptimizeAllowed;
  build_->setToolTip(buildWhy.isEmpty() ? buildTip_ : buildTip_ + QStringLiteral("\n") + buildWhy);
  deoptimize_->setToolTip(deoptimizeWhy.isEmpty() ? deoptimizeTip_ : deoptimizeTip_ + QStringLiteral("\n") + deoptimizeWhy);
  setBuilding(building_);
}

QString LineagePanel::previewKey() const {
  return preview_ ? QString(QStringLiteral("preview:") + QString::fromStdString(preview_->name)) : QString();
}

bool LineagePanel::isPreview() const {
  return preview_ && lineages_->currentData().toString() == previewKey();
}

void LineagePanel::setPreview(std::optional<kwb::LineageRecord> preview) {
  preview_ = std::move(preview);
  reload();
}

void LineagePanel::setPreviewReason(const QString &why) {
  if (!preview_) return;
  for (auto &step : preview_->steps) step.reason = why.toStdString();
  reload();
}

const kwb::LineageRecord *LineagePanel::lineage() const {
  if (isPreview()) return &*preview_;
  if (!service_) return nullptr;
  const auto &all = service_->snapshot().lineages;
  const int i = lineages_->currentIndex();
  return i >= 0 && i < static_cast<int>(all.size()) ? &all[static_cast<std::size_t>(i)] : nullptr;
}

void LineagePanel::reload() {
  const QString keep = currentLineage();
  const int keepStep = currentStep();
  lineages_->blockSignals(true);
  lineages_->clear();
  bool stored = false;
  if (service_)
    for (const auto &l : service_->snapshot().lineages) {
      lineages_->addItem(QStringLiteral("%1  (%2/%3 steps)").arg(QString::fromStdString(l.name)).arg(l.acceptedSteps()).arg(l.steps.size()),
                         QString::fromStdString(l.name));
      stored = stored || (preview_ && l.name == preview_->name);
    }
  // The open task's bundled lineage, read from its folder, where the library has no build of it.
  if (preview_ && !stored)
    lineages_->insertItem(0, tr("%1  (bundled, %2 steps, not measured)").arg(QString::fromStdString(preview_->name)).arg(preview_->steps.size()),
                          QVariant(previewKey()));
  lineages_->setCurrentIndex(-1);
  lineages_->blockSignals(false);
  const int found = lineages_->findData(keep);
  lineages_->setCurrentIndex(found >= 0 ? found : (lineages_->count() ? 0 : -1));
  if (lineages_->count() == 0) emit lineages_->currentIndexChanged(-1);
  if (found >= 0 && keepStep > 0) showLineage(keep, keepStep);
  if (!pendingName_.isEmpty() && lineages_->findData(pendingName_) >= 0) showLineage(pendingName_, pendingStep_);
}

bool LineagePanel::showLineage(const QString &name, int step) {
  const int i = lineages_->findData(name);
  if (i < 0) {
    // Not read yet (or not there): shown when the library's next read has it.
    pendingName_ = name;
    pendingStep_ = step;
    return false;
  }
  pendingName_.clear();
  lineages_->setCurrentIndex(i);
  if (const auto *l = lineage(); l && step > 0)
    for (int k = 0; k < static_cast<int>(l->steps.size()); ++k)
      if (l->steps[static_cast<std::size_t>(k)].position == step) path_->select(k);
  return true;
}

void LineagePanel::onSelectionChanged(const WorkbenchContext &context) {
  const auto &s = context.selection();
  if (!s || s->origin != CandidateSelection::Origin::LineageStep) return;
  if (s->lineage == currentLineage() && s->step == currentStep()) return;  // shown already (this view's own pick)
  following_ = true;
  if (!showLineage(s->lineage, s->step) && service_ && !service_->isBusy())
    setBuildStatus(tr("The library has no lineage %1 (it was rebuilt under another name, or removed)").arg(s->lineage));
  following_ = false;
}

QString LineagePanel::currentLineage() const { return lineages_->currentData().toString(); }

int LineagePanel::currentStep() const {
  const auto *l = lineage();
  const int i = path_->selected();
  return l && i >= 0 && i < static_cast<int>(l->steps.size()) ? l->steps[static_cast<std::size_t>(i)].position : 0;
}

QString LineagePanel::summary() const { return summary_->text(); }

void LineagePanel::showStep(int index) {
  const auto *l = lineage();
  figures_->setRowCount(0);
  if (!l || index < 0 || index >= static_cast<int>(l->steps.size())) {
    diff_->clear();
    stepTitle_->clear();
    figuresNote_->clear();
    figuresNote_->hide();
    figures_->show();
    return;
  }
  const auto &step = l->steps[static_cast<std::size_t>(index)];
  // Its parent: the accepted step before it (the first step has none).
  const kwb::LineageStepRecord *parent = nullptr;
  for (int k = index - 1; k >= 0 && !parent; --k)
    if (l->steps[static_cast<std::size_t>(k)].accepted || unmeasured(l->steps[static_cast<std::size_t>(k)]))
      parent = &l->steps[static_cast<std::size_t>(k)];
  stepTitle_->setText(QStringLiteral("<b>%1. %2</b> %3<br>%4")
                          .arg(step.position)
                          .arg(QString::fromStdString(step.title).toHtmlEscaped(),
                               step.accepted     ? QString()
                               : unmeasured(step) ? tr("(not measured: %1)").arg(QString::fromStdString(step.reason).toHtmlEscaped())
                                                  : tr("(rejected: %1)").arg(QString::fromStdString(step.reason).toHtmlEscaped()),
                               QString::fromStdString(step.adds).toHtmlEscaped()));
  diff_->setTexts(parent ? QString::fromStdString(parent->source) : QString(),
                  parent ? QString::fromStdString(parent->sourceName) : tr("(nothing before the first step)"),
                  QString::fromStdString(step.source), QString::fromStdString(step.sourceName));
  auto addRow = [this](const QString &name, const QString &before, const QString &after) {
    const int r = figures_->rowCount();
    figures_->insertRow(r);
    figures_->setItem(r, 0, new QTableWidgetItem(name));
    figures_->setItem(r, 1, new QTableWidgetItem(before));
    figures_->setItem(r, 2, new QTableWidgetItem(after));
  };
  for (const auto &f : step.figures) {
    const auto *p = parent ? LineageStepsModel::figuresFor(*parent, QString::fromStdString(f.config)) : nullptr;
    addRow(tr("%1 median (us)").arg(QString::fromStdString(f.config)), p ? number(p->medianMs * 1000, 1) : QString(),
           number(f.medianMs * 1000, 1));
    if (f.speedupVsPrevious > 0) addRow(tr("%1 speedup").arg(QString::fromStdString(f.config)), QString(), QStringLiteral("\u00d7%1").arg(number(f.speedupVsPrevious, 2)));
  }
  auto value = [](double v) { return number(v, v == std::floor(v) ? 0 : 1); };
  for (const auto &d : step.deltas) addRow(QString::fromStdString(d.metric), value(d.before), value(d.after));
  // The profiler's figures with nothing to compare against (the first step) stand alone.
  for (const auto &m : step.profile) {
    const auto name = profileMetricName(step.profileConfig, m);
    if (std::none_of(step.deltas.begin(), step.deltas.end(), [&](const MetricDelta &d) { return d.metric == name; }))
      addRow(QString::fromStdString(name), QString(), value(m.value));
  }
  if (step.accepted && !step.profileNote.empty())
    addRow(tr("profile %1").arg(QString::fromStdString(step.profileConfig)), QString(),
           tr("not profiled: %1").arg(QString::fromStdString(step.profileNote)));
  // No figures: said why, in the table's place (an empty table with headers said nothing).
  QString note;
  if (figures_->rowCount() == 0) {
    const QString why = QString::fromStdString(step.reason);
    if (unmeasured(step))  // the reason is in the step's title, above
      note = tr("No figures: not measured. Build lineage gates, times and profiles every step on a GPU.");
    else if (!step.accepted)
      note = tr("No figures: the gate rejected this step%1, so it was not timed.")
                 .arg(why.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(why));
    else
      note = tr("No figures were stored for this step.");
  }
  figuresNote_->setText(note);
  figuresNote_->setVisible(!note.isEmpty());
  figures_->setVisible(note.isEmpty());
}

QString LineagePanel::figuresNote() const { return figuresNote_->isHidden() ? QString() : figuresNote_->text(); }

}  // namespace kwb::ui
