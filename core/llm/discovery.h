#pragma once
// Finds LLM servers on this machine's usual local ports and lists their models, so the GUI can
// offer them with no typing: Ollama (11434, native /api/tags), llama.cpp (8080), vLLM (8000),
// LM Studio (1234), SGLang (30000) and the project's own local model server
// (packaging/run-local-llm.sh, 8089), all OpenAI-compatible under /v1. The ports are probed
// at once, each with a short connect timeout.
#include <chrono>
#include <string>
#include <vector>

#include "core/llm/provider.h"

namespace kwb::llm {

struct LocalServerKind {
  std::string name;   // "ollama", "llama.cpp", ...
  int port = 0;
  WireFormat format = WireFormat::OpenAIChat;
  std::string path;   // base URL path: "/v1", or "" for Ollama's native API
};
std::vector<LocalServerKind> knownLocalServers();

// What a server says of its limits: the context window it serves (llama.cpp's /props n_ctx; the
// model list's max_model_len (vLLM), context_length (OpenRouter) or max_context_length (LM
// Studio)) and how many requests it serves at once (llama.cpp's total_slots). 0: not said.
struct ServerLimits {
  int contextWindow = 0;
  int concurrent = 0;
  std::string from;  // where they were read, in words ("GET /props"); empty: nowhere
};
// `modelsBody`: the model list as received (may be empty). Asks llama.cpp's GET /props (beside the
// /v1 base) for OpenAI-compatible servers; never throws.
ServerLimits readServerLimits(const ProviderConfig &config, const std::string &apiKey, const std::string &modelsBody,
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(1500));
// The limits read from a model list body for `model` (else the first model); exposed for tests.
ServerLimits limitsFromModels(const std::string &modelsBody, const std::string &model);
// The limits read from llama.cpp's /props body; exposed for tests.
ServerLimits limitsFromProps(const std::string &propsBody);

struct DiscoveredServer {
  LocalServerKind kind;
  // Ready to use: name, format, base URL, first model, no key, price 0; the context window and
  // requests at once as the server says them (a llama.cpp server that does not: 1 at once).
  ProviderConfig provider;
  ServerLimits limits;
  std::vector<std::string> models;
  double seconds = 0;             // how long its model list took
};

// The servers that answered their model-list request. `kinds` defaults to knownLocalServers();
// `host` is normally 127.0.0.1.
std::vector<DiscoveredServer> discoverLocalServers(const std::string &host = "127.0.0.1",
                                                   std::vector<LocalServerKind> kinds = {},
                                                   std::chrono::milliseconds timeout = std::chrono::milliseconds(800));

}  // namespace kwb::llm
