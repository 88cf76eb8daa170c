#include "ui/views/session_settings_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>

namespace kwb::ui {

namespace {

template <typename Box>
Box *named(Box *box, const char *name, const QString &tip) {
  box->setObjectName(QString::fromLatin1(name));
  box->setToolTip(tip);
  return box;
}

}  // namespace

SessionSettingsDialog::SessionSettingsDialog(const QStringList &providers, const QString &provider, const QString &model,
                                             const kwb::agent::SessionSettings &settings, QWidget *parent)
    : QDialog(parent), base_(settings) {
  setObjectName(QStringLiteral("sessionSettingsDialog"));
  setWindowTitle(tr("Optimize with an LLM agent"));

  provider_ = named(new QComboBox(this), "provider", tr("The LLM provider (Settings \u25B8 LLM providers)"));
  provider_->addItems(providers);
  if (const int i = provider_->findText(provider); i >= 0) provider_->setCurrentIndex(i);
  model_ = named(new QLineEdit(model, this), "model", tr("Empty: the provider's default model"));
  model_->setPlaceholderText(tr("the provider's default"));

  candidates_ = named(new QSpinBox(this), "candidates", tr("Candidates asked for at once in every turn (G)"));
  candidates_->setRange(1, 16);
  candidates_->setValue(static_cast<int>(settings.candidates));
  turns_ = named(new QSpinBox(this), "turns", tr("Turns per group in all, the first included (K; LEAP: 3)"));
  turns_->setRange(1, 10);
  turns_->setValue(static_cast<int>(settings.dcp.maxTurns));
  groups_ = named(new QSpinBox(this), "groups",
                  tr("Groups in the session: each starts from the best kernel so far with G fresh candidates"));
  groups_->setRange(1, 1000);
  groups_->setValue(static_cast<int>(settings.groups));

  // -1 shows as the automatic value.
  easyBelow_ = named(new QSpinBox(this), "easyBelow",
                     tr("Fewer first-turn failures than this: the group is easy and gets no repair turns"));
  easyBelow_->setRange(-1, 16);
  easyBelow_->setSpecialValueText(tr("automatic (half of G)"));
  easyBelow_->setValue(settings.dcp.easyBelow ? static_cast<int>(*settings.dcp.easyBelow) : -1);
  hopelessAbove_ = named(new QSpinBox(this), "hopelessAbove",
                         tr("More first-turn failures than this: the group is hopeless and gets no repair turns"));
  hopelessAbove_->setRange(-1, 16);
  hopelessAbove_->setSpecialValueText(tr("never (G)"));
  hopelessAbove_->setValue(settings.dcp.hopelessAbove ? static_cast<int>(*settings.dcp.hopelessAbove) : -1);
  discount_ = named(new QDoubleSpinBox(this), "discount", tr("Share of a success's reward passed back to each earlier turn"));
  discount_->setRange(0, 1);
  discount_->setSingleStep(0.1);
  discount_->setValue(settings.discount);
  minGain_ = named(new QDoubleSpinBox(this), "minGain", tr("How much faster than the incumbent counts as faster"));
  minGain_->setRange(0, 100);
  minGain_->setSuffix(QStringLiteral(" %"));
  minGain_->setValue(settings.minGain * 100.0);

  dollars_ = named(new QDoubleSpinBox(this), "dollars", tr("No new request once this much was spent"));
  dollars_->setRange(0, 100000);
  dollars_->setPrefix(QStringLiteral("$ "));
  dollars_->setSpecialValueText(tr("no limit"));
  dollars_->setValue(settings.dollars.value_or(0));
  tokens_ = named(new QSpinBox(this), "tokens", tr("No new request once this many tokens (in and out) were used"));
  tokens_->setRange(0, 1000000000);
  tokens_->setSingleStep(10000);
  tokens_->setSpecialValueText(tr("no limit"));
  tokens_->setValue(settings.tokens ? static_cast<int>(std::min<std::int64_t>(*settings.tokens, 1000000000)) : 0);
  minutes_ = named(new QSpinBox(this), "minutes", tr("No new request after this much running time, over every resume"));
  minutes_->setRange(0, 100000);
  minutes_->setSuffix(tr(" min"));
  minutes_->setSpecialValueText(tr("no limit"));
  minutes_->setValue(settings.wallSeconds ? static_cast<int>(std::ceil(*settings.wallSeconds / 60.0)) : 0);

  timeCap_ = named(new QDoubleSpinBox(this), "timeCap", tr("Seconds of timing samples per size configuration"));
  timeCap_->setRange(0.05, 60);
  timeCap_->setSuffix(tr(" s"));
  timeCap_->setValue(settings.timingCapSeconds);
  profile_ = named(new QCheckBox(tr("Show the model the profiler's bottleneck summary"), this), "profile",
                   tr("Of the incumbent in optimization turns and of a correct candidate under repair (GPU only)"));
  profile_->setChecked(settings.profile);
  sanitize_ = named(new QCheckBox(tr("Run compute-sanitizer on a kernel before it becomes the best"), this), "sanitize",
                    tr("memcheck, racecheck, initcheck and synccheck at the smallest size; errors make it incorrect (GPU only)"));
  sanitize_->setChecked(settings.sanitizeBest);
  skills_ = named(new QCheckBox(tr("Skill cards: admitted and approved ones chosen for the kernel"), this), "skills",
                  tr("From the skill library: cards the gate admitted or a reviewer approved"));
  skills_->setChecked(settings.skills);
  proposedCards_ = named(new QCheckBox(tr("Proposed cards too (unproven)"), this), "proposedCards",
                         tr("Cards no gate or reviewer has passed yet; each prompt's context record says so"));
  proposedCards_->setChecked(settings.proposedCards);
  proposedCards_->setEnabled(settings.skills);
  connect(skills_, &QCheckBox::toggled, proposedCards_, &QWidget::setEnabled);
  memory_ = named(new QCheckBox(tr("Experience memory in every turn"), this), "memory",
                  tr("Ranked Cases of this task and others, within what the model's window leaves (KOPE)"));
  memory_->setChecked(settings.memory);

  auto *llm = new QGroupBox(tr("Model"), this);
  auto *llmForm = new QFormLayout(llm);
  llmForm->addRow(tr("&Provider:"), provider_);
  llmForm->addRow(tr("&Model:"), model_);
  auto *leap = new QGroupBox(tr("Turns (LEAP)"), this);
  auto *leapForm = new QFormLayout(leap);
  leapForm->addRow(tr("&Candidates per turn (G):"), candidates_);
  leapForm->addRow(tr("&Turns per group (K):"), turns_);
  leapForm->addRow(tr("&Groups:"), groups_);
  leapForm->addRow(tr("&Easy below (failures):"), easyBelow_);
  leapForm->addRow(tr("&Hopeless above (failures):"), hopelessAbove_);
  leapForm->addRow(tr("Reward &discount:"), discount_);
  leapForm->addRow(tr("&Faster means at least:"), minGain_);
  auto *budgets = new QGroupBox(tr("Budgets"), this);
  auto *budgetForm = new QFormLayout(budgets);
  budgetForm->addRow(tr("&Dollars:"), dollars_);
  budgetForm->addRow(tr("T&okens:"), tokens_);
  budgetForm->addRow(tr("&Running time:"), minutes_);
  auto *checks = new QGroupBox(tr("Evaluation"), this);
  auto *checkForm = new QFormLayout(checks);
  checkForm->addRow(tr("T&iming per size:"), timeCap_);
  checkForm->addRow(profile_);
  checkForm->addRow(sanitize_);
  auto *context = new QGroupBox(tr("Context"), this);
  auto *contextForm = new QFormLayout(context);
  contextForm->addRow(skills_);
  contextForm->addRow(proposedCards_);
  contextForm->addRow(memory_);

  problem_ = new QLabel(this);
  problem_->setObjectName(QStringLiteral("sessionSettingsProblem"));
  problem_->setWordWrap(true);
  problem_->setStyleSheet(QStringLiteral("color: #b00020"));
  auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  ok_ = buttons->button(QDialogButtonBox::Ok);
  ok_->setText(tr("&Start"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto *layout = new QVBoxLayout(this);
  layout->addWidget(llm);
  layout->addWidget(leap);
  layout->addWidget(budgets);
  layout->addWidget(checks);
  layout->addWidget(context);
  layout->addWidget(problem_);
  layout->addWidget(buttons);

  for (QSpinBox *box : {candidates_, turns_, groups_, easyBelow_, hopelessAbove_})
    connect(box, &QSpinBox::valueChanged, this, &SessionSettingsDialog::validate);
  connect(provider_, &QComboBox::currentIndexChanged, this, &SessionSettingsDialog::validate);
  validate();
}

QString SessionSettingsDialog::provider() const { return provider_->currentText(); }

QString SessionSettingsDialog::model() const { return model_->text().trimmed(); }

kwb::agent::SessionSettings SessionSettingsDialog::settings() const {
  kwb::agent::SessionSettings s = base_;
  s.candidates = static_cast<std::size_t>(candidates_->value());
  s.dcp.maxTurns = static_cast<std::size_t>(turns_->value());
  s.groups = static_cast<std::size_t>(groups_->value());
  s.dcp.easyBelow = easyBelow_->value() < 0 ? std::nullopt : std::optional<std::size_t>(easyBelow_->value());
  s.dcp.hopelessAbove =
      hopelessAbove_->value() < 0 ? std::nullopt : std::optional<std::size_t>(hopelessAbove_->value());
  s.discount = discount_->value();
  s.minGain = minGain_->value() / 100.0;
  s.dollars = dollars_->value() > 0 ? std::optional<double>(dollars_->value()) : std::nullopt;
  s.tokens = tokens_->value() > 0 ? std::optional<std::int64_t>(tokens_->value()) : std::nullopt;
  s.wallSeconds = minutes_->value() > 0 ? std::optional<double>(minutes_->value() * 60.0) : std::nullopt;
  s.timingCapSeconds = timeCap_->value();
  s.profile = profile_->isChecked();
  s.sanitizeBest = sanitize_->isChecked();
  s.skills = skills_->isChecked();
  s.proposedCards = proposedCards_->isChecked();
  s.memory = memory_->isChecked();
  return s;
}

QString SessionSettingsDialog::problem() const { return problem_->text(); }

void SessionSettingsDialog::validate() {
  const int g = candidates_->value();
  QString why;
  if (provider_->count() == 0)
    why = tr("No LLM provider is configured: add one in Settings \u25B8 LLM providers.");
  else if (easyBelow_->value() > g)
    why = tr("Easy below %1 failures of %2 candidates: every group would be easy. Lower it to %2 or less.")
              .arg(easyBelow_->value())
              .arg(g);
  else if (hopelessAbove_->value() >= 0 && easyBelow_->value() >= 0 && hopelessAbove_->value() < easyBelow_->value())
    why = tr("Hopeless above %1 is below easy below %2: no group could be repaired. Raise it or set it to never.")
              .arg(hopelessAbove_->value())
              .arg(easyBelow_->value());
  problem_->setText(why);
  problem_->setVisible(!why.isEmpty());
  ok_->setEnabled(why.isEmpty());
}

}  // namespace kwb::ui
