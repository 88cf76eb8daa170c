#include "ui/settings/llm_providers_page.h"

#include <algorithm>
#include <exception>
#include <initializer_list>
#include <utility>

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTextCursor>
#include <QTimer>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include "core/llm/provider_config.h"
#include "ui/settings/app_settings.h"
#include "ui/settings/keychain.h"

namespace kwb::ui {

namespace {

const QString kErrorStyle = QStringLiteral("color: #b91c1c;");
const QString kOkStyle = QStringLiteral("color: #15803d;");
const QString kHintStyle = QStringLiteral("color: #6b7280;");

QString qs(const std::string &s) {
  return QString::fromStdString(s);
}

QLabel *hintLabel(QWidget *parent, const QString &objectName = QString()) {
  auto *label = new QLabel(parent);
  label->setWordWrap(true);
  label->setStyleSheet(kHintStyle);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  if (!objectName.isEmpty()) label->setObjectName(objectName);
  return label;
}

void setMessage(QLabel *label, const QString &text, const QString &style) {
  label->setText(text);
  label->setStyleSheet(style);
  label->setVisible(!text.isEmpty());
}

// How a template is called in the menu.
QString templateLabel(const QString &name) {
  static const QHash<QString, QString> labels = {
      {QStringLiteral("openai"), QStringLiteral("OpenAI")},
      {QStringLiteral("anthropic"), QStringLiteral("Anthropic")},
      {QStringLiteral("openrouter"), QStringLiteral("OpenRouter")},
      {QStringLiteral("ollama"), QStringLiteral("Ollama")},
      {QStringLiteral("llama.cpp"), QStringLiteral("llama.cpp")},
      {QStringLiteral("vllm"), QStringLiteral("vLLM")},
      {QStringLiteral("lm-studio"), QStringLiteral("LM Studio")},
      {QStringLiteral("sglang"), QStringLiteral("SGLang")},
  };
  return labels.value(name, name);
}

// Text that is more likely a key than the name of a variable holding one: a known key prefix,
// or long and mixed lower case and digits (variable names are usually UPPER_CASE).
bool looksLikeKey(const QString &text) {
  for (const char *prefix : {"sk-", "sk_", "gsk_", "hf_", "xai-", "pplx-", "AIza", "key-"})
    if (text.startsWith(QLatin1String(prefix))) return true;
  bool lower = false, digit = false;
  for (const QChar c : text) {
    lower = lower || c.isLower();
    digit = digit || c.isDigit();
  }
  return text.size() >= 24 && lower && digit;
}

// A variable name, and not a pasted key: a name that looks like a key counts only when such a
// variable is really set.
bool isVariableName(const QString &name) {
  static const QRegularExpression re(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]*$"));
  if (!re.match(name).hasMatch()) return false;
  return !looksLikeKey(name) || !qEnvironmentVariableIsEmpty(name.toLocal8Bit().constData());
}

// A server on this machine or the local network: listing its models costs nothing and needs no key.
bool isLocalUrl(const QString &url) {
  const QString host = QUrl(url.trimmed()).host().toLower();
  if (host == QLatin1String("localhost") || host == QLatin1String("::1")) return true;
  static const QRegularExpression privateV4(
      QStringLiteral("^(127\\.|10\\.|192\\.168\\.|169\\.254\\.|172\\.(1[6-9]|2[0-9]|3[01])\\.)[0-9.]+$"));
  return privateV4.match(host).hasMatch();
}

// A field with its message under it, in one form row, so a hidden message leaves no gap.
QWidget *withMessage(QWidget *parent, QLayout *field, QLabel *message) {
  auto *box = new QWidget(parent);
  auto *layout = new QVBoxLayout(box);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addLayout(field);
  layout->addWidget(message);
  return box;
}

QLayout *hbox(std::initializer_list<std::pair<QWidget *, int>> widgets) {
  auto *layout = new QHBoxLayout;
  layout->setContentsMargins(0, 0, 0, 0);
  for (const auto &[widget, stretch] : widgets) layout->addWidget(widget, stretch);
  return layout;
}

QString priceText(double value) {
  return QLocale::c().toString(value, 'g', 10);
}

std::optional<double> priceValue(const QLineEdit *field) {
  const QString text = field->text().trimmed();
  if (text.isEmpty()) return std::nullopt;
  bool ok = false;
  const double value = QLocale::c().toDouble(text, &ok);
  if (!ok) return std::nullopt;
  return value;
}

QString modelCount(int n) {
  return n == 1 ? LlmProvidersPage::tr("1 model") : LlmProvidersPage::tr("%1 models").arg(n);
}

QString seconds(double s) {
  return s < 10 ? QStringLiteral("%1 s").arg(s, 0, 'f', 2) : QStringLiteral("%1 s").arg(s, 0, 'f', 1);
}

}  // namespace

QString providerNameProblem(const QString &name, const QStringList &otherNames) {
  const QString trimmed = name.trimmed();
  if (trimmed.isEmpty()) return LlmProvidersPage::tr("A provider needs a name.");
  if (otherNames.contains(trimmed))
    return LlmProvidersPage::tr("Another provider is already called \"%1\"; names must be unique.")
        .arg(trimmed);
  return {};
}

QString baseUrlProblem(const QString &url) {
  const QString trimmed = url.trimmed();
  if (trimmed.isEmpty())
    return LlmProvidersPage::tr("The base URL is empty; for example http://127.0.0.1:8080/v1.");
  if (!trimmed.contains(QLatin1String("://")))
    return LlmProvidersPage::tr(
        "The base URL must start with http:// or https://; for example "
        "http://127.0.0.1:8080/v1.");
  const QUrl parsed(trimmed, QUrl::StrictMode);
  if (!parsed.isValid())
    return LlmProvidersPage::tr("\"%1\" is not a URL: %2.").arg(trimmed, parsed.errorString());
  const QString scheme = parsed.scheme().toLower();
  if (scheme != QLatin1String("http") && scheme != QLatin1String("https"))
    return LlmProvidersPage::tr(
        "The base URL must start with http:// or https://; for example "
        "http://127.0.0.1:8080/v1.");
  if (parsed.host().isEmpty()) return LlmProvidersPage::tr("The base URL names no host.");
  if (!parsed.userInfo().isEmpty() || parsed.hasQuery())
    return LlmProvidersPage::tr(
        "The base URL may not carry a user name, password or query (they would be shown and stored with "
        "it); keep the key in an environment variable or the keychain.");
  if (parsed.hasQuery() || parsed.hasFragment())
    return LlmProvidersPage::tr("The base URL must not have a query or fragment (the part after ? or #).");
  return {};
}

LlmProvidersPage::LlmProvidersPage(QWidget *parent) : QWidget(parent) {
  setObjectName(QStringLiteral("llmProvidersPage"));
  service_ = new LlmService(this);
  keychain_ = new Keychain(this);
  urlDebounce_ = new QTimer(this);
  urlDebounce_->setSingleShot(true);
  urlDebounce_->setInterval(400);
  connect(urlDebounce_, &QTimer::timeout, this, [this] { maybeListModels(true); });

  connect(service_, &LlmService::modelsListed, this, &LlmProvidersPage::onModelsListed);
  connect(service_, &LlmService::testText, this, [this](const QString &text) {
    testOutput_->setPlainText(text);
    testOutput_->moveCursor(QTextCursor::End);
  });
  connect(service_, &LlmService::testFinished, this, &LlmProvidersPage::onTestFinished);
  connect(service_, &LlmService::serversFound, this,
          [this](const QList<kwb::llm::DiscoveredServer> &servers) {
            found_ = servers;
            rebuildAddMenu();
            emit discoveryFinished();
          });

  connect(keychain_, &Keychain::keyRead, this, [this](const QString &provider, const QString &key) {
    auto waiters = keyWaiters_.take(provider);
    for (auto &then : waiters) then(key);
  });
  connect(keychain_, &Keychain::keyWritten, this, [this](const QString &provider) {
    // Only what was written is stored: a key typed again while the write ran stays pending.
    const QString written = keysBeingWritten_.take(provider);
    for (Entry &e : entries_)
      if (qs(e.config.name) == provider && e.pendingKey == written) e.pendingKey.clear();
    keychainMessages_.insert(provider, tr("Stored in the desktop keychain."));
    if (const Entry *e = current(); e && qs(e->config.name) == provider) {
      loading_ = true;
      keychainKey_->clear();
      loading_ = false;
    }
    updateKeyStatus();
  });
  connect(keychain_, &Keychain::keyDeleted, this, [this](const QString &provider) {
    keychainMessages_.remove(provider);
    updateKeyStatus();
  });
  connect(keychain_, &Keychain::failed, this, &LlmProvidersPage::onKeychainFailed);

  // The list of providers, and adding and removing them.
  list_ = new QListWidget(this);
  list_->setObjectName(QStringLiteral("llmProviderList"));
  list_->setFixedWidth(150);
  connect(list_, &QListWidget::currentRowChanged, this, &LlmProvidersPage::showEntry);
  add_ = new QToolButton(this);
  add_->setObjectName(QStringLiteral("llmAddProviderButton"));
  add_->setText(tr("Add"));
  add_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  add_->setPopupMode(QToolButton::InstantPopup);
  addMenu_ = new QMenu(add_);
  addMenu_->setObjectName(QStringLiteral("llmAddProviderMenu"));
  add_->setMenu(addMenu_);
  remove_ = new QPushButton(tr("Remove…"), this);
  remove_->setObjectName(QStringLiteral("llmRemoveProviderButton"));
  connect(remove_, &QPushButton::clicked, this, &LlmProvidersPage::removeSelected);
  auto *listButtons = new QHBoxLayout;
  listButtons->setContentsMargins(0, 0, 0, 0);
  listButtons->addWidget(add_);
  listButtons->addWidget(remove_);
  listButtons->addStretch(1);
  auto *left = new QVBoxLayout;
  left->addWidget(list_, 1);
  left->addLayout(listButtons);

  editor_ = buildEditor();
  auto *scroll = new QScrollArea(this);
  scroll->setWidget(editor_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  emptyHint_ = hintLabel(this, QStringLiteral("llmEmptyHint"));
  emptyHint_->setAlignment(Qt::AlignCenter);
  emptyHint_->setText(
      tr("No LLM provider yet. Press Add to start from a hosted service, a local server "
         "template, or a server found on this machine."));
  auto *right = new QStackedWidget(this);
  right->setObjectName(QStringLiteral("llmEditorStack"));
  right->addWidget(emptyHint_);
  right->addWidget(scroll);
  connect(list_, &QListWidget::currentRowChanged, right,
          [right](int row) { right->setCurrentIndex(row < 0 ? 0 : 1); });

  auto *body = new QHBoxLayout;
  body->addLayout(left);
  body->addWidget(right, 1);

  fileStatus_ = hintLabel(this, QStringLiteral("llmProvidersFileStatus"));

  budget_ = new QDoubleSpinBox(this);
  budget_->setObjectName(QStringLiteral("llmBudgetField"));
  budget_->setRange(0, 100000);
  budget_->setDecimals(2);
  budget_->setSingleStep(1);
  budget_->setPrefix(QStringLiteral("$ "));
  budget_->setSpecialValueText(tr("no limit"));
  auto *budgetHint = hintLabel(this);
  budgetHint->setText(
      tr("An optimization session sends no new request once its LLM cost (from the "
         "prices) reaches this. 0: no limit."));
  auto *budgetRow = new QHBoxLayout;
  budgetRow->addWidget(new QLabel(tr("Session budget:"), this));
  budgetRow->addWidget(budget_);
  budgetRow->addWidget(budgetHint, 1);
  connect(budget_, &QDoubleSpinBox::valueChanged, this, [this] {
    if (!loading_) dirty_ = true;
  });

  auto *layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(fileStatus_);
  layout->addLayout(body, 1);
  layout->addWidget(buildTest());
  layout->addLayout(budgetRow);

  setTesting(false);
  rebuildAddMenu();
  showEntry(-1);
}

QWidget *LlmProvidersPage::buildEditor() {
  auto *page = new QWidget(this);
  auto *form = new QFormLayout(page);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);

  name_ = new QLineEdit(page);
  name_->setObjectName(QStringLiteral("llmNameField"));
  name_->setPlaceholderText(tr("a short name, e.g. local-llama"));
  nameError_ = hintLabel(page, QStringLiteral("llmNameError"));
  form->addRow(tr("Name:"), withMessage(page, hbox({{name_, 1}}), nameError_));

  format_ = new QComboBox(page);
  format_->setObjectName(QStringLiteral("llmFormatField"));
  format_->addItem(tr("OpenAI-compatible (chat completions)"), QStringLiteral("openai"));
  format_->addItem(tr("Anthropic (messages)"), QStringLiteral("anthropic"));
  format_->addItem(tr("Ollama (native chat)"), QStringLiteral("ollama"));
  form->addRow(tr("Wire format:"), format_);

  baseUrl_ = new QLineEdit(page);
  baseUrl_->setObjectName(QStringLiteral("llmBaseUrlField"));
  baseUrl_->setPlaceholderText(QStringLiteral("http://127.0.0.1:8080/v1"));
  urlError_ = hintLabel(page, QStringLiteral("llmBaseUrlError"));
  form->addRow(tr("Base URL:"), withMessage(page, hbox({{baseUrl_, 1}}), urlError_));

  model_ = new QComboBox(page);
  model_->setObjectName(QStringLiteral("llmModelField"));
  model_->setEditable(true);
  model_->setInsertPolicy(QComboBox::NoInsert);
  model_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  model_->setMinimumContentsLength(16);
  refreshModels_ = new QPushButton(tr("Refresh models"), page);
  refreshModels_->setObjectName(QStringLiteral("llmRefreshModelsButton"));
  connect(refreshModels_, &QPushButton::clicked, this, &LlmProvidersPage::refreshModels);
  modelsStatus_ = hintLabel(page, QStringLiteral("llmModelsStatus"));
  form->addRow(tr("Model:"), withMessage(page, hbox({{model_, 1}, {refreshModels_, 0}}), modelsStatus_));

  keyFromEnv_ = new QRadioButton(tr("Environment variable:"), page);
  keyFromEnv_->setObjectName(QStringLiteral("llmKeyFromEnvironment"));
  keyEnv_ = new QLineEdit(page);
  keyEnv_->setObjectName(QStringLiteral("llmKeyEnvField"));
  keyEnv_->setPlaceholderText(tr("none (a local server needs no key)"));
  keyEnvStatus_ = hintLabel(page, QStringLiteral("llmKeyEnvStatus"));
  keyFromKeychain_ = new QRadioButton(tr("Desktop keychain:"), page);
  keyFromKeychain_->setObjectName(QStringLiteral("llmKeyFromKeychain"));
  keychainKey_ = new QLineEdit(page);
  keychainKey_->setObjectName(QStringLiteral("llmKeychainKeyField"));
  keychainKey_->setEchoMode(QLineEdit::Password);
  keychainKey_->setPlaceholderText(tr("paste the key; stored in the keychain on Apply"));
  keychainStatus_ = hintLabel(page, QStringLiteral("llmKeychainStatus"));
  auto *keyBox = new QWidget(page);
  auto *keyLayout = new QVBoxLayout(keyBox);
  keyLayout->setContentsMargins(0, 0, 0, 0);
  keyLayout->setSpacing(4);
  keyFromKeychain_->setMinimumWidth(keyFromEnv_->sizeHint().width());
  keyLayout->addWidget(withMessage(keyBox, hbox({{keyFromEnv_, 0}, {keyEnv_, 1}}), keyEnvStatus_));
  keyLayout->addWidget(
      withMessage(keyBox, hbox({{keyFromKeychain_, 0}, {keychainKey_, 1}}), keychainStatus_));
  form->addRow(tr("API key from:"), keyBox);

  maxConcurrent_ = new QSpinBox(page);
  maxConcurrent_->setObjectName(QStringLiteral("llmMaxConcurrentField"));
  maxConcurrent_->setRange(1, 64);
  stallTimeout_ = new QSpinBox(page);
  stallTimeout_->setObjectName(QStringLiteral("llmStallTimeoutField"));
  stallTimeout_->setRange(5, 3600);
  stallTimeout_->setSuffix(tr(" s"));
  form->addRow(tr("Requests at once:"), hbox({{maxConcurrent_, 0}, {new QLabel(QString(), page), 1}}));
  auto *stallHint = new QLabel(tr("a stream that sends nothing this long is stopped"), page);
  stallHint->setStyleSheet(kHintStyle);
  form->addRow(tr("Stall timeout:"), hbox({{stallTimeout_, 0}, {stallHint, 1}}));
  // KOPE's budget B = W - S - G - R takes W from here, and G is capped by the answer limit.
  contextWindow_ = new QSpinBox(page);
  contextWindow_->setObjectName(QStringLiteral("llmContextWindowField"));
  contextWindow_->setRange(0, kwb::llm::kMaxContextWindow);
  contextWindow_->setSpecialValueText(tr("not known"));
  contextWindow_->setSuffix(tr(" tokens"));
  maxOutputTokens_ = new QSpinBox(page);
  maxOutputTokens_->setObjectName(QStringLiteral("llmMaxOutputTokensField"));
  maxOutputTokens_->setRange(0, kwb::llm::kMaxContextWindow);
  maxOutputTokens_->setSpecialValueText(tr("not known"));
  maxOutputTokens_->setSuffix(tr(" tokens"));
  auto *windowHint = new QLabel(tr("0: not known, %1 assumed").arg(kwb::llm::kAssumedContextWindow), page);
  windowHint->setStyleSheet(kHintStyle);
  windowHint->setToolTip(tr("The model's context window: the experience memory fills what the prompt leaves of it"));
  form->addRow(tr("Context window:"), hbox({{contextWindow_, 0}, {windowHint, 1}}));
  auto *outputHint = new QLabel(tr("tokens one answer may have"), page);
  outputHint->setStyleSheet(kHintStyle);
  form->addRow(tr("Answer limit:"), hbox({{maxOutputTokens_, 0}, {outputHint, 1}}));

  auto *validator = new QDoubleValidator(0, 1e6, 6, page);
  validator->setLocale(QLocale::c());
  validator->setNotation(QDoubleValidator::StandardNotation);
  inputPrice_ = new QLineEdit(page);
  inputPrice_->setObjectName(QStringLiteral("llmInputPriceField"));
  outputPrice_ = new QLineEdit(page);
  outputPrice_->setObjectName(QStringLiteral("llmOutputPriceField"));
  for (QLineEdit *field : {inputPrice_, outputPrice_}) {
    field->setValidator(validator);
    field->setPlaceholderText(tr("unknown"));
  }
  auto *priceHint = hintLabel(page);
  priceHint->setText(
      tr("Dollars per million tokens; optional (the budget counts only what has a price). "
         "Local servers: 0."));
  form->addRow(tr("Prices:"), withMessage(page,
                                          hbox({{new QLabel(tr("input $"), page), 0},
                                                {inputPrice_, 1},
                                                {new QLabel(tr("output $"), page), 0},
                                                {outputPrice_, 1}}),
                                          priceHint));

  const auto edited = [this] { fieldsEdited(); };
  connect(name_, &QLineEdit::textChanged, this, edited);
  connect(format_, &QComboBox::currentIndexChanged, this, [this] {
    fieldsEdited();
    if (!loading_) urlDebounce_->start();
  });
  connect(baseUrl_, &QLineEdit::textChanged, this, [this] {
    fieldsEdited();
    if (!loading_) urlDebounce_->start();
  });
  connect(model_, &QComboBox::currentTextChanged, this, edited);
  connect(keyFromEnv_, &QRadioButton::toggled, this, edited);
  connect(keyFromKeychain_, &QRadioButton::toggled, this, edited);
  connect(keyEnv_, &QLineEdit::textChanged, this, edited);
  connect(keychainKey_, &QLineEdit::textChanged, this, [this](const QString &text) {
    if (loading_) return;
    if (Entry *e = current()) {
      e->pendingKey = text;
      keychainMessages_.remove(qs(e->config.name));
    }
    updateKeyStatus();
  });
  connect(keyFromKeychain_, &QRadioButton::toggled, keychainKey_, &QLineEdit::setEnabled);
  connect(keyFromEnv_, &QRadioButton::toggled, keyEnv_, &QLineEdit::setEnabled);
  connect(maxConcurrent_, &QSpinBox::valueChanged, this, edited);
  connect(contextWindow_, &QSpinBox::valueChanged, this, edited);
  connect(maxOutputTokens_, &QSpinBox::valueChanged, this, edited);
  connect(stallTimeout_, &QSpinBox::valueChanged, this, edited);
  connect(inputPrice_, &QLineEdit::textChanged, this, edited);
  connect(outputPrice_, &QLineEdit::textChanged, this, edited);
  return page;
}

QWidget *LlmProvidersPage::buildTest() {
  auto *box = new QGroupBox(tr("Connection test"), this);
  box->setObjectName(QStringLiteral("llmTestBox"));
  test_ = new QPushButton(tr("Test connection"), box);
  test_->setObjectName(QStringLiteral("llmTestButton"));
  cancel_ = new QPushButton(tr("Cancel"), box);
  cancel_->setObjectName(QStringLiteral("llmCancelTestButton"));
  testStatus_ = hintLabel(box, QStringLiteral("llmTestStatus"));
  testStatus_->setText(tr("Sends a tiny request (a few tokens) and shows how fast the first tokens come."));
  testOutput_ = new QPlainTextEdit(box);
  testOutput_->setObjectName(QStringLiteral("llmTestOutput"));
  testOutput_->setReadOnly(true);
  testOutput_->setPlaceholderText(tr("The first tokens of the answer appear here as they arrive."));
  testOutput_->setMaximumHeight(64);
  connect(test_, &QPushButton::clicked, this, &LlmProvidersPage::testConnection);
  connect(cancel_, &QPushButton::clicked, this, &LlmProvidersPage::cancelTest);

  auto *buttons = new QHBoxLayout;
  buttons->addWidget(test_);
  buttons->addWidget(cancel_);
  buttons->addStretch(1);
  auto *layout = new QVBoxLayout(box);
  layout->addLayout(buttons);
  layout->addWidget(testStatus_);
  layout->addWidget(testOutput_);
  return box;
}

void LlmProvidersPage::rebuildAddMenu() {
  addMenu_->clear();
  addMenu_->addSection(tr("Templates"));
  for (const auto &t : kwb::llm::providerTemplates()) {
    const QString name = qs(t.name);
    QAction *action = addMenu_->addAction(templateLabel(name));
    action->setObjectName(QStringLiteral("template:") + name);
    action->setToolTip(qs(t.baseUrl));
    connect(action, &QAction::triggered, this, [this, name] { addFromTemplate(name); });
  }
  addMenu_->addSection(tr("Found on this machine"));
  if (service_->isDiscovering()) {
    addMenu_->addAction(tr("Searching the usual local ports…"))->setEnabled(false);
  } else if (!discoveryStarted_) {
    addMenu_->addAction(tr("Not searched yet"))->setEnabled(false);
  } else if (found_.isEmpty()) {
    QStringList ports;
    for (const auto &kind : kwb::llm::knownLocalServers()) ports.append(QString::number(kind.port));
    addMenu_->addAction(tr("No server answered on ports %1").arg(ports.join(QStringLiteral(", "))))
        ->setEnabled(false);
  } else {
    for (const auto &server : std::as_const(found_)) {
      const QString label = tr("%1 at %2 (%3)")
                                .arg(qs(server.kind.name), qs(server.provider.baseUrl),
                                     modelCount(static_cast<int>(server.models.size())));
      QAction *action = addMenu_->addAction(label);
      action->setObjectName(QStringLiteral("found:") + qs(server.provider.baseUrl));
      connect(action, &QAction::triggered, this, [this, server] { addDiscovered(server); });
    }
  }
  QAction *again = addMenu_->addAction(tr("Search this machine again"));
  again->setObjectName(QStringLiteral("searchAgain"));
  again->setEnabled(!service_->isDiscovering());
  connect(again, &QAction::triggered, this, &LlmProvidersPage::discoverServers);
}

void LlmProvidersPage::showEvent(QShowEvent *event) {
  QWidget::showEvent(event);
  if (!discoveryStarted_) discoverServers();
}

void LlmProvidersPage::discoverServers() {
  discoveryStarted_ = true;
  service_->discover();
  rebuildAddMenu();
}

QString LlmProvidersPage::uniqueName(const QString &wanted) const {
  QStringList names;
  for (const Entry &e : entries_) names.append(qs(e.config.name));
  if (!names.contains(wanted)) return wanted;
  for (int i = 2;; ++i) {
    const QString candidate = QStringLiteral("%1-%2").arg(wanted).arg(i);
    if (!names.contains(candidate)) return candidate;
  }
}

int LlmProvidersPage::appendEntry(kwb::llm::ProviderConfig config) {
  Entry entry;
  entry.uid = nextUid_++;
  entry.config = std::move(config);
  entries_.push_back(std::move(entry));
  dirty_ = true;
  list_->addItem(qs(entries_.back().config.name));
  const int row = static_cast<int>(entries_.size()) - 1;
  list_->setCurrentRow(row);
  return row;
}

int LlmProvidersPage::addFromTemplate(const QString &templateName) {
  for (auto config : kwb::llm::providerTemplates()) {
    if (qs(config.name) != templateName) continue;
    config.name = uniqueName(templateName).toStdString();
    // Selecting it lists its models when that is free (a local server, or a key at hand).
    const int row = appendEntry(std::move(config));
    name_->setFocus();
    return row;
  }
  return -1;
}

int LlmProvidersPage::addDiscovered(const kwb::llm::DiscoveredServer &server) {
  kwb::llm::ProviderConfig config = server.provider;
  config.name = uniqueName(qs(config.name.empty() ? server.kind.name : config.name)).toStdString();
  if (config.model.empty() && !server.models.empty()) config.model = server.models.front();
  Entry entry;
  entry.uid = nextUid_++;
  entry.config = std::move(config);
  for (const auto &m : server.models) entry.models.append(qs(m));
  entry.modelsListedFor = qs(entry.config.baseUrl);
  entry.modelsMessage = tr("%1 on this server, listed in %2.")
                            .arg(modelCount(static_cast<int>(entry.models.size())), seconds(server.seconds));
  entries_.push_back(std::move(entry));
  dirty_ = true;
  list_->addItem(qs(entries_.back().config.name));
  const int row = static_cast<int>(entries_.size()) - 1;
  list_->setCurrentRow(row);
  return row;
}

void LlmProvidersPage::removeSelected() {
  const Entry *entry = current();
  if (!entry) return;
  const quint64 uid = entry->uid;
  const QString name = qs(entry->config.name);
  auto *box =
      new QMessageBox(QMessageBox::Question, tr("Remove provider"),
                      entry->config.keyInKeychain
                          ? tr("Remove the provider \"%1\"? Its key is deleted from the desktop keychain "
                               "when you press Apply.")
                                .arg(name)
                          : tr("Remove the provider \"%1\"?").arg(name),
                      QMessageBox::Yes | QMessageBox::Cancel, this);
  box->setObjectName(QStringLiteral("llmRemoveConfirmation"));
  box->setDefaultButton(QMessageBox::Cancel);
  box->setWindowModality(Qt::WindowModal);
  box->setAttribute(Qt::WA_DeleteOnClose);
  connect(box, &QMessageBox::buttonClicked, this, [this, box, uid](QAbstractButton *button) {
    if (box->standardButton(button) != QMessageBox::Yes) return;
    const auto it =
        std::find_if(entries_.begin(), entries_.end(), [uid](const Entry &e) { return e.uid == uid; });
    if (it == entries_.end()) return;
    const int row = static_cast<int>(it - entries_.begin());
    if (it->config.keyInKeychain && !it->storedName.isEmpty()) removedKeychainNames_.append(it->storedName);
    entries_.erase(it);
    dirty_ = true;
    delete list_->takeItem(row);
    showEntry(list_->currentRow());
  });
  box->open();
}

int LlmProvidersPage::currentRow() const {
  const int row = list_->currentRow();
  return row >= 0 && row < static_cast<int>(entries_.size()) ? row : -1;
}

LlmProvidersPage::Entry *LlmProvidersPage::current() {
  const int row = currentRow();
  return row < 0 ? nullptr : &entries_[static_cast<std::size_t>(row)];
}

LlmProvidersPage::Entry *LlmProvidersPage::entryByUid(quint64 uid) {
  for (Entry &e : entries_)
    if (e.uid == uid) return &e;
  return nullptr;
}

void LlmProvidersPage::showEntry(int row) {
  const bool has = row >= 0 && row < static_cast<int>(entries_.size());
  remove_->setEnabled(has);
  test_->setEnabled(has && !service_->isTesting());
  if (!has) return;
  const Entry &e = entries_[static_cast<std::size_t>(row)];
  const auto &c = e.config;
  loading_ = true;
  name_->setText(qs(c.name));
  format_->setCurrentIndex(std::max(0, format_->findData(QString::fromLatin1(kwb::llm::toString(c.format)))));
  baseUrl_->setText(qs(c.baseUrl));
  updateModelsCombo(e);
  keyEnv_->setText(qs(c.apiKeyEnv));
  keychainKey_->setText(e.pendingKey);
  keyFromKeychain_->setChecked(c.keyInKeychain);
  keyFromEnv_->setChecked(!c.keyInKeychain);
  keyEnv_->setEnabled(!c.keyInKeychain);
  keychainKey_->setEnabled(c.keyInKeychain);
  maxConcurrent_->setValue(c.maxConcurrent);
  stallTimeout_->setValue(static_cast<int>(c.stallTimeout.count()));
  contextWindow_->setValue(c.contextWindow);
  maxOutputTokens_->setValue(c.maxOutputTokens);
  inputPrice_->setText(c.price ? priceText(c.price->inputPerMillion) : QString());
  outputPrice_->setText(c.price ? priceText(c.price->outputPerMillion) : QString());
  loading_ = false;
  validate(row, true);
  updateKeyStatus();
  // A provider chosen for the first time lists its models when that needs no key and no fee.
  if (e.modelsListedFor != qs(c.baseUrl)) maybeListModels(true);
}

void LlmProvidersPage::updateModelsCombo(const Entry &entry) {
  const bool wasLoading = loading_;
  loading_ = true;
  model_->clear();
  model_->addItems(entry.models);
  model_->setCurrentText(qs(entry.config.model));
  loading_ = wasLoading;
  const bool failed = !entry.modelsMessage.isEmpty() && entry.models.isEmpty();
  setMessage(modelsStatus_, entry.modelsMessage, failed ? kErrorStyle : kHintStyle);
}

void LlmProvidersPage::storeFields() {
  Entry *e = current();
  if (!e) return;
  auto &c = e->config;
  c.name = name_->text().trimmed().toStdString();
  c.format = kwb::llm::wireFormatFromName(format_->currentData().toString().toStdString())
                 .value_or(kwb::llm::WireFormat::OpenAIChat);
  c.baseUrl = baseUrl_->text().trimmed().toStdString();
  c.model = model_->currentText().trimmed().toStdString();
  c.keyInKeychain = keyFromKeychain_->isChecked();
  c.apiKeyEnv = c.keyInKeychain ? std::string() : keyEnv_->text().trimmed().toStdString();
  c.maxConcurrent = maxConcurrent_->value();
  c.stallTimeout = std::chrono::seconds(stallTimeout_->value());
  c.contextWindow = contextWindow_->value();
  c.maxOutputTokens = maxOutputTokens_->value();
  const auto in = priceValue(inputPrice_), out = priceValue(outputPrice_);
  if (in || out)
    c.price = kwb::llm::Price{in.value_or(0), out.value_or(0)};
  else
    c.price.reset();
  if (QListWidgetItem *item = list_->item(currentRow())) item->setText(qs(c.name));
}

void LlmProvidersPage::fieldsEdited() {
  if (loading_) return;
  storeFields();
  dirty_ = true;
  validate(currentRow(), true);
  updateKeyStatus();
}

bool LlmProvidersPage::validate(int row, bool showInline) {
  if (row < 0 || row >= static_cast<int>(entries_.size())) return true;
  const auto &c = entries_[static_cast<std::size_t>(row)].config;
  QStringList others;
  for (int i = 0; i < static_cast<int>(entries_.size()); ++i)
    if (i != row) others.append(qs(entries_[static_cast<std::size_t>(i)].config.name));
  const QString nameProblem = providerNameProblem(qs(c.name), others);
  const QString urlProblem = baseUrlProblem(qs(c.baseUrl));
  const QString variable = qs(c.apiKeyEnv);
  const bool variableOk = c.keyInKeychain || variable.isEmpty() || isVariableName(variable);
  if (showInline && row == currentRow()) {
    setMessage(nameError_, nameProblem, kErrorStyle);
    setMessage(urlError_, urlProblem, kErrorStyle);
  }
  return nameProblem.isEmpty() && urlProblem.isEmpty() && variableOk;
}

void LlmProvidersPage::updateKeyStatus() {
  const Entry *e = current();
  if (!e) return;
  const auto &c = e->config;
  const QString variable = qs(c.apiKeyEnv);
  if (c.keyInKeychain) {
    setMessage(keyEnvStatus_, QString(), kHintStyle);
  } else if (variable.isEmpty()) {
    setMessage(keyEnvStatus_, tr("No key is sent: right for a local server."), kHintStyle);
  } else if (!isVariableName(variable)) {
    setMessage(keyEnvStatus_,
               tr("\"%1\" is not an environment variable name (letters, digits and _, not starting with a "
                  "digit). Name the variable that holds the key, not the key itself; or keep the key in the "
                  "desktop keychain.")
                   .arg(variable.left(4) + (variable.size() > 4 ? QStringLiteral("…") : QString())),
               kErrorStyle);
  } else if (qEnvironmentVariableIsEmpty(variable.toLocal8Bit().constData())) {
    setMessage(keyEnvStatus_,
               tr("%1 is not set in the environment Kernel Workbench was started from; set it there and "
                  "start it again.")
                   .arg(variable),
               kErrorStyle);
  } else {
    setMessage(keyEnvStatus_, tr("%1 is set; its value is read when a request is sent.").arg(variable),
               kOkStyle);
  }

  const QString name = qs(c.name);
  if (!c.keyInKeychain) {
    setMessage(keychainStatus_, QString(), kHintStyle);
  } else if (keychainMessages_.contains(name)) {
    const QString message = keychainMessages_.value(name);
    const bool good = message == tr("Stored in the desktop keychain.") ||
                      message == tr("Storing the key in the desktop keychain…");
    setMessage(keychainStatus_, message, good ? kOkStyle : kErrorStyle);
  } else if (!e->pendingKey.isEmpty()) {
    setMessage(keychainStatus_, tr("Stored in the desktop keychain (never in a file) when you press Apply."),
               kHintStyle);
  } else {
    setMessage(keychainStatus_,
               tr("Read from the desktop keychain (entry \"%1\" of \"%2\") when a request is sent.")
                   .arg(name, QLatin1String(Keychain::kService)),
               kHintStyle);
  }
}

void LlmProvidersPage::withKey(const Entry &entry, std::function<void(const QString &)> then) {
  const auto &c = entry.config;
  if (!c.keyInKeychain) {
    then(qs(kwb::llm::keyFromEnvironment(c)));
    return;
  }
  if (!entry.pendingKey.isEmpty()) {
    then(entry.pendingKey);
    return;
  }
  const QString name = qs(c.name);
  auto &waiters = keyWaiters_[name];
  waiters.push_back(std::move(then));
  if (waiters.size() == 1) keychain_->readKey(name);
}

void LlmProvidersPage::maybeListModels(bool onlyWhenCheap) {
  Entry *e = current();
  if (!e || !baseUrlProblem(qs(e->config.baseUrl)).isEmpty()) return;
  if (onlyWhenCheap && !isLocalUrl(qs(e->config.baseUrl))) {
    const bool haveKey =
        e->config.keyInKeychain ? !e->pendingKey.isEmpty() : !kwb::llm::keyFromEnvironment(e->config).empty();
    if (!haveKey) {
      if (e->models.isEmpty())
        setMessage(modelsStatus_, tr("Press Refresh models to list the models this service offers."),
                   kHintStyle);
      return;
    }
  }
  refreshModels();
}

void LlmProvidersPage::refreshModels() {
  storeFields();
  Entry *e = current();
  if (!e) return;
  const QString problem = baseUrlProblem(qs(e->config.baseUrl));
  if (!problem.isEmpty()) {
    setMessage(modelsStatus_, problem, kErrorStyle);
    return;
  }
  modelsFor_ = e->uid;
  modelsUrl_ = qs(e->config.baseUrl);
  setMessage(modelsStatus_, tr("Asking %1 for its models…").arg(qs(kwb::redactedUrl(e->config.baseUrl))), kHintStyle);
  const quint64 uid = e->uid;
  const kwb::llm::ProviderConfig config = e->config;
  withKey(*e, [this, uid, config](const QString &key) {
    if (modelsFor_ != uid) return;  // another provider asked since
    service_->listModels(config, key);
  });
}

void LlmProvidersPage::onModelsListed(const QStringList &models, const QString &error, double secs) {
  Entry *e = entryByUid(modelsFor_);
  if (!e) return;
  e->modelsListedFor = modelsUrl_;
  if (error.isEmpty()) {
    e->models = models;
    e->modelsMessage = models.isEmpty()
                           ? tr("The server lists no model; type the model's name.")
                           : tr("%1 from the server, listed in %2.")
                                 .arg(modelCount(static_cast<int>(models.size())), seconds(secs));
    if (e->config.model.empty() && !models.isEmpty()) {
      e->config.model = models.first().toStdString();
      dirty_ = true;
    }
  } else {
    e->modelsMessage = tr("Could not list the models: %1").arg(error);
  }
  if (e == current()) {
    updateModelsCombo(*e);
    if (!error.isEmpty()) setMessage(modelsStatus_, e->modelsMessage, kErrorStyle);
  }
}

void LlmProvidersPage::setTesting(bool testing) {
  test_->setEnabled(!testing && currentRow() >= 0);
  cancel_->setEnabled(testing);
  emit testStateChanged(testing);
}

void LlmProvidersPage::testConnection() {
  storeFields();
  Entry *e = current();
  if (!e || service_->isTesting()) return;
  const int row = currentRow();
  if (!validate(row, true)) {
    setMessage(testStatus_, tr("Fix the fields marked in red first."), kErrorStyle);
    return;
  }
  if (e->config.model.empty()) {
    setMessage(testStatus_, tr("Choose a model first (Refresh models lists the ones the server has)."),
               kErrorStyle);
    return;
  }
  const quint64 serial = ++testSerial_;
  testOutput_->clear();
  setMessage(testStatus_,
             tr("Sending a tiny request to %1 at %2…").arg(qs(e->config.model), qs(kwb::redactedUrl(e->config.baseUrl))),
             kHintStyle);
  setTesting(true);
  const kwb::llm::ProviderConfig config = e->config;
  withKey(*e, [this, serial, config](const QString &key) {
    if (testSerial_ != serial) return;  // cancelled while the keychain answered
    service_->testConnection(config, key, qs(config.model));
  });
}

void LlmProvidersPage::cancelTest() {
  if (service_->isTesting()) {
    service_->cancel();
    setMessage(testStatus_, tr("Cancelling…"), kHintStyle);
    return;
  }
  // Still waiting for the keychain: nothing was sent yet.
  ++testSerial_;
  setTesting(false);
  setMessage(testStatus_, tr("Cancelled before anything was sent."), kHintStyle);
}

void LlmProvidersPage::onTestFinished(const ConnectionTest &result) {
  setTesting(false);
  testOutput_->setPlainText(result.text);
  if (result.ok) {
    QString usage;
    if (result.inputTokens > 0 || result.outputTokens > 0)
      usage = tr("; %1 tokens in, %2 out%3")
                  .arg(result.inputTokens)
                  .arg(result.outputTokens)
                  .arg(result.usageReported ? QString() : tr(" (estimated)"));
    const QString first = result.secondsToFirstToken >= 0
                              ? tr("first token after %1").arg(seconds(result.secondsToFirstToken))
                              : tr("no text token arrived");
    // What the server says of its limits fills the fields it left "not known".
    QStringList limits;
    Entry *e = current();
    const bool same = e && qs(e->config.name) == result.provider;
    if (result.contextWindow > 0) {
      limits << tr("context window %1 tokens").arg(result.contextWindow);
      if (same && contextWindow_->value() == 0) contextWindow_->setValue(result.contextWindow);
    }
    if (result.serverSlots > 0) {
      limits << (result.serverSlots == 1 ? tr("1 request at once") : tr("%1 requests at once").arg(result.serverSlots));
      if (same && maxConcurrent_->value() > result.serverSlots) maxConcurrent_->setValue(result.serverSlots);
    }
    const QString said = limits.isEmpty() ? tr(" The server does not say its context window: set it below if "
                                               "you know it.")
                                          : tr(" The server says: %1 (%2).").arg(limits.join(tr(", ")), result.limitsFrom);
    setMessage(testStatus_,
               tr("Connected to %1 (%2): %3 in all, %4%5.%6%7")
                   .arg(result.provider, result.model, seconds(result.seconds), first, usage, said,
                        result.note.isEmpty() ? QString() : QStringLiteral(" ") + result.note),
               kOkStyle);
  } else if (result.cancelled) {
    setMessage(testStatus_, tr("Cancelled after %1.").arg(seconds(result.seconds)), kHintStyle);
  } else {
    setMessage(testStatus_,
               tr("Failed after %1: %2%3")
                   .arg(seconds(result.seconds), result.error,
                        result.note.isEmpty() ? QString() : tr(" (%1)").arg(result.note)),
               kErrorStyle);
  }
}

void LlmProvidersPage::onKeychainFailed(const QString &provider, const QString &operation,
                                        const QString &message) {
  keychainMessages_.insert(provider, message);
  if (operation == QLatin1String("write")) keysBeingWritten_.remove(provider);  // the key stays pending
  if (operation == QLatin1String("read")) {
    // Go on without a key: the server's answer (401) then says the rest.
    auto waiters = keyWaiters_.take(provider);
    for (auto &then : waiters) then(QString());
  }
  updateKeyStatus();
}

std::vector<kwb::llm::ProviderConfig> LlmProvidersPage::providers() const {
  std::vector<kwb::llm::ProviderConfig> out;
  out.reserve(entries_.size());
  for (const Entry &e : entries_) out.push_back(e.config);
  return out;
}

void LlmProvidersPage::load() {
  struct Kept {
    QString pendingKey;
    QStringList models;
    QString modelsListedFor, modelsMessage;
  };
  QHash<QString, Kept> kept;
  for (const Entry &e : entries_)
    kept.insert(qs(e.config.name), {e.pendingKey, e.models, e.modelsListedFor, e.modelsMessage});
  const QString selected =
      currentRow() >= 0 ? qs(entries_[static_cast<std::size_t>(currentRow())].config.name) : QString();

  std::vector<kwb::llm::ProviderConfig> loaded;
  QString file;
  try {
    file = QDir::toNativeSeparators(QString::fromStdString(kwb::llm::providersFile().string()));
    loaded = kwb::llm::loadProviders();
    loadFailed_ = false;
    setMessage(fileStatus_, tr("Providers are kept in %1; keys never are.").arg(file), kHintStyle);
  } catch (const std::exception &e) {
    loadFailed_ = true;
    setMessage(fileStatus_,
               tr("%1 Apply replaces the file with the providers listed here.")
                   .arg(QString::fromStdString(e.what())),
               kErrorStyle);
  }

  loading_ = true;
  entries_.clear();
  list_->clear();
  for (auto &config : loaded) {
    Entry entry;
    entry.uid = nextUid_++;
    entry.config = std::move(config);
    entry.storedName = qs(entry.config.name);
    const auto it = kept.constFind(qs(entry.config.name));
    if (it != kept.constEnd()) {
      entry.pendingKey = it->pendingKey;
      entry.models = it->models;
      entry.modelsListedFor = it->modelsListedFor;
      entry.modelsMessage = it->modelsMessage;
    }
    entries_.push_back(std::move(entry));
    list_->addItem(qs(entries_.back().config.name));
  }
  budget_->setValue(settings::llmBudgetDollars().value_or(0));
  removedKeychainNames_.clear();
  dirty_ = false;
  loading_ = false;

  int row = entries_.empty() ? -1 : 0;
  for (int i = 0; i < static_cast<int>(entries_.size()); ++i)
    if (qs(entries_[static_cast<std::size_t>(i)].config.name) == selected) row = i;
  list_->setCurrentRow(row);
  showEntry(row);
}

bool LlmProvidersPage::apply() {
  storeFields();
  for (int row = 0; row < static_cast<int>(entries_.size()); ++row) {
    if (validate(row, false)) continue;
    list_->setCurrentRow(row);
    validate(row, true);
    setMessage(fileStatus_,
               tr("The providers were not saved: fix \"%1\" first (marked in red).")
                   .arg(qs(entries_[static_cast<std::size_t>(row)].config.name)),
               kErrorStyle);
    return false;
  }
  // The keychain entry is named after the provider: a renamed one needs its key again.
  for (int row = 0; row < static_cast<int>(entries_.size()); ++row) {
    const Entry &e = entries_[static_cast<std::size_t>(row)];
    if (!e.config.keyInKeychain || e.storedName.isEmpty() || e.storedName == qs(e.config.name) || !e.pendingKey.isEmpty())
      continue;
    list_->setCurrentRow(row);
    setMessage(fileStatus_,
               tr("\"%1\" was renamed from \"%2\": its key is kept in the keychain under the old name. Enter the "
                  "key again, then apply.")
                   .arg(qs(e.config.name), e.storedName),
               kErrorStyle);
    return false;
  }
  for (const Entry &e : entries_)
    if (e.config.keyInKeychain && !e.storedName.isEmpty() && e.storedName != qs(e.config.name))
      removedKeychainNames_.append(e.storedName);  // its key is written under the new name below

  if (dirty_) {
    try {
      kwb::llm::saveProviders(providers());
      const QString file =
          QDir::toNativeSeparators(QString::fromStdString(kwb::llm::providersFile().string()));
      const int n = static_cast<int>(entries_.size());
      setMessage(fileStatus_,
                 (n == 1 ? tr("Saved 1 provider to %1; keys are never written there.")
                         : tr("Saved %1 providers to %2; keys are never written there.").arg(n))
                     .arg(file),
                 kOkStyle);
      loadFailed_ = false;
    } catch (const std::exception &e) {
      setMessage(fileStatus_, tr("The providers were not saved: %1").arg(QString::fromStdString(e.what())),
                 kErrorStyle);
      return false;
    }
  }

  // QtKeychain runs its jobs one at a time, in order: deletions before writes.
  for (const QString &name : std::as_const(removedKeychainNames_)) {
    const bool stillUsed = std::any_of(entries_.begin(), entries_.end(), [&name](const Entry &e) {
      return e.config.keyInKeychain && qs(e.config.name) == name;
    });
    if (!stillUsed) keychain_->deleteKey(name);
  }
  removedKeychainNames_.clear();
  for (const Entry &e : entries_) {
    if (!e.config.keyInKeychain || e.pendingKey.isEmpty()) continue;
    const QString name = qs(e.config.name);
    keychainMessages_.insert(name, tr("Storing the key in the desktop keychain…"));
    keysBeingWritten_.insert(name, e.pendingKey);
    keychain_->writeKey(name, e.pendingKey);
  }
  for (Entry &e : entries_) e.storedName = qs(e.config.name);
  const double budget = budget_->value();
  settings::setLlmBudgetDollars(budget > 0 ? std::optional<double>(budget) : std::nullopt);
  dirty_ = false;
  updateKeyStatus();
  return true;
}

}  // namespace kwb::ui
