// The LLM wire formats (core/llm/wire_format.h), without I/O: recorded streams of OpenAI-compatible
// servers (OpenAI, DeepSeek, llama.cpp, vLLM), Anthropic and Ollama (tests/fixtures/llm) decode to
// the same response whatever way the body is cut into pieces; the SSE and NDJSON parsers follow
// their specifications; malformed chunks and error events are reported without losing text;
// request bodies, headers, model lists and error bodies are what each service expects.
#include <QtTest>

#include <filesystem>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/llm/wire_format.h"
#include "helpers/test_files.h"

// moc does not read raw string literals: it sees only the class declaration below.
#ifndef Q_MOC_RUN
using namespace kwb::llm;
using json = nlohmann::json;
namespace fs = std::filesystem;


namespace {

fs::path fixturesDir() { return fs::path(KWB_SOURCE_DIR) / "tests" / "fixtures" / "llm"; }

std::string fixture(const std::string &name) {
  auto path = fixturesDir() / name;
  if (!fs::exists(path)) throw std::runtime_error("missing fixture " + path.string());
  return kwb::test::readFile(path);
}

// What one decoding gave: the response and what the deltas said along the way.
struct Decoded {
  ChatResponse response;
  std::string deltaText, deltaReasoning;
  std::map<int, std::string> deltaArguments;
  std::map<int, std::string> deltaNames;
  int keepAlives = 0, errors = 0, dones = 0, usages = 0;
};

// Decodes body cut at the given piece sizes (the last piece takes the rest).
Decoded decode(WireFormat format, bool stream, const std::string &body, const std::vector<std::size_t> &pieces) {
  Decoded d;
  auto decoder = makeDecoder(format, stream, [&d](const StreamDelta &delta) {
    switch (delta.kind) {
      case StreamDelta::Kind::Text: d.deltaText += delta.text; break;
      case StreamDelta::Kind::Reasoning: d.deltaReasoning += delta.text; break;
      case StreamDelta::Kind::ToolCall:
        d.deltaArguments[delta.index] += delta.text;
        if (!delta.name.empty()) d.deltaNames[delta.index] = delta.name;
        break;
      case StreamDelta::Kind::Usage: ++d.usages; break;
      case StreamDelta::Kind::KeepAlive: ++d.keepAlives; break;
      case StreamDelta::Kind::Error: ++d.errors; break;
      case StreamDelta::Kind::Done: ++d.dones; break;
    }
  });
  std::size_t at = 0;
  for (std::size_t size : pieces) {
    if (at >= body.size()) break;
    size = std::min(size, body.size() - at);
    decoder->feed(std::string_view(body).substr(at, size));
    at += size;
  }
  if (at < body.size()) decoder->feed(std::string_view(body).substr(at));
  decoder->finish();
  d.response = decoder->response();
  return d;
}

// The ways a body is cut: whole, one byte at a time, random pieces from fixed seeds.
std::vector<std::pair<std::string, std::vector<std::size_t>>> splits(std::size_t size) {
  std::vector<std::pair<std::string, std::vector<std::size_t>>> out;
  out.push_back({"whole", {size}});
  out.push_back({"bytes", std::vector<std::size_t>(size, 1)});
  for (unsigned seed : {1u, 2u, 3u, 17u, 4242u}) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<std::size_t> small(1, 9), large(1, 300);
    std::vector<std::size_t> pieces;
    std::size_t total = 0;
    while (total < size) {
      std::size_t n = (seed % 2) ? small(rng) : large(rng);
      pieces.push_back(n);
      total += n;
    }
    out.push_back({"random seed " + std::to_string(seed), pieces});
  }
  return out;
}

json toJson(const ChatResponse &r, bool withError = true) {
  json calls = json::array();
  for (const auto &c : r.toolCalls) calls.push_back({{"index", c.index}, {"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
  json j = {{"id", r.id},
            {"model", r.model},
            {"text", r.text},
            {"reasoning", r.reasoning},
            {"toolCalls", calls},
            {"usage", {{"input", r.usage.inputTokens}, {"output", r.usage.outputTokens}, {"reported", r.usage.reported}}},
            {"finishReason", r.finishReason},
            {"complete", r.complete}};
  if (withError) j["error"] = r.error;
  return j;
}

QString show(const json &j) { return QString::fromStdString(j.dump(2)); }

ToolCall call(int index, std::string id, std::string name, std::string arguments) {
  ToolCall c;
  c.index = index;
  c.id = std::move(id);
  c.name = std::move(name);
  c.arguments = std::move(arguments);
  return c;
}

struct FixtureCase {
  std::string file;
  WireFormat format;
  bool stream;
  ChatResponse expected;  // error: the expected start of the error ("" for none)
  int keepAlives;
};

ChatResponse response(std::string id, std::string model, std::string text, std::string reasoning, std::vector<ToolCall> calls,
                      Usage usage, std::string finish, bool complete, std::string error = {}) {
  ChatResponse r;
  r.id = std::move(id);
  r.model = std::move(model);
  r.text = std::move(text);
  r.reasoning = std::move(reasoning);
  r.toolCalls = std::move(calls);
  r.usage = usage;
  r.finishReason = std::move(finish);
  r.complete = complete;
  r.error = std::move(error);
  return r;
}

Usage reported(std::int64_t in, std::int64_t out) { return Usage{in, out, true}; }
Usage estimated(std::int64_t in, std::int64_t out) { return Usage{in, out, false}; }

const std::vector<FixtureCase> &fixtureCases() {
  static const std::vector<FixtureCase> cases = {
      {"openai_stream_text.sse", WireFormat::OpenAIChat, true,
       response("chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "gpt-4o-mini-2024-07-18", "Hello! How can I help you today?", "", {},
                reported(19, 10), "stop", true),
       0},
      {"openai_stream_tool_calls.sse", WireFormat::OpenAIChat, true,
       response("chatcmpl-BJZrX4kD3n2oYqTqf1VhW0sLpE7aM", "gpt-4.1-2025-04-14", "", "",
                {call(0, "call_Ul6sPbHxYDaFGeMWlzOHfKwq", "get_weather", R"({"location": "Paris, France"})"),
                 call(1, "call_3bYqfvSoPzEpGzCKh0dLc5hR", "get_time", R"({"timezone": "Europe/Paris"})")},
                reported(82, 47), "tool_calls", true),
       0},
      {"openai_stream_keepalive_reasoning.sse", WireFormat::OpenAIChat, true,
       response("0f2e7c4a-6b1d-4c3e-9a57-2d8f1e6b3c90", "deepseek-reasoner", "2 + 2 = **4**", "The user asks for 2+2. That is 4.", {},
                reported(12, 41), "stop", true),
       3},
      // The stream broke after an error chunk: no usage came, the output is estimated from the text.
      {"openai_stream_error_midstream.sse", WireFormat::OpenAIChat, true,
       response("chatcmpl-C1xKq8VbUe5fRmTj0wHnZa3yLdPiG", "gpt-4o-2024-08-06", "Here is the kernel", "", {}, estimated(0, 5), "", false,
                "The server had an error while processing your request. Sorry about that! (server_error)"),
       0},
      {"openai_stream_malformed_chunk.sse", WireFormat::OpenAIChat, true,
       response("chatcmpl-9xQvR2mN7bLk4PzT8sWcY1aEfGhJd", "gpt-4o-mini-2024-07-18", "one two", "", {}, reported(5, 4), "stop", true,
                "malformed JSON in stream chunk 3: parse error at line 1, column "),
       0},
      {"llamacpp_stream_text.sse", WireFormat::OpenAIChat, true,
       response("chatcmpl-3Xq1mVnR8kLwTzP0aYbC5dEfGhIjKlMn", "SmolLM2-135M-Instruct.Q4_1.gguf", "Paris is the capital of France.", "", {},
                reported(31, 8), "stop", true),
       0},
      {"vllm_stream_error.sse", WireFormat::OpenAIChat, true,
       response("chatcmpl-8f6c2a1e9b7d4c3fa0e5b1d2c3f4a5b6", "Qwen/Qwen2.5-7B-Instruct", "Sure", "", {}, estimated(0, 1), "", true,
                "The decoder prompt (length 40971) is longer than the maximum model length of 32768. (BadRequestError)"),
       0},
      {"openai_nonstream.json", WireFormat::OpenAIChat, false,
       response("chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "gpt-4.1-2025-04-14", "Hello! How can I assist you today?", "", {},
                reported(19, 10), "stop", true),
       0},
      {"openai_nonstream_tool_calls.json", WireFormat::OpenAIChat, false,
       response("chatcmpl-BJZs1gYb0Gg1fE8cZ0iXwzV4dSx3Q", "gpt-4.1-2025-04-14", "", "",
                {call(0, "call_Ul6sPbHxYDaFGeMWlzOHfKwq", "get_weather", R"({"location":"Paris, France"})"),
                 call(1, "call_3bYqfvSoPzEpGzCKh0dLc5hR", "get_time", R"({"timezone":"Europe/Paris"})")},
                reported(82, 47), "tool_calls", true),
       0},
      {"anthropic_stream_text.sse", WireFormat::AnthropicMessages, true,
       response("msg_01XFDUDYJgAACzvnptvVoYEL", "claude-sonnet-4-20250514", "Hello! How can I help you today?", "", {}, reported(25, 12),
                "end_turn", true),
       1},
      {"anthropic_stream_tool_use.sse", WireFormat::AnthropicMessages, true,
       response("msg_014p7gG3wDgGV9EUtLvnow3U", "claude-sonnet-4-20250514", "Okay, let's check the weather for San Francisco, CA:",
                "The user wants the weather; call get_weather.",
                {call(2, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather", R"({"location": "San Francisco, CA", "unit": "fahrenheit"})")},
                reported(472, 89), "tool_use", true),
       0},
      // Overloaded mid-stream: the input tokens came with message_start, the output is estimated.
      {"anthropic_stream_error.sse", WireFormat::AnthropicMessages, true,
       response("msg_01Wm4VbSNdxRr3ZwqjMz8hJK", "claude-3-5-haiku-20241022", "Once upon a time", "", {}, estimated(31, 4), "", false,
                "Overloaded (overloaded_error)"),
       1},
      {"anthropic_nonstream.json", WireFormat::AnthropicMessages, false,
       response("msg_01Aq9w938a90dw8q", "claude-sonnet-4-20250514", "I'll check the current weather in San Francisco for you.", "",
                {call(1, "toolu_01A09q90qw90lq917835lq9", "get_weather", R"({"location":"San Francisco, CA","unit":"celsius"})")},
                reported(384, 79), "tool_use", true),
       0},
      {"ollama_stream.ndjson", WireFormat::OllamaChat, true,
       response("", "llama3.2", "The sky is blue because of Rayleigh scattering.", "", {}, reported(26, 7), "stop", true), 0},
      {"ollama_stream_tool.ndjson", WireFormat::OllamaChat, true,
       response("", "qwen3:8b", "", "The user wants weather for two cities.",
                {call(0, "call_k2v3y8qd", "get_weather", R"({"city":"Tokyo"})"),
                 call(1, "call_9xw1m0ab", "get_weather", R"({"city":"Paris","unit":"celsius"})")},
                reported(214, 58), "stop", true),
       0},
      {"ollama_nonstream.json", WireFormat::OllamaChat, false,
       response("", "llama3.2", "Hello! How are you today?", "", {}, reported(26, 298), "stop", true), 0},
  };
  return cases;
}

Decoded decodeWhole(WireFormat format, bool stream, const std::string &body) { return decode(format, stream, body, {body.size()}); }

ChatRequest conversation(bool stream) {
  ChatRequest r;
  r.model = "m-1";
  r.maxTokens = 512;
  r.stream = stream;
  Message system{"system", "You write CUDA kernels.", {}, ""};
  Message user{"user", "Weather in Paris?", {}, ""};
  Message assistant{"assistant", "Checking.", {call(0, "call_1", "get_weather", R"({"city":"Paris"})")}, ""};
  Message tool{"tool", "18 C, clear", {}, "call_1"};
  Message user2{"user", "Thanks. And now?", {}, ""};
  r.messages = {system, user, assistant, tool, user2};
  ToolSpec spec;
  spec.name = "get_weather";
  spec.description = "The weather in a city";
  spec.parameters = json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  r.tools = {spec};
  return r;
}

using Headers = std::vector<std::pair<std::string, std::string>>;

}  // namespace

#endif  // Q_MOC_RUN

class TestLlmWireFormat : public QObject {
  Q_OBJECT
 private slots:
  void fixtures_data();
  void fixtures();
  void truncatedStreams_data();
  void truncatedStreams();
  void realLlamaCppRecording();
  void sseLineEndings();
  void sseCrLfSplitAcrossFeeds();
  void sseCrOnly();
  void sseMultiLineData();
  void sseComments();
  void sseBom();
  void sseFields();
  void sseUnfinishedEventDiscarded();
  void ndjsonLines();
  void ndjsonUnterminatedLastLine();
  void malformedChunks();
  void errorEvents();
  void anthropicToolWithoutInputDeltas();
  void usageEstimated();
  void finishTwiceAndFeedAfterFinish();
  void openAIRequest();
  void urlsAreRedacted();
  void urlsInTextAreRedacted();
  void baseUrlWithAQuery();
  void answersWithoutText_data();
  void answersWithoutText();
  void anthropicRequest();
  void ollamaRequest();
  void redaction();
  void modelsRequests();
  void parseModelLists();
  void errorMessages_data();
  void errorMessages();
  void formatNames();
};

#ifndef Q_MOC_RUN

// --- recorded streams -----------------------------------------------------------------------
void TestLlmWireFormat::fixtures_data() {
  QTest::addColumn<int>("which");
  for (std::size_t i = 0; i < fixtureCases().size(); ++i) QTest::newRow(fixtureCases()[i].file.c_str()) << static_cast<int>(i);
}

void TestLlmWireFormat::fixtures() {
  QFETCH(int, which);
  const FixtureCase &fc = fixtureCases()[static_cast<std::size_t>(which)];
  const std::string body = fixture(fc.file);
  QVERIFY(!body.empty());

  json expected = toJson(fc.expected, false);
  std::string firstError;
  json first;
  for (const auto &[name, pieces] : splits(body.size())) {
    const Decoded d = decode(fc.format, fc.stream, body, pieces);
    const ChatResponse &r = d.response;
    QVERIFY2(toJson(r, false) == expected,
             qPrintable(QString::fromStdString(name) + ": got\n" + show(toJson(r)) + "\nexpected\n" + show(expected)));
    if (fc.expected.error.empty()) {
      QVERIFY2(r.error.empty(), qPrintable(QString::fromStdString(name + ": unexpected error: " + r.error)));
    } else {
      QVERIFY2(r.error.rfind(fc.expected.error, 0) == 0,
               qPrintable(QString::fromStdString(name + ": error \"" + r.error + "\" does not start with \"" + fc.expected.error + "\"")));
    }
    // Every split gives exactly the same response, error text included.
    if (first.is_null()) {
      first = toJson(r);
    } else {
      QVERIFY2(toJson(r) == first, qPrintable(QString::fromStdString(name) + ": differs from the whole body:\n" + show(toJson(r))));
    }
    // The deltas told the same story as the response.
    QCOMPARE(d.deltaText, r.text);
    QCOMPARE(d.deltaReasoning, r.reasoning);
    std::map<int, std::string> arguments, names;
    for (const auto &c : r.toolCalls) {
      arguments[c.index] = c.arguments;
      names[c.index] = c.name;
    }
    QCOMPARE(d.deltaArguments, arguments);
    QCOMPARE(d.deltaNames, names);
    QCOMPARE(d.dones, r.complete ? 1 : 0);
    QCOMPARE(d.errors > 0, !r.error.empty());
    QCOMPARE(d.usages > 0, r.usage.reported || r.usage.inputTokens > 0);
    QCOMPARE(d.keepAlives, fc.keepAlives);
  }
}

// The streams stop short: the response so far is kept and not complete.
void TestLlmWireFormat::truncatedStreams_data() {
  QTest::addColumn<int>("which");
  for (std::size_t i = 0; i < fixtureCases().size(); ++i) {
    if (fixtureCases()[i].stream && fixtureCases()[i].expected.complete)
      QTest::newRow(fixtureCases()[i].file.c_str()) << static_cast<int>(i);
  }
}

void TestLlmWireFormat::truncatedStreams() {
  QFETCH(int, which);
  const FixtureCase &fc = fixtureCases()[static_cast<std::size_t>(which)];
  const std::string body = fixture(fc.file);
  // Up to two bytes short of the end: the end marker's line is then never finished. (One byte
  // short can be complete: the \r of a last \r\n ends the blank line; Ollama's last line is
  // read at finish() without its newline.)
  std::vector<std::size_t> cuts;
  for (std::size_t cut = 0; cut + 2 < body.size(); cut += 7) cuts.push_back(cut);
  cuts.push_back(body.size() - 2);
  for (std::size_t cut : cuts) {
    const std::string part = body.substr(0, cut);
    const Decoded whole = decodeWhole(fc.format, true, part);
    const Decoded bytes = decode(fc.format, true, part, std::vector<std::size_t>(part.size(), 1));
    QVERIFY2(toJson(whole.response) == toJson(bytes.response), qPrintable(QString("cut at %1").arg(cut)));
    QVERIFY2(!whole.response.complete, qPrintable(QString("complete when cut at %1").arg(cut)));
    QVERIFY(fc.expected.text.rfind(whole.response.text, 0) == 0);  // a prefix of the full text
    QVERIFY(fc.expected.reasoning.rfind(whole.response.reasoning, 0) == 0);
  }
}

// A real llama-cpp-python recording (HTTP chunked transfer encoding), when one is present.
void TestLlmWireFormat::realLlamaCppRecording() {
  const auto path = fixturesDir() / "real" / "llamacpp_stream.chunked";
  if (!fs::exists(path)) QSKIP("no real recording in tests/fixtures/llm/real");
  const std::string raw = kwb::test::readFile(path);
  std::string body;
  for (std::size_t at = 0;;) {
    auto eol = raw.find("\r\n", at);
    if (eol == std::string::npos) break;
    std::size_t size = std::stoul(raw.substr(at, eol - at), nullptr, 16);
    if (size == 0) break;
    body += raw.substr(eol + 2, size);
    at = eol + 2 + size + 2;
  }
  QVERIFY(!body.empty());
  const Decoded whole = decodeWhole(WireFormat::OpenAIChat, true, body);
  QVERIFY2(whole.response.error.empty(), whole.response.error.c_str());
  QVERIFY(whole.response.complete);
  QVERIFY(!whole.response.text.empty());
  QVERIFY(whole.response.id.rfind("chatcmpl-", 0) == 0);
  for (const auto &[name, pieces] : splits(body.size())) QVERIFY(toJson(decode(WireFormat::OpenAIChat, true, body, pieces).response) == toJson(whole.response));
}

// --- SSE ------------------------------------------------------------------------------------
void TestLlmWireFormat::sseLineEndings() {
  SseParser p;
  auto e = p.feed("data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d\r\n\n");
  QCOMPARE(e.size(), std::size_t(4));
  QCOMPARE(e[0].data, std::string("a"));
  QCOMPARE(e[1].data, std::string("b"));
  QCOMPARE(e[2].data, std::string("c"));
  QCOMPARE(e[3].data, std::string("d"));
}

void TestLlmWireFormat::sseCrLfSplitAcrossFeeds() {
  // The \n of a \r\n arriving in the next piece is not a second (blank) line.
  SseParser p;
  std::vector<SseEvent> all;
  for (std::string_view piece : {"data: a\r", "\n", "data: b\r", "\n\r", "\n"}) {
    auto e = p.feed(piece);
    all.insert(all.end(), e.begin(), e.end());
  }
  QCOMPARE(all.size(), std::size_t(1));
  QCOMPARE(all[0].data, std::string("a\nb"));
}

void TestLlmWireFormat::sseCrOnly() {
  SseParser p;
  auto e = p.feed("event: x\rdata: 1\rdata: 2\r\r");
  QCOMPARE(e.size(), std::size_t(1));
  QCOMPARE(e[0].event, std::string("x"));
  QCOMPARE(e[0].data, std::string("1\n2"));
}

void TestLlmWireFormat::sseMultiLineData() {
  SseParser p;
  auto e = p.feed("data: line1\ndata: line2\ndata:\ndata: line4\n\n");
  QCOMPARE(e.size(), std::size_t(1));
  QCOMPARE(e[0].data, std::string("line1\nline2\n\nline4"));
}

void TestLlmWireFormat::sseComments() {
  SseParser p;
  int comments = 0;
  auto e = p.feed(": keep-alive\n\n:\ndata: x\n: in the middle\n\n", &comments);
  QCOMPARE(comments, 3);
  QCOMPARE(e.size(), std::size_t(1));
  QCOMPARE(e[0].data, std::string("x"));
  // The count adds up across calls; nullptr is allowed.
  p.feed(": one more\n", &comments);
  QCOMPARE(comments, 4);
  p.feed(": no counter\n");
}

void TestLlmWireFormat::sseBom() {
  {
    SseParser p;
    auto e = p.feed("\xEF\xBB\xBF" "data: x\n\n");
    QCOMPARE(e.size(), std::size_t(1));
    QCOMPARE(e[0].data, std::string("x"));
  }
  {
    // Split byte by byte.
    SseParser p;
    std::vector<SseEvent> all;
    for (char c : std::string("\xEF\xBB\xBF" "data: y\n\n")) {
      auto e = p.feed(std::string_view(&c, 1));
      all.insert(all.end(), e.begin(), e.end());
    }
    QCOMPARE(all.size(), std::size_t(1));
    QCOMPARE(all[0].data, std::string("y"));
  }
  {
    // Only at the very start: a later BOM belongs to the line (an unknown field here).
    SseParser p;
    auto e = p.feed("data: a\n\n\xEF\xBB\xBF" "data: b\n\n");
    QCOMPARE(e.size(), std::size_t(1));
    QCOMPARE(e[0].data, std::string("a"));
  }
  {
    // Two bytes of a BOM and then something else: those bytes start the first line.
    SseParser p;
    auto e = p.feed("\xEF\xBB" "data: a\n\ndata: b\n\n");
    QCOMPARE(e.size(), std::size_t(1));
    QCOMPARE(e[0].data, std::string("b"));
  }
}

void TestLlmWireFormat::sseFields() {
  SseParser p;
  // A field without a colon has an empty value: "data" alone makes an event with empty data.
  auto e = p.feed("data\n\n");
  QCOMPARE(e.size(), std::size_t(1));
  QCOMPARE(e[0].data, std::string(""));
  // No space after the colon; only one space is removed.
  e = p.feed("data:x\n\ndata:  y\n\n");
  QCOMPARE(e.size(), std::size_t(2));
  QCOMPARE(e[0].data, std::string("x"));
  QCOMPARE(e[1].data, std::string(" y"));
  // Colons in the value stay.
  e = p.feed("data: {\"a\":\"b:c\"}\n\n");
  QCOMPARE(e[0].data, std::string("{\"a\":\"b:c\"}"));
  // Event type per event; id persists until changed; retry and unknown fields ignored.
  e = p.feed("event: message_start\nid: 7\nretry: 1000\nfoo: bar\ndata: 1\n\ndata: 2\n\nevent\ndata: 3\n\n");
  QCOMPARE(e.size(), std::size_t(3));
  QCOMPARE(e[0].event, std::string("message_start"));
  QCOMPARE(e[0].id, std::string("7"));
  QCOMPARE(e[1].event, std::string(""));
  QCOMPARE(e[1].id, std::string("7"));
  QCOMPARE(e[2].event, std::string(""));
  // An event with no data lines is not dispatched.
  e = p.feed("event: ping\n\n");
  QCOMPARE(e.size(), std::size_t(0));
}

void TestLlmWireFormat::sseUnfinishedEventDiscarded() {
  SseParser p;
  QCOMPARE(p.feed("data: x\n").size(), std::size_t(0));
  QCOMPARE(p.feed("data: partial li").size(), std::size_t(0));
  p.reset();
  auto e = p.feed("data: y\n\n");
  QCOMPARE(e.size(), std::size_t(1));
  QCOMPARE(e[0].data, std::string("y"));
}

// --- NDJSON ---------------------------------------------------------------------------------
void TestLlmWireFormat::ndjsonLines() {
  NdjsonParser p;
  auto lines = p.feed("{\"a\":1}\r\n\n   \n{\"b\":");
  QCOMPARE(lines.size(), std::size_t(1));
  QCOMPARE(lines[0], std::string("{\"a\":1}"));
  QCOMPARE(p.rest(), std::string("{\"b\":"));
  lines = p.feed("2}\n");
  QCOMPARE(lines.size(), std::size_t(1));
  QCOMPARE(lines[0], std::string("{\"b\":2}"));
  QCOMPARE(p.rest(), std::string(""));
}

void TestLlmWireFormat::ndjsonUnterminatedLastLine() {
  std::string body = fixture("ollama_stream.ndjson");
  QVERIFY(body.back() == '\n');
  body.pop_back();
  for (const auto &[name, pieces] : splits(body.size())) {
    auto decoder = makeDecoder(WireFormat::OllamaChat, true);
    std::size_t at = 0;
    for (std::size_t size : pieces) {
      size = std::min(size, body.size() - at);
      decoder->feed(std::string_view(body).substr(at, size));
      at += size;
    }
    QVERIFY2(!decoder->response().complete, name.c_str());  // the done line is still unread
    decoder->finish();
    QVERIFY2(decoder->response().complete, name.c_str());
    QCOMPARE(decoder->response().usage.outputTokens, std::int64_t(7));
    QCOMPARE(decoder->response().text, std::string("The sky is blue because of Rayleigh scattering."));
  }
}

// --- malformed input and errors -------------------------------------------------------------
void TestLlmWireFormat::malformedChunks() {
  {
    auto d = decodeWhole(WireFormat::OpenAIChat, true,
                         "data: {bad\n\ndata: [1,2]\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n");
    QCOMPARE(d.response.text, std::string("ok"));
    QVERIFY(d.response.complete);
    QVERIFY2(d.response.error.rfind("malformed JSON in stream chunk 1: ", 0) == 0, d.response.error.c_str());
    QVERIFY2(d.response.error.find("; unexpected stream chunk 2: not a JSON object") != std::string::npos, d.response.error.c_str());
    QCOMPARE(d.errors, 2);
  }
  {
    auto d = decodeWhole(WireFormat::AnthropicMessages, true,
                         "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n"
                         "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_del\n\n"
                         "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"b\"}}\n\n"
                         "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    QCOMPARE(d.response.text, std::string("b"));
    QVERIFY(d.response.complete);
    QVERIFY2(d.response.error.rfind("malformed JSON in stream chunk 2: ", 0) == 0, d.response.error.c_str());
  }
  {
    auto d = decodeWhole(WireFormat::OllamaChat, true,
                         "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"a\"},\"done\":false}\nnot json\n"
                         "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"b\"},\"done\":true,\"done_reason\":\"stop\"}\n");
    QCOMPARE(d.response.text, std::string("ab"));
    QVERIFY(d.response.complete);
    QVERIFY2(d.response.error.rfind("malformed JSON in stream chunk 2: ", 0) == 0, d.response.error.c_str());
    QVERIFY(!d.response.usage.reported);
  }
  // Values of the wrong type are not thrown; content that is not text is an error (issue 45, 8).
  {
    auto d = decodeWhole(WireFormat::OpenAIChat, true,
                         "data: {\"id\":5,\"choices\":[{\"delta\":{\"content\":7,\"tool_calls\":[{\"index\":\"x\",\"function\":[]}]}},3],"
                         "\"usage\":{\"prompt_tokens\":\"9\",\"completion_tokens\":1e300}}\n\ndata: [DONE]\n\n");
    QVERIFY(d.response.complete);
    QCOMPARE(d.response.error, std::string("the server's answer has no text content: `choices[0].delta.content` is a number"));
    QCOMPARE(d.response.text, std::string(""));
  }
  // Non-streaming bodies.
  for (WireFormat f : {WireFormat::OpenAIChat, WireFormat::AnthropicMessages, WireFormat::OllamaChat}) {
    auto d = decodeWhole(f, false, "{\"id\": \"x\", \"choices\": [");
    QVERIFY2(d.response.error.rfind("malformed JSON in response body: ", 0) == 0, d.response.error.c_str());
    QVERIFY(!d.response.complete);
    d = decodeWhole(f, false, "");
    QCOMPARE(d.response.error, std::string("empty response body"));
    QVERIFY(!d.response.complete);
  }
}

void TestLlmWireFormat::errorEvents() {
  {
    // An OpenAI-compatible server that answers a stream request with a plain JSON error body.
    auto d = decodeWhole(WireFormat::OpenAIChat, true,
                         R"({"error":{"message":"Rate limit reached for gpt-4o","type":"requests","param":null,"code":"rate_limit_exceeded"}})");
    QCOMPARE(d.response.error, std::string("Rate limit reached for gpt-4o (requests)"));
    QVERIFY(!d.response.complete);
    QCOMPARE(d.errors, 1);
  }
  {
    // ... or with a whole chat.completion although stream was asked for.
    const std::string body = fixture("openai_nonstream.json");
    auto d = decodeWhole(WireFormat::OpenAIChat, true, body);
    QCOMPARE(d.response.text, std::string("Hello! How can I assist you today?"));
    QVERIFY(d.response.complete);
    QVERIFY(d.response.usage.reported);
  }
  {
    auto d = decodeWhole(WireFormat::AnthropicMessages, true,
                         R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})");
    QCOMPARE(d.response.error, std::string("invalid x-api-key (authentication_error)"));
  }
  {
    auto d = decodeWhole(WireFormat::OllamaChat, true,
                         "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"par\"},\"done\":false}\n"
                         "{\"error\":\"an error was encountered while running the model: unexpected EOF\"}\n");
    QCOMPARE(d.response.text, std::string("par"));
    QCOMPARE(d.response.error, std::string("an error was encountered while running the model: unexpected EOF"));
    QVERIFY(!d.response.complete);
    QCOMPARE(d.errors, 1);
  }
  {
    auto d = decodeWhole(WireFormat::OllamaChat, false, R"({"error":"model \"llama9\" not found, try pulling it first"})");
    QCOMPARE(d.response.error, std::string("model \"llama9\" not found, try pulling it first"));
    QVERIFY(!d.response.complete);
  }
  {
    auto d = decodeWhole(WireFormat::AnthropicMessages, false,
                         R"({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}})");
    QCOMPARE(d.response.error, std::string("max_tokens: Field required (invalid_request_error)"));
    QVERIFY(!d.response.complete);
  }
}

void TestLlmWireFormat::anthropicToolWithoutInputDeltas() {
  auto d = decodeWhole(WireFormat::AnthropicMessages, true,
                       "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
                       "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"list_tasks\",\"input\":{}}}\n\n"
                       "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
                       "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
  QCOMPARE(d.response.toolCalls.size(), std::size_t(1));
  QCOMPARE(d.response.toolCalls[0].name, std::string("list_tasks"));
  QCOMPARE(d.response.toolCalls[0].arguments, std::string("{}"));
  QCOMPARE(d.deltaArguments[0], std::string("{}"));
}

void TestLlmWireFormat::usageEstimated() {
  QCOMPARE(estimateTokens(""), std::int64_t(0));
  QCOMPARE(estimateTokens("abcd"), std::int64_t(1));
  QCOMPARE(estimateTokens("abcde"), std::int64_t(2));
  QCOMPARE(estimateTokens("h\xC3\xA9llo"), std::int64_t(2));  // 5 characters, 6 bytes
  // No usage chunk (include_usage not honoured): output estimated from text and tool arguments.
  auto d = decodeWhole(WireFormat::OpenAIChat, true,
                       "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"abcdefghij\",\"tool_calls\":"
                       "[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"stop\"}]}\n\n"
                       "data: [DONE]\n\n");
  QVERIFY(d.response.complete);
  QCOMPARE(d.response.usage.inputTokens, std::int64_t(0));
  QCOMPARE(d.response.usage.outputTokens, std::int64_t(3));  // 12 characters
  QVERIFY(!d.response.usage.reported);
}

void TestLlmWireFormat::finishTwiceAndFeedAfterFinish() {
  const std::string body = fixture("openai_stream_text.sse");
  auto decoder = makeDecoder(WireFormat::OpenAIChat, true);
  decoder->feed(body);
  decoder->finish();
  const json once = toJson(decoder->response());
  decoder->finish();
  decoder->feed("data: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n");
  QVERIFY(toJson(decoder->response()) == once);
}

// --- requests -------------------------------------------------------------------------------
void TestLlmWireFormat::openAIRequest() {
  ChatRequest r = conversation(true);
  r.temperature = 0.25;
  HttpRequest h = buildChatRequest(WireFormat::OpenAIChat, "https://api.openai.com/v1/", "sk-test", r);
  QCOMPARE(h.method, std::string("POST"));
  QCOMPARE(h.url, std::string("https://api.openai.com/v1/chat/completions"));
  QCOMPARE(h.headers, (Headers{{"Content-Type", "application/json"}, {"Authorization", "Bearer sk-test"}}));
  const json expected = json::parse(R"({
    "model": "m-1",
    "messages": [
      {"role": "system", "content": "You write CUDA kernels."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18 C, clear"},
      {"role": "user", "content": "Thanks. And now?"}
    ],
    "max_tokens": 512,
    "temperature": 0.25,
    "stream": true,
    "stream_options": {"include_usage": true},
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
  })");
  QVERIFY2(json::parse(h.body) == expected, h.body.c_str());
  QVERIFY(h.body.rfind("{\"model\":\"m-1\",\"messages\":", 0) == 0);  // fields in a readable order

  // Not streaming, no key, no tools, no temperature; an assistant turn of tool calls only has null content.
  ChatRequest plain;
  plain.model = "local";
  plain.stream = false;
  plain.messages = {Message{"user", "hi", {}, ""}, Message{"assistant", "", {call(0, "c9", "f", "")}, ""}};
  h = buildChatRequest(WireFormat::OpenAIChat, "http://127.0.0.1:8080/v1", "", plain);
  QCOMPARE(h.url, std::string("http://127.0.0.1:8080/v1/chat/completions"));
  QCOMPARE(h.headers, (Headers{{"Content-Type", "application/json"}}));
  const json expectedPlain = json::parse(R"({"model":"local","messages":[{"role":"user","content":"hi"},
           {"role":"assistant","content":null,"tool_calls":[{"id":"c9","type":"function","function":{"name":"f","arguments":"{}"}}]}],
           "max_tokens":1024,"stream":false})");
  QVERIFY2(json::parse(h.body) == expectedPlain, h.body.c_str());
}

void TestLlmWireFormat::anthropicRequest() {
  ChatRequest r = conversation(true);
  HttpRequest h = buildChatRequest(WireFormat::AnthropicMessages, "https://api.anthropic.com/v1//", "sk-ant-test", r);
  QCOMPARE(h.method, std::string("POST"));
  QCOMPARE(h.url, std::string("https://api.anthropic.com/v1/messages"));
  QCOMPARE(h.headers, (Headers{{"x-api-key", "sk-ant-test"}, {"anthropic-version", "2023-06-01"}, {"content-type", "application/json"}}));
  const json expected = json::parse(R"({
    "model": "m-1",
    "max_tokens": 512,
    "system": "You write CUDA kernels.",
    "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "18 C, clear"},
        {"type": "text", "text": "Thanks. And now?"}]}
    ],
    "stream": true,
    "tools": [{"name": "get_weather", "description": "The weather in a city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
  })");
  QVERIFY2(json::parse(h.body) == expected, h.body.c_str());

  // Without a system message or tools; a tool without parameters gets an empty object schema.
  ChatRequest plain;
  plain.model = "claude-3-5-haiku-20241022";
  plain.stream = false;
  plain.temperature = 1.0;
  plain.messages = {Message{"user", "hi", {}, ""}};
  ToolSpec noParams;
  noParams.name = "list_tasks";
  noParams.description = "All tasks";
  plain.tools = {noParams};
  h = buildChatRequest(WireFormat::AnthropicMessages, "https://api.anthropic.com/v1", "", plain);
  QCOMPARE(h.headers, (Headers{{"anthropic-version", "2023-06-01"}, {"content-type", "application/json"}}));
  const json expectedPlain = json::parse(R"({"model":"claude-3-5-haiku-20241022","max_tokens":1024,
           "messages":[{"role":"user","content":"hi"}],"temperature":1.0,"stream":false,
           "tools":[{"name":"list_tasks","description":"All tasks","input_schema":{"type":"object","properties":{}}}]})");
  QVERIFY2(json::parse(h.body) == expectedPlain, h.body.c_str());
}

void TestLlmWireFormat::ollamaRequest() {
  ChatRequest r = conversation(true);
  r.temperature = 0.5;
  HttpRequest h = buildChatRequest(WireFormat::OllamaChat, "http://127.0.0.1:11434/", "", r);
  QCOMPARE(h.method, std::string("POST"));
  QCOMPARE(h.url, std::string("http://127.0.0.1:11434/api/chat"));
  QCOMPARE(h.headers, (Headers{{"Content-Type", "application/json"}}));
  const json expected = json::parse(R"({
    "model": "m-1",
    "messages": [
      {"role": "system", "content": "You write CUDA kernels."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "Checking.", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "18 C, clear", "tool_name": "get_weather"},
      {"role": "user", "content": "Thanks. And now?"}
    ],
    "stream": true,
    "options": {"num_predict": 512, "temperature": 0.5},
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
  })");
  QVERIFY2(json::parse(h.body) == expected, h.body.c_str());
  // A key (Ollama behind a proxy) goes as a bearer token.
  h = buildChatRequest(WireFormat::OllamaChat, "https://ollama.example.org", "k", r);
  QCOMPARE(h.headers, (Headers{{"Content-Type", "application/json"}, {"Authorization", "Bearer k"}}));
}

void TestLlmWireFormat::redaction() {
  HttpRequest h;
  h.headers = {{"AUTHORIZATION", "Bearer sk-secret"}, {"X-Api-Key", "sk-ant-secret"}, {"api-key", "azure-secret"},
               {"Content-Type", "application/json"}, {"anthropic-version", "2023-06-01"}};
  const Headers expected = {{"AUTHORIZATION", "[redacted]"}, {"X-Api-Key", "[redacted]"}, {"api-key", "[redacted]"},
                            {"Content-Type", "application/json"}, {"anthropic-version", "2023-06-01"}};
  QCOMPARE(redactedHeaders(h), expected);
  QCOMPARE(h.headers[0].second, std::string("Bearer sk-secret"));  // the request itself keeps its key
  for (WireFormat f : {WireFormat::OpenAIChat, WireFormat::AnthropicMessages, WireFormat::OllamaChat}) {
    for (const auto &[name, value] : redactedHeaders(buildChatRequest(f, "http://h", "KEY123", conversation(true))))
      QVERIFY2(value.find("KEY123") == std::string::npos, name.c_str());
    for (const auto &[name, value] : redactedHeaders(buildModelsRequest(f, "http://h", "KEY123")))
      QVERIFY2(value.find("KEY123") == std::string::npos, name.c_str());
  }
}

// --- models ---------------------------------------------------------------------------------
void TestLlmWireFormat::modelsRequests() {
  HttpRequest h = buildModelsRequest(WireFormat::OpenAIChat, "https://api.openai.com/v1/", "sk-1");
  QCOMPARE(h.method, std::string("GET"));
  QCOMPARE(h.url, std::string("https://api.openai.com/v1/models"));
  QCOMPARE(h.headers, (Headers{{"Authorization", "Bearer sk-1"}}));
  QVERIFY(h.body.empty());
  h = buildModelsRequest(WireFormat::AnthropicMessages, "https://api.anthropic.com/v1", "sk-ant");
  QCOMPARE(h.url, std::string("https://api.anthropic.com/v1/models"));
  QCOMPARE(h.headers, (Headers{{"x-api-key", "sk-ant"}, {"anthropic-version", "2023-06-01"}}));
  h = buildModelsRequest(WireFormat::OllamaChat, "http://127.0.0.1:11434/", "");
  QCOMPARE(h.method, std::string("GET"));
  QCOMPARE(h.url, std::string("http://127.0.0.1:11434/api/tags"));
  QVERIFY(h.headers.empty());
}

void TestLlmWireFormat::parseModelLists() {
  const std::string openai = R"({"object":"list","data":[{"id":"gpt-4o","object":"model","created":1715367049,"owned_by":"system"},
      {"id":"gpt-4o-mini","object":"model","created":1721172741,"owned_by":"system"}]})";
  const std::string anthropic = R"({"data":[{"type":"model","id":"claude-sonnet-4-20250514","display_name":"Claude Sonnet 4",
      "created_at":"2025-05-22T00:00:00Z"}],"has_more":false,"first_id":"claude-sonnet-4-20250514","last_id":"claude-sonnet-4-20250514"})";
  const std::string ollama = R"({"models":[{"name":"llama3.2:latest","model":"llama3.2:latest","modified_at":"2024-11-29T10:00:00.0Z",
      "size":2019393189,"digest":"a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
      "details":{"parent_model":"","format":"gguf","family":"llama","families":["llama"],"parameter_size":"3.2B",
      "quantization_level":"Q4_K_M"}},{"name":"qwen3:8b","model":"qwen3:8b"}]})";
  const std::vector<std::string> openaiIds = {"gpt-4o", "gpt-4o-mini"}, anthropicIds = {"claude-sonnet-4-20250514"},
                                 ollamaIds = {"llama3.2:latest", "qwen3:8b"}, none;
  QCOMPARE(parseModels(WireFormat::OpenAIChat, openai), openaiIds);
  QCOMPARE(parseModels(WireFormat::AnthropicMessages, anthropic), anthropicIds);
  QCOMPARE(parseModels(WireFormat::OllamaChat, ollama), ollamaIds);
  QCOMPARE(parseModels(WireFormat::OllamaChat, "{\"models\":[]}"), none);

  auto failure = [](WireFormat f, const std::string &body) -> std::string {
    try {
      parseModels(f, body);
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    return "";
  };
  const std::string notJson = failure(WireFormat::OpenAIChat, "<html>502 Bad Gateway</html>");
  QVERIFY2(notJson.rfind("the model list is not valid JSON: ", 0) == 0, notJson.c_str());
  QCOMPARE(failure(WireFormat::OpenAIChat, "{\"data\":5}"), std::string("the model list has no \"data\" array"));
  QCOMPARE(failure(WireFormat::OllamaChat, "{\"data\":[]}"), std::string("the model list has no \"models\" array"));
  const std::string noId = failure(WireFormat::AnthropicMessages, "{\"data\":[{\"type\":\"model\"}]}");
  QVERIFY2(noId.rfind("an entry of the model list has no \"id\"", 0) == 0, noId.c_str());
  const std::string errorBody = R"({"error":{"message":"Incorrect API key provided: sk-1.","type":"invalid_request_error"}})";
  QCOMPARE(failure(WireFormat::OpenAIChat, errorBody),
           std::string("the server answered the model list with an error: Incorrect API key provided: sk-1. (invalid_request_error)"));
}

void TestLlmWireFormat::errorMessages_data() {
  QTest::addColumn<QString>("body");
  QTest::addColumn<QString>("message");
  QTest::newRow("openai") << R"({"error":{"message":"Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}})"
                          << "Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.";
  QTest::newRow("anthropic") << R"({"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}})"
                             << "Number of request tokens has exceeded your per-minute rate limit";
  QTest::newRow("ollama") << R"({"error":"model 'llama9' not found, try pulling it first"})" << "model 'llama9' not found, try pulling it first";
  QTest::newRow("vllm") << R"({"object":"error","message":"The model `gpt-5` does not exist.","type":"NotFoundError","param":null,"code":404})"
                        << "The model `gpt-5` does not exist.";
  QTest::newRow("llama.cpp") << R"({"error":{"code":500,"message":"Failed to load model","type":"server_error"}})" << "Failed to load model";
  QTest::newRow("list") << R"([{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}])"
                        << "API key not valid. Please pass a valid API key.";
  QTest::newRow("fastapi") << R"({"detail":"Not Found"})" << "Not Found";
  QTest::newRow("html") << "<html><body>502 Bad Gateway</body></html>\n" << "<html><body>502 Bad Gateway</body></html>";
  QTest::newRow("long") << QString(1000, 'x') << QString(300, 'x');
  QTest::newRow("accents") << QString(400, QChar(0xE9)) << QString(300, QChar(0xE9));  // 300 characters, no UTF-8 sequence cut
  QTest::newRow("empty") << "" << "";
}

void TestLlmWireFormat::errorMessages() {
  QFETCH(QString, body);
  QFETCH(QString, message);
  QCOMPARE(QString::fromStdString(errorMessageFromBody(body.toStdString())), message);
}

void TestLlmWireFormat::formatNames() {
  for (WireFormat f : {WireFormat::OpenAIChat, WireFormat::AnthropicMessages, WireFormat::OllamaChat})
    QVERIFY(wireFormatFromName(toString(f)) == f);
  QCOMPARE(std::string(toString(WireFormat::OpenAIChat)), std::string("openai"));
  QCOMPARE(std::string(toString(WireFormat::AnthropicMessages)), std::string("anthropic"));
  QCOMPARE(std::string(toString(WireFormat::OllamaChat)), std::string("ollama"));
  QVERIFY(wireFormatFromName("OpenAI") == WireFormat::OpenAIChat);
  QVERIFY(!wireFormatFromName("gemini").has_value());
}

// Issue 17, 6: a key given inside a base URL was printed and stored as it was. Issue 45, 2: the
// user name too, and every parameter named like a key or a token.
void TestLlmWireFormat::urlsAreRedacted() {
  QCOMPARE(redactedUrl("http://user:sk-secret@host:8080/v1"), std::string("http://***@host:8080/v1"));
  QCOMPARE(redactedUrl("http://sk-user@host/v1"), std::string("http://***@host/v1"));
  QCOMPARE(redactedUrl("https://h/v1?Api-Key=a&access_token=b&client_secret=c&X-Amz-Signature=d&sig=e&pwd=f&auth=g"),
           std::string("https://h/v1?Api-Key=***&access_token=***&client_secret=***&X-Amz-Signature=***&sig=***&pwd=***&auth=***"));
  QCOMPARE(redactedUrl("https://h/v1?subscription-key=a;api%5Fkey=b&monkey=c&keys=d&tokenizer=e&api-version=2024-06-01"),
           std::string("https://h/v1?subscription-key=***;api%5Fkey=***&monkey=c&keys=d&tokenizer=e&api-version=2024-06-01"));
  QCOMPARE(redactedUrl("https://h/cb#access_token=abc&state=1"), std::string("https://h/cb#access_token=***&state=1"));
  QCOMPARE(redactedUrl("https://h/v1?key="), std::string("https://h/v1?key="));
  QVERIFY(kwb::urlHasCredentials("http://***@h/v1"));
  QVERIFY(kwb::urlHasCredentials("http://h/v1?token=***"));
  QVERIFY(!kwb::urlHasCredentials("http://h/v1?alt=json"));
  QVERIFY(!kwb::urlHasCredentials("http://127.0.0.1:8080/v1"));
  QCOMPARE(redactedUrl("https://sk-secret@api.example.com/v1/chat"), std::string("https://***@api.example.com/v1/chat"));
  QCOMPARE(redactedUrl("https://h/v1/models?key=AIza123&alt=json#x"), std::string("https://h/v1/models?key=***&alt=json#x"));
  QCOMPARE(redactedUrl("https://h/v1?API_KEY=a&token=b&x=1"), std::string("https://h/v1?API_KEY=***&token=***&x=1"));
  QCOMPARE(redactedUrl("http://127.0.0.1:8080/v1"), std::string("http://127.0.0.1:8080/v1"));
  QCOMPARE(redactedUrl("http://h/a@b"), std::string("http://h/a@b"));  // an @ in the path is not a user part
  // Names read as words: camelCase humps split before the case is folded (the review of issue 45, 2).
  for (const char *name : {"accessToken", "authToken", "clientSecret", "apiToken", "subscriptionKey", "access_key_id",
                           "bearer", "jwt", "AccessKeyId", "APIKey", "apiKEY", "x-api-key", "sessionId", "session",
                           "passphrase", "dbPassword", "userpassword", "XAmzSignature", "Authorization", "credentials",
                           "refreshtoken", "v2Key", "sig", "oauth_token", "Ocp-Apim-Subscription-Key"}) {
    const std::string n = name;
    QVERIFY2(redactedUrl("https://h/v1?" + n + "=s3cr3t&alt=json") == "https://h/v1?" + n + "=***&alt=json", name);
  }
  for (const char *name : {"monkey", "keys", "keyword", "tokenizer", "max_tokens", "author", "api-version", "alt",
                           "Turkey", "donkeyKong", "sessions2", "signed", "state"}) {
    const std::string n = name;
    QVERIFY2(redactedUrl("https://h/v1?" + n + "=plain") == "https://h/v1?" + n + "=plain", name);
  }
}

// libcurl's and servers' messages name URLs inside sentences, or echo a key alone.
void TestLlmWireFormat::urlsInTextAreRedacted() {
  const std::string url = "http://bob:s3cr3tKEY@127.0.0.1:1/v1?key=s3cr3tKEY&alt=json";
  QCOMPARE(kwb::redactUrlsIn("could not connect to " + url + "/chat/completions: refused (" + url + ")."),
           std::string("could not connect to http://***@127.0.0.1:1/v1?key=***&alt=json/chat/completions: refused "
                       "(http://***@127.0.0.1:1/v1?key=***&alt=json)."));
  QCOMPARE(kwb::redactUrlsIn(R"({"provider":"https://u:p4ss@h/v1?token=t0k3n","model":"m"})"),
           std::string(R"({"provider":"https://***@h/v1?token=***","model":"m"})"));
  QCOMPARE(kwb::redactUrlsIn("no url here: key=abc, :// alone"), std::string("no url here: key=abc, :// alone"));
  QCOMPARE(kwb::withoutUrlSecrets("Login denied for bob:s3cr3tKEY: bad password s3cr3tKEY", url),
           std::string("Login denied for ***: bad password ***"));
  QCOMPARE(kwb::withoutUrlSecrets("key s3cr3t%4BEY", "http://h/?key=s3cr3t%4BEY"), std::string("key ***"));
  QCOMPARE(kwb::withoutUrlSecrets("user bob", "http://bob:pw@h/"), std::string("user bob"));  // under 4 characters: left
  // A user name alone is never blanked: it can be any word of a stored answer ("completion" in
  // "chat.completion.chunk"), which then no longer replays. The password and the pair are.
  const std::string chunk = R"({"object":"chat.completion.chunk","usage":{"completion_tokens":3}})";
  QCOMPARE(kwb::withoutUrlSecrets(chunk, "http://completion:s3cr3tKEY@h/v1"), chunk);
  QCOMPARE(kwb::withoutUrlSecrets(chunk, "http://completion@h/v1"), chunk);
  QCOMPARE(kwb::withoutUrlSecrets("completion:s3cr3tKEY and s3cr3tKEY for completion", "http://completion:s3cr3tKEY@h/v1"),
           std::string("*** and *** for completion"));
  QCOMPARE(kwb::withoutUrlSecrets("key dG9rZW4 by completion", "http://h/v1?accessToken=dG9rZW4"), std::string("key *** by completion"));
}

// A query in the base URL stays at the end of every request's URL (the path goes before it).
void TestLlmWireFormat::baseUrlWithAQuery() {
  const std::string base = "https://h.example/openai/v1/?api-version=2024-06-01&key=K";
  QCOMPARE(buildChatRequest(WireFormat::OpenAIChat, base, "", conversation(true)).url,
           std::string("https://h.example/openai/v1/chat/completions?api-version=2024-06-01&key=K"));
  QCOMPARE(buildModelsRequest(WireFormat::OllamaChat, "http://h:11434?token=T", "").url, std::string("http://h:11434/api/tags?token=T"));
  QCOMPARE(buildChatRequest(WireFormat::AnthropicMessages, "https://h/v1/", "", conversation(true)).url, std::string("https://h/v1/messages"));
}

// Issue 45, 8: an answer whose content is a number (an object, a list of numbers, null) was taken
// for an answer with no text, and `kwb llm test` said it answered (exit 0).
void TestLlmWireFormat::answersWithoutText_data() {
  QTest::addColumn<int>("format");
  QTest::addColumn<bool>("stream");
  QTest::addColumn<QByteArray>("body");
  QTest::addColumn<QByteArray>("error");  // empty: a good answer
  const int openai = static_cast<int>(WireFormat::OpenAIChat), anthropic = static_cast<int>(WireFormat::AnthropicMessages),
            ollama = static_cast<int>(WireFormat::OllamaChat);
  const auto openaiBody = [](const std::string &content) {
    return QByteArray::fromStdString(R"({"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":)" + content +
                                     R"(},"finish_reason":"stop"}]})");
  };
  const auto no = [](const char *what) { return QByteArray("the server's answer has no text content: ") + what; };
  QTest::newRow("openai body: number") << openai << false << openaiBody("42") << no("`choices[0].message.content` is a number");
  QTest::newRow("openai body: object") << openai << false << openaiBody(R"({"text":"x"})") << no("`choices[0].message.content` is an object");
  QTest::newRow("openai body: null") << openai << false << openaiBody("null") << no("`choices[0].message.content` is null");
  QTest::newRow("openai body: boolean") << openai << false << openaiBody("true") << no("`choices[0].message.content` is a boolean");
  QTest::newRow("openai body: list of numbers") << openai << false << openaiBody("[1,2]") << no("`choices[0].message.content[0]` is a number");
  QTest::newRow("openai body: text parts") << openai << false << openaiBody(R"([{"type":"text","text":"ok"}])") << QByteArray();
  QTest::newRow("openai body: string") << openai << false << openaiBody(R"("ok")") << QByteArray();
  QTest::newRow("openai body: no choices") << openai << false << QByteArray(R"({"id":"c","choices":[]})")
                                           << no("`choices` is an empty array");
  QTest::newRow("openai body: null with tool calls")
      << openai << false
      << QByteArray(R"({"choices":[{"message":{"content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]}}]})")
      << QByteArray();
  QTest::newRow("openai stream: object")
      << openai << true << QByteArray("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":{\"a\":1}}}]}\n\ndata: [DONE]\n\n")
      << no("`choices[0].delta.content` is an object");
  QTest::newRow("openai stream: null deltas")
      << openai << true
      << QByteArray("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n"
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n")
      << QByteArray();
  QTest::newRow("anthropic body: number")
      << anthropic << false << QByteArray(R"({"id":"m","type":"message","content":[{"type":"text","text":5}],"stop_reason":"end_turn"})")
      << no("`content[0].text` is a number");
  QTest::newRow("anthropic body: content a string")
      << anthropic << false << QByteArray(R"({"id":"m","type":"message","content":"hi","stop_reason":"end_turn"})")
      << no("`content` is a string");
  QTest::newRow("anthropic stream: list")
      << anthropic << true
      << QByteArray("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":[1]}}\n\n"
                    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
      << no("`delta.text` is an array");
  QTest::newRow("ollama body: number") << ollama << false
                                       << QByteArray(R"({"model":"m","message":{"role":"assistant","content":3.5},"done":true})")
                                       << no("`message.content` is a number");
  QTest::newRow("ollama body: no message") << ollama << false << QByteArray(R"({"model":"m","done":true})")
                                           << no("`message` is missing");
  QTest::newRow("ollama stream: object")
      << ollama << true << QByteArray("{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":{}},\"done\":true}\n")
      << no("`message.content` is an object");
}

void TestLlmWireFormat::answersWithoutText() {
  QFETCH(int, format);
  QFETCH(bool, stream);
  QFETCH(QByteArray, body);
  QFETCH(QByteArray, error);
  for (const auto &[name, pieces] : splits(static_cast<std::size_t>(body.size()))) {
    const auto d = decode(static_cast<WireFormat>(format), stream, body.toStdString(), pieces);
    QVERIFY2(d.response.error == error.toStdString(), (name + ": " + d.response.error).c_str());
  }
}

#endif  // Q_MOC_RUN

QTEST_GUILESS_MAIN(TestLlmWireFormat)
#include "tst_llm_wire_format.moc"
