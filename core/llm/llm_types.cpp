#include "core/llm/llm_types.h"

#include <algorithm>
#include <cctype>

namespace kwb::llm {

const char *toString(WireFormat format) {
  switch (format) {
    case WireFormat::OpenAIChat: return "openai";
    case WireFormat::AnthropicMessages: return "anthropic";
    case WireFormat::OllamaChat: return "ollama";
  }
  return "openai";
}

std::optional<WireFormat> wireFormatFromName(const std::string &name) {
  std::string n;
  n.reserve(name.size());
  for (unsigned char c : name) {
    if (!std::isspace(c)) n.push_back(static_cast<char>(std::tolower(c)));
  }
  // The names toString() gives, and the spellings people write in configuration files.
  if (n == "openai" || n == "openai-chat" || n == "openai-compatible" || n == "openai_compatible" || n == "chat-completions")
    return WireFormat::OpenAIChat;
  if (n == "anthropic" || n == "anthropic-messages" || n == "messages") return WireFormat::AnthropicMessages;
  if (n == "ollama" || n == "ollama-chat") return WireFormat::OllamaChat;
  return std::nullopt;
}

}  // namespace kwb::llm
