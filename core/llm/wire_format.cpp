#include "core/llm/wire_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

namespace kwb::llm {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// ---------------------------------------------------------------------------------------------
// Small helpers: JSON access that never throws, whitespace, numbers.

std::string_view trim(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

const json *member(const json &j, const char *key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

const json *objectAt(const json &j, const char *key) {
  const json *m = member(j, key);
  return m && m->is_object() ? m : nullptr;
}

const json *arrayAt(const json &j, const char *key) {
  const json *m = member(j, key);
  return m && m->is_array() ? m : nullptr;
}

std::optional<std::string> stringAt(const json &j, const char *key) {
  const json *m = member(j, key);
  if (!m || !m->is_string()) return std::nullopt;
  return m->get_ref<const std::string &>();
}

std::optional<std::int64_t> intAt(const json &j, const char *key) {
  const json *m = member(j, key);
  if (!m) return std::nullopt;
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  if (m->is_number_unsigned()) {
    auto v = m->get<std::uint64_t>();
    return v > static_cast<std::uint64_t>(kMax) ? kMax : static_cast<std::int64_t>(v);
  }
  if (m->is_number_integer()) return m->get<std::int64_t>();
  if (m->is_number_float()) {
    double d = m->get<double>();
    if (!std::isfinite(d)) return std::nullopt;
    if (d >= 9.0e18) return kMax;
    if (d <= -9.0e18) return -kMax;
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

int clampIndex(std::int64_t v) {
  // Indices are positions in one response; keep them in a sane int range.
  if (v < 0) return 0;
  if (v > 1000000) return 1000000;
  return static_cast<int>(v);
}

std::string dumpJson(const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string dumpJson(const ojson &j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest says where.
std::string cleanWhat(const char *what) {
  std::string s = what ? what : "";
  if (s.rfind("[json.exception.", 0) == 0) {
    auto close = s.find("] ");
    if (close != std::string::npos) s.erase(0, close + 2);
  }
  return s;
}

std::optional<json> parseJson(std::string_view text, std::string *error) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const std::exception &e) {
    if (error) *error = cleanWhat(e.what());
  }
  return std::nullopt;
}

// What a JSON value is, in words: "a number", "an object", "null".
std::string typeName(const json &j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::object: return "an object";
    case json::value_t::array: return j.empty() ? "an empty array" : "an array";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "a number";
    default: return "not a JSON value";
  }
}

// The first `max` characters (UTF-8 code points) of s.
std::string cutUtf8(std::string_view s, std::size_t max) {
  std::size_t characters = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && characters++ == max) return std::string(s.substr(0, i));
  }
  return std::string(s);
}

// The error a parsed body or stream chunk carries, if it is one:
//   {"error": {"message": "...", "type": "..."}}      OpenAI, Anthropic (inside {"type":"error"}), llama.cpp
//   {"error": "..."}                                   Ollama
//   {"object": "error", "message": "...", "type": ..}  vLLM
//   {"detail": "..."}                                  FastAPI-based servers
// withType: append the error's type, "(overloaded_error)", when there is one.
std::optional<std::string> errorIn(const json &j, bool withType) {
  if (j.is_array()) {
    // Some OpenAI-compatible endpoints answer errors as a one-element list.
    if (!j.empty() && j.front().is_object()) return errorIn(j.front(), withType);
    return std::nullopt;
  }
  if (!j.is_object()) return std::nullopt;
  auto compose = [withType](std::string message, const json &e) {
    if (message.empty()) message = "unknown error";
    if (withType) {
      if (auto type = stringAt(e, "type"); type && !type->empty() && *type != "error") message += " (" + *type + ")";
    }
    return message;
  };
  if (const json *e = member(j, "error")) {
    if (e->is_string()) return e->get<std::string>();
    if (e->is_object()) {
      if (auto m = stringAt(*e, "message")) return compose(*m, *e);
      if (auto m = stringAt(*e, "msg")) return compose(*m, *e);
      return compose(dumpJson(*e), *e);
    }
    return dumpJson(*e);
  }
  if (auto object = stringAt(j, "object"); object && *object == "error") return compose(stringAt(j, "message").value_or(""), j);
  if (auto type = stringAt(j, "type"); type && *type == "error") return compose(stringAt(j, "message").value_or(""), j);
  if (auto detail = member(j, "detail")) {
    if (detail->is_string()) return detail->get<std::string>();
    if (const json *first = detail->is_array() && !detail->empty() ? &detail->front() : nullptr) {
      if (auto m = stringAt(*first, "msg")) return *m;
    }
  }
  return std::nullopt;
}

std::string stripSlashes(std::string base) {
  while (!base.empty() && (base.back() == '/' || base.back() == ' ')) base.pop_back();
  while (!base.empty() && base.front() == ' ') base.erase(base.begin());
  return base;
}

// The base URL with `path` ("/chat/completions") after its path and before its query, if any.
std::string endpointUrl(const std::string &baseUrl, const std::string &path) {
  const auto query = baseUrl.find_first_of("?#");
  if (query == std::string::npos) return stripSlashes(baseUrl) + path;
  return stripSlashes(baseUrl.substr(0, query)) + path + baseUrl.substr(query);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// A tool call's arguments as a JSON object (what Anthropic's `input` and Ollama's `arguments`
// want): parsed when they are a JSON object, else an empty object.
json argumentsObject(const std::string &arguments) {
  auto t = trim(arguments);
  if (t.empty()) return json::object();
  auto parsed = parseJson(t, nullptr);
  if (parsed && parsed->is_object()) return *parsed;
  return json::object();
}

json schemaOf(const ToolSpec &tool) {
  if (tool.parameters.is_object() && !tool.parameters.empty()) return tool.parameters;
  return json{{"type", "object"}, {"properties", json::object()}};
}

// ---------------------------------------------------------------------------------------------
// Decoders.

constexpr std::size_t kMaxErrorText = 4000;
constexpr std::size_t kMaxRawCapture = 1 << 20;

class DecoderBase : public ResponseDecoder {
 public:
  explicit DecoderBase(DeltaCallback onDelta) { onDelta_ = std::move(onDelta); }

  void finish() final {
    if (finished_) return;
    finished_ = true;
    finishBody();
    if (!outputReported_) {
      // Estimated from what the model wrote: text, reasoning and tool arguments. Input: unknown.
      std::string all = response_.text + response_.reasoning;
      for (const auto &call : response_.toolCalls) all += call.arguments;
      response_.usage.outputTokens = estimateTokens(all);
    }
    response_.usage.reported = inputReported_ && outputReported_;
  }

 protected:
  virtual void finishBody() = 0;

  // Takes over what another decoder read (a whole body met by a stream decoder).
  void adopt(const DecoderBase &other) {
    response_ = other.response_;
    inputReported_ = other.inputReported_;
    outputReported_ = other.outputReported_;
  }

  // A non-streamed body as a JSON object, or nullopt after recording why it is not one (empty,
  // malformed, an error body, not an object).
  std::optional<json> wholeBody(const std::string &text) {
    const auto body = trim(text);
    if (body.empty()) {
      addError("empty response body");
      return std::nullopt;
    }
    std::string why;
    auto parsed = parseJson(body, &why);
    if (!parsed) {
      addError("malformed JSON in response body: " + why);
      return std::nullopt;
    }
    if (auto error = errorIn(*parsed, true)) {
      addError(*error);
      return std::nullopt;
    }
    if (!parsed->is_object()) {
      addError("unexpected response body: not a JSON object");
      return std::nullopt;
    }
    return parsed;
  }

  void emit(StreamDelta::Kind kind, std::string text = {}, int index = 0, std::string name = {}) {
    if (!onDelta_) return;
    StreamDelta d;
    d.kind = kind;
    d.text = std::move(text);
    d.index = index;
    d.name = std::move(name);
    onDelta_(d);
  }

  void addError(const std::string &message) {
    if (response_.error.empty()) {
      response_.error = message;
    } else if (response_.error.size() < kMaxErrorText) {
      response_.error += "; " + message;
    }
    emit(StreamDelta::Kind::Error, message);
  }

  void addText(const std::string &text) {
    if (text.empty()) return;
    response_.text += text;
    emit(StreamDelta::Kind::Text, text);
  }

  // An answer whose text is not text (issue 45, 8: a number was reported as answered, exit 0).
  void noTextContent(const std::string &where, const json *value) {
    addError("the server's answer has no text content: `" + where + "` is " + (value ? typeName(*value) : "missing"));
  }

  // The text at `key` of `j`, which must be a string; null or absent is no text when allowed.
  void addTextAt(const json &j, const char *key, const std::string &where, bool absentAllowed) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (!absentAllowed) noTextContent(where, it == j.end() ? nullptr : &*it);
    } else if (it->is_string()) {
      addText(it->get<std::string>());
    } else {
      noTextContent(where, &*it);
    }
  }

  // A message's `content` (OpenAI): a string, or a list of parts whose text parts
  // ({"type":"text","text":...}) count and whose other parts (an image, a refusal) are passed over.
  void addContent(const json &message, const std::string &where, bool absentAllowed) {
    const auto it = message.find("content");
    if (it == message.end() || !it->is_array()) return addTextAt(message, "content", where, absentAllowed);
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json &part = (*it)[i];
      const std::string at = where + "[" + std::to_string(i) + "]";
      if (!part.is_object()) return noTextContent(at, &part);
      if (part.contains("text")) {
        addTextAt(part, "text", at + ".text", false);
      } else if (stringAt(part, "type").value_or("text") == "text") {
        return noTextContent(at + ".text", nullptr);
      }
    }
  }

  void addReasoning(const std::string &text) {
    if (text.empty()) return;
    response_.reasoning += text;
    emit(StreamDelta::Kind::Reasoning, text);
  }

  ToolCall &toolCall(int index) {
    auto &calls = response_.toolCalls;
    auto it = std::lower_bound(calls.begin(), calls.end(), index, [](const ToolCall &c, int i) { return c.index < i; });
    if (it == calls.end() || it->index != index) {
      ToolCall call;
      call.index = index;
      it = calls.insert(it, call);
    }
    return *it;
  }

  bool hasToolCall(int index) const {
    return std::any_of(response_.toolCalls.begin(), response_.toolCalls.end(), [index](const ToolCall &c) { return c.index == index; });
  }

  int nextToolIndex() const { return response_.toolCalls.empty() ? 0 : response_.toolCalls.back().index + 1; }

  void setIdentity(const json &j, const char *idKey = "id", const char *modelKey = "model") {
    if (response_.id.empty()) {
      if (auto id = stringAt(j, idKey)) response_.id = *id;
    }
    if (response_.model.empty()) {
      if (auto model = stringAt(j, modelKey)) response_.model = *model;
    }
  }

  void reportInput(std::int64_t tokens) {
    response_.usage.inputTokens = tokens;
    inputReported_ = true;
  }
  void reportOutput(std::int64_t tokens) {
    response_.usage.outputTokens = tokens;
    outputReported_ = true;
  }

  void markComplete() {
    if (response_.complete) return;
    response_.complete = true;
    emit(StreamDelta::Kind::Done);
  }

  bool finished_ = false;
  bool inputReported_ = false;
  bool outputReported_ = false;
};

// Base of the SSE decoders: events from the parser, comments as keep-alives, the start of the
// body kept while nothing SSE-like came (a server that answered with a plain JSON body).
// A non-streamed body: collected, then read whole at finish().
class WholeBodyDecoder : public DecoderBase {
 public:
  using DecoderBase::DecoderBase;
  void feed(std::string_view bytes) override {
    if (!finished_) body_.append(bytes);
  }
  virtual void applyWhole(const json &body) = 0;

 protected:
  void finishBody() override {
    if (auto parsed = wholeBody(body_)) applyWhole(*parsed);
  }

  std::string body_;
};

class SseDecoder : public DecoderBase {
 public:
  using DecoderBase::DecoderBase;

  void feed(std::string_view bytes) override {
    if (finished_ || bytes.empty()) return;
    if (chunks_ == 0 && comments_ == 0 && raw_.size() < kMaxRawCapture)
      raw_.append(bytes.substr(0, std::min(bytes.size(), kMaxRawCapture - raw_.size())));
    int comments = 0;
    auto events = sse_.feed(bytes, &comments);
    comments_ += comments;
    for (int i = 0; i < comments; ++i) emit(StreamDelta::Kind::KeepAlive);
    for (const auto &event : events) {
      auto data = trim(event.data);
      if (data.empty()) continue;
      ++chunks_;
      onEvent(event.event, data);
    }
  }

 protected:
  virtual void onEvent(const std::string &name, std::string_view data) = 0;
  virtual void onWholeBody(const json &) {}

  void finishBody() override {
    sse_.reset();
    if (chunks_ != 0 || comments_ != 0) return;
    auto body = trim(raw_);
    if (body.empty() || (body.front() != '{' && body.front() != '[')) return;
    auto parsed = parseJson(body, nullptr);
    if (!parsed) return;
    if (auto error = errorIn(*parsed, true)) {
      addError(*error);
    } else if (parsed->is_object()) {
      onWholeBody(*parsed);
    }
  }

  // The chunk's JSON object, or nullopt after reporting why there is none.
  std::optional<json> chunkJson(std::string_view data) {
    std::string why;
    auto parsed = parseJson(data, &why);
    if (!parsed) {
      addError("malformed JSON in stream chunk " + std::to_string(chunks_) + ": " + why);
      return std::nullopt;
    }
    if (!parsed->is_object()) {
      addError("unexpected stream chunk " + std::to_string(chunks_) + ": not a JSON object");
      return std::nullopt;
    }
    return parsed;
  }

  SseParser sse_;
  int chunks_ = 0;       // data events seen
  long comments_ = 0;    // comment lines seen
  std::string raw_;
};

// --- OpenAI-compatible Chat Completions ---

void applyOpenAIUsage(const json &j, std::function<void(std::int64_t)> in, std::function<void(std::int64_t)> out) {
  const json *usage = objectAt(j, "usage");
  if (!usage) return;
  if (auto p = intAt(*usage, "prompt_tokens")) in(*p);
  if (auto c = intAt(*usage, "completion_tokens")) out(*c);
}

std::string reasoningOf(const json &delta) {
  if (auto r = stringAt(delta, "reasoning_content")) return *r;
  if (auto r = stringAt(delta, "reasoning")) return *r;
  return {};
}

class OpenAIStreamDecoder : public SseDecoder {
 public:
  using SseDecoder::SseDecoder;

 protected:
  void onEvent(const std::string &name, std::string_view data) override {
    if (data == "[DONE]") {
      markComplete();
      return;
    }
    if (response_.complete) return;  // nothing belongs after [DONE]
    auto j = chunkJson(data);
    if (!j) return;
    if (auto error = errorIn(*j, true)) {
      addError(*error);
      return;
    }
    if (name == "error") {
      addError("server error event: " + cutUtf8(data, 300));
      return;
    }
    setIdentity(*j);
    if (const json *choices = arrayAt(*j, "choices")) {
      for (const auto &choice : *choices) {
        if (auto index = intAt(choice, "index"); index && *index != 0) continue;  // n > 1: the first choice only
        if (const json *delta = objectAt(choice, "delta")) applyDelta(*delta);
        if (auto reason = stringAt(choice, "finish_reason"); reason && !reason->empty()) response_.finishReason = *reason;
      }
    }
    bool hadUsage = objectAt(*j, "usage") != nullptr;
    applyOpenAIUsage(*j, [this](std::int64_t v) { reportInput(v); }, [this](std::int64_t v) { reportOutput(v); });
    if (hadUsage) emit(StreamDelta::Kind::Usage);
  }

  void applyDelta(const json &delta) {
    addReasoning(reasoningOf(delta));
    addContent(delta, "choices[0].delta.content", true);
    if (const json *calls = arrayAt(delta, "tool_calls")) {
      for (std::size_t i = 0; i < calls->size(); ++i) {
        const json &fragment = (*calls)[i];
        if (!fragment.is_object()) continue;
        int index = clampIndex(intAt(fragment, "index").value_or(static_cast<std::int64_t>(i)));
        ToolCall &call = toolCall(index);
        if (auto id = stringAt(fragment, "id"); id && !id->empty() && call.id.empty()) call.id = *id;
        std::string name, arguments;
        if (const json *function = objectAt(fragment, "function")) {
          if (auto n = stringAt(*function, "name"); n && !n->empty()) name = *n;
          if (const json *a = member(*function, "arguments")) arguments = a->is_string() ? a->get<std::string>() : dumpJson(*a);
        }
        if (!name.empty()) call.name = name;
        call.arguments += arguments;
        emit(StreamDelta::Kind::ToolCall, arguments, index, name);
      }
    }
  }

  void onWholeBody(const json &body) override;
};

// A whole chat.completion object (non-streaming); the stream decoder uses it too.
class OpenAIBodyDecoder : public WholeBodyDecoder {
 public:
  using WholeBodyDecoder::WholeBodyDecoder;
  // Used by the stream decoder when the server answered with a whole body.
  void applyWhole(const json &body) override {
    setIdentity(body);
    const json *choices = arrayAt(body, "choices");
    if (!choices || choices->empty()) noTextContent("choices", member(body, "choices"));
    if (choices && !choices->empty() && !objectAt(choices->front(), "message"))
      noTextContent("choices[0].message", member(choices->front(), "message"));
    if (choices) {
      for (const auto &choice : *choices) {
        if (auto index = intAt(choice, "index"); index && *index != 0) continue;
        if (const json *message = objectAt(choice, "message")) {
          addReasoning(reasoningOf(*message));
          // No text is an answer only when it calls tools.
          addContent(*message, "choices[0].message.content", arrayAt(*message, "tool_calls") != nullptr);
          if (const json *calls = arrayAt(*message, "tool_calls")) {
            for (std::size_t i = 0; i < calls->size(); ++i) {
              const json &c = (*calls)[i];
              if (!c.is_object()) continue;
              int index = clampIndex(intAt(c, "index").value_or(static_cast<std::int64_t>(i)));
              if (hasToolCall(index)) index = nextToolIndex();
              ToolCall &call = toolCall(index);
              call.id = stringAt(c, "id").value_or("");
              if (const json *function = objectAt(c, "function")) {
                call.name = stringAt(*function, "name").value_or("");
                if (const json *a = member(*function, "arguments")) call.arguments = a->is_string() ? a->get<std::string>() : dumpJson(*a);
              }
              emit(StreamDelta::Kind::ToolCall, call.arguments, index, call.name);
            }
          }
        }
        if (auto reason = stringAt(choice, "finish_reason"); reason && !reason->empty()) response_.finishReason = *reason;
      }
    }
    bool hadUsage = objectAt(body, "usage") != nullptr;
    applyOpenAIUsage(body, [this](std::int64_t v) { reportInput(v); }, [this](std::int64_t v) { reportOutput(v); });
    if (hadUsage) emit(StreamDelta::Kind::Usage);
    markComplete();
  }
};

void OpenAIStreamDecoder::onWholeBody(const json &body) {
  // The server ignored "stream": true and sent a whole chat.completion: read it as such.
  if (!arrayAt(body, "choices")) return;
  OpenAIBodyDecoder whole(onDelta_);
  whole.applyWhole(body);
  adopt(whole);
}

// --- Anthropic Messages ---

class AnthropicStreamDecoder : public SseDecoder {
 public:
  using SseDecoder::SseDecoder;

 protected:
  struct Block {
    std::string type;
    std::string initialInput;  // a tool_use block's `input` at its start, when not empty
    bool closed = false;
  };

  void onEvent(const std::string &name, std::string_view data) override {
    if (response_.complete) return;  // nothing belongs after message_stop
    auto j = chunkJson(data);
    if (!j) return;
    std::string type = stringAt(*j, "type").value_or(name);
    if (type == "error" || name == "error") {
      addError(errorIn(*j, true).value_or("server error event: " + cutUtf8(data, 300)));
      return;
    }
    if (type == "ping") {
      emit(StreamDelta::Kind::KeepAlive);
    } else if (type == "message_start") {
      if (const json *message = objectAt(*j, "message")) {
        setIdentity(*message);
        if (const json *usage = objectAt(*message, "usage")) {
          if (auto in = intAt(*usage, "input_tokens")) {
            reportInput(*in);
            emit(StreamDelta::Kind::Usage);
          }
        }
      }
    } else if (type == "content_block_start") {
      int index = clampIndex(intAt(*j, "index").value_or(0));
      const json *block = objectAt(*j, "content_block");
      if (!block) return;
      Block &b = blocks_[index];
      b.type = stringAt(*block, "type").value_or("");
      if (b.type == "text") {
        addTextAt(*block, "text", "content_block.text", true);
      } else if (b.type == "thinking") {
        addReasoning(stringAt(*block, "thinking").value_or(""));
      } else if (b.type == "tool_use") {
        ToolCall &call = toolCall(index);
        call.id = stringAt(*block, "id").value_or("");
        call.name = stringAt(*block, "name").value_or("");
        if (const json *input = member(*block, "input"); input && !(input->is_object() && input->empty()))
          b.initialInput = dumpJson(*input);
        emit(StreamDelta::Kind::ToolCall, "", index, call.name);
      }
    } else if (type == "content_block_delta") {
      int index = clampIndex(intAt(*j, "index").value_or(0));
      const json *delta = objectAt(*j, "delta");
      if (!delta) return;
      std::string deltaType = stringAt(*delta, "type").value_or("");
      if (deltaType == "text_delta") {
        addTextAt(*delta, "text", "delta.text", false);
      } else if (deltaType == "thinking_delta") {
        addReasoning(stringAt(*delta, "thinking").value_or(""));
      } else if (deltaType == "input_json_delta") {
        std::string fragment = stringAt(*delta, "partial_json").value_or("");
        toolCall(index).arguments += fragment;
        emit(StreamDelta::Kind::ToolCall, fragment, index);
      }
      // signature_delta, citations_delta: nothing to show.
    } else if (type == "content_block_stop") {
      closeBlock(clampIndex(intAt(*j, "index").value_or(0)));
    } else if (type == "message_delta") {
      if (const json *delta = objectAt(*j, "delta")) {
        if (auto reason = stringAt(*delta, "stop_reason"); reason && !reason->empty()) response_.finishReason = *reason;
      }
      if (const json *usage = objectAt(*j, "usage")) {
        if (auto in = intAt(*usage, "input_tokens")) reportInput(*in);
        if (auto out = intAt(*usage, "output_tokens")) reportOutput(*out);
        emit(StreamDelta::Kind::Usage);
      }
    } else if (type == "message_stop") {
      for (auto &[index, block] : blocks_) closeBlock(index);
      markComplete();
    }
  }

  void closeBlock(int index) {
    auto it = blocks_.find(index);
    if (it == blocks_.end() || it->second.closed) return;
    it->second.closed = true;
    if (it->second.type != "tool_use") return;
    ToolCall &call = toolCall(index);
    if (!call.arguments.empty()) return;
    // No input_json_delta came (a tool without parameters): the input given at the start.
    call.arguments = it->second.initialInput.empty() ? "{}" : it->second.initialInput;
    emit(StreamDelta::Kind::ToolCall, call.arguments, index);
  }

  void onWholeBody(const json &body) override;

  std::map<int, Block> blocks_;
};

class AnthropicBodyDecoder : public WholeBodyDecoder {
 public:
  using WholeBodyDecoder::WholeBodyDecoder;
  void applyWhole(const json &body) override {
    setIdentity(body);
    if (const json *content = member(body, "content"); !content || !content->is_array()) noTextContent("content", content);
    if (const json *content = arrayAt(body, "content")) {
      for (std::size_t i = 0; i < content->size(); ++i) {
        const json &block = (*content)[i];
        std::string type = stringAt(block, "type").value_or("");
        if (type == "text") {
          addTextAt(block, "text", "content[" + std::to_string(i) + "].text", false);
        } else if (type == "thinking") {
          addReasoning(stringAt(block, "thinking").value_or(""));
        } else if (type == "tool_use") {
          int index = clampIndex(static_cast<std::int64_t>(i));
          ToolCall &call = toolCall(index);
          call.id = stringAt(block, "id").value_or("");
          call.name = stringAt(block, "name").value_or("");
          const json *input = member(block, "input");
          call.arguments = input ? dumpJson(*input) : "{}";
          emit(StreamDelta::Kind::ToolCall, call.arguments, index, call.name);
        }
      }
    }
    if (auto reason = stringAt(body, "stop_reason"); reason && !reason->empty()) response_.finishReason = *reason;
    if (const json *usage = objectAt(body, "usage")) {
      if (auto in = intAt(*usage, "input_tokens")) reportInput(*in);
      if (auto out = intAt(*usage, "output_tokens")) reportOutput(*out);
      emit(StreamDelta::Kind::Usage);
    }
    markComplete();
  }
};

void AnthropicStreamDecoder::onWholeBody(const json &body) {
  if (!arrayAt(body, "content")) return;
  AnthropicBodyDecoder whole(onDelta_);
  whole.applyWhole(body);
  adopt(whole);
}

// --- Ollama /api/chat ---

class OllamaDecoderBase : public DecoderBase {
 public:
  using DecoderBase::DecoderBase;

 protected:
  // One object of the stream, or the whole body (which must carry text or tool calls).
  void applyObject(const json &j, bool whole) {
    if (response_.model.empty()) {
      if (auto model = stringAt(j, "model")) response_.model = *model;
    }
    if (whole && !objectAt(j, "message")) noTextContent("message", member(j, "message"));
    if (const json *message = objectAt(j, "message")) {
      addReasoning(stringAt(*message, "thinking").value_or(""));
      addTextAt(*message, "content", "message.content", !whole || arrayAt(*message, "tool_calls"));
      if (const json *calls = arrayAt(*message, "tool_calls")) {
        for (const auto &c : *calls) {
          const json *function = objectAt(c, "function");
          if (!function) continue;
          int index = nextToolIndex();
          if (auto given = intAt(*function, "index")) {
            int g = clampIndex(*given);
            if (!hasToolCall(g)) index = g;
          }
          ToolCall &call = toolCall(index);
          call.id = stringAt(c, "id").value_or("");
          call.name = stringAt(*function, "name").value_or("");
          if (const json *a = member(*function, "arguments")) {
            call.arguments = a->is_string() ? a->get<std::string>() : dumpJson(*a);
          } else {
            call.arguments = "{}";
          }
          emit(StreamDelta::Kind::ToolCall, call.arguments, index, call.name);
        }
      }
    }
    if (const json *done = member(j, "done"); done && done->is_boolean() && done->get<bool>()) {
      if (auto reason = stringAt(j, "done_reason"); reason && !reason->empty()) response_.finishReason = *reason;
      auto in = intAt(j, "prompt_eval_count");
      auto out = intAt(j, "eval_count");
      if (in) reportInput(*in);
      if (out) reportOutput(*out);
      if (in || out) emit(StreamDelta::Kind::Usage);
      markComplete();
    }
  }
};

class OllamaStreamDecoder : public OllamaDecoderBase {
 public:
  using OllamaDecoderBase::OllamaDecoderBase;
  void feed(std::string_view bytes) override {
    if (finished_) return;
    for (const auto &line : ndjson_.feed(bytes)) onLine(line);
  }

 protected:
  void finishBody() override {
    const std::string rest = ndjson_.rest();  // an unterminated last line
    if (!trim(rest).empty()) onLine(rest);
  }

  void onLine(const std::string &line) {
    auto t = trim(line);
    if (t.empty()) return;
    ++chunks_;
    if (response_.complete) return;  // nothing belongs after done:true
    std::string why;
    auto parsed = parseJson(t, &why);
    if (!parsed) {
      addError("malformed JSON in stream chunk " + std::to_string(chunks_) + ": " + why);
      return;
    }
    if (!parsed->is_object()) {
      addError("unexpected stream chunk " + std::to_string(chunks_) + ": not a JSON object");
      return;
    }
    if (auto error = errorIn(*parsed, true)) {
      addError(*error);
      return;
    }
    applyObject(*parsed, false);
  }

  NdjsonParser ndjson_;
  int chunks_ = 0;
};

class OllamaBodyDecoder : public OllamaDecoderBase {
 public:
  using OllamaDecoderBase::OllamaDecoderBase;
  void feed(std::string_view bytes) override {
    if (!finished_) body_.append(bytes);
  }

 protected:
  void finishBody() override {
    if (auto parsed = wholeBody(body_)) {
      applyObject(*parsed, true);
      markComplete();  // a whole body is the whole answer, whether or not it says done
    }
  }

  std::string body_;
};

// ---------------------------------------------------------------------------------------------
// Request bodies.

ojson toOrdered(const json &j) { return ojson::parse(dumpJson(j)); }

ojson openAIMessages(const std::vector<Message> &messages) {
  ojson out = ojson::array();
  for (const auto &m : messages) {
    ojson msg = ojson::object();
    msg["role"] = m.role;
    if (m.role == "tool") {
      msg["tool_call_id"] = m.toolCallId;
      msg["content"] = m.content;
    } else if (m.role == "assistant" && !m.toolCalls.empty()) {
      msg["content"] = m.content.empty() ? ojson(nullptr) : ojson(m.content);
      ojson calls = ojson::array();
      for (const auto &c : m.toolCalls) {
        calls.push_back({{"id", c.id},
                         {"type", "function"},
                         {"function", {{"name", c.name}, {"arguments", trim(c.arguments).empty() ? std::string("{}") : c.arguments}}}});
      }
      msg["tool_calls"] = calls;
    } else {
      msg["content"] = m.content;
    }
    out.push_back(msg);
  }
  return out;
}

ojson openAITools(const std::vector<ToolSpec> &tools) {
  ojson out = ojson::array();
  for (const auto &t : tools) {
    out.push_back({{"type", "function"},
                   {"function", {{"name", t.name}, {"description", t.description}, {"parameters", toOrdered(schemaOf(t))}}}});
  }
  return out;
}

std::string anthropicBody(const ChatRequest &request) {
  ojson body = ojson::object();
  body["model"] = request.model;
  body["max_tokens"] = request.maxTokens;
  std::string system;
  ojson messages = ojson::array();
  // Anthropic wants tool results in a user turn and no two turns of one role in a row: tool
  // results and user text that follow each other share one user turn.
  auto appendUserBlock = [&messages](ojson block) {
    if (!messages.empty() && messages.back()["role"] == "user") {
      ojson &content = messages.back()["content"];
      if (content.is_string()) content = ojson::array({{{"type", "text"}, {"text", content.get<std::string>()}}});
      content.push_back(std::move(block));
      return;
    }
    messages.push_back({{"role", "user"}, {"content", ojson::array({std::move(block)})}});
  };
  for (const auto &m : request.messages) {
    if (m.role == "system") {
      if (!system.empty()) system += "\n\n";
      system += m.content;
    } else if (m.role == "tool") {
      appendUserBlock({{"type", "tool_result"}, {"tool_use_id", m.toolCallId}, {"content", m.content}});
    } else if (m.role == "assistant" && !m.toolCalls.empty()) {
      ojson content = ojson::array();
      if (!m.content.empty()) content.push_back({{"type", "text"}, {"text", m.content}});
      for (const auto &c : m.toolCalls)
        content.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", toOrdered(argumentsObject(c.arguments))}});
      messages.push_back({{"role", "assistant"}, {"content", content}});
    } else if (m.role == "user" && !messages.empty() && messages.back()["role"] == "user") {
      appendUserBlock({{"type", "text"}, {"text", m.content}});
    } else {
      messages.push_back({{"role", m.role}, {"content", m.content}});
    }
  }
  if (!system.empty()) body["system"] = system;
  body["messages"] = messages;
  if (request.temperature) body["temperature"] = *request.temperature;
  body["stream"] = request.stream;
  if (!request.tools.empty()) {
    ojson tools = ojson::array();
    for (const auto &t : request.tools)
      tools.push_back({{"name", t.name}, {"description", t.description}, {"input_schema", toOrdered(schemaOf(t))}});
    body["tools"] = tools;
  }
  return dumpJson(body);
}

std::string ollamaBody(const ChatRequest &request) {
  ojson body = ojson::object();
  body["model"] = request.model;
  ojson messages = ojson::array();
  std::map<std::string, std::string> toolNames;  // call id -> function name, for tool results
  for (const auto &m : request.messages) {
    ojson msg = ojson::object();
    msg["role"] = m.role;
    msg["content"] = m.content;
    if (m.role == "assistant" && !m.toolCalls.empty()) {
      ojson calls = ojson::array();
      for (const auto &c : m.toolCalls) {
        if (!c.id.empty()) toolNames[c.id] = c.name;
        calls.push_back({{"function", {{"name", c.name}, {"arguments", toOrdered(argumentsObject(c.arguments))}}}});
      }
      msg["tool_calls"] = calls;
    } else if (m.role == "tool") {
      if (auto it = toolNames.find(m.toolCallId); it != toolNames.end()) msg["tool_name"] = it->second;
    }
    messages.push_back(msg);
  }
  body["messages"] = messages;
  body["stream"] = request.stream;
  ojson options = ojson::object();
  options["num_predict"] = request.maxTokens;
  if (request.temperature) options["temperature"] = *request.temperature;
  body["options"] = options;
  if (!request.tools.empty()) body["tools"] = openAITools(request.tools);
  return dumpJson(body);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// SSE

std::vector<SseEvent> SseParser::feed(std::string_view bytes, int *comments) {
  std::vector<SseEvent> events;
  auto processLine = [&]() {
    if (line_.empty()) {
      // Dispatch: an event without data lines is dropped (its type too); the id stays.
      if (hasData_) events.push_back(pending_);
      pending_.event.clear();
      pending_.data.clear();
      hasData_ = false;
      return;
    }
    if (line_.front() == ':') {
      if (comments) ++*comments;
      line_.clear();
      return;
    }
    std::string_view field = line_, value;
    if (auto colon = line_.find(':'); colon != std::string::npos) {
      field = std::string_view(line_).substr(0, colon);
      value = std::string_view(line_).substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (hasData_) pending_.data.push_back('\n');
      pending_.data.append(value);
      hasData_ = true;
    } else if (field == "event") {
      pending_.event.assign(value);
    } else if (field == "id") {
      if (value.find('\0') == std::string_view::npos) pending_.id.assign(value);
    }
    // "retry" and unknown fields: ignored.
    line_.clear();
  };
  static constexpr char kBom[] = "\xEF\xBB\xBF";
  std::size_t i = 0;
  while (!started_ && i < bytes.size()) {
    // The BOM may arrive split; hold its bytes in line_ until it is whole or proves absent (then
    // what line_ holds is the start of the first line).
    if (line_.size() < 3 && bytes[i] == kBom[line_.size()]) {
      line_.push_back(bytes[i++]);
      if (line_.size() == 3) {
        line_.clear();
        started_ = true;
      }
      continue;
    }
    started_ = true;
  }
  while (i < bytes.size()) {
    const char c = bytes[i];
    if (lastWasCr_) {
      lastWasCr_ = false;
      if (c == '\n') {  // the \n of \r\n: the line already ended
        ++i;
        continue;
      }
    }
    if (c == '\r' || c == '\n') {
      lastWasCr_ = c == '\r';
      processLine();
      ++i;
      continue;
    }
    std::size_t end = bytes.find_first_of("\r\n", i);
    if (end == std::string_view::npos) end = bytes.size();
    line_.append(bytes.substr(i, end - i));
    i = end;
  }
  return events;
}

void SseParser::reset() {
  line_.clear();
  lastWasCr_ = false;
  started_ = false;
  pending_ = SseEvent{};
  hasData_ = false;
}

// ---------------------------------------------------------------------------------------------
// NDJSON

std::vector<std::string> NdjsonParser::feed(std::string_view bytes) {
  std::vector<std::string> lines;
  while (!bytes.empty()) {
    const std::size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      partial_.append(bytes);
      break;
    }
    partial_.append(bytes.substr(0, newline));
    bytes.remove_prefix(newline + 1);
    std::string line;
    line.swap(partial_);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!trim(line).empty()) lines.push_back(std::move(line));
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------

std::unique_ptr<ResponseDecoder> makeDecoder(WireFormat format, bool stream, ResponseDecoder::DeltaCallback onDelta) {
  switch (format) {
    case WireFormat::OpenAIChat:
      if (stream) return std::make_unique<OpenAIStreamDecoder>(std::move(onDelta));
      return std::make_unique<OpenAIBodyDecoder>(std::move(onDelta));
    case WireFormat::AnthropicMessages:
      if (stream) return std::make_unique<AnthropicStreamDecoder>(std::move(onDelta));
      return std::make_unique<AnthropicBodyDecoder>(std::move(onDelta));
    case WireFormat::OllamaChat:
      if (stream) return std::make_unique<OllamaStreamDecoder>(std::move(onDelta));
      return std::make_unique<OllamaBodyDecoder>(std::move(onDelta));
  }
  return std::make_unique<OpenAIBodyDecoder>(std::move(onDelta));
}

std::vector<std::pair<std::string, std::string>> redactedHeaders(const HttpRequest &request) {
  auto headers = request.headers;
  for (auto &[name, value] : headers) {
    for (const char *secret : {"authorization", "x-api-key", "api-key", "proxy-authorization", "x-goog-api-key"}) {
      if (iequals(name, secret)) {
        value = "[redacted]";
        break;
      }
    }
  }
  return headers;
}

HttpRequest buildChatRequest(WireFormat format, const std::string &baseUrl, const std::string &apiKey, const ChatRequest &request) {
  HttpRequest http;
  http.method = "POST";
  switch (format) {
    case WireFormat::OpenAIChat: {
      http.url = endpointUrl(baseUrl, "/chat/completions");
      http.headers.emplace_back("Content-Type", "application/json");
      if (!apiKey.empty()) http.headers.emplace_back("Authorization", "Bearer " + apiKey);
      ojson body = ojson::object();
      body["model"] = request.model;
      body["messages"] = openAIMessages(request.messages);
      body["max_tokens"] = request.maxTokens;
      if (request.temperature) body["temperature"] = *request.temperature;
      body["stream"] = request.stream;
      if (request.stream) body["stream_options"] = {{"include_usage", true}};
      if (!request.tools.empty()) body["tools"] = openAITools(request.tools);
      http.body = dumpJson(body);
      break;
    }
    case WireFormat::AnthropicMessages:
      http.url = endpointUrl(baseUrl, "/messages");
      if (!apiKey.empty()) http.headers.emplace_back("x-api-key", apiKey);
      http.headers.emplace_back("anthropic-version", "2023-06-01");
      http.headers.emplace_back("content-type", "application/json");
      http.body = anthropicBody(request);
      break;
    case WireFormat::OllamaChat:
      http.url = endpointUrl(baseUrl, "/api/chat");
      http.headers.emplace_back("Content-Type", "application/json");
      if (!apiKey.empty()) http.headers.emplace_back("Authorization", "Bearer " + apiKey);
      http.body = ollamaBody(request);
      break;
  }
  return http;
}

HttpRequest buildModelsRequest(WireFormat format, const std::string &baseUrl, const std::string &apiKey) {
  HttpRequest http;
  http.method = "GET";
  switch (format) {
    case WireFormat::OpenAIChat:
      http.url = endpointUrl(baseUrl, "/models");
      if (!apiKey.empty()) http.headers.emplace_back("Authorization", "Bearer " + apiKey);
      break;
    case WireFormat::AnthropicMessages:
      http.url = endpointUrl(baseUrl, "/models");
      if (!apiKey.empty()) http.headers.emplace_back("x-api-key", apiKey);
      http.headers.emplace_back("anthropic-version", "2023-06-01");
      break;
    case WireFormat::OllamaChat:
      http.url = endpointUrl(baseUrl, "/api/tags");
      if (!apiKey.empty()) http.headers.emplace_back("Authorization", "Bearer " + apiKey);
      break;
  }
  return http;
}

std::vector<std::string> parseModels(WireFormat format, const std::string &body) {
  std::string why;
  auto parsed = parseJson(trim(body), &why);
  if (!parsed) throw std::runtime_error("the model list is not valid JSON: " + why);
  if (auto error = errorIn(*parsed, true)) throw std::runtime_error("the server answered the model list with an error: " + *error);
  const char *listKey = format == WireFormat::OllamaChat ? "models" : "data";
  const json *list = arrayAt(*parsed, listKey);
  if (!list) throw std::runtime_error(std::string("the model list has no \"") + listKey + "\" array");
  std::vector<std::string> ids;
  for (const auto &entry : *list) {
    std::optional<std::string> id;
    if (format == WireFormat::OllamaChat) {
      id = stringAt(entry, "name");
      if (!id) id = stringAt(entry, "model");
    } else {
      id = stringAt(entry, "id");
    }
    if (!id) throw std::runtime_error(std::string("an entry of the model list has no \"") + (format == WireFormat::OllamaChat ? "name" : "id") + "\": " + cutUtf8(dumpJson(entry), 200));
    ids.push_back(*id);
  }
  return ids;
}

std::string errorMessageFromBody(const std::string &body) {
  auto t = trim(body);
  if (!t.empty() && (t.front() == '{' || t.front() == '[')) {
    if (auto parsed = parseJson(t, nullptr)) {
      if (auto error = errorIn(*parsed, false)) return *error;
      if (parsed->is_object()) {
        if (auto message = stringAt(*parsed, "message")) return *message;
      }
    }
  }
  return cutUtf8(t, 300);
}

std::int64_t estimateTokens(std::string_view text) {
  std::int64_t characters = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++characters;  // UTF-8 code points
  }
  return (characters + 3) / 4;
}

}  // namespace kwb::llm
