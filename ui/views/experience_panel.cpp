#include "ui/views/experience_panel.h"

#include <QComboBox>
#include <QDateTime>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QResizeEvent>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>
#include <map>

#include "ui/views/experience_graph_view.h"
#include "ui/views/side_by_side_diff.h"

namespace kwb::ui {

namespace {

QString q(const std::string &s) { return QString::fromStdString(s); }

// Keeps the overview in the graph's bottom right corner.
class CornerKeeper : public QObject {
 public:
  CornerKeeper(QWidget *host, QWidget *corner) : QObject(host), host_(host), corner_(corner) {
    host->installEventFilter(this);
  }
  bool eventFilter(QObject *, QEvent *event) override {
    if (event->type() == QEvent::Resize) {
      const QSize size(std::clamp(host_->width() / 5, 120, 240), std::clamp(host_->height() / 4, 80, 160));
      corner_->setGeometry(host_->width() - size.width() - 20, host_->height() - size.height() - 20, size.width(),
                           size.height());
    }
    return false;
  }

 private:
  QWidget *host_, *corner_;
};

// Fills a filter with "All …" and the values, most Cases first, keeping what was chosen.
void fillCombo(QComboBox *box, const QString &all, const std::vector<std::pair<std::string, int>> &values) {
  const QString chosen = box->currentData().toString();
  box->blockSignals(true);
  box->clear();
  box->addItem(all, QString());
  for (const auto &[value, count] : values)
    if (!value.empty()) box->addItem(QStringLiteral("%1 (%2)").arg(q(value)).arg(count), q(value));
  const int at = box->findData(chosen);
  box->setCurrentIndex(at < 0 ? 0 : at);
  box->blockSignals(false);
}

template <typename Field>
std::vector<std::pair<std::string, int>> countsOf(const std::vector<kwb::memory::Case> &cases, Field field) {
  std::map<std::string, int> counts;
  for (const auto &c : cases) ++counts[field(c)];
  std::vector<std::pair<std::string, int>> out(counts.begin(), counts.end());
  std::stable_sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  return out;
}

}  // namespace

ExperiencePanel::ExperiencePanel(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("experiencePanel"));
  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);

  // The filters on a row of their own, each as wide as its longest choice (squeezed beside the
  // search box they showed "All tas"); the search and the buttons on the row under them.
  auto *filters = new QHBoxLayout;
  auto combo = [this, filters](const QString &name, const QString &tip) {
    auto *box = new QComboBox(this);
    box->setObjectName(name);
    box->setToolTip(tip);
    box->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    filters->addWidget(box);
    connect(box, &QComboBox::currentIndexChanged, this, &ExperiencePanel::applyFilters);
    return box;
  };
  task_ = combo(QStringLiteral("experienceTask"), tr("Only this task's Cases"));
  operator_ = combo(QStringLiteral("experienceOperator"), tr("Only this operator class"));
  gpu_ = combo(QStringLiteral("experienceGpu"), tr("Only Cases measured on this GPU"));
  label_ = combo(QStringLiteral("experienceLabel"), tr("Only Cases with this outcome label"));
  session_ = combo(QStringLiteral("experienceSession"), tr("Only this agent session's Cases"));
  age_ = combo(QStringLiteral("experienceAge"), tr("Only Cases recorded since"));
  fillCombo(task_, tr("All tasks"), {});
  fillCombo(operator_, tr("All operators"), {});
  fillCombo(gpu_, tr("All GPUs"), {});
  fillCombo(session_, tr("All sessions"), {});
  label_->blockSignals(true);
  label_->addItem(tr("All labels"), QString());
  for (const auto l : {kwb::memory::Label::Effective, kwb::memory::Label::Partial, kwb::memory::Label::Ineffective,
                       kwb::memory::Label::Negative})
    label_->addItem(QLatin1String(kwb::memory::toString(l)), QLatin1String(kwb::memory::toString(l)));
  label_->blockSignals(false);
  age_->blockSignals(true);
  age_->addItem(tr("Any time"), 0);
  age_->addItem(tr("Last 24 hours"), 24);
  age_->addItem(tr("Last 7 days"), 24 * 7);
  age_->addItem(tr("Last 30 days"), 24 * 30);
  age_->blockSignals(false);

  filters->addStretch(1);
  auto *find = new QHBoxLayout;
  search_ = new QLineEdit(this);
  search_->setObjectName(QStringLiteral("experienceSearch"));
  search_->setPlaceholderText(tr("Search ideas, journals, feedback… (Enter: next match)"));
  search_->setClearButtonEnabled(true);
  find->addWidget(search_, 1);
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    if (search_->text() != searchedText_) runSearch();
    else nextMatch();
  });
  connect(search_, &QLineEdit::textChanged, this, [this](const QString &text) {
    if (text.trimmed().isEmpty()) runSearch();
  });
  fit_ = new QPushButton(tr("Fit"), this);
  fit_->setObjectName(QStringLiteral("experienceFit"));
  fit_->setToolTip(tr("Show the whole graph (F)"));
  find->addWidget(fit_);
  refresh_ = new QPushButton(tr("Refresh"), this);
  refresh_->setObjectName(QStringLiteral("experienceRefresh"));
  refresh_->setToolTip(tr("Read the memory again"));
  find->addWidget(refresh_);
  connect(refresh_, &QPushButton::clicked, this, &ExperiencePanel::refresh);
  layout->addLayout(filters);
  layout->addLayout(find);

  status_ = new QLabel(this);
  status_->setObjectName(QStringLiteral("experienceStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);

  // The graph beside the inspector's text, and the Case's code against its parent's under both,
  // across the page: a diff needs the width (beside the graph, each side had 20 characters).
  auto *split = new QSplitter(Qt::Vertical, this);
  split->setChildrenCollapsible(false);
  auto *upper = new QSplitter(Qt::Horizontal, split);
  upper->setChildrenCollapsible(false);
  graph_ = new ExperienceGraphView(upper);
  overview_ = new GraphOverview(graph_, graph_);
  new CornerKeeper(graph_, overview_);
  connect(fit_, &QPushButton::clicked, graph_, &ExperienceGraphView::fit);
  upper->addWidget(graph_);

  auto *top = new QWidget(upper);
  auto *topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  summary_ = new QTextBrowser(top);
  summary_->setObjectName(QStringLiteral("experienceInspector"));
  summary_->setOpenLinks(false);
  summary_->setPlaceholderText(tr("Click a Case to see what was tried, what came of it, and its code against "
                                  "the Case it started from."));
  topLayout->addWidget(summary_);
  auto *buttons = new QHBoxLayout;
  open_ = new QPushButton(tr("Open in Editor"), top);
  open_->setObjectName(QStringLiteral("experienceOpen"));
  open_->setToolTip(tr("This Case's kernel in the editor, to run, profile or change"));
  optimize_ = new QPushButton(tr("Optimize from Here…"), top);
  optimize_->setObjectName(QStringLiteral("experienceOptimize"));
  optimize_->setToolTip(tr("An agent session starting from this Case's kernel"));
  open_->setEnabled(false);
  optimize_->setEnabled(false);
  buttons->addWidget(open_);
  buttons->addWidget(optimize_);
  buttons->addStretch(1);
  topLayout->addLayout(buttons);
  connect(open_, &QPushButton::clicked, this, [this] {
    if (inspected_) emit openRequested(*inspected_);
  });
  connect(optimize_, &QPushButton::clicked, this, [this] {
    if (inspected_) emit optimizeRequested(*inspected_);
  });
  upper->addWidget(top);
  upper->setStretchFactor(0, 3);
  upper->setStretchFactor(1, 2);
  upper->setSizes({560, 400});
  diff_ = new SideBySideDiff(split);
  split->addWidget(upper);
  split->addWidget(diff_);
  // Small least sizes: the page's least size stays small.
  for (QWidget *w : std::initializer_list<QWidget *>{graph_, summary_, diff_, top, upper, search_})
    w->setMinimumSize(40, 30);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setSizes({600, 400});
  layout->addWidget(split, 1);

  connect(graph_, &ExperienceGraphView::caseClicked, this, [this](qint64 id) {
    wanted_ = 0;
    if (!service_) return;
    fetching_ = true;
    service_->fetch(id);
  });
  connect(graph_, &ExperienceGraphView::shown, this, [this] {
    if (wanted_ && graph_->selectCase(wanted_)) wanted_ = 0;
    updateStatus();
    checkSettled();
  });
  updateStatus();
}

void ExperiencePanel::attach(MemoryService *service) {
  service_ = service;
  connect(service, &MemoryService::loaded, this, [this] {
    fillFilters();
    applyFilters();
    if (!searchedText_.isEmpty()) runSearch();
    if (wanted_) selectCase(wanted_);
  });
  connect(service, &MemoryService::laidOut, this, [this](int generation, const kwb::memory::ForestLayout &layout) {
    if (generation != layoutGeneration_) return;
    laying_ = false;
    if (!layout.error.empty()) {
      layoutNote_ = q(layout.error);
      graph_->clear();
    } else {
      layoutNote_ = tr("laid out in %1 ms").arg(layout.milliseconds, 0, 'f', 0);
      if (layout.builtinTrees)
        layoutNote_ += tr(" (%1 tree(s) over %2 Cases by the built-in placement: dot would take too long)")
                           .arg(layout.builtinTrees)
                           .arg(kwb::memory::LayoutOptions{}.graphvizLimit);
      graph_->showLayout(layout, shown_);
    }
    updateStatus();
    checkSettled();
  });
  connect(service, &MemoryService::searched, this, [this](const QString &text, const QList<qint64> &ids) {
    searching_ = false;
    searchedText_ = text;
    matches_ = QSet<qint64>(ids.begin(), ids.end());
    graph_->setMarked(matches_, !text.trimmed().isEmpty());
    updateStatus();
    if (!text.trimmed().isEmpty()) nextMatch();
    checkSettled();
  });
  connect(service, &MemoryService::fetched, this, [this](const CaseDetail &detail) {
    fetching_ = false;
    inspect(detail);
    emit caseSelected(detail);
    if (context()) {  // the Case's run, for Results, the Profiler and Export
      CandidateSelection s;
      s.origin = CandidateSelection::Origin::GraphNode;
      s.run = runOfCase(detail.c, context()->taskName(), context()->taskFolder());
      s.experienceCase = std::make_shared<const kwb::memory::Case>(detail.c);
      context()->select(s);
    }
    checkSettled();
  });
  connect(service, &MemoryService::failed, this, [this](const QString &message) {
    fetching_ = searching_ = false;
    status_->setText(message);
    checkSettled();
  });
}

void ExperiencePanel::refresh() {
  if (service_) service_->refresh();
}

void ExperiencePanel::fillFilters() {
  const auto &cases = service_->snapshot().cases;
  fillCombo(task_, tr("All tasks"), countsOf(cases, [](const auto &c) { return c.task; }));
  fillCombo(operator_, tr("All operators"), countsOf(cases, [](const auto &c) { return c.operatorClass; }));
  fillCombo(gpu_, tr("All GPUs"), countsOf(cases, [](const auto &c) { return c.gpu; }));
  fillCombo(session_, tr("All sessions"), countsOf(cases, [](const auto &c) { return c.session; }));
}

void ExperiencePanel::applyFilters() {
  if (!service_) return;
  const QString task = task_->currentData().toString(), op = operator_->currentData().toString(),
                gpu = gpu_->currentData().toString(), label = label_->currentData().toString(),
                session = session_->currentData().toString();
  const int hours = age_->currentData().toInt();
  const std::string since =
      hours > 0 ? QDateTime::currentDateTimeUtc().addSecs(-3600LL * hours).toString(Qt::ISODate).toStdString() : "";
  shown_.clear();
  for (const auto &c : service_->snapshot().cases) {
    if ((!task.isEmpty() && q(c.task) != task) || (!op.isEmpty() && q(c.operatorClass) != op) ||
        (!gpu.isEmpty() && q(c.gpu) != gpu) || (!session.isEmpty() && q(c.session) != session) ||
        (!label.isEmpty() && QLatin1String(kwb::memory::toString(c.label)) != label) ||
        (!since.empty() && c.createdAt < since))
      continue;
    shown_.push_back(c);
  }
  std::vector<kwb::memory::LayoutItem> items;
  items.reserve(shown_.size());
  for (const auto &c : shown_) {
    const double d = kwb::memory::nodeDiameter(c.speedup);
    items.push_back({c.id, c.parent, c.task, d, d});
  }
  laying_ = true;
  layoutNote_ = tr("laying out %1 Cases…").arg(shown_.size());
  layoutGeneration_ = service_->layout(std::move(items));
  updateStatus();
}

void ExperiencePanel::runSearch() {
  if (!service_) return;
  searching_ = true;
  service_->search(search_->text().trimmed());
}

void ExperiencePanel::nextMatch() {
  // The first match drawn after the current one, in the order the Cases were recorded.
  std::vector<qint64> drawn;
  for (const auto &c : shown_)
    if (matches_.contains(c.id)) drawn.push_back(c.id);
  if (drawn.empty()) return;
  auto after = std::upper_bound(drawn.begin(), drawn.end(), graph_->selectedCase());
  const qint64 id = after == drawn.end() ? drawn.front() : *after;
  if (graph_->selectCase(id) && service_) {
    fetching_ = true;
    service_->fetch(id);
  }
}

void ExperiencePanel::selectCase(qint64 id) {
  if (!service_) return;
  wanted_ = id;
  const auto &cases = service_->snapshot().cases;
  const auto c = std::find_if(cases.begin(), cases.end(), [id](const auto &x) { return x.id == id; });
  if (c == cases.end()) {  // not read yet: once the memory is in (refresh() first)
    if (!service_->isBusy()) status_->setText(tr("The memory has no Case %1").arg(id));
    return;
  }
  const bool hidden = std::none_of(shown_.begin(), shown_.end(), [id](const auto &x) { return x.id == id; });
  if (hidden) {  // the filters hide it: show everything
    for (QComboBox *box : {task_, operator_, gpu_, label_, session_, age_}) {
      box->blockSignals(true);
      box->setCurrentIndex(0);
      box->blockSignals(false);
    }
    applyFilters();
  } else if (graph_->selectCase(id)) {
    wanted_ = 0;
  }
  fetching_ = true;
  service_->fetch(id);
}

qint64 ExperiencePanel::bestCase(const QString &task) const {
  if (!service_) return 0;
  qint64 best = 0;
  double speedup = 0;
  for (const auto &c : service_->snapshot().cases)
    if (c.correct && c.speedup > speedup && (task.isEmpty() || q(c.task) == task)) {
      best = c.id;
      speedup = c.speedup;
    }
  return best;
}

void ExperiencePanel::inspect(const CaseDetail &detail) {
  inspected_ = detail;
  const auto &c = detail.c;
  graph_->selectCase(c.id, false);
  QString html = QStringLiteral("<h3>Case %1 · %2</h3>").arg(c.id).arg(q(c.task).toHtmlEscaped());
  auto row = [&html](const QString &name, const QString &value) {
    if (!value.isEmpty()) html += QStringLiteral("<b>%1</b> %2<br>").arg(name, value.toHtmlEscaped());
  };
  row(tr("Idea:"), q(c.idea) + (c.ideaKind.empty() ? QString() : QStringLiteral(" (%1)").arg(q(c.ideaKind))));
  row(tr("Label:"), QStringLiteral("%1, x%2 its parent%3")
                        .arg(QLatin1String(kwb::memory::toString(c.label)))
                        .arg(c.ratio, 0, 'f', 3)
                        .arg(c.parent ? QString() : tr(" (a root)")));
  row(tr("Outcome:"), c.correct && c.speedup > 0
                          ? tr("correct, %1x the reference (spread %2 %, confidence %3)")
                                .arg(c.speedup, 0, 'f', 3)
                                .arg(100 * c.relativeSpread, 0, 'f', 1)
                                .arg(c.confidence, 0, 'f', 2)
                          : q(c.outcome));
  row(tr("Downstream score:"), QString::number(c.score, 'f', 3));
  row(tr("Measured on:"), q(c.gpu) + (c.arch.empty() ? QString() : QStringLiteral(" (%1)").arg(q(c.arch))) +
                              (c.config.empty() ? QString() : tr(", configuration %1").arg(q(c.config))));
  row(tr("Operator:"), q(c.operatorClass));
  QStringList features{c.bottleneck.empty() ? QString() : tr("%1-bound").arg(q(c.bottleneck)),
                       c.intensity > 0 ? tr("%1 FLOP/byte").arg(c.intensity, 0, 'g', 3) : QString(), q(c.shape)};
  features.removeAll(QString());
  row(tr("Features:"), features.join(QStringLiteral(", ")));
  row(tr("From:"), QStringLiteral("%1 %2").arg(q(c.source), q(c.sourceRef)) +
                       (c.session.empty() ? QString() : tr(", session %1").arg(q(c.session))));
  row(tr("Recorded:"), q(c.createdAt));
  row(tr("Parent:"), detail.parent ? tr("Case %1 (%2)").arg(detail.parent->id).arg(q(detail.parent->idea).left(80))
                                   : QString());
  row(tr("Journal:"), q(c.journal));
  if (!c.feedback.empty())
    html += QStringLiteral("<b>%1</b><pre>%2</pre>").arg(tr("Feedback:"), q(c.feedback).toHtmlEscaped());
  summary_->setHtml(html);
  const QString name = QStringLiteral("case-%1.cu").arg(c.id);
  if (detail.parent)
    diff_->setTexts(q(detail.parent->after), QStringLiteral("case-%1.cu").arg(detail.parent->id), q(c.after), name);
  else
    diff_->setTexts(q(c.before), tr("(what it started from)"), q(c.after), name);
  open_->setEnabled(!c.after.empty());
  optimize_->setEnabled(!c.after.empty());
}

QString ExperiencePanel::inspectorText() const { return summary_->toPlainText(); }

QString ExperiencePanel::statusText() const { return status_->text(); }

void ExperiencePanel::updateStatus() {
  if (!service_) {
    status_->setText(tr("No experience memory attached."));
    return;
  }
  const auto total = service_->snapshot().cases.size();
  QString text = total == 0 ? tr("No Cases yet: correct runs, sessions, tunings and lineage builds are recorded as they "
                                 "happen, with their times — what was only compiled (no GPU) is not, having nothing "
                                 "measured to teach (kwb memory import adds a workspace's history).")
                            : tr("%1 of %2 Cases shown").arg(shown_.size()).arg(total);
  if (total) text += QStringLiteral(" · ") + layoutNote_;
  if (graph_->isPopulating()) text += tr(" · drawing…");
  if (!searchedText_.trimmed().isEmpty()) {
    int drawn = 0;
    for (const auto &c : shown_) drawn += matches_.contains(c.id) ? 1 : 0;
    text += tr(" · %1 match(es) for “%2” (%3 shown)").arg(matches_.size()).arg(searchedText_).arg(drawn);
  }
  status_->setText(text);
}

bool ExperiencePanel::isSettled() const {
  return !laying_ && !searching_ && !fetching_ && !graph_->isPopulating() && (!service_ || !service_->isBusy());
}

void ExperiencePanel::checkSettled() {
  if (isSettled()) emit settled();
}

}  // namespace kwb::ui
