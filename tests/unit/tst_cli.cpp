// kwb and kwb-worker as a user or script runs them: real processes, real files.
#include <QDir>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>
#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "helpers/loopback_http_server.h"
#include "helpers/module_state_task.h"
#include "helpers/test_files.h"
#include "helpers/torch_tasks.h"

namespace {

struct Run {
  int exitCode = -1;
  QString out;
  QString err;
};

Run run(const QString &program, const QStringList &args, const QProcessEnvironment &env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  if (!p.waitForFinished(60000)) return {};
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
          QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
}

const QString kernels = QStringLiteral(KWB_SOURCE_DIR "/kernels");

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    kwb_ = qEnvironmentVariable("KWB_CLI");
    worker_ = qEnvironmentVariable("KWB_WORKER");
    QVERIFY2(!kwb_.isEmpty() && !worker_.isEmpty(), "run through ctest: KWB_CLI and KWB_WORKER name the programs");
  }

  void versionAndHelp() {
    auto r = run(kwb_, {"--version"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.startsWith("kwb 0."));
    r = run(kwb_, {"--help"});
    QCOMPARE(r.exitCode, 0);
    for (const char *word : {"devices", "tasks", "task"}) QVERIFY2(r.out.contains(word), word);
    r = run(kwb_, {"task", "--help"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("validate"));
    QVERIFY(r.out.contains("show"));
  }

  void unknownCommandFails() {
    // Exit codes: 2 for an unknown command, CLI11's 106 for a missing subcommand and 109 for an
    // unknown option; -1 (a crash or a hang) must never pass.
    auto r = run(kwb_, {"frobnicate"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.startsWith("kwb: unknown command 'frobnicate'; expected one of: devices, tasks, task"), qPrintable(r.err));
    r = run(kwb_, {"devices", "--frobnicate"});
    QCOMPARE(r.exitCode, 109);
    QVERIFY2(r.err.contains("--frobnicate"), qPrintable(r.err));
    r = run(kwb_, {});
    QCOMPARE(r.exitCode, 106);
    QVERIFY2(r.err.contains("A subcommand is required"), qPrintable(r.err));
  }

  void tasksListShowsTheBundledSuite() {
    auto r = run(kwb_, {"tasks", "list", kernels});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains(QRegularExpression("^sgemm +Single-precision matrix multiply", QRegularExpression::MultilineOption)), qPrintable(r.out));
    QVERIFY2(r.out.contains(QRegularExpression("^softmax +Row-wise softmax", QRegularExpression::MultilineOption)), qPrintable(r.out));
    r = run(kwb_, {"tasks", "list", "--json", kernels});
    QCOMPARE(r.exitCode, 0);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j.is_array());
    QVERIFY(j.size() >= 2);
    for (const auto &row : j) QVERIFY(row["valid"].get<bool>());
    // Without a folder, the bundled suite is found from the build tree.
    r = run(kwb_, {"tasks", "list"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("softmax"));
  }

  void taskShowText() {
    auto r = run(kwb_, {"task", "show", kernels + "/sgemm"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("h200: M=4096 N=4096 K=4096  (137 GFLOP"), qPrintable(r.out));
    QVERIFY(r.out.contains("TILE = 8 16 32"));
    QVERIFY(r.out.contains("sgemm_reference<<<(ceil_div(N, 16), ceil_div(M, 16)), (16, 16)>>>(A, B, C, M, N, K)"));
  }

  // Issue 46: a PyTorch module's weight, forward's and Model's arguments, and a generator's scale,
  // shift and structure, in kwb task show's text and JSON.
  void taskShowModuleState() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::filesystem::path folder(dir.path().toStdString());
    std::ofstream(folder / "ref.py") << "import torch\n";
    std::ofstream(folder / "k.cu") << "extern \"C\" __global__ void k() {}\n";
    std::ofstream(folder / "task.toml") << kwb::test::kModuleStateManifest;
    auto r = run(kwb_, {"task", "show", dir.path()});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("x  f32[n, k]  in  init randint(low 0, high 2) scale 2, shift -1\n"), qPrintable(r.out));
    QVERIFY2(r.out.contains("w  f32[k, k]  in  init normal(mean 0, std 1) symmetric seed+1  module state fc.weight\n"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("Reference:  ref.py (a PyTorch module)\n            Model(k), forward(x, alpha)\n"), qPrintable(r.out));
    r = run(kwb_, {"task", "show", "--json", dir.path()});
    QCOMPARE(r.exitCode, 0);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j["tensors"][1]["state"].get<std::string>(), std::string("fc.weight"));
    QCOMPARE(j["tensors"][1]["init"]["matrix"].get<std::string>(), std::string("symmetric"));
    QCOMPARE(j["tensors"][0]["init"]["scale"].get<double>(), 2.0);
    QCOMPARE(j["reference"]["forward"], nlohmann::json({"x", "alpha"}));
    QCOMPARE(j["reference"]["init"], nlohmann::json({"k"}));
  }

  void taskShowJson() {
    auto r = run(kwb_, {"task", "show", "--json", kernels + "/softmax/task.toml"});
    QCOMPARE(r.exitCode, 0);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j["name"].get<std::string>(), std::string("softmax"));
    QCOMPARE(j["configs"].size(), std::size_t(3));
  }

  void validateValidAndInvalid() {
    auto r = run(kwb_, {"task", "validate", kernels + "/softmax"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.contains("valid"));

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QFile::copy(kernels + "/softmax/reference.cu", dir.filePath("reference.cu"));
    QFile in(kernels + "/softmax/task.toml");
    QVERIFY(in.open(QIODevice::ReadOnly));
    QString manifest = QString::fromUtf8(in.readAll());
    // Break the shape of y: an unknown size on a known line.
    const int yShape = manifest.indexOf("shape", manifest.indexOf("[tensors.y]"));
    const int line = manifest.left(yShape).count('\n') + 1;
    manifest.replace(yShape, QStringLiteral("shape = [\"rows\", \"cols\"]").size(),
                     QStringLiteral("shape = [\"rows\", \"cols2\"]"));
    QFile out(dir.filePath("task.toml"));
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(manifest.toUtf8());
    out.close();

    r = run(kwb_, {"task", "validate", dir.path()});
    QCOMPARE(r.exitCode, 2);
    const QString expected = QStringLiteral("%1/task.toml:%2: tensors.y.shape: unknown size 'cols2'; known sizes: rows, cols")
                                 .arg(dir.path()).arg(line);
    QVERIFY2(r.err.startsWith(expected), qPrintable(r.err + " != " + expected));

    r = run(kwb_, {"task", "validate", "--json", dir.path()});
    QCOMPARE(r.exitCode, 2);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j["valid"].get<bool>(), false);
    QCOMPARE(j["error"]["line"].get<int>(), line);
    QCOMPARE(j["error"]["field"].get<std::string>(), std::string("tensors.y.shape"));

    r = run(kwb_, {"task", "validate", dir.filePath("no-such-folder")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY(!r.err.isEmpty());
  }

  // Issue 17, 5: a candidate that is a FIFO hung kwb eval and /dev/zero aborted it (bad_alloc):
  // both are refused at once, with exit status 2 and what the file is; a deep manifest (3)
  // is a usage error with its line, not a crash.
  void candidatesThatAreNotFilesAreRefused() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString fifo = dir.filePath(QStringLiteral("fifo.cu"));
    QVERIFY(::mkfifo(fifo.toLocal8Bit().constData(), 0600) == 0);
    auto r = run(kwb_, {"eval", kernels + "/softmax", fifo, "--no-gpu"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("is a FIFO; expected a regular file")), qPrintable(r.err));
    r = run(kwb_, {"eval", kernels + "/softmax", "/dev/zero", "--no-gpu"});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("/dev/zero is a character device")), qPrintable(r.err));
    QFile deep(dir.filePath(QStringLiteral("task.toml")));
    QVERIFY(deep.open(QIODevice::WriteOnly));
    deep.write("a" + QByteArray(".a").repeated(50000) + " = 1\n");
    deep.close();
    r = run(kwb_, {"task", "validate", dir.path()});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("task.toml:1: a key of more than 32 dotted parts")), qPrintable(r.err));
  }

  // Issue 17, 6: a folder that cannot be read said "no task.toml in this folder". As root every
  // folder can be read, so there the command runs as nobody (setpriv).
  void unreadableFolderSaysSo() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QVERIFY(::chmod(dir.path().toLocal8Bit().constData(), 0755) == 0);
    const QString locked = dir.filePath(QStringLiteral("locked"));
    QVERIFY(QDir().mkpath(locked));
    QVERIFY(QFile::copy(kernels + "/softmax/task.toml", locked + "/task.toml"));
    QVERIFY(::chmod(locked.toLocal8Bit().constData(), 0) == 0);
    QString program = kwb_;
    QStringList args{"task", "validate", locked};
    if (::geteuid() == 0) {
      program = QStringLiteral("setpriv");
      args = QStringList{"--reuid=65534", "--regid=65534", "--clear-groups", kwb_} + args;
    }
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("HOME"), dir.path());
    const auto r = run(program, args, env);
    QVERIFY(::chmod(locked.toLocal8Bit().constData(), 0755) == 0);  // so the folder can be removed
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains(QStringLiteral("cannot be read: Permission denied")), qPrintable(r.err));
  }

  void devicesWithoutDriverExitZero() {
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("KWB_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
    auto r = run(kwb_, {"devices"}, env);
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.startsWith("No CUDA device: compile-only (no CUDA driver"), qPrintable(r.out));
    r = run(kwb_, {"devices", "--json"}, env);
    QCOMPARE(r.exitCode, 0);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j["devices"].empty());
    QCOMPARE(j["summary"].get<std::string>(), std::string("No CUDA device: compile-only"));
  }

  void workerVersionAndDevices() {
    auto r = run(worker_, {"--version"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.out.startsWith("kwb-worker 0."));
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("KWB_CUDA_DRIVER_LIBRARY", "/nonexistent/libcuda.so.1");
    r = run(worker_, {"--devices", "--json"}, env);
    QCOMPARE(r.exitCode, 0);
    QVERIFY(nlohmann::json::parse(r.out.toStdString()).contains("libraries"));
    r = run(worker_, {"--bogus"});
    QCOMPARE(r.exitCode, 2);
  }

  // kwb tune without a GPU: every point of the transpose task's 3 x 3 space compiled, none
  // measured (exit 3), as text and JSON; the mistakes a user can make exit 2 with a message.
  void tuneWithoutAGpu() {
    QTemporaryDir home;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_CACHE_HOME", home.path());
    auto r = run(kwb_, {"tune", kernels + "/transpose", "--config", "small", "--no-gpu"}, env);
    QCOMPARE(r.exitCode, 3);
    QVERIFY2(r.out.contains("[9/9] TILE=64 BLOCK_ROWS=16  not-run  (compiled: "), qPrintable(r.out));
    QVERIFY2(r.out.contains("9 point(s) compiled, none measured"), qPrintable(r.out));
    r = run(kwb_, {"tune", kernels + "/transpose", "--config", "small", "--no-gpu", "--json", "--budget", "4"}, env);
    QCOMPARE(r.exitCode, 3);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(j["points"].size(), std::size_t(4));
    QCOMPARE(j["strategy"].get<std::string>(), std::string("random-local"));
    QCOMPARE(j["stop"].get<std::string>(), std::string("no-device"));
    QVERIFY(j["best"].is_null());
    r = run(kwb_, {"tune", kernels + "/transpose", "--strategy", "bogus"}, env);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("use auto, exhaustive or random-local"), qPrintable(r.err));
    r = run(kwb_, {"tune", kernels + "/transpose", "--config", "nope", "--no-gpu"}, env);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("no size configuration 'nope'"), qPrintable(r.err));
  }

  // Declared constraints (issue 21, 2): a tunable point or a --set value that breaks one is refused
  // before anything is compiled, naming the constraint; the points that meet them compile.
  void constraintsRefuseBeforeCompiling() {
    QTemporaryDir dir;
    const std::filesystem::path task = std::filesystem::path(dir.path().toStdString()) / "transpose";
    std::filesystem::copy(std::filesystem::path(KWB_SOURCE_DIR) / "kernels" / "transpose", task,
                          std::filesystem::copy_options::recursive);
    std::filesystem::remove_all(task / "lineage");
    std::string manifest;
    {
      std::ifstream in(task / "task.toml");
      manifest.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    const auto at = manifest.find("seeds = ");
    QVERIFY(at != std::string::npos);
    manifest.insert(at, "constraints = [\"TILE * BLOCK_ROWS <= 512\", \"rows >= 1\"]\n");
    {
      std::ofstream(task / "task.toml") << manifest;
    }
    const QString folder = QString::fromStdString(task.string());
    QTemporaryDir home;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("XDG_CACHE_HOME", home.path());
    auto r = run(kwb_, {"eval", folder, "--set", "TILE=64", "--set", "BLOCK_ROWS=16", "--no-gpu"}, env);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("configuration 'small' with BLOCK_ROWS=16 TILE=64: constraint 'TILE * BLOCK_ROWS <= 512' does "
                            "not hold (TILE * BLOCK_ROWS = 1024, 512 = 512)"),
             qPrintable(r.err));
    r = run(kwb_, {"eval", folder, "--set", "TILE=64", "--no-gpu"}, env);  // 64 x 8: meets them
    QVERIFY2(r.exitCode == 3, qPrintable(r.err));
    r = run(kwb_, {"tune", folder, "--config", "small", "--no-gpu"}, env);
    QVERIFY2(r.out.contains("TILE=64 BLOCK_ROWS=16") && r.out.contains("constraint 'TILE * BLOCK_ROWS <= 512' does not hold"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("TILE=32 BLOCK_ROWS=8  not-run  (compiled: "), qPrintable(r.out));
  }

  // kwb suite: usage errors say what is wrong; without a GPU, exit 3 and why (the metrics
  // themselves: tst_suite_metrics; a real run: tests/gpu/issue21-import.sh).
  void suiteWithoutDevice() {
    QTemporaryDir dir;
    auto r = run(kwb_, {"suite", dir.path(), "--candidates", dir.path()});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("no task folders (with a task.toml) in " + dir.path()), qPrintable(r.err));
    r = run(kwb_, {"suite", dir.path() + "/none", "--candidates", dir.path()});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("/none is not a folder"), qPrintable(r.err));
    r = run(kwb_, {"suite", kernels, "--candidates", dir.path()});
    // Here there is no GPU: the pool has no device, and says so; on a GPU machine the suite runs.
    if (r.exitCode == 3) QVERIFY2(r.err.contains("kwb suite: "), qPrintable(r.err));
    else QVERIFY2(r.exitCode == 0 && r.out.contains("no-candidate") && r.out.contains("correct 0/8"), qPrintable(r.out + r.err));
  }

  // kwb asm: SASS and PTX with source lines, one line's instructions, a diff of two candidates.
  void asmListings() {
    auto r = run(kwb_, {"asm", kernels + "/softmax", "--ptx", "--json"});
    QCOMPARE(r.exitCode, 0);
    auto j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j["has_line_info"].get<bool>());
    int line = 0;
    for (const auto &l : j["lines"])
      if (l["text"].get<std::string>().find("ld.global") != std::string::npos && l["source_line"].get<int>() > 0) {
        line = l["source_line"].get<int>();
        break;
      }
    QVERIFY(line > 0);
    r = run(kwb_, {"asm", kernels + "/softmax", "--ptx", "--line", QString::number(line)});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains(QStringLiteral("ld.global")), qPrintable(r.out));
    r = run(kwb_, {"asm", kernels + "/softmax", kernels + "/softmax/lineage/01-naive.cu", "--diff",
                   kernels + "/softmax/lineage/02-warp-shuffle.cu"});
    if (r.err.contains(QStringLiteral("needs the CUDA toolkit's cuobjdump or nvdisasm")))
      QSKIP("no disassembler here: packaging/install-deps.sh installs nvdisasm");
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains(QStringLiteral("only in the second")), qPrintable(r.out + r.err));
    QVERIFY(r.out.contains(QStringLiteral("+")) && r.out.contains(QStringLiteral("SHFL")));
    r = run(kwb_, {"asm", kernels + "/softmax", "--set", "BLOCK"});
    QCOMPARE(r.exitCode, 2);
  }

  // Issue 45, 8: an answer whose content is not text (a number, an object) made kwb llm test say
  // it answered, exit 0.
  void llmTestOfAnAnswerWithoutTextFails() {
    using kwb::test::ScriptedResponse;
    kwb::test::LoopbackHttpServer server;
    ScriptedResponse number;
    number.headers = {{"Content-Type", "application/json"}};
    number.chunks = {nlohmann::json{{"id", "c"},
                                    {"model", "m"},
                                    {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", 42}}}, {"finish_reason", "stop"}}}},
                                    {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 1}}}}
                         .dump()};
    ScriptedResponse object;
    object.headers = {{"Content-Type", "text/event-stream"}};
    object.chunks = {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":{\"text\":\"hi\"}}}]}\n\n", "data: [DONE]\n\n"};
    server.route("POST", "/v1/chat/completions", {number, object});
    const QString base = QString::fromStdString(server.baseUrl() + "/v1");
    auto r = run(kwb_, {"llm", "test", base, "--model", "m", "--no-stream"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("the server's answer has no text content: `choices[0].message.content` is a number"), qPrintable(r.err));
    r = run(kwb_, {"llm", "test", base, "--model", "m", "--json"});
    QCOMPARE(r.exitCode, 1);
    const auto j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(!j["ok"].get<bool>());
    QVERIFY2(j["error"].get<std::string>().find("`choices[0].delta.content` is an object") != std::string::npos, qPrintable(r.out));
  }

  // kwb llm against a real HTTP server on loopback: models and a streamed test through a base
  // URL, a configured provider by name, the errors a user can make; the key travels in the
  // request header and nowhere else: no file written under the session's HOME holds it.
  void llmCommands() {
    using kwb::test::LoopbackHttpServer;
    using kwb::test::ScriptedResponse;
    LoopbackHttpServer server;
    ScriptedResponse models;
    models.headers = {{"Content-Type", "application/json"}};
    models.chunks = {"{\"object\":\"list\",\"data\":[{\"id\":\"m-1\",\"object\":\"model\"}]}"};
    server.route("GET", "/v1/models", {models});
    ScriptedResponse chat;
    chat.headers = {{"Content-Type", "text/event-stream"}};
    chat.chunks = kwb::test::splitRandom(kwb::test::readFixture("llm/openai_stream_text.sse"), 5);
    server.route("POST", "/v1/chat/completions", {chat});
    QTemporaryDir home;
    const std::string key = "sk-cli-test-" + std::to_string(QRandomGenerator::global()->generate64());
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("HOME", home.path());
    env.insert("XDG_CONFIG_HOME", home.filePath(".config"));
    env.insert("KWB_PROVIDERS_FILE", home.filePath(".config/kernel-workbench/providers.json"));
    env.insert("KWB_LLM_API_KEY", QString::fromStdString(key));
    env.insert("KWB_TEST_PROVIDER_KEY", QString::fromStdString(key));
    const QString base = QString::fromStdString(server.baseUrl() + "/v1");

    auto r = run(kwb_, {"llm", "models", base, "--json"}, env);
    QCOMPARE(r.exitCode, 0);
    QCOMPARE(nlohmann::json::parse(r.out.toStdString())["models"], nlohmann::json::array({"m-1"}));
    r = run(kwb_, {"llm", "test", base, "--json"}, env);  // no --model: the server's first
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    auto j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j["ok"].get<bool>());
    QCOMPARE(j["model"].get<std::string>().empty(), false);
    QVERIFY(!j["text"].get<std::string>().empty());
    QVERIFY(j["first_token_ms"].is_number() && j["latency_ms"].is_number());
    QVERIFY(j["usage"]["reported"].get<bool>());
    const auto requests = server.requests();
    QCOMPARE(requests.back().headers.at("authorization"), "Bearer " + key);

    // Recorded in a workspace's transcripts (key redacted), listed, and replayed from the raw bytes.
    const QString ws = home.filePath("w.kwb");
    r = run(kwb_, {"llm", "test", base, "--model", "m-1", "--workspace", ws, "--session", "s1"}, env);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    // Issue 17, 6: a workspace made by a command that writes is announced (a mistyped path shows).
    QVERIFY2(r.err.contains("no workspace at " + ws + ": a new one is made"), qPrintable(r.err));
    r = run(kwb_, {"llm", "transcripts", "--workspace", ws, "--session", "s1", "--json"}, env);
    QCOMPARE(r.exitCode, 0);
    const auto rows = nlohmann::json::parse(r.out.toStdString());
    QCOMPARE(rows.size(), std::size_t(1));
    QCOMPARE(rows[0]["outcome"].get<std::string>(), std::string("complete"));
    QCOMPARE(rows[0]["request_headers"]["Authorization"].get<std::string>(), std::string("[redacted]"));
    r = run(kwb_, {"llm", "replay", QString::number(rows[0]["id"].get<long long>()), "--workspace", ws, "--session", "s1", "--json"}, env);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    const auto replay = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(replay["matches_stored_text"].get<bool>() && replay["complete"].get<bool>());
    r = run(kwb_, {"llm", "replay", "999", "--workspace", ws, "--session", "s1"}, env);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("no transcript 999"), qPrintable(r.err));

    // A configured provider, by name; list never shows the key, only whether its variable is set.
    std::filesystem::create_directories(home.filePath(".config/kernel-workbench").toStdString());
    std::ofstream(home.filePath(".config/kernel-workbench/providers.json").toStdString())
        << nlohmann::json{{"providers", {{{"name", "loop"}, {"format", "openai"}, {"base_url", base.toStdString()},
                                          {"model", "m-1"}, {"api_key_env", "KWB_TEST_PROVIDER_KEY"}}}}}.dump();
    r = run(kwb_, {"llm", "list"}, env);
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.contains("loop") && r.out.contains("$KWB_TEST_PROVIDER_KEY (set)"), qPrintable(r.out));
    QVERIFY(!r.out.contains(QString::fromStdString(key)));
    r = run(kwb_, {"llm", "test", "loop"}, env);
    QVERIFY2(r.exitCode == 0, qPrintable(r.err));
    QVERIFY(!r.out.isEmpty());
    QVERIFY2(r.err.contains("ms to the first token") && r.err.contains("reported"), qPrintable(r.err));

    // Mistakes: an unknown provider, a bad format, a server that refuses the key.
    r = run(kwb_, {"llm", "test", "nope"}, env);
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("no provider named 'nope'") && r.err.contains("configured: loop"), qPrintable(r.err));
    r = run(kwb_, {"llm", "models", base, "--format", "grpc"}, env);
    QCOMPARE(r.exitCode, 2);
    ScriptedResponse refused;
    refused.status = 401;
    refused.chunks = {"{\"error\":{\"message\":\"Invalid API key\"}}"};
    server.route("POST", "/v1/chat/completions", {refused});
    r = run(kwb_, {"llm", "test", "loop", "--json"}, env);
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("401") && r.err.contains("$KWB_TEST_PROVIDER_KEY"), qPrintable(r.err));

    // Issue 17, 6: commands that read a workspace refuse a path where none is (they made an
    // empty one); a workspace this user may not write is still listed (read-only); a transcript
    // that cannot be stored fails the command (it exited 0).
    const QString typo = home.filePath("w-typo.kwb");
    for (const QStringList &reading : {QStringList{"llm", "transcripts", "--workspace", typo, "--session", "s1"},
                                       QStringList{"sessions", "--workspace", typo}}) {
      r = run(kwb_, reading, env);
      QVERIFY2(r.exitCode != 0, qPrintable(reading.join(' ')));
      QVERIFY2(r.err.contains("no workspace at " + typo), qPrintable(r.err));
      QVERIFY(!QFile::exists(typo));
    }
    {
      // As root every file may be written: there the readers run as nobody (setpriv), with the
      // workspace and its folder readable to all but writable by root only.
      QVERIFY(::chmod(home.path().toLocal8Bit().constData(), 0755) == 0);
      QVERIFY(::chmod(ws.toLocal8Bit().constData(), 0644) == 0);
      const bool root = ::geteuid() == 0;
      if (!root) QVERIFY(::chmod(home.path().toLocal8Bit().constData(), 0555) == 0);
      auto asReader = [&](QStringList args) {
        return root ? run(QStringLiteral("setpriv"), QStringList{"--reuid=65534", "--regid=65534", "--clear-groups", kwb_} + args, env)
                    : run(kwb_, args, env);
      };
      const auto listed = asReader({"llm", "transcripts", "--workspace", ws, "--session", "s1", "--json"});
      const auto sessions = asReader({"sessions", "--workspace", ws});
      QVERIFY(::chmod(home.path().toLocal8Bit().constData(), 0700) == 0);
      QVERIFY(::chmod(ws.toLocal8Bit().constData(), 0600) == 0);
      QVERIFY2(listed.exitCode == 0, qPrintable(listed.err));
      QCOMPARE(nlohmann::json::parse(listed.out.toStdString()).size(), std::size_t(1));
      QVERIFY2(sessions.exitCode == 0 && sessions.out.contains("No sessions"), qPrintable(sessions.err + sessions.out));
    }
    {
      // A full disk, as a file size limit the workspace's log cannot grow past (SIGXFSZ ignored,
      // so the write fails with an error instead of ending the process); the answer is large
      // enough that its transcript needs more than the limit.
      ScriptedResponse big;
      big.headers = {{"Content-Type", "application/json"}};
      std::string text;
      for (int i = 0; i < 20000; ++i) text += "hello ";
      big.chunks = {nlohmann::json{{"id", "x"}, {"object", "chat.completion"}, {"model", "m-1"},
                                   {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}},
                                                 {"finish_reason", "stop"}}}},
                                   {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 1}, {"total_tokens", 4}}}}
                        .dump()};
      server.route("POST", "/v1/chat/completions", {big});
      const QString limit = QStringLiteral(
          "import os, resource, signal, sys\n"
          "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
          "resource.setrlimit(resource.RLIMIT_FSIZE, (40000, 40000))\n"
          "os.execv(sys.argv[1], sys.argv[1:])\n");
      r = run(QStringLiteral("python3"), QStringList{"-c", limit, kwb_, "llm", "test", base, "--model", "m-1", "--no-stream",
                                                    "--workspace", ws, "--session", "s1"}, env);
      QCOMPARE(r.exitCode, 1);
      QVERIFY2(r.err.contains("the exchange was not stored in " + ws), qPrintable(r.err));
    }

    // The key is in no file the session wrote.
    for (const auto &entry : std::filesystem::recursive_directory_iterator(home.path().toStdString())) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      QVERIFY2(text.find(key) == std::string::npos, entry.path().c_str());
    }
  }

  // kwb import torch (issue 46 item 5): a user's own module with weights, end to end through the
  // real program and the real reader: the task folder, its state tensors, the progress lines on
  // stderr, and the JSON outcome of a second import into the same folder, refused before the
  // module is read.
  void importTorchModule() {
    std::string looked;
    const std::string python = kwb::test::torchPython(looked);
    if (python.empty()) QSKIP(looked.c_str());
    QTemporaryDir dir;
    const QString module = QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/kernelbench/linear_shift.py");
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    const QString python_ = QString::fromStdString(python);
    Run r = run(kwb_, {"import", "torch", module, "--to", dir.path(), "--python", python_}, env);
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.startsWith("imported linear_shift.py -> " + dir.path() + "/linear_shift: configurations kernelbench, "
                              "small, large; 4 inputs, 1 output\n"),
             qPrintable(r.out + r.err));
    QVERIFY2(r.err.contains("  linear_shift.py: shapes with batch_size = 8192, in_features = 2048\n"), qPrintable(r.err));
    const QString manifest = QString::fromStdString(kwb::test::readFile((dir.path() + "/linear_shift/task.toml").toStdString()));
    QVERIFY(manifest.contains("state = \"fc.weight\""));
    r = run(kwb_, {"task", "validate", dir.path() + "/linear_shift"});
    QCOMPARE(r.exitCode, 0);
    r = run(kwb_, {"import", "torch", module, "--to", dir.path(), "--python", python_, "--json"}, env);
    QCOMPARE(r.exitCode, 1);  // the folder holds files now: refused without --force
    const auto outcome = nlohmann::json::parse(r.out.toStdString())[0];
    QCOMPARE(outcome["ok"].get<bool>(), false);
    QVERIFY(outcome["message"].get<std::string>().find("already holds files; pass --force") != std::string::npos);
    QVERIFY2(!r.err.contains("shapes with"), qPrintable(r.err));  // nothing read: refused before
  }

  // kwb import kernelbench with a problem named like an option (issue 45 item 8): --no-torch.py
  // given as ./--no-torch.py, after --, or as it is (an unknown option that names a file) is read
  // as the file; an unknown option naming no file is a usage error saying how to name such a file.
  // The reader reads it either way; without PyTorch here the import then stops at the outputs.
  void importProblemNamedLikeAnOption() {
    QTemporaryDir dir;
    QVERIFY(QFile::copy(QStringLiteral(KWB_SOURCE_DIR "/tests/fixtures/kernelbench/relu.py"), dir.filePath("--no-torch.py")));
    const auto importIn = [&](const QStringList &args) {
      QProcess p;
      p.setWorkingDirectory(dir.path());
      p.start(kwb_, QStringList{"import", "kernelbench", "--python", "python3"} + args);
      p.waitForFinished(60000);
      return Run{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
                 QString::fromUtf8(p.readAllStandardError())};
    };
    int n = 0;
    for (const QStringList &given : {QStringList{"./--no-torch.py"}, QStringList{"--", "--no-torch.py"}, QStringList{"--no-torch.py"}}) {
      const QString to = QStringLiteral("tasks%1").arg(++n);
      const Run r = importIn(QStringList{"--to", to} + given);
      const bool read = r.exitCode == 0 ? r.out.contains("imported --no-torch.py -> " + to + "/--no-torch")
                                        : r.exitCode == 1 && r.err.contains("--no-torch.py: outputs: the output's shape and dtype need PyTorch");
      QVERIFY2(read, qPrintable(given.join(' ') + ": " + QString::number(r.exitCode) + " " + r.out + r.err));
    }
    const Run unknown = importIn({"--to", "tasks", "--frobnicate.py"});
    QCOMPARE(unknown.exitCode, 2);
    QCOMPARE(unknown.err, QStringLiteral("kwb import kernelbench: unknown option '--frobnicate.py'; a problem file whose name begins "
                                         "with '-' is given as ./--frobnicate.py or after --: kwb import kernelbench --to DIR -- "
                                         "--frobnicate.py\n"));
  }

 private:
  QString kwb_;
  QString worker_;
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
