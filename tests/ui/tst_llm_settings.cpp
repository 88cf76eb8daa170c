// Settings page "LLM providers" against a real HTTP server on loopback (helpers/
// loopback_http_server) serving a model list and a recorded OpenAI stream: a provider added from
// a template fills its model list with no typing, the connection test streams its text live and
// reports latency, the key named by an environment variable goes out as a Bearer header, Apply
// writes the providers file, and no key lands in any file the app wrote. The keychain is not
// reachable here (no session bus): storing a key there fails in words. Cancel stops an endless
// stream within a second. Validation is inline; removal asks first; servers found on this
// machine are offered in the Add menu.
#include "isolated_home.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <QAction>
#include <QComboBox>
#include <QDirIterator>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QSignalSpy>
#include <QUuid>
#include <QtTest>

#include "core/llm/provider_config.h"
#include "core/llm/wire_format.h"
#include "helpers/loopback_http_server.h"
#include "ui/settings/app_settings.h"
#include "ui/settings/keychain.h"
#include "ui/settings/llm_providers_page.h"
#include "ui/services/llm_service.h"
#include "ui/settings/settings_dialog.h"

using kwb::test::LoopbackHttpServer;
using kwb::test::ScriptedResponse;
using kwb::ui::LlmProvidersPage;
using kwb::ui::LlmService;
using kwb::ui::SettingsDialog;
using namespace std::chrono_literals;

namespace {

const char *kModelsBody =
    R"({"object":"list","data":[{"id":"m-1","object":"model"},{"id":"m-2","object":"model"}]})";

// An OpenAI chat-completions stream as such servers send it: a role chunk, content chunks, the
// finish chunk, a usage chunk (stream_options.include_usage), then [DONE].
std::string inlineStream() {
  auto chunk = [](const std::string &delta, const std::string &finish) {
    return std::string(
               R"(data: {"id":"chatcmpl-9xKq2","object":"chat.completion.chunk","created":1732912345,)"
               R"("model":"m-1","system_fingerprint":"fp_a1b2c3","choices":[{"index":0,"delta":)") +
           delta + R"(,"logprobs":null,"finish_reason":)" + finish + "}]}\n\n";
  };
  return chunk(R"({"role":"assistant","content":""})", "null") + chunk(R"({"content":"Hello"})", "null") +
         chunk(R"({"content":" there"})", "null") + chunk(R"({"content":", kernel"})", "null") +
         chunk(R"({"content":" hacker!"})", "null") + chunk("{}", R"("stop")") +
         R"(data: {"id":"chatcmpl-9xKq2","object":"chat.completion.chunk","created":1732912345,"model":"m-1",)"
         R"("system_fingerprint":"fp_a1b2c3","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":5,)"
         R"("total_tokens":26}})"
         "\n\ndata: [DONE]\n\n";
}

// The recorded fixture when the suite has it, else the inline stream.
std::string recordedStream() {
  const QString fixture = QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/llm/openai_stream_text.sse");
  return QFile::exists(fixture) ? kwb::test::readFixture("llm/openai_stream_text.sse") : inlineStream();
}

// What the production decoder makes of a stream: the text the page must show.
QString decodedText(const std::string &stream) {
  auto decoder = kwb::llm::makeDecoder(kwb::llm::WireFormat::OpenAIChat, true);
  decoder->feed(stream);
  decoder->finish();
  return QString::fromStdString(decoder->response().text);
}

// The stream split at its events, so it arrives in pieces the page can show one by one.
std::vector<std::string> eventsOf(const std::string &stream) {
  std::vector<std::string> events;
  std::size_t start = 0;
  while (start < stream.size()) {
    std::size_t end = stream.find("\n\n", start);
    end = end == std::string::npos ? stream.size() : end + 2;
    events.push_back(stream.substr(start, end - start));
    start = end;
  }
  return events;
}

ScriptedResponse jsonResponse(const std::string &body) {
  ScriptedResponse r;
  r.headers = {{"Content-Type", "application/json"}};
  r.chunks = {body};
  r.chunkedEncoding = false;
  return r;
}

ScriptedResponse sseResponse(std::vector<std::string> chunks, std::chrono::milliseconds between,
                             bool endless) {
  ScriptedResponse r;
  r.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  r.chunks = std::move(chunks);
  r.delayBetweenChunks = between;
  r.endless = endless;
  return r;
}

QString randomSecret(const QString &prefix) {
  return prefix + QUuid::createUuid().toString(QUuid::Id128);
}

}  // namespace

class TestLlmSettings : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void fieldProblemsAreWords_data();
  void fieldProblemsAreWords();
  void validationIsInlineAndBlocksApply();
  void modelsFillAndTestStreamsWithTheEnvironmentKey();
  void keychainKeyFailsInWordsAndLeaksNowhere();
  void cancelStopsAnEndlessStream();
  void serverFoundOnThisMachineIsOffered();
  void removeAsksFirst();
  void renamedKeychainProviderNeedsItsKey();

 private:
  // A shown Settings dialog on the LLM providers page.
  std::unique_ptr<SettingsDialog> openDialog();
  // A provider from the llama.cpp template pointed at the loopback server; waits for its models.
  void addProviderAtServer(LlmProvidersPage *page, const QString &name);
  // Every file under the temporary home (HOME, XDG folders, QSettings, the providers file), and the
  // screenshot, that holds `secret` (as UTF-8 or UTF-16), binary-safe.
  QStringList filesContaining(const QString &secret) const;
  QString providersFile() const { return home_->path(QStringLiteral("providers/providers.json")); }
  QString serverV1() const { return QString::fromStdString(server_->baseUrl()) + QStringLiteral("/v1"); }
  void routeRecordedStream();

  std::unique_ptr<IsolatedHome> home_;
  std::unique_ptr<LoopbackHttpServer> server_;
  QString envSecret_, keychainSecret_;
  std::string stream_;
  QString expectedText_;
};

void TestLlmSettings::initTestCase() {
  home_ = std::make_unique<IsolatedHome>();
  QVERIFY(home_->isValid());
  qputenv("KWB_PROVIDERS_FILE", providersFile().toUtf8());
  // No session bus, no display to start one from: the desktop keychain is never reachable, so the
  // user's real keychain is never touched by this test, wherever it runs.
  qunsetenv("DBUS_SESSION_BUS_ADDRESS");
  qunsetenv("DISPLAY");
  qunsetenv("WAYLAND_DISPLAY");
  envSecret_ = randomSecret(QStringLiteral("sk-test-"));
  keychainSecret_ = randomSecret(QStringLiteral("sk-test-kc-"));
  qputenv("KWB_TEST_SECRET_KEY", envSecret_.toUtf8());
  // QSettings lives under the temporary home (IsolatedHome's test mode).
  const QString settingsFile =
      QSettings(QStringLiteral("KernelWorkbench"), QStringLiteral("kernel-workbench")).fileName();
  QVERIFY2(settingsFile.startsWith(home_->root()), qPrintable(settingsFile));

  server_ = std::make_unique<LoopbackHttpServer>();
  server_->route("GET", "/v1/models", {jsonResponse(kModelsBody)});
  stream_ = recordedStream();
  expectedText_ = decodedText(stream_);
  QVERIFY(!expectedText_.isEmpty());
  routeRecordedStream();
}

void TestLlmSettings::routeRecordedStream() {
  server_->route("POST", "/v1/chat/completions", {sseResponse(eventsOf(stream_), 40ms, false)});
}

std::unique_ptr<SettingsDialog> TestLlmSettings::openDialog() {
  auto dialog = std::make_unique<SettingsDialog>();
  if (!dialog->showPage(QStringLiteral("LLM providers"))) return nullptr;
  dialog->show();
  if (!QTest::qWaitForWindowExposed(dialog.get())) return nullptr;
  return dialog;
}

void TestLlmSettings::addProviderAtServer(LlmProvidersPage *page, const QString &name) {
  QAction *llamaCpp = page->addMenu()->findChild<QAction *>(QStringLiteral("template:llama.cpp"));
  QVERIFY(llamaCpp);
  const int before = page->providerList()->count();
  llamaCpp->trigger();
  QCOMPARE(page->providerList()->count(), before + 1);
  QCOMPARE(page->providerList()->currentRow(), before);
  page->nameField()->setText(name);
  QCOMPARE(page->providerList()->currentItem()->text(), name);
  page->baseUrlField()->setText(serverV1());
  // The model list comes from the server: nothing is typed into the model field.
  QTRY_COMPARE_WITH_TIMEOUT(page->modelField()->count(), 2, 10000);
  QCOMPARE(page->modelField()->itemText(0), QStringLiteral("m-1"));
  QCOMPARE(page->modelField()->itemText(1), QStringLiteral("m-2"));
  QCOMPARE(page->modelField()->currentText(), QStringLiteral("m-1"));
  QVERIFY2(page->modelsStatus()->text().contains(QStringLiteral("2 models from the server")),
           qPrintable(page->modelsStatus()->text()));
}

QStringList TestLlmSettings::filesContaining(const QString &secret) const {
  const QByteArray utf8 = secret.toUtf8();
  const QByteArray utf16(reinterpret_cast<const char *>(secret.utf16()), secret.size() * 2);
  QStringList hits;
  QStringList files = {QStringLiteral(KWB_TEST_OUTPUT_DIR "/llm-settings.png")};
  QDirIterator it(home_->root(), QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
  while (it.hasNext()) files.append(it.next());
  int scanned = 0;
  for (const QString &path : std::as_const(files)) {
    if (!QFile::exists(path)) continue;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
      hits.append(path + QStringLiteral(" (unreadable)"));
      continue;
    }
    const QByteArray bytes = file.readAll();
    ++scanned;
    if (bytes.contains(utf8) || bytes.contains(utf16)) hits.append(path);
  }
  if (scanned == 0) hits.append(QStringLiteral("(no file scanned: the check saw nothing)"));
  return hits;
}

void TestLlmSettings::fieldProblemsAreWords_data() {
  QTest::addColumn<QString>("url");
  QTest::addColumn<QString>("problem");  // a part of the message; empty: no problem
  QTest::newRow("local") << QStringLiteral("http://127.0.0.1:8080/v1") << QString();
  QTest::newRow("hosted") << QStringLiteral(" https://api.openai.com/v1 ") << QString();
  QTest::newRow("empty") << QString() << QStringLiteral("empty");
  QTest::newRow("no scheme") << QStringLiteral("127.0.0.1:8080/v1") << QStringLiteral("http://");
  QTest::newRow("ftp") << QStringLiteral("ftp://host/v1") << QStringLiteral("http://");
  QTest::newRow("no host") << QStringLiteral("http:///v1") << QStringLiteral("host");
  QTest::newRow("query") << QStringLiteral("http://h/v1?x=1") << QStringLiteral("query");
}

void TestLlmSettings::fieldProblemsAreWords() {
  QFETCH(QString, url);
  QFETCH(QString, problem);
  const QString said = kwb::ui::baseUrlProblem(url);
  if (problem.isEmpty())
    QVERIFY2(said.isEmpty(), qPrintable(said));
  else
    QVERIFY2(said.contains(problem), qPrintable(said));
  QVERIFY(kwb::ui::providerNameProblem(QStringLiteral("a"), {QStringLiteral("b")}).isEmpty());
  QVERIFY(kwb::ui::providerNameProblem(QStringLiteral(" b "), {QStringLiteral("b")})
              .contains(QStringLiteral("unique")));
  QVERIFY(kwb::ui::providerNameProblem(QStringLiteral("  "), {}).contains(QStringLiteral("name")));
}

void TestLlmSettings::validationIsInlineAndBlocksApply() {
  auto dialog = openDialog();
  QVERIFY(dialog);
  LlmProvidersPage *page = dialog->llmProvidersPage();
  QCOMPARE(page->providerList()->count(), 0);
  QVERIFY(page->addFromTemplate(QStringLiteral("vllm")) == 0);
  QVERIFY(page->addFromTemplate(QStringLiteral("sglang")) == 1);
  QVERIFY(page->nameError()->isHidden());
  page->nameField()->setText(QStringLiteral("vllm"));
  QVERIFY(!page->nameError()->isHidden());
  QVERIFY2(page->nameError()->text().contains(QStringLiteral("already called \"vllm\"")),
           qPrintable(page->nameError()->text()));
  page->baseUrlField()->setText(QStringLiteral("localhost:30000/v1"));
  QVERIFY(!page->baseUrlError()->isHidden());
  QVERIFY2(page->baseUrlError()->text().contains(QStringLiteral("http://")),
           qPrintable(page->baseUrlError()->text()));

  // Apply refuses, says why, shows the first provider at fault, and keeps what was typed; the file
  // is not written.
  QVERIFY(!dialog->apply());
  QCOMPARE(page->providerList()->currentRow(), 0);
  QVERIFY(!page->nameError()->isHidden());
  QVERIFY2(page->fileStatus()->text().contains(QStringLiteral("not saved")),
           qPrintable(page->fileStatus()->text()));
  QVERIFY(!QFile::exists(providersFile()));
  page->providerList()->setCurrentRow(1);
  QCOMPARE(page->nameField()->text(), QStringLiteral("vllm"));
  QCOMPARE(page->baseUrlField()->text(), QStringLiteral("localhost:30000/v1"));

  page->nameField()->setText(QStringLiteral("sglang-box"));
  page->baseUrlField()->setText(QStringLiteral("http://localhost:30000/v1"));
  QVERIFY(page->nameError()->isHidden());
  QVERIFY(page->baseUrlError()->isHidden());
  // A key pasted where the variable's name belongs is refused in words.
  page->keyVariableField()->setText(QStringLiteral("sk-pasted-by-mistake"));
  QVERIFY2(page->keyVariableStatus()->text().contains(QStringLiteral("not an environment variable name")),
           qPrintable(page->keyVariableStatus()->text()));
  QVERIFY(!page->apply());
  // ... also one that matches a variable name's pattern (hf_..., or long mixed case with digits),
  // and the status line shows no more than its first characters.
  const QString hfToken = QStringLiteral("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789");
  page->keyVariableField()->setText(hfToken);
  QVERIFY2(page->keyVariableStatus()->text().contains(QStringLiteral("not an environment variable name")),
           qPrintable(page->keyVariableStatus()->text()));
  QVERIFY(!page->keyVariableStatus()->text().contains(hfToken.mid(4)));
  QVERIFY(!page->apply());
  page->keyVariableField()->setText(QStringLiteral("OPENAI_API_KEY"));
  // A base URL carrying credentials or a query is refused.
  page->baseUrlField()->setText(QStringLiteral("https://user:secret@example.com/v1"));
  QVERIFY(!page->baseUrlError()->isHidden());
  QVERIFY(!page->apply());
  page->baseUrlField()->setText(QStringLiteral("http://localhost:30000/v1?key=abc"));
  QVERIFY(!page->apply());
  QVERIFY(!QFile::exists(providersFile()));
  // Closing without applying leaves nothing behind.
}

void TestLlmSettings::modelsFillAndTestStreamsWithTheEnvironmentKey() {
  auto dialog = openDialog();
  QVERIFY(dialog);
  LlmProvidersPage *page = dialog->llmProvidersPage();
  QCOMPARE(page->providerList()->count(), 0);

  // The key is named, not typed: an environment variable the page says is set.
  QAction *llamaCpp = page->addMenu()->findChild<QAction *>(QStringLiteral("template:llama.cpp"));
  QVERIFY(llamaCpp);
  const std::size_t requestsBefore = server_->requests().size();
  llamaCpp->trigger();
  QVERIFY(page->keyFromEnvironmentButton()->isChecked());
  page->keyVariableField()->setText(QStringLiteral("KWB_TEST_SECRET_KEY"));
  QVERIFY2(page->keyVariableStatus()->text().contains(QStringLiteral("KWB_TEST_SECRET_KEY is set")),
           qPrintable(page->keyVariableStatus()->text()));
  page->nameField()->setText(QStringLiteral("loopback"));
  page->baseUrlField()->setText(serverV1());
  QTRY_COMPARE_WITH_TIMEOUT(page->modelField()->count(), 2, 10000);
  QCOMPARE(page->modelField()->itemText(0), QStringLiteral("m-1"));
  QCOMPARE(page->modelField()->itemText(1), QStringLiteral("m-2"));
  QCOMPARE(page->modelField()->currentText(), QStringLiteral("m-1"));

  // The connection test: the text arrives piece by piece, then latency and first-token time;
  // then the server's limits, where it says them (a llama.cpp server's /props).
  server_->route("GET", "/props", {jsonResponse(R"({"default_generation_settings":{"n_ctx":4096},"total_slots":1})")});
  QCOMPARE(page->maxConcurrentField()->value(), 1);  // llama.cpp: one request at once unless it says more
  QCOMPARE(page->contextWindowField()->text(), QStringLiteral("not known"));
  QSignalSpy live(page->service(), &LlmService::testText);
  QSignalSpy finished(page->service(), &LlmService::testFinished);
  QVERIFY(page->testButton()->isEnabled());
  QVERIFY(!page->cancelTestButton()->isEnabled());
  QTest::mouseClick(page->testButton(), Qt::LeftButton);
  QVERIFY(!page->testButton()->isEnabled());
  QVERIFY(page->cancelTestButton()->isEnabled());
  QVERIFY(finished.wait(15000));
  const auto result = finished.takeFirst().at(0).value<kwb::ui::ConnectionTest>();
  QVERIFY2(result.ok, qPrintable(result.error));
  QVERIFY(result.seconds > 0);
  QVERIFY(result.secondsToFirstToken >= 0 && result.secondsToFirstToken <= result.seconds);
  QCOMPARE(page->testOutput()->toPlainText(), expectedText_);
  QVERIFY2(live.size() >= 2, "the answer should arrive in several pieces (40 ms apart)");
  const QString firstPiece = live.first().at(0).toString();
  QVERIFY2(!firstPiece.isEmpty() && firstPiece.size() < expectedText_.size() &&
               expectedText_.startsWith(firstPiece),
           qPrintable(firstPiece));
  const QString status = page->testStatus()->text();
  QVERIFY2(status.startsWith(QStringLiteral("Connected to loopback (m-1): ")), qPrintable(status));
  QVERIFY2(status.contains(QStringLiteral(" s in all, first token after ")), qPrintable(status));
  QVERIFY2(status.contains(QStringLiteral("The server says: context window 4096 tokens, 1 request at once")),
           qPrintable(status));
  QCOMPARE(page->contextWindowField()->value(), 4096);  // filled where it was "not known"
  server_->route("GET", "/props", {});
  QVERIFY(page->testButton()->isEnabled());
  QVERIFY(!page->cancelTestButton()->isEnabled());

  // Both requests carried the key from the environment, as a Bearer header.
  const auto requests = server_->requests();
  bool sawModels = false, sawChat = false;
  for (std::size_t i = requestsBefore; i < requests.size(); ++i) {
    const auto &r = requests[i];
    const auto auth = r.headers.find("authorization");
    QVERIFY2(auth != r.headers.end(), r.path.c_str());
    QCOMPARE(QString::fromStdString(auth->second), QStringLiteral("Bearer ") + envSecret_);
    if (r.method == "GET" && r.path == "/v1/models") sawModels = true;
    if (r.method == "POST" && r.path == "/v1/chat/completions") {
      sawChat = true;
      QVERIFY2(r.body.find("\"m-1\"") != std::string::npos, r.body.c_str());
    }
  }
  QVERIFY(sawModels);
  QVERIFY(sawChat);

  // Apply writes the providers file (the variable's name, never its value) and the budget.
  page->budgetField()->setValue(12.5);
  page->inputPriceField()->setText(QStringLiteral("0.5"));
  // The model's window and answer limit (a session's W and G cap): "not known" until set.
  page->contextWindowField()->setValue(8192);
  page->maxOutputTokensField()->setValue(1024);
  QVERIFY(dialog->apply());
  QVERIFY(QFile::exists(providersFile()));
  const auto saved = kwb::llm::loadProviders(providersFile().toStdString());
  QCOMPARE(saved.size(), std::size_t(1));
  QCOMPARE(QString::fromStdString(saved[0].name), QStringLiteral("loopback"));
  QCOMPARE(QString::fromStdString(saved[0].baseUrl), serverV1());
  QCOMPARE(QString::fromStdString(saved[0].model), QStringLiteral("m-1"));
  QCOMPARE(QString::fromStdString(saved[0].apiKeyEnv), QStringLiteral("KWB_TEST_SECRET_KEY"));
  QVERIFY(!saved[0].keyInKeychain);
  QVERIFY(saved[0].price.has_value());
  QCOMPARE(saved[0].price->inputPerMillion, 0.5);
  QCOMPARE(saved[0].contextWindow, 8192);
  QCOMPARE(saved[0].maxOutputTokens, 1024);
  QCOMPARE(kwb::ui::settings::llmBudgetDollars().value_or(0), 12.5);
  QVERIFY2(page->fileStatus()->text().contains(QStringLiteral("Saved 1 provider")),
           qPrintable(page->fileStatus()->text()));
  // The page shows what was stored, the test result still in view.
  QCOMPARE(page->providerList()->count(), 1);
  QCOMPARE(page->modelField()->currentText(), QStringLiteral("m-1"));

  // The picture for the README: the page with a provider and a successful test.
  const QString png = QStringLiteral(KWB_TEST_OUTPUT_DIR "/llm-settings.png");
  QVERIFY(dialog->grab().save(png));
  qInfo("screenshot: %s", qPrintable(png));

  // The secret leak check; the scan itself is checked by finding what the file does hold.
  QVERIFY(filesContaining(QStringLiteral("KWB_TEST_SECRET_KEY")).contains(providersFile()));
  const QStringList leaks = filesContaining(envSecret_);
  QVERIFY2(leaks.isEmpty(), qPrintable(leaks.join(QStringLiteral(", "))));
}

void TestLlmSettings::keychainKeyFailsInWordsAndLeaksNowhere() {
  auto dialog = openDialog();
  QVERIFY(dialog);
  LlmProvidersPage *page = dialog->llmProvidersPage();
  QCOMPARE(page->providerList()->count(), 1);
  addProviderAtServer(page, QStringLiteral("keyed"));
  if (QTest::currentTestFailed()) return;
  page->keyFromKeychainButton()->setChecked(true);
  QVERIFY(page->keychainKeyField()->isEnabled());
  QCOMPARE(page->keychainKeyField()->echoMode(), QLineEdit::Password);
  QTest::keyClicks(page->keychainKeyField(), keychainSecret_);
  QVERIFY2(page->keychainStatus()->text().contains(QStringLiteral("when you press Apply")),
           qPrintable(page->keychainStatus()->text()));

  // The typed key works before it is stored (memory only).
  QSignalSpy finished(page->service(), &LlmService::testFinished);
  page->testConnection();
  QVERIFY(finished.wait(15000));
  // The chat request (then GET /props, where a llama.cpp server says its window).
  const auto requests = server_->requests();
  const auto chat = std::find_if(requests.rbegin(), requests.rend(), [](const auto &r) { return r.method == "POST"; });
  QVERIFY(chat != requests.rend());
  const auto &last = *chat;
  QCOMPARE(QString::fromStdString(last.path), QStringLiteral("/v1/chat/completions"));
  QCOMPARE(QString::fromStdString(requests.back().path), QStringLiteral("/props"));
  QCOMPARE(QString::fromStdString(last.headers.at("authorization")),
           QStringLiteral("Bearer ") + keychainSecret_);

  // Apply saves the file and tries the keychain, which is not there: it says so, in words.
  QSignalSpy failed(page->keychain(), &kwb::ui::Keychain::failed);
  QVERIFY(dialog->apply());
  QTRY_VERIFY_WITH_TIMEOUT(!failed.isEmpty(), 30000);
  QCOMPARE(failed.first().at(0).toString(), QStringLiteral("keyed"));
  QCOMPARE(failed.first().at(1).toString(), QStringLiteral("write"));
  const QString message = page->keychainStatus()->text();
  QVERIFY2(message.startsWith(QStringLiteral("the desktop keychain is not available: ")),
           qPrintable(message));
  QVERIFY2(
      message.endsWith(QStringLiteral("keep the key in an environment variable and name it here instead")),
      qPrintable(message));
  QVERIFY(!page->keychainStatus()->isHidden());

  const auto saved = kwb::llm::loadProviders(providersFile().toStdString());
  QCOMPARE(saved.size(), std::size_t(2));
  QCOMPARE(QString::fromStdString(saved[1].name), QStringLiteral("keyed"));
  QVERIFY(saved[1].keyInKeychain);
  QVERIFY(saved[1].apiKeyEnv.empty());

  for (const QString &secret : {keychainSecret_, envSecret_}) {
    const QStringList leaks = filesContaining(secret);
    QVERIFY2(leaks.isEmpty(), qPrintable(leaks.join(QStringLiteral(", "))));
  }
}

void TestLlmSettings::cancelStopsAnEndlessStream() {
  // One text delta, again and again, until the client goes away.
  const std::string delta =
      R"(data: {"id":"chatcmpl-endless","object":"chat.completion.chunk","created":1732912345,"model":"m-1",)"
      R"("choices":[{"index":0,"delta":{"content":"more "},"logprobs":null,"finish_reason":null}]})"
      "\n\n";
  server_->route("POST", "/v1/chat/completions", {sseResponse({delta}, 20ms, true)});

  auto dialog = openDialog();
  QVERIFY(dialog);
  LlmProvidersPage *page = dialog->llmProvidersPage();
  page->providerList()->setCurrentRow(0);
  QCOMPARE(page->nameField()->text(), QStringLiteral("loopback"));
  QSignalSpy live(page->service(), &LlmService::testText);
  QSignalSpy finished(page->service(), &LlmService::testFinished);
  QTest::mouseClick(page->testButton(), Qt::LeftButton);
  QVERIFY(live.wait(10000));
  QTRY_VERIFY_WITH_TIMEOUT(page->testOutput()->toPlainText().startsWith(QStringLiteral("more more ")), 10000);
  QVERIFY(finished.isEmpty());

  // The stream never ends by itself, so a finish at all is the cancel's doing. The wait is
  // generous (10 s) because this suite runs beside others on a 2-core machine: a tight wall-clock
  // bound would fail for the machine's load, not for the cancel.
  QTest::mouseClick(page->cancelTestButton(), Qt::LeftButton);
  QVERIFY(finished.wait(10000));
  const auto result = finished.first().at(0).value<kwb::ui::ConnectionTest>();
  QVERIFY(result.cancelled);
  QVERIFY(!result.ok);
  // Idle again: Test enabled, Cancel not, the status says what happened.
  QVERIFY(page->testButton()->isEnabled());
  QVERIFY(!page->cancelTestButton()->isEnabled());
  QVERIFY(!page->service()->isTesting());
  QVERIFY2(page->testStatus()->text().startsWith(QStringLiteral("Cancelled after")),
           qPrintable(page->testStatus()->text()));
  // The connection is gone on the server's side too.
  QVERIFY(server_->waitForNoOpenConnections(1000ms));
  QVERIFY(server_->lastClientGone().has_value());

  routeRecordedStream();
}

void TestLlmSettings::serverFoundOnThisMachineIsOffered() {
  auto dialog = openDialog();
  QVERIFY(dialog);
  LlmProvidersPage *page = dialog->llmProvidersPage();
  // The loopback server plays a llama.cpp server on its port.
  page->service()->setDiscoveryTargets(
      QStringLiteral("127.0.0.1"), {{"llama.cpp", server_->port(), kwb::llm::WireFormat::OpenAIChat, "/v1"}});
  QSignalSpy found(page, &LlmProvidersPage::discoveryFinished);
  page->discoverServers();
  QTRY_VERIFY_WITH_TIMEOUT(!found.isEmpty() && !page->service()->isDiscovering(), 10000);
  QAction *offer = nullptr;
  for (QAction *action : page->addMenu()->actions())
    if (action->objectName().startsWith(QStringLiteral("found:")) &&
        action->objectName().contains(QString::number(server_->port())))
      offer = action;
  QVERIFY(offer);
  QVERIFY2(offer->text().contains(QStringLiteral("2 models")), qPrintable(offer->text()));
  const int before = page->providerList()->count();
  offer->trigger();
  QCOMPARE(page->providerList()->count(), before + 1);
  QCOMPARE(page->modelField()->count(), 2);
  QCOMPARE(page->modelField()->currentText(), QStringLiteral("m-1"));
  QVERIFY2(page->baseUrlField()->text().startsWith(QString::fromStdString(server_->baseUrl())),
           qPrintable(page->baseUrlField()->text()));
  QVERIFY(page->nameError()->isHidden());
}

void TestLlmSettings::removeAsksFirst() {
  auto dialog = openDialog();
  QVERIFY(dialog);
  LlmProvidersPage *page = dialog->llmProvidersPage();
  QCOMPARE(page->providerList()->count(), 2);
  page->providerList()->setCurrentRow(0);

  auto confirm = [page](QMessageBox::StandardButton answer) {
    QTest::mouseClick(page->removeButton(), Qt::LeftButton);
    auto *box = page->findChild<QMessageBox *>(QStringLiteral("llmRemoveConfirmation"));
    QVERIFY(box);
    QVERIFY(box->text().contains(QStringLiteral("\"loopback\"")));
    QTest::mouseClick(box->button(answer), Qt::LeftButton);
    QTRY_VERIFY(!page->findChild<QMessageBox *>(QStringLiteral("llmRemoveConfirmation")));
  };
  confirm(QMessageBox::Cancel);
  if (QTest::currentTestFailed()) return;
  QCOMPARE(page->providerList()->count(), 2);
  confirm(QMessageBox::Yes);
  if (QTest::currentTestFailed()) return;
  QCOMPARE(page->providerList()->count(), 1);
  QCOMPARE(page->providerList()->item(0)->text(), QStringLiteral("keyed"));
  QVERIFY(dialog->apply());
  const auto saved = kwb::llm::loadProviders(providersFile().toStdString());
  QCOMPARE(saved.size(), std::size_t(1));
  QCOMPARE(QString::fromStdString(saved[0].name), QStringLiteral("keyed"));
}

// A keychain provider's entry is named after it: renamed, it needs its key again before Apply
// (the file keeps the old name until then).
void TestLlmSettings::renamedKeychainProviderNeedsItsKey() {
  auto dialog = openDialog();
  QVERIFY(dialog);
  LlmProvidersPage *page = dialog->llmProvidersPage();
  QCOMPARE(page->providerList()->count(), 1);
  page->providerList()->setCurrentRow(0);
  QVERIFY(page->keyFromKeychainButton()->isChecked());
  page->nameField()->setText(QStringLiteral("keyed-renamed"));
  QVERIFY(!dialog->apply());
  auto *status = page->findChild<QLabel *>(QStringLiteral("llmProvidersFileStatus"));
  QVERIFY(status);
  QVERIFY2(status->text().contains(QStringLiteral("was renamed from \"keyed\"")), qPrintable(status->text()));
  QCOMPARE(QString::fromStdString(kwb::llm::loadProviders(providersFile().toStdString()).at(0).name),
           QStringLiteral("keyed"));
}

QTEST_MAIN(TestLlmSettings)
#include "tst_llm_settings.moc"
