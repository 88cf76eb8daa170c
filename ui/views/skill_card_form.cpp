#include "ui/views/skill_card_form.h"

#include <QDialogButtonBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QTabWidget>
#include <QVBoxLayout>

namespace kwb::ui {

namespace {

QString q(const std::string &s) { return QString::fromStdString(s); }

QString joined(const std::vector<std::string> &items) {
  QStringList out;
  for (const auto &i : items) out << q(i);
  return out.join(QStringLiteral(", "));
}

std::vector<std::string> listOf(const QLineEdit *field) {
  std::vector<std::string> out;
  for (const QString &part : field->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
    if (const QString t = part.trimmed(); !t.isEmpty()) out.push_back(t.toStdString());
  return out;
}

// "Data types: reason" -> "reason" when it is labelled with `category`.
std::optional<std::string> reasonFor(const std::string &precondition, const char *category) {
  const std::string label = std::string(category) + ":";
  if (precondition.rfind(label, 0) != 0) return std::nullopt;
  const auto from = precondition.find_first_not_of(' ', label.size());
  return from == std::string::npos ? std::string() : precondition.substr(from);
}

// What the card's record says, in a line: the form shows it and never changes it.
QString recordLine(const kwb::SkillCard &c) {
  int steps = 0, applications = 0;
  for (const auto &e : c.evidence) (e.kind == "application" ? applications : steps) += 1;
  QString line = QObject::tr("Status: %1 · evidence: %2 lineage measurement(s), %3 application(s) · %4 log entries")
                     .arg(q(kwb::toString(c.status)))
                     .arg(steps)
                     .arg(applications)
                     .arg(c.verification.size());
  if (const auto gain = c.declaredGain())
    line += QObject::tr(" · measured ×%1 on %2/%3").arg(gain->speedup, 0, 'f', 2).arg(q(gain->task), q(gain->config));
  return line;
}

}  // namespace

SkillCardForm::SkillCardForm(const kwb::SkillCard &card, QWidget *parent) : QDialog(parent), stored_(card) {
  setObjectName(QStringLiteral("skillCardForm"));
  setWindowTitle(tr("Edit skill card %1").arg(q(card.id)));
  auto *layout = new QVBoxLayout(this);
  auto *record = new QLabel(recordLine(card) +
                                tr("\nThe status, evidence and verification log are the card's record: Approve, "
                                   "Reject and the gate change them, not this form."),
                            this);
  record->setObjectName(QStringLiteral("skillCardRecord"));
  record->setWordWrap(true);
  layout->addWidget(record);

  auto *fields = new QWidget(this);
  auto *form = new QFormLayout(fields);
  form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
  const auto line = [&](const QString &label, const QString &name, const QString &text, const QString &tip) {
    auto *e = new QLineEdit(text, fields);
    e->setCursorPosition(0);  // a long reason shows its start
    e->setObjectName(name);
    e->setToolTip(tip);
    form->addRow(label, e);
    return e;
  };
  intent_ = line(tr("&Intent:"), QStringLiteral("cardIntent"), q(card.intent), tr("What the card does, in one line"));
  anchor_ = line(tr("&Anchor:"), QStringLiteral("cardAnchor"), q(card.anchor), tr("Where in the code it acts"));
  std::vector<std::string> others;
  std::vector<std::optional<std::string>> reasons(kwb::kPreconditionCategories.size());
  for (const auto &p : card.preconditions) {
    bool labelled = false;
    for (std::size_t i = 0; i < reasons.size(); ++i)
      if (auto r = reasonFor(p, kwb::kPreconditionCategories[i]); r && !reasons[i]) {
        reasons[i] = r;
        labelled = true;
        break;
      }
    if (!labelled) others.push_back(p);
  }
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    const QString category = QString::fromLatin1(kwb::kPreconditionCategories[i]);
    categories_ << line(category + QLatin1Char(':'), QStringLiteral("cardPrecondition") + QString::number(i),
                        reasons[i] ? q(*reasons[i]) : QString(),
                        tr("The %1 precondition: when the card holds, with the reason").arg(category.toLower()));
  }
  otherPreconditions_ = new QPlainTextEdit(fields);
  otherPreconditions_->setObjectName(QStringLiteral("cardOtherPreconditions"));
  QStringList otherLines;
  for (const auto &o : others) otherLines << q(o);
  otherPreconditions_->setPlainText(otherLines.join(QLatin1Char('\n')));
  otherPreconditions_->setFixedHeight(60);
  form->addRow(tr("Other preconditions\n(a line each):"), otherPreconditions_);
  cases_ = line(tr("Operator &classes:"), QStringLiteral("cardCases"), joined(card.scope.cases), tr("gemm, softmax, … or *"));
  languages_ = line(tr("&Languages:"), QStringLiteral("cardLanguages"), joined(card.scope.languages), tr("cuda, … or *"));
  platforms_ = line(tr("&Platforms:"), QStringLiteral("cardPlatforms"), joined(card.scope.platforms), tr("sm_90, hopper, … or *"));
  requires_ = line(tr("&Requires:"), QStringLiteral("cardRequires"), joined(card.requiredFeatures), tr("Features, comma separated"));
  provides_ = line(tr("Pro&vides:"), QStringLiteral("cardProvides"), joined(card.providedFeatures), tr("Features, comma separated"));
  conflicts_ = line(tr("Con&flicts with:"), QStringLiteral("cardConflicts"), joined(card.conflictingFeatures),
                    tr("Features, comma separated"));
  auto *scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setWidget(fields);
  scroll->setFrameShape(QFrame::NoFrame);

  sections_ = new QTabWidget(this);
  sections_->setObjectName(QStringLiteral("cardSections"));
  for (const auto &s : card.body) {
    body_ << s;
    auto *editor = sectionEditor(q(s.text));
    sectionEditors_ << editor;
    sections_->addTab(editor, s.heading.empty() ? tr("(before the first heading)") : q(s.heading));
  }
  auto *split = new QVBoxLayout;
  split->addWidget(scroll, 2);
  auto *bodyLabel = new QLabel(tr("The card's sections (Markdown):"), this);
  split->addWidget(bodyLabel);
  split->addWidget(sections_, 3);
  layout->addLayout(split, 1);

  auto *buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, this);
  auto *add = buttons->addButton(tr("Add Section…"), QDialogButtonBox::ActionRole);
  add->setObjectName(QStringLiteral("cardAddSection"));
  connect(add, &QPushButton::clicked, this, [this] {
    bool ok = false;
    const QString heading = QInputDialog::getText(this, tr("Add Section"), tr("Heading:"), QLineEdit::Normal, QString(), &ok);
    if (ok && !heading.trimmed().isEmpty()) addSection(heading.trimmed());
  });
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(900, 760);
}

QPlainTextEdit *SkillCardForm::sectionEditor(const QString &text) {
  auto *editor = new QPlainTextEdit(text, this);
  editor->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  return editor;
}

bool SkillCardForm::addSection(const QString &heading) {
  for (const auto &s : body_)
    if (q(s.heading) == heading) return false;
  kwb::CardSection s{1, heading.toStdString(), "\n"};
  body_ << s;
  auto *editor = sectionEditor(QStringLiteral("\n"));
  sectionEditors_ << editor;
  sections_->setCurrentIndex(sections_->addTab(editor, heading));
  editor->setFocus();
  return true;
}

kwb::SkillCard SkillCardForm::card() const {
  kwb::SkillCard c = stored_;  // id, status, evidence, verification log and unknown keys as stored
  c.intent = intent_->text().trimmed().toStdString();
  c.anchor = anchor_->text().trimmed().toStdString();
  c.preconditions.clear();
  for (qsizetype i = 0; i < categories_.size(); ++i)
    if (const QString r = categories_[i]->text().trimmed(); !r.isEmpty())
      c.preconditions.push_back(std::string(kwb::kPreconditionCategories[static_cast<std::size_t>(i)]) + ": " + r.toStdString());
  for (const QString &l : otherPreconditions_->toPlainText().split(QLatin1Char('\n'), Qt::SkipEmptyParts))
    if (!l.trimmed().isEmpty()) c.preconditions.push_back(l.trimmed().toStdString());
  c.scope.cases = listOf(cases_);
  c.scope.languages = listOf(languages_);
  c.scope.platforms = listOf(platforms_);
  c.requiredFeatures = listOf(requires_);
  c.providedFeatures = listOf(provides_);
  c.conflictingFeatures = listOf(conflicts_);
  c.body.clear();
  for (qsizetype i = 0; i < body_.size(); ++i) {
    kwb::CardSection s = body_[i];
    QString text = sectionEditors_[i]->toPlainText();
    if (text != q(s.text) && !text.endsWith(QLatin1Char('\n'))) text += QLatin1Char('\n');  // the next heading on its own line
    s.text = text.toStdString();
    c.body.push_back(std::move(s));
  }
  return c;
}

}  // namespace kwb::ui
