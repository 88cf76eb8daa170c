#pragma once
// Building requests and decoding responses of the three wire formats, without I/O:
//   OpenAI-compatible Chat Completions (POST {base}/chat/completions; SSE when streaming),
//   Anthropic Messages (POST {base}/messages; SSE with named events),
//   Ollama native chat (POST {base}/api/chat; newline-delimited JSON when streaming).
// The decoders take the body in arbitrary pieces (any split, down to one byte) and never throw
// on malformed input: a chunk that is not valid JSON sets ChatResponse::error (the text so far
// is kept) and later chunks are still read.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/llm/llm_types.h"
#include "core/text/url_credentials.h"

namespace kwb::llm {

// Server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html): lines end
// in \n, \r\n or \r; "field: value" (one optional space after the colon); `data` lines of one
// event are joined with \n; a blank line dispatches; lines starting with ':' are comments; a
// UTF-8 BOM at the start is skipped.
struct SseEvent {
  std::string event;  // empty when the event had no `event:` line
  std::string data;
  std::string id;
};
class SseParser {
 public:
  // Events completed by these bytes, in order. `comments` (optional) counts comment lines seen.
  std::vector<SseEvent> feed(std::string_view bytes, int *comments = nullptr);
  // At the end of the stream: an event whose blank line never came is discarded, per the spec.
  void reset();

 private:
  std::string line_;
  bool lastWasCr_ = false;
  bool started_ = false;
  SseEvent pending_;
  bool hasData_ = false;
};

// Newline-delimited JSON: complete lines (without the newline, \r stripped; blank lines skipped).
class NdjsonParser {
 public:
  std::vector<std::string> feed(std::string_view bytes);
  std::string rest() const { return partial_; }  // an unterminated last line, if any

 private:
  std::string partial_;
};

// Decodes one response body (streamed or whole) of one format into a ChatResponse, calling
// onDelta for each piece as it is read.
class ResponseDecoder {
 public:
  using DeltaCallback = std::function<void(const StreamDelta &)>;
  virtual ~ResponseDecoder() = default;
  virtual void feed(std::string_view bytes) = 0;
  // The body ended (connection closed or whole body read): a last line without its newline is
  // read, usage is estimated when none was reported.
  virtual void finish() = 0;
  const ChatResponse &response() const { return response_; }

 protected:
  ChatResponse response_;
  DeltaCallback onDelta_;
};
// stream=false: the body is one JSON document (fed in pieces, parsed at finish()).
std::unique_ptr<ResponseDecoder> makeDecoder(WireFormat format, bool stream, ResponseDecoder::DeltaCallback onDelta = {});

// An HTTP request ready for the transport. Headers hold the key ("Authorization: Bearer ...",
// "x-api-key: ..."); redactedHeaders() is what logs and transcripts get.
struct HttpRequest {
  std::string method = "POST";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};
std::vector<std::pair<std::string, std::string>> redactedHeaders(const HttpRequest &request);
// A URL as it may be shown and stored (issue 17, 6; issue 45, 2): its user part and the values of
// key-like parameters replaced by "***" (core/text/url_credentials.h says which).
using ::kwb::redactedUrl;

// baseUrl: "https://api.openai.com/v1", "http://127.0.0.1:11434" (Ollama native), "https://api.anthropic.com/v1".
// A query in the base URL ("...?api-version=2024-06-01") stays at the end of the request's URL.
// OpenAI streams ask for the usage chunk (stream_options.include_usage).
HttpRequest buildChatRequest(WireFormat format, const std::string &baseUrl, const std::string &apiKey,
                             const ChatRequest &request);
// GET the model list: OpenAI/compatible {base}/models, Anthropic {base}/models, Ollama {base}/api/tags.
HttpRequest buildModelsRequest(WireFormat format, const std::string &baseUrl, const std::string &apiKey);
// Model ids from a models response body; throws std::runtime_error saying what was wrong.
std::vector<std::string> parseModels(WireFormat format, const std::string &body);
// The error message inside an error body ({"error": {"message": ...}} and the like), or the body
// itself cut to 300 characters.
std::string errorMessageFromBody(const std::string &body);

// Tokens for text when the server reports none: ceil(characters / 4).
std::int64_t estimateTokens(std::string_view text);

}  // namespace kwb::llm
