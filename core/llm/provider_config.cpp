#include "core/llm/provider_config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace kwb::llm {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// The most a providers file may ask of retries: attempts per answer (the first included), and
// the backoff before one (initial and longest).
constexpr int kMaxRetryAttempts = 10;
constexpr int kMaxRetryBackoffMs = 60000;
}  // namespace

fs::path providersFile() {
  if (const char *f = std::getenv("KWB_PROVIDERS_FILE"); f && *f) return f;
  fs::path config;
  if (const char *x = std::getenv("XDG_CONFIG_HOME"); x && *x) config = x;
  else if (const char *h = std::getenv("HOME"); h && *h) config = fs::path(h) / ".config";
  else config = "/tmp";
  return config / "kernel-workbench" / "providers.json";
}

json toJson(const ProviderConfig &c) {
  json j = {{"name", c.name},
            {"format", toString(c.format)},
            {"base_url", c.baseUrl},
            {"model", c.model},
            {"api_key_env", c.apiKeyEnv},
            {"key_in_keychain", c.keyInKeychain},
            {"max_concurrent", c.maxConcurrent},
            {"stall_timeout_s", c.stallTimeout.count()},
            {"retry",
             {{"max_attempts", c.retry.maxAttempts},
              {"initial_backoff_ms", c.retry.initialBackoff.count()},
              {"multiplier", c.retry.multiplier},
              {"max_backoff_ms", c.retry.maxBackoff.count()},
              {"jitter", c.retry.jitter}}}};
  if (c.contextWindow > 0) j["context_window"] = c.contextWindow;
  if (c.maxOutputTokens > 0) j["max_output_tokens"] = c.maxOutputTokens;
  if (c.price) j["price"] = {{"input_per_million", c.price->inputPerMillion}, {"output_per_million", c.price->outputPerMillion}};
  return j;
}

ProviderConfig providerFromJson(const json &j) {
  if (!j.is_object()) throw std::runtime_error("a provider must be a JSON object");
  ProviderConfig c;
  auto str = [&](const char *key, bool required) -> std::string {
    if (!j.contains(key)) {
      if (required) throw std::runtime_error(std::string("missing \"") + key + "\"");
      return {};
    }
    if (!j[key].is_string()) throw std::runtime_error(std::string("\"") + key + "\" must be a string");
    return j[key].get<std::string>();
  };
  c.name = str("name", true);
  if (c.name.empty()) throw std::runtime_error("\"name\" is empty");
  const std::string format = str("format", true);
  const auto f = wireFormatFromName(format);
  if (!f) throw std::runtime_error(c.name + ": \"format\" is '" + format + "'; expected openai, anthropic or ollama");
  c.format = *f;
  c.baseUrl = str("base_url", true);
  if (c.baseUrl.rfind("http://", 0) != 0 && c.baseUrl.rfind("https://", 0) != 0)
    throw std::runtime_error(c.name + ": \"base_url\" must start with http:// or https://");
  c.model = str("model", false);
  c.apiKeyEnv = str("api_key_env", false);
  if (j.contains("key_in_keychain")) c.keyInKeychain = j["key_in_keychain"].get<bool>();
  if (j.contains("api_key") || j.contains("key"))
    throw std::runtime_error(c.name + ": a key may not be stored in the providers file; name its environment "
                                      "variable in \"api_key_env\" or keep it in the keychain");
  if (j.contains("max_concurrent")) c.maxConcurrent = std::max(1, j["max_concurrent"].get<int>());
  for (auto [key, field] : {std::pair{"context_window", &c.contextWindow}, std::pair{"max_output_tokens", &c.maxOutputTokens}}) {
    if (!j.contains(key)) continue;
    const json &v = j[key];
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > kMaxContextWindow)
      throw std::runtime_error(c.name + ": \"" + key + "\" is " + v.dump() + "; it must be a whole number of tokens from 0 (not known) to " +
                               std::to_string(kMaxContextWindow));
    *field = v.get<int>();
  }
  if (j.contains("stall_timeout_s")) c.stallTimeout = std::chrono::seconds(std::max(1, j["stall_timeout_s"].get<int>()));
  if (j.contains("retry")) {
    const auto &r = j["retry"];
    if (!r.is_object()) throw std::runtime_error(c.name + ": \"retry\" must be an object");
    // Bounded (issue 45, 8: 100000 attempts without backoff sent 63,985 requests in 40 s).
    auto bounded = [&](const char *key, double value, double min, double max, bool whole, const char *unit) {
      if (!r.contains(key)) return value;
      const json &v = r[key];
      const bool ok = v.is_number() && (!whole || v.is_number_integer() || v.is_number_unsigned());
      const double d = ok ? v.get<double>() : 0;
      if (ok && d >= min && d <= max) return d;
      auto number = [](double n) {
        std::ostringstream o;
        o << n;
        return o.str();
      };
      throw std::runtime_error(c.name + ": \"retry." + key + "\" is " + v.dump() + "; it must be " +
                               (whole ? "a whole number" : "a number") + " from " + number(min) + " to " + number(max) + unit);
    };
    c.retry.maxAttempts = static_cast<int>(bounded("max_attempts", c.retry.maxAttempts, 1, kMaxRetryAttempts, true, " (requests per answer, the first included)"));
    c.retry.initialBackoff = std::chrono::milliseconds(static_cast<long long>(
        bounded("initial_backoff_ms", static_cast<double>(c.retry.initialBackoff.count()), 0, kMaxRetryBackoffMs, true, " ms")));
    c.retry.multiplier = bounded("multiplier", c.retry.multiplier, 1, 10, false, "");
    c.retry.maxBackoff = std::chrono::milliseconds(static_cast<long long>(
        bounded("max_backoff_ms", static_cast<double>(c.retry.maxBackoff.count()), 0, kMaxRetryBackoffMs, true, " ms")));
    c.retry.jitter = bounded("jitter", c.retry.jitter, 0, 1, false, " (a fraction of the backoff)");
  }
  if (j.contains("price")) {
    const auto &p = j["price"];
    c.price = Price{p.value("input_per_million", 0.0), p.value("output_per_million", 0.0)};
  }
  return c;
}

std::vector<ProviderConfig> loadProviders(const fs::path &file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return {};
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file.string() + ": cannot be read");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error &e) {
    throw std::runtime_error(file.string() + ": not valid JSON: " + e.what());
  }
  // {"providers": [...]} as saveProviders writes it, or the list alone; anything else is refused
  // (issue 45, 8: an object without the list was read as no providers).
  const auto kind = [](const json &v) -> std::string {
    if (v.is_object()) return "an object";
    if (v.is_array()) return "a list";
    if (v.is_string()) return "a string";
    if (v.is_number()) return "a number";
    if (v.is_boolean()) return "a boolean";
    return "null";
  };
  const std::string expected = R"(; expected {"providers": [...]}, a list of providers)";
  if (j.is_object() && !j.contains("providers"))
    throw std::runtime_error(file.string() + ": the top level is an object without \"providers\"" + expected);
  const json &list = j.is_object() ? j["providers"] : j;
  if (!list.is_array())
    throw std::runtime_error(file.string() + (j.is_object() ? ": \"providers\" is " : ": the top level is ") + kind(list) + expected);
  std::vector<ProviderConfig> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    try {
      out.push_back(providerFromJson(list[i]));
    } catch (const std::exception &e) {
      throw std::runtime_error(file.string() + ": providers[" + std::to_string(i) + "]: " + e.what());
    } 
    for (std::size_t k = 0; k + 1 < out.size(); ++k)
      if (out[k].name == out.back().name)
        throw std::runtime_error(file.string() + ": two providers are named '" + out.back().name + "'");
  }
  return out;
}

void saveProviders(const std::vector<ProviderConfig> &providers, const fs::path &file) {
  json list = json::array();
  for (const auto &p : providers) list.push_back(toJson(p));
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << json{{"providers", list}}.dump(2) << "\n";
    if (!out) throw std::runtime_error(tmp.string() + ": cannot be written");
  }
  fs::rename(tmp, file, ec);
  if (ec) throw std::runtime_error(file.string() + ": cannot be replaced: " + ec.message());
}

std::vector<ProviderConfig> providerTemplates() {
  std::vector<ProviderConfig> t;
  auto add = [&](std::string name, WireFormat f, std::string url, std::string model, std::string env,
                 std::optional<Price> price) {
    ProviderConfig c;
    c.name = std::move(name);
    c.format = f;
    c.baseUrl = std::move(url);
    c.model = std::move(model);
    c.apiKeyEnv = std::move(env);
    c.price = price;
    t.push_back(std::move(c));
  };
  add("openai", WireFormat::OpenAIChat, "https://api.openai.com/v1", "gpt-4o-mini", "OPENAI_API_KEY", std::nullopt);
  add("anthropic", WireFormat::AnthropicMessages, "https://api.anthropic.com/v1", "claude-sonnet-4-5", "ANTHROPIC_API_KEY", std::nullopt);
  add("openrouter", WireFormat::OpenAIChat, "https://openrouter.ai/api/v1", "", "OPENROUTER_API_KEY", std::nullopt);
  add("ollama", WireFormat::OllamaChat, "http://127.0.0.1:11434", "", "", Price{0, 0});
  add("llama.cpp", WireFormat::OpenAIChat, "http://127.0.0.1:8080/v1", "", "", Price{0, 0});
  t.back().maxConcurrent = 1;  // one slot unless started with --parallel; its Python server cuts answers short
  add("vllm", WireFormat::OpenAIChat, "http://127.0.0.1:8000/v1", "", "", Price{0, 0});
  add("lm-studio", WireFormat::OpenAIChat, "http://127.0.0.1:1234/v1", "", "", Price{0, 0});
  add("sglang", WireFormat::OpenAIChat, "http://127.0.0.1:30000/v1", "", "", Price{0, 0});
  return t;
}

std::string keyFromEnvironment(const ProviderConfig &c) {
  if (c.apiKeyEnv.empty()) return {};
  const char *v = std::getenv(c.apiKeyEnv.c_str());
  return v ? v : "";
}

ProviderConfig adHocProvider(const std::string &baseUrl, std::optional<WireFormat> format) {
  ProviderConfig c;
  c.name = redactedUrl(baseUrl);  // shown, stored and exported: never the URL's credentials
  c.baseUrl = baseUrl;
  c.format = format.value_or(WireFormat::OpenAIChat);
  c.apiKeyEnv = "KWB_LLM_API_KEY";
  return c;
}

}  // namespace kwb::llm
