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

struct DiscoveredServer {
  LocalServerKind kind;
  ProviderConfig provider;        // ready to use: name, format, base URL, first model, no key, price 0
  std::vector<std::string> models;
  double seconds = 0;             // how long its model list took
};

// The servers that answered their model-list request. `kinds` defaults to knownLocalServers();
// `host` is normally 127.0.0.1.
std::vector<DiscoveredServer> discoverLocalServers(const std::string &host = "127.0.0.1",
                                                   std::vector<LocalServerKind> kinds = {},
                                                   std::chrono::milliseconds timeout = std::chrono::milliseconds(800));

}  // namespace kwb::llm
