#include "core/llm/discovery.h"

#include <algorithm>
#include <future>

#include <nlohmann/json.hpp>

namespace kwb::llm {

std::vector<LocalServerKind> knownLocalServers() {
  return {{"ollama", 11434, WireFormat::OllamaChat, ""},
          {"llama.cpp", 8080, WireFormat::OpenAIChat, "/v1"},
          {"vllm", 8000, WireFormat::OpenAIChat, "/v1"},
          {"lm-studio", 1234, WireFormat::OpenAIChat, "/v1"},
          {"sglang", 30000, WireFormat::OpenAIChat, "/v1"},
          {"local-llm", 8089, WireFormat::OpenAIChat, "/v1"}};  // packaging/run-local-llm.sh
}

namespace {

// A request to a server that may not be there: short limits, the body kept up to `cap` bytes.
HttpResult quickGet(const HttpRequest &request, std::chrono::milliseconds timeout, std::size_t cap, std::string &body) {
  TransportOptions options;
  options.connectTimeout = timeout;
  options.stallTimeout = timeout;
  options.totalTimeout = 2 * timeout;
  return perform(request, options, [&](std::string_view b) {
    body.append(b);
    return body.size() < cap;
  });
}

int positiveInt(const nlohmann::json &j, const char *key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer()) return 0;
  const long long v = j[key].get<long long>();
  return v > 0 ? static_cast<int>(std::min<long long>(v, kMaxContextWindow)) : 0;
}

}  // namespace

ServerLimits limitsFromModels(const std::string &modelsBody, const std::string &model) {
  ServerLimits l;
  try {
    const auto j = nlohmann::json::parse(modelsBody);
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) return l;
    const nlohmann::json *entry = nullptr;
    for (const auto &m : j["data"])
      if (m.is_object() && (!entry || (m.contains("id") && m["id"].is_string() && m["id"].get<std::string>() == model)))
        entry = &m;
    if (!entry) return l;
    for (const char *key : {"max_model_len", "context_length", "max_context_length"})
      if (const int v = positiveInt(*entry, key)) {
        l.contextWindow = v;
        l.from = std::string("the model list's ") + key;
        break;
      }
  } catch (const std::exception &) {
  }
  return l;
}

ServerLimits limitsFromProps(const std::string &propsBody) {
  ServerLimits l;
  try {
    const auto j = nlohmann::json::parse(propsBody);
    if (!j.is_object()) return l;
    l.contextWindow = positiveInt(j, "n_ctx");
    if (!l.contextWindow && j.contains("default_generation_settings"))
      l.contextWindow = positiveInt(j["default_generation_settings"], "n_ctx");
    l.concurrent = std::min(positiveInt(j, "total_slots"), 64);
    if (l.contextWindow || l.concurrent) l.from = "the server's /props";
  } catch (const std::exception &) {
  }
  return l;
}

ServerLimits readServerLimits(const ProviderConfig &config, const std::string &apiKey, const std::string &modelsBody,
                              std::chrono::milliseconds timeout) {
  ServerLimits l = limitsFromModels(modelsBody, config.model);
  if (config.format != WireFormat::OpenAIChat) return l;
  // llama.cpp's server: GET /props beside the /v1 base.
  std::string root = config.baseUrl;
  while (!root.empty() && root.back() == '/') root.pop_back();
  if (root.size() >= 3 && root.compare(root.size() - 3, 3, "/v1") == 0) root.resize(root.size() - 3);
  HttpRequest request = buildModelsRequest(config.format, config.baseUrl, apiKey);
  request.url = root + "/props";
  std::string body;
  if (!quickGet(request, timeout, 1u << 20, body).ok()) return l;
  const ServerLimits props = limitsFromProps(body);
  if (props.contextWindow) {
    l.contextWindow = props.contextWindow;
    l.from = props.from;
  }
  if (props.concurrent) {
    l.concurrent = props.concurrent;
    l.from = props.from;
  }
  return l;
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
      std::string body;
      const HttpResult h = quickGet(request, timeout, 4u << 20, body);
      s.seconds = h.seconds;
      if (!h.ok()) return std::nullopt;
      try {
        s.models = parseModels(kind.format, body);
      } catch (const std::exception &) {
        return std::nullopt;  // something else listens there
      }
      if (!s.models.empty()) s.provider.model = s.models.front();
      s.limits = readServerLimits(s.provider, "", body, timeout);
      if (s.limits.contextWindow > 0) s.provider.contextWindow = s.limits.contextWindow;
      // llama.cpp's server answers one request per slot; llama-cpp-python's (the project's own
      // local model, llama.cpp's Python server) cuts an answer when another arrives.
      if (s.limits.concurrent > 0) s.provider.maxConcurrent = s.limits.concurrent;
      else if (kind.name == "llama.cpp" || kind.name == "local-llm") s.provider.maxConcurrent = 1;
      return s;
    }));
  std::vector<DiscoveredServer> out;
  for (auto &p : probes)
    if (auto s = p.get()) out.push_back(std::move(*s));
  return out;
}

}  // namespace kwb::llm
