#pragma once
// The provider-neutral shapes of a chat request and its (streamed) response. No Qt, no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kwb::llm {

// The three wire formats the client speaks (core/llm/wire_format.h builds and decodes them).
enum class WireFormat { OpenAIChat, AnthropicMessages, OllamaChat };
const char *toString(WireFormat);                       // "openai", "anthropic", "ollama"
std::optional<WireFormat> wireFormatFromName(const std::string &);

struct ToolCall {
  int index = 0;            // position in the response (OpenAI's delta index, Anthropic's block index)
  std::string id;           // "call_abc" / "toolu_01..."; may be empty (Ollama)
  std::string name;
  std::string arguments;    // JSON text, joined from the streamed fragments
};

struct Message {
  std::string role;         // "system", "user", "assistant", "tool"
  std::string content;
  std::vector<ToolCall> toolCalls;  // assistant messages that called tools
  std::string toolCallId;           // role "tool": the call it answers
};

struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();  // JSON Schema
};

struct ChatRequest {
  std::string model;
  std::vector<Message> messages;  // a leading "system" message becomes Anthropic's `system`
  std::vector<ToolSpec> tools;
  int maxTokens = 1024;
  std::optional<double> temperature;
  bool stream = true;
};

struct Usage {
  std::int64_t inputTokens = 0;
  std::int64_t outputTokens = 0;
  bool reported = false;    // false: estimated by us (about 4 characters per token), or unknown
};

// What a decoder has read so far; complete once the stream's own end was seen.
struct ChatResponse {
  std::string id;
  std::string model;
  std::string text;
  std::string reasoning;    // reasoning/thinking deltas (non-standard; kept apart from text)
  std::vector<ToolCall> toolCalls;  // sorted by index
  Usage usage;
  std::string finishReason; // as the server said it: "stop", "length", "tool_calls", "end_turn", ...
  bool complete = false;    // the format's end marker arrived ([DONE], message_stop, done:true, or a whole body)
  std::string error;        // an error the server sent (in the stream or the body), in words
};

// One piece of a stream as it arrives, for live display.
struct StreamDelta {
  enum class Kind { Text, Reasoning, ToolCall, Usage, KeepAlive, Error, Done };
  Kind kind = Kind::Text;
  std::string text;         // Text/Reasoning: the new text; ToolCall: the argument fragment; Error: the message
  int index = 0;            // ToolCall: which call
  std::string name;         // ToolCall: the function name when this fragment carries it
};

}  // namespace kwb::llm
