#include "core/llm/discovery.h"

#include <future>

namespace kwb::llm {

std::vector<LocalServerKind> knownLocalServers() {
  return {{"ollama", 11434, WireFormat::OllamaChat, ""},
          {"llama.cpp", 8080, WireFormat::OpenAIChat, "/v1"},
          {"vllm", 8000, WireFormat::OpenAIChat, "/v1"},
          {"lm-studio", 1234, WireFormat::OpenAIChat, "/v1"},
          {"sglang", 30000, WireFormat::OpenAIChat, "/v1"},
          {"local-llm", 8089, WireFormat::OpenAIChat, "/v1"}};  // packaging/run-local-llm.sh
}

std::vector<DiscoveredServer> discoverLocalServers(const std::string &host, std::vector<LocalServerKind> kinds,
                                                   std::chrono::milliseconds timeout) {
  if (kinds.empty()) kinds = knownLocalServers();
  std::vector<std::future<std::optional<DiscoveredServer>>> probes;
  for (const auto &kind : kinds)
    probes.push_back(std::async(std::launch::async, [kind, host, timeout]() -> std::optional<DiscoveredServer> {
      DiscoveredServer s;
      s.kind = kind;
      s.provider.name = kind.name;
      s.provider.format = kind.format;
      s.provider.baseUrl = "http://" + host + ":" + std::to_string(kind.port) + kind.path;
      s.provider.price = Price{0, 0};
      const HttpRequest request = buildModelsRequest(kind.format, s.provider.baseUrl, "");
      TransportOptions options;
      options.connectTimeout = timeout;
      options.stallTimeout = timeout;
      options.totalTimeout = 2 * timeout;
      std::string body;
      const HttpResult h = perform(request, options, [&](std::string_view b) {
        body.append(b);
        return body.size() < (4u << 20);
      });
      s.seconds = h.seconds;
      if (!h.ok()) return std::nullopt;
      try {
        s.models = parseModels(kind.format, body);
      } catch (const std::exception &) {
        return std::nullopt;  // something else listens there
      }
      if (!s.models.empty()) s.provider.model = s.models.front();
      return s;
    }));
  std::vector<DiscoveredServer> out;
  for (auto &p : probes)
    if (auto s = p.get()) out.push_back(std::move(*s));
  return out;
}

}  // namespace kwb::llm
