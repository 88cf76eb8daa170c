#include "ui/views/session_panel.h"

#include <algorithm>
#include <memory>

#include <QChart>
#include <QChartView>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QMenu>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QResizeEvent>
#include <QStyledItemDelegate>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTextBrowser>
#include <QUrl>
#include <QTreeView>
#include <QValueAxis>
#include <QVBoxLayout>

#include "ui/models/session_candidates_model.h"

namespace kwb::ui {

namespace {

constexpr int kName = SessionCandidatesModel::NameColumn, kOutcome = SessionCandidatesModel::OutcomeColumn;

// A group's row spans the tree's columns (its goal, what came of it and the DCP decision are a
// sentence, not a cell) and wraps at the tree's width: its height is worked out for that width,
// again whenever the tree's width changes.
class GroupRowDelegate : public QStyledItemDelegate {
 public:
  explicit GroupRowDelegate(QTreeView *tree) : QStyledItemDelegate(tree), tree_(tree) {
    tree->viewport()->installEventFilter(this);
  }
  QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override {
    if (!spans(index)) return QStyledItemDelegate::sizeHint(option, index);
    QStyleOptionViewItem o(option);
    const int width = tree_->viewport()->width() - (tree_->rootIsDecorated() ? tree_->indentation() : 0);
    o.rect = QRect(0, 0, std::max(40, width), 1);
    return QStyledItemDelegate::sizeHint(o, index);
  }
  bool eventFilter(QObject *watched, QEvent *event) override {
    if (event->type() == QEvent::Resize) {
      const auto *resize = static_cast<QResizeEvent *>(event);
      if (resize->size().width() != resize->oldSize().width()) tree_->doItemsLayout();
    }
    return QStyledItemDelegate::eventFilter(watched, event);
  }

 protected:
  void initStyleOption(QStyleOptionViewItem *option, const QModelIndex &index) const override {
    QStyledItemDelegate::initStyleOption(option, index);
    if (spans(index)) option->features |= QStyleOptionViewItem::WrapText;
  }

 private:
  bool spans(const QModelIndex &index) const {
    return index.column() == kName && index.data(SessionCandidatesModel::GroupRowRole).toBool();
  }
  QTreeView *tree_;
};

}  // namespace

SessionPanel::SessionPanel(QWidget *parent) : QWidget(parent) {
  model_ = new SessionCandidatesModel(this);
  status_ = new QLabel(tr("No agent session yet. Optimize runs one when an LLM is configured (Settings ▸ LLM providers)."), this);
  status_->setObjectName(QStringLiteral("sessionStatus"));
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // The whole line, wrapped beside the buttons (cut there, it lost the session's outcome).
  status_->setWordWrap(true);
  status_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
  pause_ = new QPushButton(tr("Pause"), this);
  stop_ = new QPushButton(tr("Stop"), this);
  resume_ = new QPushButton(tr("Resume"), this);
  pause_->setToolTip(tr("Cancel the requests in flight and keep everything else; Resume asks them again"));
  stop_->setToolTip(tr("End the session (it can still be resumed later)"));
  for (auto *b : {pause_, stop_, resume_}) b->setEnabled(false);
  connect(pause_, &QPushButton::clicked, this, [this] {
    pause_->setEnabled(false);
    emit pauseRequested();
  });
  connect(stop_, &QPushButton::clicked, this, [this] {
    pause_->setEnabled(false);
    stop_->setEnabled(false);
    emit stopRequested();
  });
  connect(resume_, &QPushButton::clicked, this, [this] {
    resume_->setEnabled(false);
    emit resumeRequested(sessionId_);
  });

  groups_ = new QProgressBar(this);
  groups_->setFormat(tr("groups %v of %m"));
  groups_->setRange(0, 1);
  groups_->setValue(0);
  tokens_ = new QProgressBar(this);
  tokens_->setObjectName(QStringLiteral("sessionTokens"));
  setTokens();
  spend_ = new QLabel(this);

  tree_ = new QTreeView(this);
  tree_->setObjectName(QStringLiteral("sessionTree"));
  tree_->setModel(model_);
  // A group is a row across the columns (GroupRowDelegate); the columns are the candidates':
  // each as wide as what it holds, the outcome taking what is left.
  tree_->setItemDelegate(new GroupRowDelegate(tree_));
  tree_->setUniformRowHeights(false);  // a group's row is as tall as its wrapped sentence
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  tree_->header()->setSectionResizeMode(kOutcome, QHeaderView::Stretch);
  tree_->header()->setMinimumSectionSize(48);
  connect(model_, &QAbstractItemModel::rowsInserted, this, &SessionPanel::rowsAdded);
  connect(model_, &QAbstractItemModel::dataChanged, this, [this](const QModelIndex &first) {
    if (first.siblingAtColumn(0) == tree_->currentIndex().siblingAtColumn(0)) showSelected();
  });
  connect(model_, &SessionCandidatesModel::bestImproved, this, &SessionPanel::addBestPoint);
  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex &index) {
    showSelected();
    if (const auto *c = model_->candidateAt(index)) selectInContext(c->source, c->fileName(), c->evaluationId(), false);
  });
  connect(tree_, &QTreeView::activated, this, [this](const QModelIndex &index) {
    if (const auto *c = model_->candidateAt(index)) openCandidate(c->source, c->fileName(), c->evaluationId());
  });
  tree_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(tree_, &QTreeView::customContextMenuRequested, this, [this](const QPoint &pos) {
    const std::unique_ptr<QMenu> menu(candidateMenu(tree_->indexAt(pos)));
    if (menu) menu->exec(tree_->viewport()->mapToGlobal(pos));
  });
  answer_ = new QPlainTextEdit(this);
  answer_->setReadOnly(true);
  answer_->setLineWrapMode(QPlainTextEdit::NoWrap);
  answer_->setPlaceholderText(tr("The selected candidate's answer, as it arrives"));

  chart_ = new QChart;
  chart_->legend()->hide();
  chart_->setTitle(tr("Best speedup over the reference"));
  best_ = new QLineSeries;
  chart_->addSeries(best_);
  xAxis_ = new QValueAxis;
  xAxis_->setTitleText(tr("seconds"));
  xAxis_->setLabelFormat(QStringLiteral("%.0f"));
  yAxis_ = new QValueAxis;
  yAxis_->setTitleText(tr("speedup"));
  yAxis_->setLabelFormat(QStringLiteral("%.1f"));
  chart_->addAxis(xAxis_, Qt::AlignBottom);
  chart_->addAxis(yAxis_, Qt::AlignLeft);
  best_->attachAxis(xAxis_);
  best_->attachAxis(yAxis_);
  xAxis_->setRange(0, 10);
  xAxis_->setTickCount(6);
  yAxis_->setRange(0, 2);
  chartView_ = new QChartView(chart_, this);
  chartView_->setObjectName(QStringLiteral("sessionChart"));
  chartView_->setRenderHint(QPainter::Antialiasing);
  chartView_->setMinimumSize(240, 160);
  // Nothing timed, nothing drawn: the chart says why in its middle.
  chartNote_ = new QLabel(chartView_);
  chartNote_->setObjectName(QStringLiteral("sessionChartNote"));
  chartNote_->setAlignment(Qt::AlignCenter);
  chartNote_->setWordWrap(true);
  chartNote_->setAttribute(Qt::WA_TransparentForMouseEvents);
  chartNote_->setStyleSheet(QStringLiteral("color: #6b7280; background: rgba(255, 255, 255, 210); padding: 6px;"));
  chartView_->installEventFilter(this);
  connect(chart_, &QChart::plotAreaChanged, this, [this] {
    if (!chartNote_->isHidden()) placeChartNote();
  });

  auto *top = new QHBoxLayout;
  top->addWidget(status_, 1);
  top->addWidget(pause_, 0, Qt::AlignTop);
  top->addWidget(stop_, 0, Qt::AlignTop);
  top->addWidget(resume_, 0, Qt::AlignTop);
  auto *meters = new QHBoxLayout;
  meters->addWidget(groups_, 1);
  meters->addWidget(tokens_, 1);
  meters->addWidget(spend_);
  context_ = new QTextBrowser(this);
  context_->setObjectName(QStringLiteral("sessionContext"));
  context_->setOpenLinks(false);
  context_->setPlaceholderText(tr("What the experience memory put into the selected candidate's prompt, and why"));
  connect(context_, &QTextBrowser::anchorClicked, this, [this](const QUrl &url) {
    if (url.scheme() == QLatin1String("case")) emit caseRequested(url.path().toLongLong());
  });
  auto *tabs = new QTabWidget(this);
  tabs->setObjectName(QStringLiteral("sessionCandidateTabs"));
  tabs->addTab(answer_, tr("Answer"));
  tabs->addTab(context_, tr("Context"));
  // The candidates over the best-speedup curve (as wide as the tree, its title and axes whole),
  // beside the selected candidate's answer and context.
  auto *left = new QSplitter(Qt::Vertical, this);
  left->setChildrenCollapsible(false);
  left->addWidget(tree_);
  left->addWidget(chartView_);
  left->setStretchFactor(0, 3);
  left->setStretchFactor(1, 2);
  left->setSizes({420, 260});
  auto *split = new QSplitter(Qt::Horizontal, this);
  split->setChildrenCollapsible(false);
  split->addWidget(left);
  split->addWidget(tabs);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({450, 450});
  auto *layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(meters);
  layout->addWidget(split, 1);
  updateChartNote();
}

bool SessionPanel::eventFilter(QObject *watched, QEvent *event) {
  if (watched == chartView_ && event->type() == QEvent::Resize) placeChartNote();
  return QWidget::eventFilter(watched, event);
}

void SessionPanel::placeChartNote() {
  // In the plot's area, clear of the title and the axes' labels.
  const QRect area = chartView_->mapFromScene(chart_->mapToScene(chart_->plotArea())).boundingRect() & chartView_->rect();
  const int width = std::max(80, std::min(area.width() - 8, 360));
  const int height = chartNote_->heightForWidth(width);
  chartNote_->setGeometry(area.center().x() - width / 2, area.center().y() - height / 2, width, height);
}

void SessionPanel::updateChartNote() {
  QString note;
  if (best_->count() == 0) {
    const auto [evaluated, timed, notRun] = model_->counts();
    if (sessionId_.isEmpty()) note = tr("The best speedup over the reference, as an agent session's candidates are timed");
    else if (evaluated == 0) note = tr("No timings yet: the curve starts when a candidate is timed");
    else if (notRun > 0 && timed == 0)
      note = tr("No timings: compile-only mode (no CUDA device here). The candidates were compiled, not run, so "
                "no speedup was measured");
    else if (timed == 0) note = tr("No timings: no candidate got as far as being timed");
    else note = tr("No speedup yet: no timed candidate was correct and faster than the reference");
  }
  chartNote_->setText(note);
  chartNote_->setVisible(!note.isEmpty());
  if (!note.isEmpty()) placeChartNote();
}

QString SessionPanel::chartNote() const { return chartNote_->isHidden() ? QString() : chartNote_->text(); }

void SessionPanel::setTokens() {
  // With a budget, a meter of it; without one, a count on an empty bar (a busy bar, range 0 to 0,
  // draws no text at all).
  const bool budget = settings_.tokens.has_value() && *settings_.tokens > 0;
  const int most = budget ? static_cast<int>(std::min<std::int64_t>(*settings_.tokens, 1 << 30)) : 1;
  tokens_->setRange(0, most);
  const std::int64_t used = model_->tokensUsed();
  tokens_->setValue(budget ? static_cast<int>(std::min<std::int64_t>(used, most)) : 0);
  tokens_->setFormat(budget ? tr("tokens %1 of %2").arg(used).arg(*settings_.tokens) : tr("tokens %1 (no budget)").arg(used));
  tokens_->setToolTip(budget ? tr("Tokens the session's answers used, of its budget")
                             : tr("Tokens the session's answers used; the session has no token budget"));
}

void SessionPanel::attach(AgentService *service) {
  connect(this, &SessionPanel::pauseRequested, service, &AgentService::pause);
  connect(this, &SessionPanel::stopRequested, service, &AgentService::stop);
  connect(service, &AgentService::eventsArrived, this, &SessionPanel::addEvents);
  connect(service, &AgentService::finished, this,
          [this](const QString &, const QString &state, const QString &reason) { end(state, reason); });
}

void SessionPanel::begin(const QString &sessionId, const QString &title, const kwb::agent::SessionSettings &settings) {
  const bool same = sessionId == sessionId_;
  sessionId_ = sessionId;
  title_ = title;
  settings_ = settings;
  state_ = QStringLiteral("running");
  if (!same) {
    model_->clear();
    best_->clear();
    answer_->clear();
  }
  groups_->setRange(0, static_cast<int>(settings.groups));
  groups_->setValue(std::min(model_->groupsDone(), groups_->maximum()));
  setTokens();
  pause_->setEnabled(true);
  stop_->setEnabled(true);
  resume_->setEnabled(false);
  status_->setText(tr("Session %1: %2 — G=%3, K=%4, %5 group(s)")
                       .arg(sessionId, title)
                       .arg(settings.candidates)
                       .arg(settings.dcp.maxTurns)
                       .arg(settings.groups));
  updateChartNote();
}

void SessionPanel::rowsAdded(const QModelIndex &parent, int first, int last) {
  // Groups and turns open as they come; a group's sentence spans the row.
  for (int row = first; row <= last; ++row) {
    const QModelIndex index = model_->index(row, 0, parent);
    if (!parent.isValid()) tree_->setFirstColumnSpanned(row, parent, true);
    if (!index.data(SessionCandidatesModel::CandidateRole).toBool()) tree_->expand(index);
  }
}

void SessionPanel::addEvents(const QList<AgentEventRow> &rows) {
  model_->addEvents(rows);
  groups_->setValue(std::min(model_->groupsDone(), groups_->maximum()));
  setTokens();
  spend_->setText(tr("$%1").arg(model_->cost(), 0, 'f', 4));
  updateChartNote();
}

void SessionPanel::addBestPoint(double seconds, double speedup) {
  best_->append(seconds, speedup);
  xAxis_->setRange(0, std::max(10.0, seconds * 1.1));
  yAxis_->setRange(0, std::max(2.0, speedup * 1.2));
  xAxis_->applyNiceNumbers();  // whole ticks, not 2.5 s rounded to 3
  yAxis_->applyNiceNumbers();
}

QMenu *SessionPanel::candidateMenu(const QModelIndex &index) {
  const auto *c = model_->candidateAt(index);
  if (!c) return nullptr;
  const QString name = c->fileName();
  const QString source = c->source;
  const qint64 evaluationId = c->evaluationId();
  // Its parent: the line's previous turn, or for a first turn the code the group started from.
  const auto [parent, parentName] = model_->parentOf(*c);
  auto *menu = new QMenu(this);
  QAction *open = menu->addAction(tr("Open in Editor"), this, [this, source, name, evaluationId] {
    openCandidate(source, name, evaluationId);
  });
  open->setObjectName(QStringLiteral("openCandidate"));
  open->setEnabled(!source.isEmpty());
  QAction *diff = menu->addAction(tr("Diff Against Parent"), this, [this, parent, parentName, source, name] {
    emit diffRequested(parent, parentName, source, name);
  });
  diff->setObjectName(QStringLiteral("diffCandidate"));
  diff->setEnabled(!source.isEmpty() && !parent.isEmpty());
  if (parent.isEmpty()) diff->setToolTip(tr("No parent: the group started from no kernel"));
  QAction *profile = menu->addAction(tr("Profile"), this, [this, source, name] { emit profileRequested(source, name); });
  profile->setObjectName(QStringLiteral("profileCandidate"));
  profile->setEnabled(!source.isEmpty());
  QAction *results = menu->addAction(tr("Show Evaluation in Results"), this,
                                     [this, evaluationId] { emit evaluationRequested(evaluationId); });
  results->setObjectName(QStringLiteral("showCandidateEvaluation"));
  results->setEnabled(evaluationId > 0);
  return menu;
}

QString SessionPanel::contextHtml(const kwb::agent::AttemptRecord &a) {
  const auto &j = a.context;
  QString html;
  // The skill cards the prompt carried, each with its status (admitted: the gate's proof;
  // approved: a reviewer's; proposed: unproven, only when the session asked for them).
  if (j.is_object() && j.contains("cards") && j["cards"].is_array() && !j["cards"].empty()) {
    QStringList cards;
    for (const auto &c : j["cards"])
      cards << QStringLiteral("%1 (%2)").arg(QString::fromStdString(c.value("id", std::string())).toHtmlEscaped(),
                                             QString::fromStdString(c.value("status", std::string())));
    html += tr("<p>Skill cards: %1%2.</p>")
                .arg(cards.join(QStringLiteral(", ")),
                     j.value("proposed_cards", false) ? tr(" — proposed cards were asked for") : QString());
  }
  if (!j.is_object() || !j.contains("budget"))
    return html + tr("<p>No experience in this prompt: the memory was off or had nothing for it.</p>");
  auto number = [&j](const char *key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; };
  html += tr("<p><b>%1</b> of <b>%2</b> tokens of experience; the hot tier (task, kernel, feedback, goal) "
             "%3 tokens%4.</p>")
              .arg(number("tokens"), 0, 'f', 0)
              .arg(number("budget"), 0, 'f', 0)
              .arg(number("hot_tokens"), 0, 'f', 0)
              .arg(j.value("hot_over_budget", false) ? tr(", over the budget by itself") : QString());
  if (j.contains("window"))
    html += tr("<p>B = W − S − G − R = %1 − %2 − %3 − %4 (W: %5).</p>")
                .arg(number("window"), 0, 'f', 0)
                .arg(number("system"), 0, 'f', 0)
                .arg(number("generation"), 0, 'f', 0)
                .arg(number("recency"), 0, 'f', 0)
                .arg(QString::fromStdString(j.value("window_from", std::string())).toHtmlEscaped());
  auto table = [&html](const QString &title, const nlohmann::json &items) {
    if (!items.is_array() || items.empty()) return;
    html += QStringLiteral("<p><b>%1</b></p><table cellspacing=\"0\" cellpadding=\"2\">").arg(title);
    for (const auto &i : items) {
      const QString caseLink = i.contains("case") ? QStringLiteral("<a href=\"case:%1\">Case %1</a>").arg(i["case"].get<qint64>())
                                                  : QString();
      // Three columns, the first two short (a Case's link says it is experience): the reason has
      // the room and reads as a line, not a word a line.
      const QString what = caseLink.isEmpty() ? QString::fromStdString(i.value("kind", std::string())).toHtmlEscaped() : caseLink;
      html += QStringLiteral("<tr><td nowrap>%1</td><td nowrap>%2</td><td>%3</td></tr>")
                  .arg(QString::fromStdString(i.value("tier", std::string())).toHtmlEscaped(), what,
                       QString::fromStdString(i.value("why", std::string())).toHtmlEscaped());
    }
    html += QStringLiteral("</table>");
  };
  table(tr("Included"), j.value("included", nlohmann::json::array()));
  table(tr("Left out"), j.value("left", nlohmann::json::array()));
  return html;
}

void SessionPanel::showSelected() {
  const auto *c = model_->candidateAt(tree_->currentIndex());
  if (!c) return;
  if (answer_->toPlainText() != c->text) {
    answer_->setPlainText(c->text);
    answer_->moveCursor(QTextCursor::End);
  }
  const QString html = c->attempt ? contextHtml(*c->attempt) : QString();
  // toHtml() never reads back as given: compare with what was set, so streaming text does not
  // reset the tab (and its scroll position) on every batch.
  if (html != shownContext_) {
    shownContext_ = html;
    context_->setHtml(html);
  }
}

void SessionPanel::end(const QString &state, const QString &reason) {
  state_ = state;
  pause_->setEnabled(false);
  stop_->setEnabled(false);
  // A session that ran all its groups has nothing left to ask; one stopped by a budget, paused,
  // stopped or failed goes on where it was.
  const bool done = state == QLatin1String("finished") && reason.startsWith(QLatin1String("done:"));
  resume_->setEnabled(!sessionId_.isEmpty() && state != QLatin1String("running") && !done);
  resume_->setToolTip(done ? tr("Every group of this session ran: start a new one with Optimize")
                           : tr("Go on where the session stopped: the requests that had no answer are asked again"));
  status_->setText(tr("Session %1: %2 — %3%4").arg(sessionId_, title_, state,
                                                   reason.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(reason)));
  updateChartNote();
}

QString SessionPanel::statusText() const { return status_->text(); }
int SessionPanel::bestPoints() const { return static_cast<int>(best_->count()); }
QString SessionPanel::dcpText(int group) const { return model_->dcpText(group); }
int SessionPanel::candidateRows() const { return model_->candidateCount(); }

void SessionPanel::openCandidate(const QString &source, const QString &name, qint64 evaluationId) {
  emit candidateActivated(source, name, evaluationId);
  selectInContext(source, name, evaluationId, true);
}

void SessionPanel::selectInContext(const QString &source, const QString &name, qint64 evaluationId, bool activate) {
  if (!context() || source.isEmpty()) return;
  CandidateSelection s;
  s.origin = CandidateSelection::Origin::SessionCandidate;
  s.sessionId = sessionId_;
  s.name = name;
  s.source = source;
  s.evaluationId = evaluationId;
  s.run.taskFolder = context()->taskFolder();
  s.activate = activate;
  context()->select(s);
}

}  // namespace kwb::ui
