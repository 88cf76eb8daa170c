// libFuzzer target for the LLM wire-format decoders (core/llm/wire_format.h). Built and run by
// bench/fuzz-llm.sh with clang++ -fsanitize=fuzzer,address,undefined; not part of CMake or CI.
//
// Input: byte 0 chooses where the rest is cut (and the stride of a second, many-piece feeding);
// bytes 1.. are the body. Every parser and decoder reads the body whole, in two pieces and in
// small pieces; the results must be identical (any difference traps), and nothing may crash,
// leak or hit undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/llm/wire_format.h"

using namespace kwb::llm;

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();  // split-dependent result: a bug
}

std::vector<std::string_view> cut(std::string_view body, std::size_t at, std::size_t stride) {
  std::vector<std::string_view> pieces;
  if (stride == 0) {
    at = body.empty() ? 0 : at % (body.size() + 1);
    pieces.push_back(body.substr(0, at));
    pieces.push_back(body.substr(at));
  } else {
    for (std::size_t i = 0; i < body.size(); i += stride) pieces.push_back(body.substr(i, stride));
  }
  return pieces;
}

std::string describe(const ChatResponse &r) {
  std::string s = r.id + '\x1f' + r.model + '\x1f' + r.text + '\x1f' + r.reasoning + '\x1f' + r.finishReason + '\x1f' + r.error + '\x1f';
  for (const auto &c : r.toolCalls) s += std::to_string(c.index) + ':' + c.id + ':' + c.name + ':' + c.arguments + '\x1e';
  s += std::to_string(r.usage.inputTokens) + '/' + std::to_string(r.usage.outputTokens) + (r.usage.reported ? "r" : "e");
  s += r.complete ? "C" : "c";
  return s;
}

std::string decodeWith(WireFormat format, bool stream, const std::vector<std::string_view> &pieces) {
  std::string text;
  auto decoder = makeDecoder(format, stream, [&](const StreamDelta &d) {
    if (d.kind == StreamDelta::Kind::Text) text += d.text;
  });
  for (auto piece : pieces) decoder->feed(piece);
  decoder->finish();
  decoder->finish();
  const ChatResponse &r = decoder->response();
  check(text == r.text);
  // The tool calls stay sorted by index, without duplicates.
  for (std::size_t i = 1; i < r.toolCalls.size(); ++i) check(r.toolCalls[i - 1].index < r.toolCalls[i].index);
  return describe(r);
}

std::string sseWith(const std::vector<std::string_view> &pieces) {
  SseParser parser;
  std::string out;
  int comments = 0;
  for (auto piece : pieces) {
    for (const auto &e : parser.feed(piece, &comments)) out += e.event + '\x1f' + e.id + '\x1f' + e.data + '\x1e';
  }
  parser.reset();
  return out + std::to_string(comments);
}

std::string ndjsonWith(const std::vector<std::string_view> &pieces) {
  NdjsonParser parser;
  std::string out;
  for (auto piece : pieces) {
    for (const auto &line : parser.feed(piece)) out += line + '\x1e';
  }
  return out + '\x1d' + parser.rest();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t at = data[0];
  const std::size_t stride = 1 + data[0] % 7;
  const std::string_view body(reinterpret_cast<const char *>(data) + 1, size - 1);
  const std::vector<std::string_view> whole = {body};
  const auto two = cut(body, at * 37, 0);
  const auto many = cut(body, 0, stride);

  const std::string sse = sseWith(whole);
  check(sseWith(two) == sse);
  check(sseWith(many) == sse);
  const std::string ndjson = ndjsonWith(whole);
  check(ndjsonWith(two) == ndjson);
  check(ndjsonWith(many) == ndjson);

  for (WireFormat format : {WireFormat::OpenAIChat, WireFormat::AnthropicMessages, WireFormat::OllamaChat}) {
    for (bool stream : {true, false}) {
      const std::string reference = decodeWith(format, stream, whole);
      check(decodeWith(format, stream, two) == reference);
      check(decodeWith(format, stream, many) == reference);
    }
  }

  // The helpers that read server bodies.
  (void)errorMessageFromBody(std::string(body));
  for (WireFormat format : {WireFormat::OpenAIChat, WireFormat::AnthropicMessages, WireFormat::OllamaChat}) {
    try {
      (void)parseModels(format, std::string(body));
    } catch (const std::runtime_error &) {
    }
  }
  (void)estimateTokens(body);
  return 0;
}
