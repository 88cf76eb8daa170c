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
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTextBrowser>
#include <QUrl>
#include <QTreeWidget>
#include <QValueAxis>
#include <QVBoxLayout>

#include "ui/models/outcome_style.h"

namespace kwb::ui {

namespace {

using Kind = kwb::agent::SessionEvent::Kind;

QString msText(double ms) {
  return ms >= 1 ? QStringLiteral("%1 ms").arg(ms, 0, 'f', 3) : QStringLiteral("%1 us").arg(ms * 1000, 0, 'f', 1);
}

enum Column { kName, kOutcome, kTime, kSpeedup, kReward, kColumns };

}  // namespace

SessionPanel::SessionPanel(QWidget *parent) : QWidget(parent) {
  status_ = new QLabel(tr("No agent session yet. Optimize runs one when an LLM is configured (Settings ▸ LLM providers)."), this);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
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
  tokens_->setFormat(tr("tokens %v"));
  tokens_->setRange(0, 1);
  tokens_->setValue(0);
  spend_ = new QLabel(this);

  tree_ = new QTreeWidget(this);
  tree_->setColumnCount(kColumns);
  tree_->setHeaderLabels({tr("Candidate"), tr("Outcome"), tr("Time"), tr("Speedup"), tr("Reward")});
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(kName, QHeaderView::Stretch);
  tree_->setUniformRowHeights(true);
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem *item) {
    showSelected();
    Key key;
    if (const Candidate *c = candidateOf(item, &key))
      selectInContext(c->source, fileName(key), c->attempt ? c->attempt->evaluationId : 0, false);
  });
  connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem *item) {
    Key key;
    if (const Candidate *c = candidateOf(item, &key))
      openCandidate(c->source, fileName(key), c->attempt ? c->attempt->evaluationId : 0);
  });
  tree_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(tree_, &QTreeWidget::customContextMenuRequested, this, [this](const QPoint &pos) {
    const std::unique_ptr<QMenu> menu(candidateMenu(tree_->itemAt(pos)));
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
  yAxis_ = new QValueAxis;
  yAxis_->setTitleText(tr("speedup"));
  chart_->addAxis(xAxis_, Qt::AlignBottom);
  chart_->addAxis(yAxis_, Qt::AlignLeft);
  best_->attachAxis(xAxis_);
  best_->attachAxis(yAxis_);
  xAxis_->setRange(0, 10);
  yAxis_->setRange(0, 2);
  chartView_ = new QChartView(chart_, this);
  chartView_->setMinimumWidth(160);

  auto *top = new QHBoxLayout;
  top->addWidget(status_, 1);
  top->addWidget(pause_);
  top->addWidget(stop_);
  top->addWidget(resume_);
  auto *meters = new QHBoxLayout;
  meters->addWidget(groups_);
  meters->addWidget(tokens_);
  meters->addWidget(spend_);
  // Side by side, so that the dock adds no more to the window's least height than its neighbours.
  auto *split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(tree_);
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
  split->addWidget(tabs);
  split->addWidget(chartView_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 2);
  auto *layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(meters);
  layout->addWidget(split, 1);
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
    tree_->clear();
    groupItems_.clear();
    turnItems_.clear();
    candidates_.clear();
    dcp_.clear();
    best_->clear();
    bestSpeedup_ = 0;
    tokensUsed_ = 0;
    cost_ = 0;
    groupsDone_ = 0;
    answer_->clear();
  }
  groups_->setRange(0, static_cast<int>(settings.groups));
  groups_->setValue(groupsDone_);
  tokens_->setRange(0, settings.tokens ? static_cast<int>(std::min<std::int64_t>(*settings.tokens, 1 << 30)) : 0);
  tokens_->setFormat(settings.tokens ? tr("tokens %v of %m") : tr("tokens: no budget"));
  pause_->setEnabled(true);
  stop_->setEnabled(true);
  resume_->setEnabled(false);
  status_->setText(tr("Session %1: %2 — G=%3, K=%4, %5 group(s)")
                       .arg(sessionId, title)
                       .arg(settings.candidates)
                       .arg(settings.dcp.maxTurns)
                       .arg(settings.groups));
}

QTreeWidgetItem *SessionPanel::groupItem(int group) {
  auto &item = groupItems_[group];
  if (!item) {
    item = new QTreeWidgetItem(tree_, {tr("Group %1").arg(group)});
    item->setExpanded(true);
  }
  return item;
}

QTreeWidgetItem *SessionPanel::turnItem(int group, int turn) {
  auto &item = turnItems_[{group, turn}];
  if (!item) {
    item = new QTreeWidgetItem(groupItem(group), {tr("Turn %1").arg(turn)});
    item->setExpanded(true);
  }
  return item;
}

SessionPanel::Candidate &SessionPanel::candidate(int group, int line, int turn) {
  auto &c = candidates_[{group, line, turn}];
  if (!c.item) {
    // In line order, whichever answer starts first.
    QTreeWidgetItem *parent = turnItem(group, turn);
    int at = 0;
    while (at < parent->childCount() && parent->child(at)->data(kName, Qt::UserRole).toInt() < line) ++at;
    c.item = new QTreeWidgetItem(QStringList{tr("Line %1").arg(line), tr("asking…")});
    c.item->setData(kName, Qt::UserRole, line);
    parent->insertChild(at, c.item);
    c.item->setForeground(kOutcome, toneColour(OutcomeTone::Quiet));
  }
  return c;
}

void SessionPanel::refreshCandidate(const Candidate &c, int line) {
  if (!c.attempt) return;
  const auto &a = *c.attempt;
  c.item->setText(kName, tr("Line %1").arg(line));
  if (!a.evaluated) {
    c.item->setText(kOutcome, a.answerOutcome == "code" ? tr("evaluating…") : QString::fromStdString(a.answerOutcome));
    return;
  }
  const auto outcome = kwb::parseOutcome(a.outcome);
  c.item->setText(kOutcome, (outcome ? outcomeText(*outcome) : QString::fromStdString(a.outcome)) +
                                (a.success ? QStringLiteral(" ✓") : QString()));
  c.item->setForeground(kOutcome, toneColour(outcome ? toneOf(*outcome) : OutcomeTone::Bad));
  c.item->setText(kTime, a.ms ? msText(*a.ms) : QString());
  c.item->setText(kSpeedup, a.speedup ? QStringLiteral("%1x").arg(*a.speedup, 0, 'f', 2) : QString());
  c.item->setText(kReward, a.reward ? QStringLiteral("%1").arg(*a.reward, 0, 'f', 2) : QString());
  c.item->setToolTip(kOutcome, QString::fromStdString(a.message));
}

void SessionPanel::addEvents(const QList<AgentEventRow> &rows) {
  QTreeWidgetItem *current = tree_->currentItem();
  bool currentChanged = false;
  for (const auto &row : rows) {
    const auto &e = row.event;
    switch (e.kind) {
      case Kind::Requesting:
        candidate(e.group, e.line, e.turn);
        break;
      case Kind::Text: {
        auto &c = candidate(e.group, e.line, e.turn);
        c.text += QString::fromStdString(e.text);
        if (c.item == current) currentChanged = true;
        break;
      }
      case Kind::Answered:
      case Kind::Evaluated:
      case Kind::Rewarded: {
        auto &c = candidate(e.group, e.line, e.turn);
        c.attempt = e.attempt;
        if (!e.source.empty()) c.source = QString::fromStdString(e.source);
        if (c.attempt) {
          if (c.text.isEmpty()) c.text = QString::fromStdString(c.attempt->responseText);
          if (e.kind == Kind::Answered) {
            tokensUsed_ += c.attempt->inputTokens + c.attempt->outputTokens;
            cost_ += c.attempt->cost;
          }
        }
        refreshCandidate(c, e.line);
        if (c.item == current) currentChanged = true;
        break;
      }
      case Kind::Dcp: {
        dcp_[e.group] = QString::fromStdString(e.text);
        auto *g = groupItem(e.group);
        g->setText(kOutcome, QString::fromStdString(e.text));
        g->setToolTip(kOutcome, QString::fromStdString(e.text));
        break;
      }
      case Kind::GroupDone: {
        ++groupsDone_;
        groups_->setValue(std::min(groupsDone_, groups_->maximum()));
        groupItem(e.group)->setText(kName, tr("Group %1 — done").arg(e.group));
        break;
      }
      case Kind::Message:
        // The group's own lines ("group 2: goal faster, ..."), not the log's other messages.
        if (e.group > 0 && e.line == 0 && e.text.rfind("group ", 0) == 0) {
          groupItem(e.group)->setText(kName, tr("Group %1 — %2").arg(e.group).arg(QString::fromStdString(e.text).section(QLatin1Char(':'), 1).trimmed()));
          if (!e.source.empty()) groupIncumbent_[e.group] = QString::fromStdString(e.source);
        }
        break;
      case Kind::Best:
        if (e.attempt && e.attempt->speedup && *e.attempt->speedup > bestSpeedup_) {
          bestSpeedup_ = *e.attempt->speedup;
          best_->append(row.seconds, bestSpeedup_);
          xAxis_->setRange(0, std::max(10.0, row.seconds * 1.1));
          yAxis_->setRange(0, std::max(2.0, bestSpeedup_ * 1.2));
        }
        break;
      case Kind::State:
      case Kind::Baseline:
        break;
    }
  }
  tokens_->setValue(static_cast<int>(std::min<std::int64_t>(tokensUsed_, tokens_->maximum() > 0 ? tokens_->maximum() : tokensUsed_)));
  if (tokens_->maximum() == 0) tokens_->setFormat(tr("tokens %1 (no budget)").arg(tokensUsed_));
  spend_->setText(tr("$%1").arg(cost_, 0, 'f', 4));
  if (currentChanged) showSelected();
}

const SessionPanel::Candidate *SessionPanel::candidateOf(QTreeWidgetItem *item, Key *key) const {
  if (!item) return nullptr;
  for (const auto &[k, c] : candidates_)
    if (c.item == item) {
      if (key) *key = k;
      return &c;
    }
  return nullptr;
}

QString SessionPanel::fileName(const Key &key) {
  const auto &[g, l, t] = key;
  return QStringLiteral("g%1-l%2-t%3.cu").arg(g).arg(l).arg(t);
}

QMenu *SessionPanel::candidateMenu(QTreeWidgetItem *item) {
  Key key;
  const Candidate *c = candidateOf(item, &key);
  if (!c) return nullptr;
  const auto &[g, l, t] = key;
  const QString name = fileName(key);
  const QString source = c->source;
  const qint64 evaluationId = c->attempt ? c->attempt->evaluationId : 0;
  // Its parent: the line's previous turn, or for a first turn the code the group started from.
  QString parent, parentName;
  if (t > 1) {
    const auto previous = candidates_.find(Key{g, l, t - 1});
    if (previous != candidates_.end()) {
      parent = previous->second.source;
      parentName = fileName(previous->first);
    }
  } else if (const auto inc = groupIncumbent_.find(g); inc != groupIncumbent_.end()) {
    parent = inc->second;
    parentName = tr("incumbent of group %1").arg(g);
  }
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
      html += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td></tr>")
                  .arg(QString::fromStdString(i.value("tier", std::string())), QString::fromStdString(i.value("kind", std::string())),
                       caseLink, QString::fromStdString(i.value("why", std::string())).toHtmlEscaped());
    }
    html += QStringLiteral("</table>");
  };
  table(tr("Included"), j.value("included", nlohmann::json::array()));
  table(tr("Left out"), j.value("left", nlohmann::json::array()));
  return html;
}

void SessionPanel::showSelected() {
  QTreeWidgetItem *current = tree_->currentItem();
  for (const auto &[key, c] : candidates_) {
    if (c.item != current) continue;
    if (answer_->toPlainText() != c.text) {
      answer_->setPlainText(c.text);
      answer_->moveCursor(QTextCursor::End);
    }
    const QString html = c.attempt ? contextHtml(*c.attempt) : QString();
    // toHtml() never reads back as given: compare with what was set, so streaming text does not
    // reset the tab (and its scroll position) on every batch.
    if (html != shownContext_) {
      shownContext_ = html;
      context_->setHtml(html);
    }
    return;
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
}

QString SessionPanel::statusText() const { return status_->text(); }
int SessionPanel::bestPoints() const { return static_cast<int>(best_->count()); }
QString SessionPanel::dcpText(int group) const {
  const auto it = dcp_.find(group);
  return it == dcp_.end() ? QString() : it->second;
}
int SessionPanel::candidateRows() const { return static_cast<int>(candidates_.size()); }

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
