// The production LLM client (core/llm: transport, decoders, provider) over real sockets: a real
// HTTP server on loopback (tests/helpers/loopback_http_server.h) replays recorded streams of the
// three wire formats in every chunking, and the trouble real services cause: keep-alives, an
// error event mid-stream, a connection cut mid-stream, a slow drip, a stall, 429 with
// Retry-After, 500 then success, 401, malformed JSON, an endless stream to cancel. Also the
// concurrency limit, the budget, usage estimates, and transcripts with the key redacted.
#include <QtTest>

#include <atomic>
#include <fstream>
#include <future>
#include <thread>

#include "core/llm/discovery.h"
#include "core/llm/provider.h"
#include "core/llm/provider_config.h"
#include "core/llm/transcript_store.h"
#include "helpers/loopback_http_server.h"

using namespace std::chrono_literals;
namespace llm = kwb::llm;
using kwb::test::LoopbackHttpServer;
using kwb::test::ScriptedResponse;

namespace {

const char *kKey = "sk-test-4f1c9a7e2b";

std::string fixture(const std::string &name) { return kwb::test::readFixture("llm/" + name); }

struct Format {
  llm::WireFormat format;
  std::string basePath;  // appended to the server's URL to make the base URL
  std::string chatPath;  // where the chat request goes
  std::string contentType;
};

Format formatOf(llm::WireFormat f, bool stream) {
  switch (f) {
    case llm::WireFormat::OpenAIChat:
      return {f, "/v1", "/v1/chat/completions", stream ? "text/event-stream" : "application/json"};
    case llm::WireFormat::AnthropicMessages:
      return {f, "/v1", "/v1/messages", stream ? "text/event-stream" : "application/json"};
    case llm::WireFormat::OllamaChat:
      return {f, "", "/api/chat", stream ? "application/x-ndjson" : "application/json; charset=utf-8"};
  }
  return {};
}

llm::ProviderConfig configFor(const LoopbackHttpServer &server, llm::WireFormat format) {
  llm::ProviderConfig c;
  c.name = "loopback";
  c.format = format;
  c.baseUrl = server.baseUrl() + formatOf(format, true).basePath;
  c.model = "test-model";
  c.retry.initialBackoff = 20ms;
  c.retry.maxBackoff = 200ms;
  c.stallTimeout = 10s;
  return c;
}

llm::ChatRequest hello(bool stream = true) {
  llm::ChatRequest r;
  r.messages = {{"system", "Be brief.", {}, {}}, {"user", "Say hello.", {}, {}}};
  r.maxTokens = 64;
  r.stream = stream;
  return r;
}

ScriptedResponse streamOf(const std::string &contentType, std::vector<std::string> chunks) {
  ScriptedResponse s;
  s.headers = {{"Content-Type", contentType}, {"Cache-Control", "no-cache"}};
  s.chunks = std::move(chunks);
  return s;
}

// The fixture decoded in one piece by the decoder alone: what the client must produce.
llm::ChatResponse expectedOf(llm::WireFormat format, bool stream, const std::string &body) {
  auto d = llm::makeDecoder(format, stream);
  d->feed(body);
  d->finish();
  return d->response();
}

std::string describe(const llm::ChatResult &r) {
  return "error='" + r.error + "' status=" + std::to_string(r.status) + " attempts=" + std::to_string(r.attempts) +
         " text='" + r.response.text + "' complete=" + std::to_string(r.response.complete) +
         " incomplete=" + std::to_string(r.incomplete);
}

void compareResponses(const llm::ChatResponse &got, const llm::ChatResponse &want) {
  QCOMPARE(got.text, want.text);
  QCOMPARE(got.reasoning, want.reasoning);
  QCOMPARE(got.finishReason, want.finishReason);
  QCOMPARE(got.complete, want.complete);
  QCOMPARE(got.usage.inputTokens, want.usage.inputTokens);
  QCOMPARE(got.usage.outputTokens, want.usage.outputTokens);
  QCOMPARE(got.usage.reported, want.usage.reported);
  QCOMPARE(got.toolCalls.size(), want.toolCalls.size());
  for (std::size_t i = 0; i < got.toolCalls.size(); ++i) {
    QCOMPARE(got.toolCalls[i].name, want.toolCalls[i].name);
    QCOMPARE(got.toolCalls[i].id, want.toolCalls[i].id);
    QCOMPARE(got.toolCalls[i].arguments, want.toolCalls[i].arguments);
  }
}

}  // namespace

class TestLlmClient : public QObject {
  Q_OBJECT

 private slots:
  // Every recorded stream of every format, served whole, a byte at a time and in random pieces:
  // the client's response is the same each time, and equals the fixture decoded in one piece.
  void replaysEveryFormatInEverySplit_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("format");
    QTest::addColumn<bool>("stream");
    const int openai = int(llm::WireFormat::OpenAIChat), anthropic = int(llm::WireFormat::AnthropicMessages),
              ollama = int(llm::WireFormat::OllamaChat);
    QTest::newRow("openai text") << "openai_stream_text.sse" << openai << true;
    QTest::newRow("openai tool calls") << "openai_stream_tool_calls.sse" << openai << true;
    QTest::newRow("openai keep-alive reasoning") << "openai_stream_keepalive_reasoning.sse" << openai << true;
    QTest::newRow("openai whole") << "openai_nonstream.json" << openai << false;
    QTest::newRow("anthropic text") << "anthropic_stream_text.sse" << anthropic << true;
    QTest::newRow("anthropic tool use") << "anthropic_stream_tool_use.sse" << anthropic << true;
    QTest::newRow("anthropic whole") << "anthropic_nonstream.json" << anthropic << false;
    QTest::newRow("ollama stream") << "ollama_stream.ndjson" << ollama << true;
    QTest::newRow("ollama tool") << "ollama_stream_tool.ndjson" << ollama << true;
    QTest::newRow("ollama whole") << "ollama_nonstream.json" << ollama << false;
  }

  void replaysEveryFormatInEverySplit() {
    QFETCH(QString, file);
    QFETCH(int, format);
    QFETCH(bool, stream);
    const auto wf = static_cast<llm::WireFormat>(format);
    const std::string body = fixture(file.toStdString());
    QVERIFY2(!body.empty(), "missing fixture");
    const llm::ChatResponse want = expectedOf(wf, stream, body);
    QVERIFY2(want.complete && want.error.empty(), "the fixture does not decode whole");
    const Format f = formatOf(wf, stream);
    std::vector<std::vector<std::string>> splits = {{body}, kwb::test::splitEvery(body, 1)};
    for (unsigned seed : {1u, 2u, 3u}) splits.push_back(kwb::test::splitRandom(body, seed));
    for (std::size_t i = 0; i < splits.size(); ++i) {
      LoopbackHttpServer server;
      server.route("POST", f.chatPath, {streamOf(f.contentType, splits[i])});
      llm::Provider provider(configFor(server, wf), kKey);
      std::string live;
      const auto r = provider.chat(hello(stream), [&](const llm::StreamDelta &d) {
        if (d.kind == llm::StreamDelta::Kind::Text) live += d.text;
      });
      QVERIFY2(r.ok(), (file.toStdString() + " split " + std::to_string(i) + ": " + describe(r)).c_str());
      compareResponses(r.response, want);
      QCOMPARE(live, want.text);
      QCOMPARE(r.attempts, 1);
      // What the server received: the format's path, the key in its header, the model.
      const auto requests = server.requests();
      QCOMPARE(requests.size(), std::size_t(1));
      const auto &q = requests[0];
      if (wf == llm::WireFormat::AnthropicMessages) {
        QCOMPARE(q.headers.at("x-api-key"), std::string(kKey));
        QCOMPARE(q.headers.at("anthropic-version"), std::string("2023-06-01"));
      } else {
        QCOMPARE(q.headers.at("authorization"), "Bearer " + std::string(kKey));
      }
      const auto sent = nlohmann::json::parse(q.body);
      QCOMPARE(sent.at("model").get<std::string>(), std::string("test-model"));
      QCOMPARE(sent.value("stream", false), stream);
    }
  }

  // An error event in the middle of a stream: the text before it is kept, the result is marked
  // incomplete with the server's message; no retry (the model already answered in part).
  void errorEventMidStreamKeepsTheText_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("format");
    QTest::newRow("openai") << "openai_stream_error_midstream.sse" << int(llm::WireFormat::OpenAIChat);
    QTest::newRow("anthropic") << "anthropic_stream_error.sse" << int(llm::WireFormat::AnthropicMessages);
  }
  void errorEventMidStreamKeepsTheText() {
    QFETCH(QString, file);
    QFETCH(int, format);
    const auto wf = static_cast<llm::WireFormat>(format);
    const std::string body = fixture(file.toStdString());
    const llm::ChatResponse want = expectedOf(wf, true, body);
    QVERIFY(!want.error.empty());
    LoopbackHttpServer server;
    server.route("POST", formatOf(wf, true).chatPath, {streamOf("text/event-stream", kwb::test::splitRandom(body, 7))});
    llm::Provider provider(configFor(server, wf), kKey);
    const auto r = provider.chat(hello());
    QVERIFY2(r.incomplete && !r.ok(), describe(r).c_str());
    QCOMPARE(r.response.text, want.text);
    QVERIFY2(r.error.find(want.error) != std::string::npos, describe(r).c_str());
    QCOMPARE(r.attempts, 1);
  }

  // The connection is cut after part of a stream: the partial text is kept and marked
  // incomplete, with the cut in words; nothing is retried.
  void cutMidStreamKeepsPartialText() {
    const std::string body = fixture("openai_stream_text.sse");
    auto pieces = kwb::test::splitEvery(body, 40);
    pieces.resize(pieces.size() / 2);
    std::string half;
    for (const auto &p : pieces) half += p;
    LoopbackHttpServer server;
    auto cut = streamOf("text/event-stream", pieces);
    cut.cutAfterChunks = true;
    server.route("POST", "/v1/chat/completions", {cut});
    llm::Provider provider(configFor(server, llm::WireFormat::OpenAIChat), kKey);
    const auto r = provider.chat(hello());
    QVERIFY2(r.incomplete && !r.cancelled, describe(r).c_str());
    QVERIFY2(r.error.find("cut") != std::string::npos, describe(r).c_str());
    auto partial = llm::makeDecoder(llm::WireFormat::OpenAIChat, true);
    partial->feed(half);
    partial->finish();
    QCOMPARE(r.response.text, partial->response().text);
    QVERIFY(!r.response.text.empty());
    QVERIFY(!r.response.complete);
    QCOMPARE(server.connectionsAccepted(), std::size_t(1));
  }

  // A slow drip (30 ms between pieces) is not a stall; a stream that goes quiet is one, stopped
  // after the stall limit with its text kept.
  void slowDripCompletesButAStallStops() {
    const std::string body = fixture("openai_stream_text.sse");
    LoopbackHttpServer server;
    auto drip = streamOf("text/event-stream", kwb::test::splitEvery(body, 64));
    drip.delayBetweenChunks = 30ms;
    server.route("POST", "/v1/chat/completions", {drip});
    auto config = configFor(server, llm::WireFormat::OpenAIChat);
    config.stallTimeout = 1s;
    {
      llm::Provider provider(config, kKey);
      const auto r = provider.chat(hello());
      QVERIFY2(r.ok(), describe(r).c_str());
      QCOMPARE(r.response.text, expectedOf(llm::WireFormat::OpenAIChat, true, body).text);
    }
    auto pieces = kwb::test::splitEvery(body, 64);
    auto quiet = streamOf("text/event-stream", {pieces[0], pieces[1]});
    quiet.endless = true;                 // repeats the first pieces ...
    quiet.delayBetweenChunks = 5000ms;    // ... but only every 5 s: a stall for a 1 s limit
    server.route("POST", "/v1/chat/completions", {quiet});
    llm::Provider provider(config, kKey);
    const auto started = std::chrono::steady_clock::now();
    const auto r = provider.chat(hello());
    const auto took = std::chrono::steady_clock::now() - started;
    QVERIFY2(r.incomplete, describe(r).c_str());
    QVERIFY2(r.error.find("stalled") != std::string::npos, describe(r).c_str());
    QVERIFY2(took >= 900ms && took < 4000ms, std::to_string(std::chrono::duration<double>(took).count()).c_str());
  }

  // 429 with Retry-After: 1 → the client waits about a second, then succeeds; 500 → retried
  // after the backoff; 401 → no retry, a message naming the key's variable.
  void retriesHonourRetryAfterAndStopOn401() {
    const std::string body = fixture("openai_stream_text.sse");
    LoopbackHttpServer server;
    ScriptedResponse limited;
    limited.status = 429;
    limited.headers = {{"Content-Type", "application/json"}, {"Retry-After", "1"}};
    limited.chunks = {R"({"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}})"};
    server.route("POST", "/v1/chat/completions", {limited, streamOf("text/event-stream", {body})});
    {
      llm::Provider provider(configFor(server, llm::WireFormat::OpenAIChat), kKey);
      const auto r = provider.chat(hello());
      QVERIFY2(r.ok(), describe(r).c_str());
      QCOMPARE(r.attempts, 2);
      const auto q = server.requests();
      QCOMPARE(q.size(), std::size_t(2));
      const auto gap = q[1].at - q[0].at;
      QVERIFY2(gap >= 950ms && gap < 3000ms, std::to_string(std::chrono::duration<double>(gap).count()).c_str());
    }
    LoopbackHttpServer server2;
    ScriptedResponse broken;
    broken.status = 500;
    broken.headers = {{"Content-Type", "application/json"}};
    broken.chunks = {R"({"error":{"message":"The server had an error while processing your request.","type":"server_error"}})"};
    server2.route("POST", "/v1/chat/completions", {broken, broken, streamOf("text/event-stream", {body})});
    {
      llm::Provider provider(configFor(server2, llm::WireFormat::OpenAIChat), kKey);
      const auto r = provider.chat(hello());
      QVERIFY2(r.ok(), describe(r).c_str());
      QCOMPARE(r.attempts, 3);
    }
    LoopbackHttpServer server3;
    ScriptedResponse refused;
    refused.status = 401;
    refused.headers = {{"Content-Type", "application/json"}};
    refused.chunks = {R"({"error":{"message":"Incorrect API key provided: sk-test-****.","type":"invalid_request_error","code":"invalid_api_key"}})"};
    server3.route("POST", "/v1/chat/completions", {refused});
    auto config = configFor(server3, llm::WireFormat::OpenAIChat);
    config.apiKeyEnv = "KWB_TEST_KEY_VARIABLE";
    llm::Provider provider(config, kKey);
    const auto r = provider.chat(hello());
    QCOMPARE(r.attempts, 1);
    QCOMPARE(r.status, 401);
    QCOMPARE(server3.requests().size(), std::size_t(1));
    QVERIFY2(r.error.find("401") != std::string::npos && r.error.find("Incorrect API key provided") != std::string::npos &&
                 r.error.find("$KWB_TEST_KEY_VARIABLE") != std::string::npos,
             r.error.c_str());
    QVERIFY2(r.error.find(kKey) == std::string::npos, "the error message holds the key");
  }

  // Every client error the README says is never retried: one request each, the status in the
  // message (401 is above, with its key message).
  void clientErrorsAreNotRetried_data() {
    QTest::addColumn<int>("status");
    QTest::newRow("400") << 400;
    QTest::newRow("403") << 403;
    QTest::newRow("404") << 404;
  }
  void clientErrorsAreNotRetried() {
    QFETCH(int, status);
    LoopbackHttpServer server;
    ScriptedResponse refused;
    refused.status = status;
    refused.headers = {{"Content-Type", "application/json"}};
    // With a terminal escape sequence and a forged line in it: shown escaped (issue 17, 6).
    refused.chunks = {"{\"error\":{\"message\":\"refused by the test server\\u001b[2J\\nkwb: ok\",\"type\":\"invalid_request_error\"}}"};
    server.route("POST", "/v1/chat/completions", {refused});
    auto config = configFor(server, llm::WireFormat::OpenAIChat);
    config.retry.maxAttempts = 4;
    llm::Provider provider(config, kKey);
    const auto r = provider.chat(hello());
    QCOMPARE(r.attempts, 1);
    QCOMPARE(r.status, status);
    QCOMPARE(server.requests().size(), std::size_t(1));
    QVERIFY2(r.error.find(std::to_string(status)) != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("refused by the test server\\x1b[2J\\nkwb: ok") != std::string::npos, r.error.c_str());
    QVERIFY(r.error.find('\x1b') == std::string::npos && r.error.find('\n') == std::string::npos);
  }

  // A server that keeps failing: the client gives up after maxAttempts and says so.
  void givesUpAfterMaxAttempts() {
    LoopbackHttpServer server;
    ScriptedResponse down;
    down.status = 503;
    down.chunks = {"upstream connect error"};
    server.route("POST", "/v1/chat/completions", {down});
    auto config = configFor(server, llm::WireFormat::OpenAIChat);
    config.retry.maxAttempts = 3;
    llm::Provider provider(config, kKey);
    const auto r = provider.chat(hello());
    QCOMPARE(r.attempts, 3);
    QCOMPARE(server.requests().size(), std::size_t(3));
    QVERIFY2(r.error.find("gave up after 3 attempts") != std::string::npos, r.error.c_str());
    QVERIFY2(r.error.find("upstream connect error") != std::string::npos, r.error.c_str());
  }

  // Malformed JSON in one chunk: the error is reported, the text before it and after it is read.
  void malformedChunkIsReported() {
    std::string body = fixture("openai_stream_text.sse");
    const auto at = body.find("\n\ndata: ", body.find("\n\ndata: ") + 1);
    QVERIFY(at != std::string::npos);
    body.insert(at + 2, "data: {\"id\":\"chatcmpl-x\",\"choices\":[{\"delta\":{\"content\":\"oops\"\n\n");
    LoopbackHttpServer server;
    server.route("POST", "/v1/chat/completions", {streamOf("text/event-stream", {body})});
    llm::Provider provider(configFor(server, llm::WireFormat::OpenAIChat), kKey);
    const auto r = provider.chat(hello());
    QVERIFY2(!r.ok(), describe(r).c_str());
    QVERIFY2(r.error.find("malformed") != std::string::npos || r.error.find("JSON") != std::string::npos, r.error.c_str());
    QVERIFY(!r.response.text.empty());
  }

  // An endless stream: cancel returns within 200 ms and the server sees the client go away.
  void cancelStopsAnEndlessStream() {
    LoopbackHttpServer server;
    ScriptedResponse endless = streamOf(
        "text/event-stream",
        {"data: {\"id\":\"chatcmpl-e\",\"object\":\"chat.completion.chunk\",\"created\":1732900000,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"la \"},\"finish_reason\":null}]}\n\n"});
    endless.endless = true;
    endless.delayBetweenChunks = 20ms;
    server.route("POST", "/v1/chat/completions", {endless});
    llm::Provider provider(configFor(server, llm::WireFormat::OpenAIChat), kKey);
    llm::CancelToken cancel;
    std::promise<void> firstText;
    std::atomic<bool> seen{false};
    auto done = std::async(std::launch::async, [&] {
      return provider.chat(hello(), [&](const llm::StreamDelta &d) {
        if (d.kind == llm::StreamDelta::Kind::Text && !seen.exchange(true)) firstText.set_value();
      }, &cancel);
    });
    QVERIFY(firstText.get_future().wait_for(10s) == std::future_status::ready);
    const auto cancelledAt = std::chrono::steady_clock::now();
    cancel.cancel();
    QVERIFY(done.wait_for(5s) == std::future_status::ready);
    const auto returned = std::chrono::steady_clock::now() - cancelledAt;
    const auto r = done.get();
    // The stream never ends: returning at all is the cancel working. The bound says it is prompt;
    // 2 s, not the 0.2 s it takes on an idle machine, because ctest -j shares two cores.
    QVERIFY2(returned < 2s, (std::to_string(std::chrono::duration<double>(returned).count() * 1000) + " ms").c_str());
    QVERIFY(r.cancelled && r.incomplete);
    QVERIFY(r.response.text.rfind("la la ", 0) == 0 || r.response.text == "la ");
    QVERIFY(server.waitForNoOpenConnections(5s));
    QVERIFY(server.lastClientGone().has_value());
  }

  // Issue 17, 6: a 100 MB answer was read and stored whole. A response body over the transport's
  // cap ends the transfer as a failure that says so, having read little more than the cap.
  void responseBodyIsCapped() {
    LoopbackHttpServer server;
    ScriptedResponse endless = streamOf("text/event-stream", {"data: " + std::string(1000, 'x') + "\n\n"});
    endless.endless = true;
    server.route("POST", "/v1/chat/completions", {endless});
    llm::HttpRequest request;
    request.url = server.baseUrl() + "/v1/chat/completions";
    request.body = "{}";
    llm::TransportOptions options;
    options.maxBodyBytes = 64 * 1024;
    std::int64_t delivered = 0;
    const auto r = llm::perform(request, options, [&](std::string_view b) {
      delivered += static_cast<std::int64_t>(b.size());
      return true;
    });
    QCOMPARE(std::string(llm::toString(r.failure)), std::string("other"));
    QVERIFY2(r.error.find("longer than 65536 bytes") != std::string::npos, r.error.c_str());
    QVERIFY2(delivered <= 64 * 1024, std::to_string(delivered).c_str());
    QVERIFY(server.waitForNoOpenConnections(5s));
  }

  // maxConcurrent 2: four requests at once never have more than two in flight at the server.
  void concurrencyLimitHolds() {
    LoopbackHttpServer server;
    auto slow = streamOf("text/event-stream", kwb::test::splitEvery(fixture("openai_stream_text.sse"), 200));
    slow.delayBeforeHeaders = 150ms;
    server.route("POST", "/v1/chat/completions", {slow});
    auto config = configFor(server, llm::WireFormat::OpenAIChat);
    config.maxConcurrent = 2;
    llm::Provider provider(config, kKey);
    std::atomic<int> most{0};
    std::vector<std::future<llm::ChatResult>> all;
    for (int i = 0; i < 4; ++i)
      all.push_back(std::async(std::launch::async, [&] {
        return provider.chat(hello(), [&](const llm::StreamDelta &) {
          int now = provider.inFlight(), seen = most.load();
          while (now > seen && !most.compare_exchange_weak(seen, now)) {}
        });
      }));
    for (auto &f : all) QVERIFY(f.get().ok());
    QVERIFY2(most.load() <= 2, std::to_string(most.load()).c_str());
    // The third request reached the server only after one of the first two had its answer.
    const auto q = server.requests();
    QCOMPARE(q.size(), std::size_t(4));
    QVERIFY(q[2].at - q[0].at >= 140ms);
  }

  // Tokens and cost add up; the budget refuses the request after it is spent; a stream without
  // a usage chunk is estimated and marked so.
  void accountingAndBudget() {
    LoopbackHttpServer server;
    server.route("POST", "/v1/chat/completions", {streamOf("text/event-stream", {fixture("openai_stream_text.sse")})});
    auto config = configFor(server, llm::WireFormat::OpenAIChat);
    config.price = llm::Price{1000.0, 2000.0};  // dollars per million tokens: a request costs cents
    auto accounting = std::make_shared<llm::Accounting>(0.001);
    llm::Provider provider(config, kKey, accounting);
    const auto first = provider.chat(hello());
    QVERIFY2(first.ok(), describe(first).c_str());
    QVERIFY(first.response.usage.reported);
    const double expected = first.response.usage.inputTokens * 1000.0 / 1e6 + first.response.usage.outputTokens * 2000.0 / 1e6;
    QCOMPARE(first.cost, expected);
    auto t = accounting->totals();
    QCOMPARE(t.requests, std::int64_t(1));
    QCOMPARE(t.inputTokens, first.response.usage.inputTokens);
    QVERIFY(t.cost > 0.001);
    const auto second = provider.chat(hello());
    QVERIFY2(second.error.find("budget reached") != std::string::npos, second.error.c_str());
    QCOMPARE(server.requests().size(), std::size_t(1));

    // No usage chunk (it is absent when a stream breaks, or a server omits it): estimated.
    std::string noUsage;
    for (const auto &event : kwb::test::splitEvery(fixture("openai_stream_text.sse"), 1 << 20)) noUsage += event;
    const auto at = noUsage.find("\"usage\":{");
    QVERIFY(at != std::string::npos);
    const auto start = noUsage.rfind("data: ", at);
    const auto end = noUsage.find("\n\n", at) + 2;
    noUsage.erase(start, end - start);
    LoopbackHttpServer server2;
    server2.route("POST", "/v1/chat/completions", {streamOf("text/event-stream", {noUsage})});
    llm::Provider estimated(configFor(server2, llm::WireFormat::OpenAIChat), kKey);
    const auto r = estimated.chat(hello());
    QVERIFY2(r.ok(), describe(r).c_str());
    QVERIFY(!r.response.usage.reported);
    QVERIFY(r.response.usage.outputTokens > 0 && r.response.usage.inputTokens > 0);
  }

  // Every exchange lands in the workspace with the key redacted (and nowhere in the row).
  void transcriptsRedactTheKey() {
    QTemporaryDir dir;
    auto ws = std::shared_ptr<kwb::Workspace>(kwb::Workspace::open(dir.filePath("t.kwb").toStdString()));
    LoopbackHttpServer server;
    ScriptedResponse refused;
    refused.status = 401;
    refused.chunks = {std::string("{\"error\":{\"message\":\"bad key ") + kKey + "\"}}"};  // a proxy that echoes the key
    server.route("POST", "/v1/chat/completions", {streamOf("text/event-stream", {fixture("openai_stream_text.sse")}), refused});
    llm::Provider provider(configFor(server, llm::WireFormat::OpenAIChat), kKey, nullptr,
                           llm::workspaceTranscriptSink(ws, "session-1"));
    QVERIFY(provider.chat(hello()).ok());
    QVERIFY(!provider.chat(hello()).ok());
    const auto rows = ws->llmTranscripts("session-1");
    QCOMPARE(rows.size(), std::size_t(2));
    QCOMPARE(rows[0].outcome, std::string("complete"));
    QCOMPARE(rows[0].status, 200);
    QVERIFY(!rows[0].responseText.empty());
    QVERIFY(rows[0].responseRaw.find("[DONE]") != std::string::npos);
    QVERIFY2(rows[0].requestHeaders.find("[redacted]") != std::string::npos, rows[0].requestHeaders.c_str());
    QCOMPARE(rows[1].outcome, std::string("error"));
    QVERIFY2(rows[1].error.find("bad key [redacted]") != std::string::npos, rows[1].error.c_str());
    QCOMPARE(rows[1].status, 401);
    for (const auto &row : rows)
      for (const std::string *field : {&row.requestHeaders, &row.requestBody, &row.responseText, &row.responseRaw, &row.error, &row.url})
        QVERIFY2(field->find(kKey) == std::string::npos, "the key is in a transcript");
  }

  // Models from each format's list endpoint; a connection refused is said in words.
  void modelsAndConnectionErrors() {
    LoopbackHttpServer server;
    ScriptedResponse list;
    list.headers = {{"Content-Type", "application/json"}};
    list.chunks = {R"({"object":"list","data":[{"id":"smollm2-135m","object":"model","created":1732900000,"owned_by":"me"},{"id":"other","object":"model","created":1732900000,"owned_by":"me"}]})"};
    server.route("GET", "/v1/models", {list});
    ScriptedResponse tags;
    tags.headers = {{"Content-Type", "application/json; charset=utf-8"}};
    tags.chunks = {R"({"models":[{"name":"qwen2.5-coder:7b","model":"qwen2.5-coder:7b","modified_at":"2024-11-20T10:00:00Z","size":4683087332,"digest":"abc","details":{"format":"gguf","family":"qwen2"}}]})"};
    server.route("GET", "/api/tags", {tags});
    llm::Provider openai(configFor(server, llm::WireFormat::OpenAIChat), "");
    const auto m = openai.models();
    QVERIFY2(m.error.empty(), m.error.c_str());
    QCOMPARE(m.models, (std::vector<std::string>{"smollm2-135m", "other"}));
    QVERIFY(server.requests()[0].headers.count("authorization") == 0);  // no key, no header
    llm::Provider ollama(configFor(server, llm::WireFormat::OllamaChat), "");
    QCOMPARE(ollama.models().models, (std::vector<std::string>{"qwen2.5-coder:7b"}));

    int port = 0;
    {
      LoopbackHttpServer gone;
      port = gone.port();
    }
    auto config = configFor(server, llm::WireFormat::OpenAIChat);
    config.baseUrl = "http://127.0.0.1:" + std::to_string(port) + "/v1";
    config.retry.maxAttempts = 2;
    llm::Provider nobody(config, "");
    const auto r = nobody.chat(hello());
    QCOMPARE(r.attempts, 2);
    QVERIFY2(r.error.find("could not connect") != std::string::npos, r.error.c_str());
  }

  // Discovery finds a server on a "known" port (here the loopback server's) and lists its
  // models; a port nobody listens on is left out.
  void discoveryFindsLocalServers() {
    LoopbackHttpServer server;
    ScriptedResponse list;
    list.headers = {{"Content-Type", "application/json"}};
    list.chunks = {R"({"object":"list","data":[{"id":"smollm2-135m","object":"model"}]})"};
    server.route("GET", "/v1/models", {list});
    int closed = 0;
    {
      LoopbackHttpServer gone;
      closed = gone.port();
    }
    const auto found = llm::discoverLocalServers(
        "127.0.0.1", {{"llama.cpp", server.port(), llm::WireFormat::OpenAIChat, "/v1"},
                      {"ollama", closed, llm::WireFormat::OllamaChat, ""}});
    QCOMPARE(found.size(), std::size_t(1));
    QCOMPARE(found[0].kind.name, std::string("llama.cpp"));
    QCOMPARE(found[0].provider.baseUrl, server.baseUrl() + "/v1");
    QCOMPARE(found[0].provider.model, std::string("smollm2-135m"));
    QCOMPARE(found[0].models, (std::vector<std::string>{"smollm2-135m"}));
    QVERIFY(found[0].provider.apiKeyEnv.empty());
    // No /props here (a llama-cpp-python server): one request at once, the window not known.
    QCOMPARE(found[0].provider.maxConcurrent, 1);
    QCOMPARE(found[0].provider.contextWindow, 0);

    // llama.cpp's own server says its window and slots in /props; vLLM its window in the list.
    ScriptedResponse props;
    props.headers = {{"Content-Type", "application/json"}};
    props.chunks = {R"({"default_generation_settings":{"n_ctx":8192,"n_predict":-1},"total_slots":4,"chat_template":""})"};
    server.route("GET", "/props", {props});
    const auto withProps = llm::discoverLocalServers("127.0.0.1", {{"llama.cpp", server.port(), llm::WireFormat::OpenAIChat, "/v1"}});
    QCOMPARE(withProps.size(), std::size_t(1));
    QCOMPARE(withProps[0].provider.contextWindow, 8192);
    QCOMPARE(withProps[0].provider.maxConcurrent, 4);
    QCOMPARE(withProps[0].limits.from, std::string("the server's /props"));
    const auto vllm = llm::limitsFromModels(
        R"({"object":"list","data":[{"id":"a","max_model_len":4096},{"id":"Qwen/Qwen2.5-Coder-7B","max_model_len":32768}]})",
        "Qwen/Qwen2.5-Coder-7B");
    QCOMPARE(vllm.contextWindow, 32768);
    QCOMPARE(llm::limitsFromModels(R"({"data":[{"id":"x","context_length":131072}]})", "y").contextWindow, 131072);
    QCOMPARE(llm::limitsFromProps(R"({"n_ctx":-1,"total_slots":"2"})").contextWindow, 0);
    QCOMPARE(llm::limitsFromProps("not json").concurrent, 0);
  }

  // A llama-cpp-python server cuts the answer it streams when another request arrives (recorded:
  // "data: [DONE]" with no finish_reason): the cut answer is asked again, and the provider sends
  // one request at a time from then on. Alone, an answer without a finish reason is kept.
  void answerCutByAnotherRequestIsAskedAgainOneAtATime() {
    LoopbackHttpServer server;
    const std::string type = "text/event-stream; charset=utf-8";
    auto cut = streamOf(type, kwb::test::splitEvery(fixture("real/llamacpp_stream_interrupted.sse"), 400));
    cut.delayBeforeHeaders = 300ms;
    auto whole = streamOf(type, kwb::test::splitEvery(fixture("real/llamacpp_stream.sse"), 400));
    whole.delayBeforeHeaders = 300ms;
    server.route("POST", "/v1/chat/completions", {cut, whole, whole});
    auto config = configFor(server, llm::WireFormat::OpenAIChat);
    config.maxConcurrent = 2;
    llm::Provider provider(config, kKey);
    auto first = std::async(std::launch::async, [&] { return provider.chat(hello()); });
    QVERIFY(server.waitForRequests(1, 5s));
    auto second = std::async(std::launch::async, [&] { return provider.chat(hello()); });
    const auto a = first.get(), b = second.get();
    QVERIFY2(a.ok(), describe(a).c_str());
    QVERIFY2(b.ok(), describe(b).c_str());
    QCOMPARE(a.response.finishReason, std::string("stop"));
    QVERIFY2(a.note.find("cut an answer short") != std::string::npos, a.note.c_str());
    QVERIFY2(b.note.empty(), b.note.c_str());
    QCOMPARE(provider.concurrencyLimit(), 1);
    const auto q = server.requests();
    QCOMPARE(q.size(), std::size_t(3));
    // Asked again only once the other request had its answer (300 ms after it arrived).
    QVERIFY(q[2].at - q[1].at >= 280ms);

    LoopbackHttpServer alone;
    alone.route("POST", "/v1/chat/completions",
                {streamOf(type, {fixture("real/llamacpp_stream_interrupted.sse")})});
    llm::Provider single(configFor(alone, llm::WireFormat::OpenAIChat), kKey);
    const auto r = single.chat(hello());
    QVERIFY2(r.ok(), describe(r).c_str());
    QVERIFY(r.response.finishReason.empty());
    QCOMPARE(alone.requests().size(), std::size_t(1));
    QCOMPARE(single.concurrencyLimit(), 2);
  }

  // A streamed prompt beyond the window gets an empty stream (recorded): asked again whole, the
  // server's 400 names the window, which the provider keeps; the error says the prompt does not
  // fit and what to do. The next request's answer limit is fitted to the window.
  void emptyStreamIsAskedAgainWholeAndTheWindowKept() {
    LoopbackHttpServer server;
    ScriptedResponse empty;
    empty.headers = {{"Content-Type", "text/event-stream; charset=utf-8"}};
    ScriptedResponse refused;
    refused.status = 400;
    refused.headers = {{"Content-Type", "application/json"}};
    refused.chunks = {fixture("real/llamacpp_error_context.json")};
    refused.chunkedEncoding = false;
    auto whole = streamOf("text/event-stream; charset=utf-8", {fixture("real/llamacpp_stream.sse")});
    server.route("POST", "/v1/chat/completions", {empty, refused, whole});
    llm::Provider provider(configFor(server, llm::WireFormat::OpenAIChat), kKey);
    const auto r = provider.chat(hello());
    QVERIFY(!r.ok());
    QVERIFY2(r.error.find("3031 tokens") != std::string::npos && r.error.find("2048") != std::string::npos,
             r.error.c_str());
    QVERIFY2(r.error.find("--n_ctx") != std::string::npos, r.error.c_str());
    QVERIFY2(r.note.find("without streaming") != std::string::npos, r.note.c_str());
    QCOMPARE(provider.contextWindow(), 2048);
    auto q = server.requests();
    QCOMPARE(q.size(), std::size_t(2));
    QCOMPARE(nlohmann::json::parse(q[1].body).value("stream", true), false);

    auto big = hello();
    big.maxTokens = 4096;
    const auto next = provider.chat(big);
    QVERIFY2(next.ok(), describe(next).c_str());
    QVERIFY2(next.note.find("lowered") != std::string::npos, next.note.c_str());
    q = server.requests();
    const int sent = nlohmann::json::parse(q.back().body)["max_tokens"].get<int>();
    QVERIFY2(sent > 1900 && sent < 2048, std::to_string(sent).c_str());
  }

  // A refusal that leaves room for a shorter answer: asked again once with the answer fitted.
  void refusalWithRoomLeftIsAskedAgainFitted() {
    LoopbackHttpServer server;
    ScriptedResponse refused;
    refused.status = 400;
    refused.headers = {{"Content-Type", "application/json"}};
    // (Not a raw string: moc misreads the apostrophe in one.)
    refused.chunks = {"{\"error\":{\"message\":\"This model's maximum context length is 4096 tokens. However, you "
                      "requested 5000 tokens (904 in the messages, 4096 in the completion). Please reduce the length "
                      "of the messages or completion.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}"};
    server.route("POST", "/v1/chat/completions", {refused, streamOf("text/event-stream", {fixture("openai_stream_text.sse")})});
    llm::Provider provider(configFor(server, llm::WireFormat::OpenAIChat), kKey);
    auto request = hello();
    request.maxTokens = 4096;
    const auto r = provider.chat(request);
    QVERIFY2(r.ok(), describe(r).c_str());
    const auto q = server.requests();
    QCOMPARE(q.size(), std::size_t(2));
    QCOMPARE(nlohmann::json::parse(q[1].body)["max_tokens"].get<int>(), 4096 - 904 - 16);
    QCOMPARE(provider.contextWindow(), 4096);

    // The forms servers say it in.
    const auto llamaServer = llm::contextRefusalIn(
        R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}})");
    QVERIFY(llamaServer);
    QCOMPARE(llamaServer->window, 4096);
    QCOMPARE(llamaServer->promptTokens, 5000);
    const auto python = llm::contextRefusalIn(fixture("real/llamacpp_error_context.json"));
    QVERIFY(python);
    QCOMPARE(python->window, 2048);
    QCOMPARE(python->promptTokens, 3031);
    const auto log = llm::contextRefusalIn(R"({"error":"Requested tokens (2921) exceed context window of 2048"})");
    QVERIFY(log);
    QCOMPARE(log->window, 2048);
    QVERIFY(!llm::contextRefusalIn(R"({"error":{"message":"model not found"}})"));
    QVERIFY(!llm::contextRefusalIn("<html>502</html>"));
  }

  // The providers file: saved and read back; a key in it, a bad format or URL, or two
  // providers of one name are errors naming the file and the provider.
  void providersFileRoundTripAndErrors() {
    QTemporaryDir dir;
    const std::filesystem::path file = dir.filePath("providers.json").toStdString();
    auto templates = llm::providerTemplates();
    QVERIFY(templates.size() >= 8);
    templates[0].price = llm::Price{2.5, 10};
    templates[0].maxConcurrent = 3;
    llm::saveProviders(templates, file);
    const auto back = llm::loadProviders(file);
    QCOMPARE(back.size(), templates.size());
    QCOMPARE(llm::toJson(back[0]).dump(), llm::toJson(templates[0]).dump());
    QCOMPARE(back[0].maxConcurrent, 3);
    QCOMPARE(back[0].price->outputPerMillion, 10.0);
    QVERIFY(llm::loadProviders(dir.filePath("none.json").toStdString()).empty());
    auto errorOf = [&](const std::string &text) -> std::string {
      std::ofstream(file) << text;
      try {
        llm::loadProviders(file);
      } catch (const std::exception &e) {
        return e.what();
      }
      return "";
    };
    using nlohmann::json;
    const json base = {{"name", "p"}, {"format", "openai"}, {"base_url", "http://127.0.0.1:1/v1"}};
    auto one = [](json p) { return json{{"providers", json::array({std::move(p)})}}.dump(); };
    json withKey = base;
    withKey["api_key"] = "sk-1";
    QVERIFY(errorOf(one(withKey)).find("providers[0]: p: a key may not be stored") != std::string::npos);
    json grpc = base;
    grpc["format"] = "grpc";
    QVERIFY(errorOf(one(grpc)).find("expected openai, anthropic or ollama") != std::string::npos);
    json ftp = base;
    ftp["base_url"] = "ftp://x";
    QVERIFY(errorOf(one(ftp)).find("must start with http") != std::string::npos);
    QVERIFY(errorOf(json{{"providers", json::array({base, base})}}.dump()).find("two providers are named 'p'") != std::string::npos);
    QVERIFY(errorOf("{not json").find("not valid JSON") != std::string::npos);

    // Issue 45, 8: a top level that is not the list was read as no providers.
    const std::string expected = "; expected {\"providers\": [...]}, a list of providers";
    QCOMPARE(errorOf(R"({"provider": []})"), file.string() + ": the top level is an object without \"providers\"" + expected);
    QCOMPARE(errorOf(R"({"providers": {"name": "p"}})"), file.string() + ": \"providers\" is an object" + expected);
    QCOMPARE(errorOf("\"p\""), file.string() + ": the top level is a string" + expected);
    QCOMPARE(errorOf("null"), file.string() + ": the top level is null" + expected);
    QCOMPARE(errorOf(json::array({base}).dump()), std::string());  // the list alone is read
    // ... and retries were unbounded (100000 attempts without backoff: 63,985 requests in 40 s).
    auto retry = [&](json r) {
      json p = base;
      p["retry"] = std::move(r);
      return errorOf(one(p));
    };
    const std::string where = file.string() + ": providers[0]: p: ";
    QCOMPARE(retry({{"max_attempts", 100000}}),
             where + "\"retry.max_attempts\" is 100000; it must be a whole number from 1 to 10 (requests per answer, the first included)");
    QCOMPARE(retry({{"max_attempts", 0}}),
             where + "\"retry.max_attempts\" is 0; it must be a whole number from 1 to 10 (requests per answer, the first included)");
    QCOMPARE(retry({{"max_attempts", 2.5}}),
             where + "\"retry.max_attempts\" is 2.5; it must be a whole number from 1 to 10 (requests per answer, the first included)");
    QCOMPARE(retry({{"initial_backoff_ms", -5}}), where + "\"retry.initial_backoff_ms\" is -5; it must be a whole number from 0 to 60000 ms");
    QCOMPARE(retry({{"max_backoff_ms", 3600000}}), where + "\"retry.max_backoff_ms\" is 3600000; it must be a whole number from 0 to 60000 ms");
    QCOMPARE(retry({{"multiplier", 0}}), where + "\"retry.multiplier\" is 0; it must be a number from 1 to 10");
    QCOMPARE(retry({{"jitter", "lots"}}), where + "\"retry.jitter\" is \"lots\"; it must be a number from 0 to 1 (a fraction of the backoff)");
    QCOMPARE(retry(json::array()), where + "\"retry\" must be an object");
    QCOMPARE(retry({{"max_attempts", 10}, {"initial_backoff_ms", 0}, {"max_backoff_ms", 60000}, {"multiplier", 1}, {"jitter", 0}}),
             std::string());
    const auto bounded = llm::loadProviders(file);
    QCOMPARE(bounded.at(0).retry.maxAttempts, 10);
    QCOMPARE(bounded.at(0).retry.maxBackoff.count(), 60000LL);

    // Issue 47, 5: the model's window and answer limit, per provider (KOPE's W and G's cap).
    auto window = [&](const char *key, json value) {
      json p = base;
      p[key] = std::move(value);
      return errorOf(one(p));
    };
    QCOMPARE(window("context_window", 8192), std::string());
    QCOMPARE(llm::loadProviders(file).at(0).contextWindow, 8192);
    QCOMPARE(llm::toJson(llm::loadProviders(file).at(0))["context_window"].get<int>(), 8192);
    QCOMPARE(window("max_output_tokens", 2048), std::string());
    QCOMPARE(llm::loadProviders(file).at(0).maxOutputTokens, 2048);
    QVERIFY(!llm::toJson(llm::loadProviders(file).at(0)).contains("context_window"));  // 0: not known, not written
    QCOMPARE(window("context_window", -1),
             where + "\"context_window\" is -1; it must be a whole number of tokens from 0 (not known) to 10000000");
    QCOMPARE(window("max_output_tokens", "lots"),
             where + "\"max_output_tokens\" is \"lots\"; it must be a whole number of tokens from 0 (not known) to 10000000");
  }

  void retryAfterParses() {
    using namespace std::chrono;
    QCOMPARE(llm::parseRetryAfter("7")->count(), 7000LL);
    QCOMPARE(llm::parseRetryAfter(" 0.5 ")->count(), 500LL);
    const auto now = system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
    QCOMPARE(llm::parseRetryAfter("Sun, 06 Nov 1994 08:49:57 GMT", now)->count(), 20000LL);
    QVERIFY(!llm::parseRetryAfter("soon").has_value());
    QVERIFY(llm::parseRetryAfter("99999999999999999999")->count() > 0);  // clamped, not overflowed
    QVERIFY(!llm::parseRetryAfter("Sun, 06 Foo 1994 08:49:57 GMT", now).has_value());
    QVERIFY(!llm::parseRetryAfter("").has_value());
    llm::ProviderConfig c;
    c.retry.initialBackoff = 100ms;
    c.retry.multiplier = 2;
    c.retry.maxBackoff = 300ms;
    c.retry.jitter = 0.25;
    llm::Provider p(c, "");
    for (int attempt = 1; attempt <= 4; ++attempt) {
      const double base = std::min(100.0 * std::pow(2.0, attempt - 1), 300.0);
      const auto b = p.backoff(attempt, std::nullopt).count();
      QVERIFY2(b >= base * 0.75 - 1 && b <= base * 1.25 + 1, std::to_string(b).c_str());
    }
    QCOMPARE(p.backoff(1, milliseconds(4000)).count(), 4000LL);
  }
};

QTEST_GUILESS_MAIN(TestLlmClient)
#include "tst_llm_client.moc"
