// Issue 45, 2: a key inside a provider URL ("http://user:KEY@host/v1?key=KEY") leaked into the
// workspace (agent_sessions.provider, llm_transcripts), kwb's output (sessions, llm transcripts,
// the optimize and llm test banners and errors, --json) and trajectory exports. Here a unique key
// goes into the URL of a real loopback LLM server (and of a closed port, for the error paths),
// every command runs as a user runs it, and every output and every file written is searched for
// it. And a workspace written before the fix, with the key in those columns, is opened: afterwards
// the key is nowhere in its files, WAL included.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <deque>
#include <fstream>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/store/database.h"
#include "core/store/migrations.h"
#include "core/store/workspace.h"
#include "helpers/replay_llm_server.h"
#include "helpers/test_files.h"

namespace fs = std::filesystem;

namespace {

const fs::path kSoftmax = fs::path(KWB_SOURCE_DIR) / "kernels" / "softmax";

QString kwbProgram() { return qEnvironmentVariable("KWB_CLI"); }

// 32 hex digits no file, fixture or output holds by chance.
std::string uniqueKey() {
  std::random_device device;
  std::mt19937_64 rng(device());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()), static_cast<unsigned long long>(rng()));
  return buf;
}

// `base` ("http://127.0.0.1:PORT/v1") with the key as the user's password and in two parameters.
std::string withKey(const std::string &base, const std::string &key) {
  const std::string scheme = "http://";
  return scheme + "user:" + key + "@" + base.substr(scheme.size()) + "?key=" + key + "&api_key=" + key + "&alt=json";
}

struct Run {
  QStringList args;
  int exitCode = -1;
  QByteArray out, err;
};

// kwb run as a user runs it, in `folder`, with `env`.
Run runKwb(const QProcessEnvironment &env, const QString &folder, const QStringList &args) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.setWorkingDirectory(folder);
  p.start(kwbProgram(), args);
  Run r;
  r.args = args;
  if (p.waitForFinished(240000) && p.exitStatus() == QProcess::NormalExit) r.exitCode = p.exitCode();
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

// Every file under `folder` that holds `needle`.
QStringList filesHolding(const fs::path &folder, const std::string &needle) {
  QStringList found;
  for (const auto &entry : fs::recursive_directory_iterator(folder))
    if (entry.is_regular_file() && kwb::test::readFile(entry.path()).find(needle) != std::string::npos)
      found << QString::fromStdString(entry.path().string());
  return found;
}

}  // namespace

class TestUrlCredentials : public QObject {
  Q_OBJECT
 private slots:
  void noCommandLeaksAKeyInTheUrl();
  void replayOfARunThroughAUserNameInTheWireFormat();
  void migrationLeavesSecureDeleteAsItWas();
  void migrationRedactsStoredUrls();
};

// moc does not read raw string literals: it sees only the class declaration above.
#ifndef Q_MOC_RUN
void TestUrlCredentials::noCommandLeaksAKeyInTheUrl() {
  QVERIFY2(!kwbProgram().isEmpty(), "run through ctest: KWB_CLI names kwb");
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const fs::path home = dir.path().toStdString();
  const std::string key = uniqueKey();
  kwb::test::ReplayLlmServer server(kSoftmax);
  int closedPort = 0;
  {
    kwb::test::LoopbackHttpServer gone;
    closedPort = gone.port();
  }
  const QString url = QString::fromStdString(withKey(server.baseUrl(), key));
  // What the commands show of it: the URL, without its credentials.
  const QByteArray shown = QByteArray::fromStdString(withKey(server.baseUrl(), "***")).replace("user:***@", "***@");
  const QString closed = QString::fromStdString(withKey("http://127.0.0.1:" + std::to_string(closedPort) + "/v1", key));
  const QString ws = dir.filePath("ws.kwb");

  // Everything kwb writes lands in the folder searched: its configuration, data, library, output.
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("HOME", dir.path());
  env.insert("XDG_CONFIG_HOME", dir.filePath("config"));
  env.insert("XDG_DATA_HOME", dir.filePath("data"));
  env.insert("XDG_CACHE_HOME", dir.filePath("cache"));
  env.insert("KWB_LIBRARY", dir.filePath("library.sqlite"));
  env.remove("KWB_LLM_API_KEY");
  // A configured provider whose base URL holds the key. The file is the user's own, key and all,
  // so it lies outside the folder searched.
  QTemporaryDir config;
  QVERIFY(config.isValid());
  const QString providers = config.filePath("providers.json");
  std::ofstream(providers.toStdString()) <<
                       nlohmann::json{{"providers", {{{"name", "keyed"}, {"format", "openai"}, {"base_url", url.toStdString()},
                                                      {"model", "replay"}}}}}.dump();
  env.insert("KWB_PROVIDERS_FILE", providers);
  std::deque<Run> runs;  // references to its runs stay valid
  auto kwb = [&](QStringList args) -> const Run & {
    runs.push_back(runKwb(env, dir.path(), args));
    return runs.back();
  };
  const QString softmax = QString::fromStdString(kSoftmax.string());
  const QStringList small = {"--no-gpu", "-G", "1", "-K", "1", "--groups", "1", "--workspace", ws};

  // The configured providers, as text and JSON.
  const Run &list = kwb({"llm", "list"});
  QCOMPARE(list.exitCode, 0);
  QVERIFY2(list.out.contains("keyed  openai  " + shown + "  model replay"), list.out.constData());
  const Run &listJson = kwb({"llm", "list", "--json"});
  QCOMPARE(listJson.exitCode, 0);
  const auto listed = nlohmann::json::parse(listJson.out.toStdString());
  QCOMPARE(listed["providers"].size(), std::size_t(1));
  QCOMPARE(listed["providers"][0]["base_url"].get<std::string>(), shown.toStdString());
  // The connection test, answered and refused, as text and JSON; the banner names the provider
  // once (a URL is its own name).
  const Run &tested = kwb({"llm", "test", url, "--model", "replay", "--workspace", ws});
  QCOMPARE(tested.exitCode, 0);
  QVERIFY2(("\n" + tested.err).contains("\nkwb: " + shown + ", model replay:\n"), tested.err.constData());
  QCOMPARE(tested.err.count(shown), 1);
  const Run &testedByName = kwb({"llm", "test", "keyed", "--workspace", ws});
  QCOMPARE(testedByName.exitCode, 0);
  QVERIFY2(("\n" + testedByName.err).contains("\nkwb: keyed (" + shown + "), model replay:\n"), testedByName.err.constData());
  QCOMPARE(kwb({"llm", "test", url, "--model", "replay", "--json", "--workspace", ws}).exitCode, 0);
  QCOMPARE(kwb({"llm", "test", closed, "--model", "replay", "--workspace", ws}).exitCode, 1);
  QCOMPARE(kwb({"llm", "test", closed, "--model", "replay", "--json", "--workspace", ws}).exitCode, 1);
  QCOMPARE(kwb({"llm", "models", closed}).exitCode, 1);
  QCOMPARE(kwb({"llm", "models", closed, "--json"}).exitCode, 1);
  // A session that runs (compile only: exit 3), one whose provider cannot be reached (1), both
  // also with --json; a resume that needs the URL again (2).
  QCOMPARE(kwb(QStringList{"optimize", softmax, "--provider", url} + small).exitCode, 3);
  QCOMPARE(kwb(QStringList{"optimize", softmax, "--provider", url, "--json"} + small).exitCode, 3);
  QCOMPARE(kwb(QStringList{"optimize", softmax, "--provider", closed} + small).exitCode, 1);
  const Run &failed = kwb(QStringList{"optimize", softmax, "--provider", closed, "--json"} + small);
  QCOMPARE(failed.exitCode, 1);
  const auto sessions = nlohmann::json::parse(kwb({"sessions", "--json", "--workspace", ws}).out.toStdString());
  QCOMPARE(sessions.size(), std::size_t(4));
  QStringList ids;
  for (const auto &s : sessions) ids << QString::fromStdString(s["session"].get<std::string>());
  const Run &resume = kwb({"optimize", "--resume", ids.front(), "--workspace", ws});
  QCOMPARE(resume.exitCode, 2);
  QVERIFY2(resume.err.contains("give it again: kwb optimize --resume"), resume.err.constData());
  const Run &sessionList = kwb({"sessions", "--workspace", ws});
  QCOMPARE(sessionList.exitCode, 0);
  // The URL is still there to read, without its credentials.
  QVERIFY2(sessionList.out.contains(shown), (sessionList.out + "\nexpected " + shown).constData());
  QVERIFY2(failed.out.contains("could not connect to http://***@127.0.0.1:"), failed.out.constData());
  // The stored exchanges, and the sessions' exports.
  QCOMPARE(kwb({"llm", "transcripts", "--workspace", ws}).exitCode, 0);
  const Run &transcripts = kwb({"llm", "transcripts", "--workspace", ws, "--json"});
  QCOMPARE(transcripts.exitCode, 0);
  // The request's URL: the path, then the base URL's query (stored without its credentials).
  const auto exchanges = nlohmann::json::parse(transcripts.out.toStdString());
  QVERIFY(!exchanges.empty());
  QCOMPARE(exchanges[0]["url"].get<std::string>(),
           "http://***@127.0.0.1:" + std::to_string(server.http().port()) + "/v1/chat/completions?key=***&api_key=***&alt=json");
  // A session export needs a correct candidate, which a machine without a GPU never measures: one
  // compiled candidate is marked correct in the workspace, so one export writes its report.
  QString exportable;
  {
    kwb::Database db(ws.toStdString());
    kwb::Statement compiled = db.prepare(
        "SELECT a.id, g.session_id FROM agent_attempts a JOIN agent_groups g ON g.id = a.group_id "
        "WHERE a.evaluation_id IS NOT NULL ORDER BY a.id LIMIT 1");
    QVERIFY(compiled.step());
    exportable = QString::fromStdString(compiled.columnText(1));
    db.exec("UPDATE agent_attempts SET outcome = 'correct', objective_ms = 1.0 WHERE id = " + std::to_string(compiled.columnInt(0)));
  }
  for (const QString &id : ids) {
    QCOMPARE(kwb({"llm", "transcripts", "--session", id, "--workspace", ws, "--json"}).exitCode, 0);
    QCOMPARE(kwb({"trajectories", "export", id, "--all", "--workspace", ws}).exitCode, 0);
    QCOMPARE(kwb({"trajectories", "export", id, "--all", "--output", dir.filePath("t-" + id + ".jsonl"), "--workspace", ws}).exitCode, 0);
    const Run &exported = kwb({"export", "session:" + id, "--task", softmax, "--format", "report", "--to", dir.filePath("report-" + id), "--workspace", ws});
    if (id == exportable) {
      QVERIFY2(exported.exitCode == 0, exported.err.constData());
      const QStringList report = filesHolding(dir.filePath("report-" + id).toStdString(), "***@127.0.0.1:");
      QVERIFY2(!report.isEmpty(), "the report names the session's provider, without its credentials");
    } else {
      QCOMPARE(exported.exitCode, 2);
      QVERIFY2(exported.err.contains("has no correct candidate yet"), exported.err.constData());
    }
  }

  // The real requests went with the real URL: the key reached the server, and only the server,
  // the base URL's query after the endpoint's path.
  const std::string requestPath = "/v1/chat/completions?key=" + key + "&api_key=" + key + "&alt=json";
  std::size_t requestsWithTheKey = 0;
  for (const auto &r : server.http().requests()) {
    QCOMPARE(r.path, requestPath);
    ++requestsWithTheKey;
  }
  QVERIFY(requestsWithTheKey > 0);
  for (const Run &r : runs) {
    const QByteArray where = r.args.join(' ').replace(QString::fromStdString(key), "KEY").toUtf8();
    QVERIFY2(!r.out.contains(QByteArray::fromStdString(key)), ("stdout of kwb " + where + ":\n" + r.out).constData());
    QVERIFY2(!r.err.contains(QByteArray::fromStdString(key)), ("stderr of kwb " + where + ":\n" + r.err).constData());
  }
  QVERIFY(fs::exists(ws.toStdString()));
  QVERIFY(fs::exists(dir.filePath("library.sqlite").toStdString()));
  const QStringList leaked = filesHolding(home, key);
  QVERIFY2(leaked.isEmpty(), qPrintable(leaked.join('\n')));
}

// The review of issue 45, 2: the URL's user name alone was blanked in the stored raw answer too,
// so a user name that is a word of the wire format ("completion": "chat.completion.chunk",
// "completion_tokens") corrupted it and `kwb llm replay` said DIFFERS. And a base URL's query
// after the endpoint's path ("/v1/messages?key=***") made replay read an Anthropic answer as
// OpenAI's.
void TestUrlCredentials::replayOfARunThroughAUserNameInTheWireFormat() {
  QVERIFY2(!kwbProgram().isEmpty(), "run through ctest: KWB_CLI names kwb");
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::string key = uniqueKey();
  kwb::test::ReplayLlmServer server(kSoftmax);
  kwb::test::LoopbackHttpServer anthropic;
  kwb::test::ScriptedResponse message;
  message.headers = {{"Content-Type", "application/json"}};
  message.chunks = {R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hello from messages"}],)"
                    R"("stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":3}})"};
  anthropic.route("POST", "/v1/messages", {message});
  const QString ws = dir.filePath("ws.kwb");
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("HOME", dir.path());
  env.insert("XDG_CONFIG_HOME", dir.filePath("config"));
  env.insert("XDG_DATA_HOME", dir.filePath("data"));
  env.remove("KWB_LLM_API_KEY");
  env.remove("KWB_PROVIDERS_FILE");
  auto kwb = [&](const QStringList &args) { return runKwb(env, dir.path(), args); };
  const std::string host = "127.0.0.1:";
  // User names that are words of what comes back: of the wire format ("chat.completion.chunk",
  // "completion_tokens"), and of the answer's text (the kernel's "float").
  for (const std::string user : {"completion", "float"}) {
    const QString openai = QString::fromStdString("http://" + user + ":" + key + "@" + host + std::to_string(server.http().port()) + "/v1");
    const Run streamed = kwb({"llm", "test", openai, "--model", "replay", "--workspace", ws});
    QVERIFY2(streamed.exitCode == 0, streamed.err.constData());
  }
  const QString messages = QString::fromStdString("http://" + host + std::to_string(anthropic.port()) + "/v1?key=" + key);
  const Run other = kwb({"llm", "test", messages, "--format", "anthropic", "--model", "m", "--no-stream", "--workspace", ws});
  QVERIFY2(other.exitCode == 0, other.err.constData());
  QVERIFY2(other.out.contains("hello from messages"), other.out.constData());
  const auto stored = nlohmann::json::parse(kwb({"llm", "transcripts", "--workspace", ws, "--json"}).out.toStdString());
  QCOMPARE(stored.size(), std::size_t(3));
  for (const auto &t : stored) {
    const QString id = QString::number(t["id"].get<long long>());
    const Run replay = kwb({"llm", "replay", id, "--workspace", ws, "--json"});
    QVERIFY2(replay.exitCode == 0, (id.toUtf8() + ": " + replay.out + replay.err).constData());
    const auto r = nlohmann::json::parse(replay.out.toStdString());
    QVERIFY2(r["matches_stored_text"].get<bool>(), replay.out.constData());
    QVERIFY(!r["text"].get<std::string>().empty());
    QVERIFY2(!replay.out.contains(QByteArray::fromStdString(key)), replay.out.constData());
  }
  QCOMPARE(stored.back()["url"].get<std::string>(), "http://" + host + std::to_string(anthropic.port()) + "/v1/messages?key=***");
  {
    // The raw answers as received: the user names' words intact.
    kwb::Database db(ws.toStdString());
    kwb::Statement raw = db.prepare("SELECT response_raw FROM llm_transcripts ORDER BY id LIMIT 2");
    for (int i = 0; i < 2; ++i) {
      QVERIFY(raw.step());
      const std::string bytes = raw.columnText(0);
      QVERIFY2(bytes.find(R"("object":"chat.completion.chunk")") != std::string::npos, bytes.c_str());
      QVERIFY2(bytes.find(R"("completion_tokens":)") != std::string::npos, bytes.c_str());
      QVERIFY2(bytes.find("float") != std::string::npos, bytes.c_str());
    }
  }
  QVERIFY(filesHolding(dir.path().toStdString(), key).isEmpty());
}

void TestUrlCredentials::migrationLeavesSecureDeleteAsItWas() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  for (const std::string mode : {"OFF", "FAST"}) {  // FAST reads as 2, which SQLite does not take back
    kwb::Database db(dir.filePath(QString::fromStdString("v7-" + mode + ".kwb")).toStdString());
    const auto &all = kwb::workspaceMigrations();
    kwb::migrateForward(db, std::vector<kwb::Migration>(all.begin(), all.begin() + 7));
    db.exec("PRAGMA secure_delete = " + mode);
    const std::string before = db.pragma("secure_delete");
    kwb::migrateForward(db, all);
    QCOMPARE(kwb::readSchemaVersion(db), all.back().version);
    QCOMPARE(db.pragma("secure_delete"), before);
  }
}

void TestUrlCredentials::migrationRedactsStoredUrls() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const fs::path file = dir.filePath("v7.kwb").toStdString();
  const std::string key = uniqueKey();
  const std::string url = withKey("http://127.0.0.1:8080/v1", key);
  // A long error: the row spills onto overflow pages, which the redaction frees.
  std::string longError;
  for (int i = 0; i < 200; ++i) longError += "could not connect to " + url + "/chat/completions: Connection refused\n";
  {
    // Version 7 as that build left it, rows written with plain SQL.
    kwb::Database db(file);
    const auto &all = kwb::workspaceMigrations();
    kwb::migrateForward(db, std::vector<kwb::Migration>(all.begin(), all.begin() + 7));
    QCOMPARE(kwb::readSchemaVersion(db), 7);
    db.transaction([&] {
      db.exec("INSERT INTO tasks(id, name, folder, added_at) VALUES(1, 'softmax', '/t/softmax', '2025-01-01T00:00:00.000Z')");
      kwb::Statement session = db.prepare(
          "INSERT INTO agent_sessions(id, task_id, task_name, provider, model, settings_json, state, stop_reason, created_at, "
          "updated_at) VALUES('s1', 1, 'softmax', ?1, 'm', ?2, 'failed', ?3, 'x', 'x')");
      session.bind(1, url).bind(2, R"({"provider":")" + url + R"(","model":"m","groups":1})")
          .bind(3, "the provider did not answer: could not connect to " + url + "/chat/completions: refused");
      session.run();
      db.exec("INSERT INTO agent_groups(id, session_id, ordinal, goal, state, created_at) VALUES(1, 's1', 1, 'compiles', 'done', 'x')");
      kwb::Statement attempt = db.prepare(
          "INSERT INTO agent_attempts(group_id, line, turn, state, messages_json, response_text, answer_outcome, answer_note, "
          "created_at) VALUES(1, 0, 1, 'answered', '[]', '', 'no-answer', ?1, 'x')");
      attempt.bind(1, "the provider did not answer: could not connect to " + url);
      attempt.run();
      kwb::Statement transcript = db.prepare(
          "INSERT INTO llm_transcripts(session, provider, model, url, request_headers, request_body, response_text, "
          "response_raw, status, attempts, outcome, error, input_tokens, output_tokens, usage_reported, cost, seconds, "
          "started_at) VALUES('s1', ?1, 'm', ?2, '{}', '{}', 'kept text', '', 0, 1, 'error', ?3, 0, 0, 0, 0, 0, 'x')");
      // The URL as builds before the fix built it: the path after the base URL's query (the
      // request now puts the query last, see noCommandLeaksAKeyInTheUrl); the migration changes
      // only the credentials in it.
      transcript.bind(1, url).bind(2, url + "/chat/completions").bind(3, longError);
      transcript.run();
    });
  }
  QVERIFY(!filesHolding(dir.path().toStdString(), key).isEmpty());  // the case this test is about

  // Opened (and kept open, as the workbench keeps its workspace): migrated, and the key is gone
  // from the rows and from the bytes of every file beside them.
  auto workspace = kwb::Workspace::open(file);
  QCOMPARE(workspace->schemaVersion(), 8);
  kwb::Database &db = workspace->database();
  const QStringList leaked = filesHolding(dir.path().toStdString(), key);
  QVERIFY2(leaked.isEmpty(), qPrintable(leaked.join('\n')));
  const std::string redacted = "http://***@127.0.0.1:8080/v1?key=***&api_key=***&alt=json";
  kwb::Statement q = db.prepare(
      "SELECT s.provider, s.settings_json, s.stop_reason, a.answer_note, t.provider, t.url, t.error, t.response_text, t.model "
      "FROM agent_sessions s, agent_attempts a, llm_transcripts t");
  QVERIFY(q.step());
  QCOMPARE(q.columnText(0), redacted);
  QCOMPARE(q.columnText(1), R"({"provider":")" + redacted + R"(","model":"m","groups":1})");
  QCOMPARE(q.columnText(2), "the provider did not answer: could not connect to " + redacted + "/chat/completions: refused");
  QCOMPARE(q.columnText(3), "the provider did not answer: could not connect to " + redacted);
  QCOMPARE(q.columnText(4), redacted);
  QCOMPARE(q.columnText(5), "http://***@127.0.0.1:8080/v1?key=***&api_key=***&alt=json/chat/completions");
  QVERIFY(q.columnText(6).rfind("could not connect to " + redacted + "/chat/completions: Connection refused\n", 0) == 0);
  QCOMPARE(q.columnText(7), std::string("kept text"));  // the rest as it was
  QCOMPARE(q.columnText(8), std::string("m"));
  QCOMPARE(db.pragma("integrity_check"), std::string("ok"));
  workspace.reset();
  QVERIFY(filesHolding(dir.path().toStdString(), key).isEmpty());
}

#endif  // Q_MOC_RUN

QTEST_GUILESS_MAIN(TestUrlCredentials)
#include "tst_url_credentials.moc"
