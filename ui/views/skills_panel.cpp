#include "ui/views/skills_panel.h"

#include "ui/views/skill_card_form.h"

#include <QComboBox>
#include <QDialog>
#include <QMessageBox>
#include <QFileDialog>
#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTreeView>
#include <QUrl>
#include <QVBoxLayout>

#include "core/lineage/skill_markdown.h"
#include "ui/models/skill_cards_model.h"
#include "ui/services/skill_library_service.h"

namespace kwb::ui {

namespace {

QString q(const std::string &s) { return QString::fromStdString(s); }

QString listOf(const std::vector<std::string> &items) {
  QStringList out;
  for (const auto &i : items) out << QStringLiteral("`%1`").arg(q(i));
  return out.isEmpty() ? QStringLiteral("none") : out.join(QStringLiteral(", "));
}

// A card as Markdown for QTextBrowser: its fields, then its body as written.
QString markdownOf(const kwb::SkillCard &c) {
  QString md;
  // No evidence (a card just imported: a file never brings its own) is no gain measured, not x0.00.
  const QString gain = c.measuredSpeedup() > 0
                           ? QStringLiteral("measured gain **\u00d7%1**").arg(c.measuredSpeedup(), 0, 'f', 2)
                           : QStringLiteral("no gain measured yet");
  md += QStringLiteral("# %1\n\n**%2** · status **%3** · %4\n\n").arg(q(c.id), q(c.intent), q(kwb::toString(c.status)), gain);
  if (!c.anchor.empty()) md += QStringLiteral("Anchor: `%1`\n\n").arg(q(c.anchor));
  md += QStringLiteral("## Preconditions\n\n");
  for (const auto &p : c.preconditions) md += QStringLiteral("- %1\n").arg(q(p));
  for (const auto &m : c.missingCategories()) md += QStringLiteral("- **%1: missing**\n").arg(q(m));
  md += QStringLiteral("\n## Scope\n\ncases %1 · languages %2 · platforms %3\n\n")
            .arg(listOf(c.scope.cases), listOf(c.scope.languages), listOf(c.scope.platforms));
  md += QStringLiteral("Requires %1 · provides %2 · conflicts %3\n\n")
            .arg(listOf(c.requiredFeatures), listOf(c.providedFeatures), listOf(c.conflictingFeatures));
  md += QStringLiteral("## Evidence\n\n");
  if (c.evidence.empty()) md += QStringLiteral("None yet.\n\n");
  else md += QStringLiteral("| kind | lineage step | task | configuration | before ms | after ms | speedup | |\n|---|---|---|---|---|---|---|---|\n");
  for (const auto &e : c.evidence) {
    const QString step = e.lineage.empty() ? QString()
                                           : QStringLiteral("[%1 step %2](kwb-lineage:%1/%2)").arg(q(e.lineage)).arg(e.step);
    md += QStringLiteral("| %1 | %2 | %3 | %4 | %5 | %6 | %7 | %8 |\n")
              .arg(q(e.kind), step, q(e.task), q(e.config),
                   e.beforeMs > 0 ? QString::number(e.beforeMs, 'f', 4) : QString(),
                   e.afterMs > 0 ? QString::number(e.afterMs, 'f', 4) : QString(),
                   e.speedup > 0 ? QStringLiteral("\u00d7%1").arg(QString::number(e.speedup, 'f', 2)) : QString(),
                   e.success ? QString() : QStringLiteral("failed: %1").arg(q(e.note)));
  }
  md += QStringLiteral("\n## Verification log\n\n");
  for (const auto &v : c.verification) md += QStringLiteral("- %1\n").arg(q(v));
  md += QStringLiteral("\n---\n\n");
  for (const auto &s : c.body) {
    if (s.level > 0) md += QString(s.level + 1, QLatin1Char('#')) + QLatin1Char(' ') + q(s.heading) + QLatin1Char('\n');
    md += q(s.text) + QLatin1Char('\n');
  }
  return md;
}

}  // namespace

SkillsPanel::SkillsPanel(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("skillsPanel"));
  // A short bottom dock squeezes the panel rather than growing the window (tabbed with the others).
  setMinimumSize(200, 80);
  status_ = new QComboBox(this);
  status_->setObjectName(QStringLiteral("skillsStatus"));
  status_->addItem(tr("Any status"), QString());
  for (const char *s : {"proposed", "admitted", "approved", "rejected"}) status_->addItem(QString::fromLatin1(s), QString::fromLatin1(s));
  scope_ = new QLineEdit(this);
  scope_->setObjectName(QStringLiteral("skillsScope"));
  scope_->setPlaceholderText(tr("Operator (gemm, softmax, …)"));
  text_ = new QLineEdit(this);
  text_->setObjectName(QStringLiteral("skillsText"));
  text_->setPlaceholderText(tr("Text in id, intent or anchor"));
  cards_ = new SkillCardsModel(this);
  list_ = new QTreeView(this);
  list_->setObjectName(QStringLiteral("skillsList"));
  list_->setModel(cards_);
  list_->setRootIsDecorated(false);
  list_->setUniformRowHeights(true);
  // The numbers and the scope as wide as they are; the card's id takes the rest (cut with "…",
  // whole in its tooltip), so that no header is cut and no column is off to the side.
  list_->header()->setStretchLastSection(false);
  list_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  list_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  list_->setTextElideMode(Qt::ElideMiddle);
  view_ = new QTextBrowser(this);
  view_->setObjectName(QStringLiteral("skillCardView"));
  view_->setOpenLinks(false);
  message_ = new QLabel(this);
  message_->setObjectName(QStringLiteral("skillMessage"));
  message_->setWordWrap(true);
  reviewer_ = new QLineEdit(this);
  reviewer_->setObjectName(QStringLiteral("skillReviewer"));
  reviewer_->setPlaceholderText(tr("your name"));
  reviewer_->setToolTip(tr("The name Approve, Reject and Edit record in the card's audit trail"));
  reviewer_->setMinimumWidth(120);
  reviewer_->setMaximumWidth(220);
  reviewer_->setText(qEnvironmentVariable("USER"));
  approve_ = new QPushButton(tr("Approve"), this);
  approve_->setObjectName(QStringLiteral("skillApprove"));
  reject_ = new QPushButton(tr("Reject…"), this);
  reject_->setObjectName(QStringLiteral("skillReject"));
  edit_ = new QPushButton(tr("Edit…"), this);
  edit_->setObjectName(QStringLiteral("skillEdit"));
  try_ = new QPushButton(tr("Try on current kernel"), this);
  try_->setObjectName(QStringLiteral("skillTry"));
  try_->setToolTip(tr("Ask the Optimize action's model to apply this card to the kernel in the editor, then check "
                      "and time the result against it: a proposed card is admitted or rejected by the gate"));
  cancelTry_ = new QPushButton(tr("Cancel"), this);
  cancelTry_->setObjectName(QStringLiteral("skillTryCancel"));
  cancelTry_->hide();

  import_ = new QPushButton(tr("Import…"), this);
  import_->setObjectName(QStringLiteral("skillImport"));
  import_->setToolTip(tr("Read SKILL.md files (a folder of card folders, as kwb skills export writes them): each new card "
                         "comes in proposed; nothing is stored when any file has a problem"));
  export_ = new QPushButton(tr("Export…"), this);
  export_->setObjectName(QStringLiteral("skillExport"));
  export_->setToolTip(tr("Write every card as FOLDER/<skill_id>/SKILL.md, its status, evidence and audit trail included"));
  auto *filters = new QHBoxLayout;
  filters->addWidget(status_);
  filters->addWidget(scope_);
  filters->addWidget(text_, 1);
  auto *transfer = new QHBoxLayout;  // under the list, so that the filters keep their room
  transfer->addWidget(import_);
  transfer->addWidget(export_);
  transfer->addStretch(1);
  auto *left = new QWidget(this);
  auto *leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addLayout(filters);
  leftLayout->addWidget(list_, 1);
  leftLayout->addLayout(transfer);
  auto *who = new QHBoxLayout;  // a row of its own: the buttons' row has no room left for a name
  who->addWidget(new QLabel(tr("Reviewer:"), this));
  who->addWidget(reviewer_, 1);
  who->addStretch(1);
  auto *buttons = new QHBoxLayout;
  buttons->addWidget(approve_);
  buttons->addWidget(reject_);
  buttons->addWidget(edit_);
  buttons->addWidget(try_);
  buttons->addWidget(cancelTry_);
  buttons->addStretch(1);
  auto *right = new QWidget(this);
  auto *rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  rightLayout->addLayout(who);
  rightLayout->addLayout(buttons);
  rightLayout->addWidget(message_);
  rightLayout->addWidget(view_, 1);
  auto *split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(right);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({450, 450});
  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 4, 0, 0);
  layout->addWidget(split);

  connect(status_, &QComboBox::currentIndexChanged, this, &SkillsPanel::reload);
  connect(scope_, &QLineEdit::textChanged, this, &SkillsPanel::reload);
  connect(text_, &QLineEdit::textChanged, this, &SkillsPanel::reload);
  connect(list_->selectionModel(), &QItemSelectionModel::currentChanged, this, &SkillsPanel::showCard);
  connect(view_, &QTextBrowser::anchorClicked, this, [this](const QUrl &url) {
    if (url.scheme() != QStringLiteral("kwb-lineage")) return;
    const QString path = url.path();
    const int slash = path.lastIndexOf(QLatin1Char('/'));
    if (slash <= 0) return;
    emit lineageStepRequested(path.left(slash), path.mid(slash + 1).toInt());
    if (!context()) return;
    // The evidence's lineage step, opened: the Lineage view shows it and the Library comes forward.
    CandidateSelection s;
    s.origin = CandidateSelection::Origin::LineageStep;
    s.lineage = path.left(slash);
    s.step = path.mid(slash + 1).toInt();
    s.run.taskFolder = context()->taskFolder();
    s.activate = true;
    context()->select(s);
  });
  connect(approve_, &QPushButton::clicked, this, [this] { approve(reviewer()); });
  connect(reviewer_, &QLineEdit::textChanged, this, [this] { updateButtons(); });  // the card itself is unchanged
  connect(reviewer_, &QLineEdit::editingFinished, this, [this] { emit reviewerChanged(reviewer_->text().trimmed()); });
  connect(reject_, &QPushButton::clicked, this, [this] {
    bool ok = false;
    const QString why = QInputDialog::getText(this, tr("Reject %1").arg(currentCard()),
                                              tr("Why is this card rejected? (kept in its audit trail)"), QLineEdit::Normal,
                                              QString(), &ok);
    if (ok && !why.trimmed().isEmpty()) reject(reviewer(), why.trimmed());
  });
  connect(edit_, &QPushButton::clicked, this, [this] {
    if (!service_ || currentCard().isEmpty()) return;
    const auto &cards = service_->snapshot().cards;
    const auto it = std::find_if(cards.begin(), cards.end(), [&](const auto &c) { return q(c.id) == currentCard(); });
    if (it == cards.end()) return;
    SkillCardForm form(*it, this);
    if (form.exec() == QDialog::Accepted)
      editAs(reviewer(), q(kwb::writeSkillMarkdown(form.card(), false)));  // the store checks the record again
  });
  showCard();
}

void SkillsPanel::attach(SkillLibraryService *service) {
  service_ = service;
  connect(service_, &SkillLibraryService::loaded, this, &SkillsPanel::reload);
  connect(service_, &SkillLibraryService::reviewed, this, [this](const QString &id, const QString &status) {
    message_->setStyleSheet(QString());
    message_->setText(tr("%1 is now %2.").arg(id, status));
  });
  connect(service_, &SkillLibraryService::edited, this, [this](const QString &id) {
    message_->setStyleSheet(QString());
    message_->setText(tr("%1 saved.").arg(id));
  });
  connect(service_, &SkillLibraryService::editRefused, this, [this](const QString &id, const QStringList &problems) {
    message_->setStyleSheet(QStringLiteral("color: #b91c1c;"));
    message_->setText(tr("%1 was not changed:\n%2").arg(id, problems.join(QLatin1Char('\n'))));
  });
  connect(service_, &SkillLibraryService::failed, this, [this](const QString &m) {
    showMessage(tr("The skill library: %1").arg(m), true);
    showCard();
  });
  connect(service_, &SkillLibraryService::tryProgress, this, [this](const QString &line) { showMessage(line); });
  connect(service_, &SkillLibraryService::tried, this,
          [this](const QString &id, const QString &verdict, const QString &text, const QString &recorded) {
            showMessage(tr("%1: %2: %3\n%4").arg(id, verdict, text, recorded),
                        verdict != QLatin1String("success") && verdict != QLatin1String("not-gated"));
            showCard();
          });
  connect(import_, &QPushButton::clicked, this, [this] {
    const QString from = QFileDialog::getExistingDirectory(this, tr("Import Skill Cards (a folder of SKILL.md files)"));
    if (!from.isEmpty() && service_) {
      showMessage(tr("Importing the SKILL.md files in %1…").arg(from));
      service_->importFrom(from, false, reviewer());
    }
  });
  connect(export_, &QPushButton::clicked, this, [this] {
    const QString to = QFileDialog::getExistingDirectory(this, tr("Export Skill Cards to a Folder"));
    if (!to.isEmpty() && service_) service_->exportTo(to);
  });
  connect(service_, &SkillLibraryService::exported, this, [this](const QString &summary) { showMessage(summary); });
  connect(service_, &SkillLibraryService::imported, this,
          [this](const QString &from, const QString &summary, const QStringList &problems, int known) {
            showMessage(problems.isEmpty() ? summary : summary + QLatin1Char('\n') + problems.join(QLatin1Char('\n')),
                        !problems.isEmpty());
            if (known == 0 || known != problems.size()) return;
            // Only known cards stood in the way: offer to give them the files' text.
            auto *box = new QMessageBox(QMessageBox::Question, tr("Import Skill Cards"),
                                        tr("%n card(s) in %1 are in the library already. Replace their text with the "
                                           "files'? Their status, evidence and verification log are kept.",
                                           nullptr, known)
                                            .arg(from),
                                        QMessageBox::Cancel, this);
            box->setObjectName(QStringLiteral("skillImportReplace"));
            box->addButton(tr("Replace Their Text"), QMessageBox::AcceptRole);
            box->setAttribute(Qt::WA_DeleteOnClose);
            connect(box, &QMessageBox::accepted, this, [this, from] { service_->importFrom(from, true, reviewer()); });
            box->open();
          });
  connect(try_, &QPushButton::clicked, this, [this] {
    if (!currentCard().isEmpty()) emit tryRequested(currentCard());
    showCard();
  });
  connect(cancelTry_, &QPushButton::clicked, this, [this] {
    if (service_) service_->cancelTry();
    showMessage(tr("Cancelling…"));
  });
  reload();
}

QString SkillsPanel::message() const { return message_->text(); }

void SkillsPanel::showMessage(const QString &text, bool problem) {
  message_->setStyleSheet(problem ? QStringLiteral("color: #b91c1c;") : QString());
  message_->setText(text);
}

QString SkillsPanel::reviewer() const {
  return QStringLiteral("reviewer:") + reviewer_->text().trimmed();
}

void SkillsPanel::setReviewer(const QString &name) {
  if (!name.trimmed().isEmpty()) reviewer_->setText(name.trimmed());
  showCard();
}

void SkillsPanel::setFilters(const QString &status, const QString &scopeCase, const QString &text) {
  status_->setCurrentIndex(std::max(0, status_->findData(status)));
  scope_->setText(scopeCase);
  text_->setText(text);
  reload();
}

void SkillsPanel::reload() {
  const QString keep = currentCard();
  list_->selectionModel()->blockSignals(true);
  static const std::vector<kwb::SkillCard> none;
  cards_->setCards(service_ ? service_->snapshot().cards : none,
                   {status_->currentData().toString(), scope_->text(), text_->text()});
  list_->selectionModel()->blockSignals(false);
  const QString wanted = pending_.isEmpty() ? keep : pending_;
  if (!selectCard(wanted) && cards_->rowCount() > 0) list_->setCurrentIndex(cards_->index(0, 0));
  showCard();
}

bool SkillsPanel::selectCard(const QString &id) {
  if (const int row = id.isEmpty() ? -1 : cards_->rowOf(id); row >= 0) {
    list_->setCurrentIndex(cards_->index(row, 0));
    pending_.clear();
    return true;
  }
  if (!id.isEmpty()) pending_ = id;  // selected once a read (or other filters) shows it
  return false;
}

QString SkillsPanel::currentCard() const {
  return list_->currentIndex().isValid() ? list_->currentIndex().data(SkillCardsModel::IdRole).toString() : QString();
}

int SkillsPanel::visibleCards() const { return cards_->rowCount(); }
QString SkillsPanel::cardText() const { return view_->toPlainText(); }
QString SkillsPanel::cardHtml() const { return view_->toHtml(); }
QString SkillsPanel::auditText() const { return auditMarkdown_; }

const kwb::SkillCard *SkillsPanel::shownCard() const {
  const QString id = currentCard();
  if (service_)
    for (const auto &c : service_->snapshot().cards)
      if (q(c.id) == id) return &c;
  return nullptr;
}

void SkillsPanel::updateButtons() {
  const kwb::SkillCard *card = shownCard();
  // A reviewer approves; the gate alone admits (an admitted card needs no approval).
  // Nobody named, nobody recorded: the review buttons wait for a name.
  const bool named = !reviewer_->text().trimmed().isEmpty();
  approve_->setEnabled(named && card && !kwb::provenStatus(card->status));
  reject_->setEnabled(named && card && card->status != kwb::CardStatus::Rejected);
  edit_->setEnabled(named && card != nullptr);
  for (QPushButton *b : {approve_, reject_, edit_})
    b->setToolTip(named ? tr("Recorded in the card's audit trail as %1").arg(reviewer()) : tr("Enter your name as the reviewer first"));
  const bool trying = service_ && service_->isTrying();
  try_->setEnabled(card != nullptr && !trying);
  cancelTry_->setVisible(trying);
}

void SkillsPanel::render(const QString &markdown) {
  if (markdown == shownMarkdown_ && view_->document()->characterCount() > 1) return;  // drawn already
  shownMarkdown_ = markdown;
  // Parsed into a document of its own, then shown: parsed inside the view, the document is laid
  // out again after every piece the parser adds (60 ms and more for a card, on the GUI thread).
  auto *document = new QTextDocument(view_);
  document->setDefaultFont(view_->font());
  document->setMarkdown(markdown);
  view_->setDocument(document);  // the old one, the view's child, is deleted by the view
}

void SkillsPanel::showCard() {
  updateButtons();
  const kwb::SkillCard *card = shownCard();
  if (!card) {
    render(service_ && service_->snapshot().cards.empty()
                           ? tr("No skill cards yet. **Build lineage** (above) lifts them from the open task's "
                                "lineage on a GPU; **Import…** reads SKILL.md files (from `kwb skills export`, or "
                                "written by hand).")
                           : QString());
    auditMarkdown_.clear();
    return;
  }
  // The audit trail first: what a reviewer checks before deciding.
  QStringList lines;
  const auto it = service_->snapshot().audits.find(card->id);
  if (it != service_->snapshot().audits.end())
    for (const auto &a : it->second)
      lines << QStringLiteral("- %1 · **%2** · %3 · %4").arg(q(a.at), q(a.action), q(a.who), q(a.detail));
  auditMarkdown_ = tr("## Audit trail\n\n%1\n\n").arg(lines.join(QLatin1Char('\n')));
  QString md = markdownOf(*card);
  const int evidence = md.indexOf(QStringLiteral("## Preconditions"));
  md.insert(evidence < 0 ? 0 : evidence, auditMarkdown_);
  render(md);
}

void SkillsPanel::approve(const QString &who) {
  if (service_ && !currentCard().isEmpty()) service_->review(currentCard(), kwb::CardStatus::Approved, who, QString());
}

void SkillsPanel::reject(const QString &who, const QString &why) {
  if (service_ && !currentCard().isEmpty()) service_->review(currentCard(), kwb::CardStatus::Rejected, who, why);
}

void SkillsPanel::editAs(const QString &who, const QString &skillMarkdown) {
  if (service_ && !currentCard().isEmpty()) service_->edit(currentCard(), skillMarkdown, who);
}

}  // namespace kwb::ui
