#include "app/cli/llm_command.h"

#include <csignal>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/llm/discovery.h"
#include "core/llm/provider_config.h"
#include "core/llm/transcript_store.h"
#include "core/paths/install_paths.h"
#include "core/store/workspace.h"

using nlohmann::json;
namespace llm = kwb::llm;

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

llm::CancelToken *gCancel = nullptr;
extern "C" void onInterrupt(int) {
  if (gCancel) gCancel->cancel();
}

// Ctrl+C cancels the request in flight (within a poll of the transport) instead of killing kwb.
struct InterruptCancels {
  llm::CancelToken token;
  InterruptCancels() {
    gCancel = &token;
    std::signal(SIGINT, onInterrupt);
  }
  ~InterruptCancels() {
    std::signal(SIGINT, SIG_DFL);
    gCancel = nullptr;
  }
};

std::string keySource(const llm::ProviderConfig &c) {
  if (!c.apiKeyEnv.empty())
    return "$" + c.apiKeyEnv + (llm::keyFromEnvironment(c).empty() ? " (not set)" : " (set)");
  if (c.keyInKeychain) return "keychain (read by the workbench; set an environment variable for kwb)";
  return "none";
}

// The provider TARGET names: a configured one, or a base URL. Empty optional with a message.
std::optional<llm::ProviderConfig> resolve(const LlmArgs &args, std::string &problem) {
  std::optional<llm::WireFormat> format;
  if (!args.format.empty()) {
    format = llm::wireFormatFromName(args.format);
    if (!format) {
      problem = "--format is '" + args.format + "'; expected openai, anthropic or ollama";
      return std::nullopt;
    }
  }
  if (args.target.rfind("http://", 0) == 0 || args.target.rfind("https://", 0) == 0)
    return llm::adHocProvider(args.target, format);
  std::vector<llm::ProviderConfig> providers;
  try {
    providers = llm::loadProviders();
  } catch (const std::exception &e) {
    problem = e.what();
    return std::nullopt;
  }
  std::string names;
  for (auto &p : providers) {
    if (p.name == args.target) {
      if (format) p.format = *format;
      return p;
    }
    names += (names.empty() ? "" : ", ") + p.name;
  }
  problem = "no provider named '" + args.target + "' in " + llm::providersFile().string() +
            (names.empty() ? " (none configured)" : " (configured: " + names + ")") +
            "; give a base URL such as http://127.0.0.1:8080/v1 instead, or add the provider in the workbench's settings";
  return std::nullopt;
}

std::string keyFor(const llm::ProviderConfig &c, std::string &warning) {
  std::string key = llm::keyFromEnvironment(c);
  if (key.empty() && c.keyInKeychain)
    warning = "the key of '" + c.name + "' is in the desktop keychain, which kwb does not read; set an environment "
              "variable and name it in the provider's settings";
  return key;
}

}  // namespace

std::optional<std::pair<llm::ProviderConfig, std::string>> providerAndKey(const LlmArgs &args) {
  std::string problem;
  const auto config = resolve(args, problem);
  if (!config) {
    std::cerr << "kwb: " << problem << "\n";
    return std::nullopt;
  }
  std::string warning;
  std::string key = keyFor(*config, warning);
  if (!warning.empty()) std::cerr << "kwb: " << warning << "\n";
  return std::make_pair(*config, std::move(key));
}

namespace {

std::filesystem::path workspacePath(const LlmArgs &args) {
  return args.workspace.empty() ? kwb::userDataDir() / "workspace.kwb" : std::filesystem::path(args.workspace);
}

// Reading (transcripts, replay): the workspace must exist, and may be read-only. Writing (test
// --workspace): a new one is made, and said so, so a mistyped path does not pass unnoticed.
std::shared_ptr<kwb::Workspace> openWorkspace(const LlmArgs &args, bool forReading) {
  try {
    const auto path = workspacePath(args);
    if (forReading) return std::shared_ptr<kwb::Workspace>(kwb::Workspace::openExisting(path));
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) std::cerr << "kwb: no workspace at " << path.string() << ": a new one is made\n";
    return std::shared_ptr<kwb::Workspace>(kwb::Workspace::open(path));
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return nullptr;
  }
}

// Which wire format a stored request spoke, from its URL's path (a query, "?key=***", follows it).
llm::WireFormat formatOfUrl(std::string url) {
  url = url.substr(0, url.find_first_of("?#"));
  if (url.find("/api/chat") != std::string::npos) return llm::WireFormat::OllamaChat;
  if (url.size() >= 9 && url.compare(url.size() - 9, 9, "/messages") == 0) return llm::WireFormat::AnthropicMessages;
  return llm::WireFormat::OpenAIChat;
}

}  // namespace

std::unique_ptr<kwb::llm::Provider> chatProvider(const std::string &target, const std::string &format,
                                                 const std::string &model) {
  LlmArgs args;
  args.target = target;
  args.format = format;
  args.model = model;
  const auto provider = providerAndKey(args);
  if (!provider) return nullptr;
  auto config = provider->first;
  if (!model.empty()) config.model = model;
  return std::make_unique<kwb::llm::Provider>(config, provider->second);
}

int llmListCommand(bool asJson) {
  std::vector<llm::ProviderConfig> providers;
  try {
    providers = llm::loadProviders();
  } catch (const std::exception &e) {
    std::cerr << "kwb: " << e.what() << "\n";
    return kExitUsage;
  }
  if (asJson) {
    json out = {{"file", llm::providersFile().string()}, {"providers", json::array()}};
    for (const auto &p : providers) {
      json j = llm::toJson(p);
      j["base_url"] = llm::redactedUrl(p.baseUrl);  // toJson's is the file's, credentials and all (issue 45, 2)
      j["key"] = keySource(p);
      out["providers"].push_back(j);
    }
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (providers.empty()) {
    std::cout << "No providers configured (" << llm::providersFile().string()
              << "). Add one in the workbench (Settings ▸ LLM providers), or use a base URL directly:\n"
                 "  kwb llm test http://127.0.0.1:8080/v1\n";
    return 0;
  }
  for (const auto &p : providers)
    std::cout << p.name << "  " << llm::toString(p.format) << "  " << llm::redactedUrl(p.baseUrl) << "  model " << (p.model.empty() ? "(none)" : p.model)
              << "  key " << keySource(p) << "\n";
  return 0;
}

int llmModelsCommand(const LlmArgs &args, bool asJson) {
  const auto resolved = providerAndKey(args);
  if (!resolved) return kExitUsage;
  const auto config = &resolved->first;
  InterruptCancels interrupt;
  llm::Provider provider(*config, resolved->second);
  const auto r = provider.models(&interrupt.token);
  if (asJson) {
    json out = {{"provider", config->name}, {"base_url", llm::redactedUrl(config->baseUrl)}, {"format", llm::toString(config->format)},
                {"models", r.models}, {"seconds", r.seconds}};
    if (!r.error.empty()) out["error"] = r.error;
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  } else if (r.error.empty()) {
    for (const auto &m : r.models) std::cout << m << "\n";
  }
  if (!r.error.empty()) {
    std::cerr << "kwb: " << r.error << "\n";
    return kExitFailed;
  }
  return 0;
}

int llmTestCommand(const LlmArgs &args, bool asJson) {
  const auto resolved = providerAndKey(args);
  if (!resolved) return kExitUsage;
  const auto config = &resolved->first;
  InterruptCancels interrupt;
  llm::Provider::TranscriptSink sink;
  // A transcript that could not be stored (a full disk) fails the command: the user asked for it.
  auto storeFailure = std::make_shared<std::string>();
  if (!args.workspace.empty()) {
    auto ws = openWorkspace(args, false);
    if (!ws) return kExitUsage;
    sink = llm::workspaceTranscriptSink(ws, args.session, [storeFailure](const std::string &m) {
      if (storeFailure->empty()) *storeFailure = m;
    });
  }
  llm::Provider provider(*config, resolved->second, nullptr, sink);
  llm::ChatRequest request;
  request.model = args.model.empty() ? config->model : args.model;
  if (request.model.empty()) {
    // No model named: the server's first.
    const auto models = provider.models(&interrupt.token);
    if (!models.error.empty()) {
      std::cerr << "kwb: no --model given and the model list failed: " << models.error << "\n";
      return kExitFailed;
    }
    if (models.models.empty()) {
      std::cerr << "kwb: no --model given and " << llm::redactedUrl(config->baseUrl) << " lists no models\n";
      return kExitFailed;
    }
    request.model = models.models.front();
  }
  request.messages = {{"system", "You are a helpful assistant. Answer briefly.", {}, {}}, {"user", args.prompt, {}, {}}};
  request.maxTokens = args.maxTokens;
  request.temperature = 0.0;
  request.stream = !args.noStream;
  const bool live = !asJson;
  if (live) std::cerr << "kwb: " << llm::shownName(*config) << ", model " << request.model << ":\n";
  const auto r = provider.chat(request, [&](const llm::StreamDelta &d) {
    if (live && d.kind == llm::StreamDelta::Kind::Text) std::cout << d.text << std::flush;
  }, &interrupt.token);
  if (asJson) {
    json out = {{"ok", r.ok()},
                {"provider", config->name},
                {"base_url", llm::redactedUrl(config->baseUrl)},
                {"model", r.response.model.empty() ? request.model : r.response.model},
                {"stream", request.stream},
                {"status", r.status},
                {"attempts", r.attempts},
                {"latency_ms", r.seconds * 1000.0},
                {"first_token_ms", r.secondsToFirstToken >= 0 ? json(r.secondsToFirstToken * 1000.0) : json(nullptr)},
                {"text", r.response.text},
                {"finish_reason", r.response.finishReason},
                {"complete", r.response.complete},
                {"incomplete", r.incomplete},
                {"cancelled", r.cancelled},
                {"usage",
                 {{"input_tokens", r.response.usage.inputTokens},
                  {"output_tokens", r.response.usage.outputTokens},
                  {"reported", r.response.usage.reported}}}};
    if (!r.error.empty()) out["error"] = r.error;
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    if (!r.response.text.empty()) std::cout << "\n";
    char line[256];
    std::snprintf(line, sizeof line, "%.0f ms in all, %s; %lld in / %lld out tokens (%s)", r.seconds * 1000.0,
                  r.secondsToFirstToken >= 0 ? (std::to_string(static_cast<long long>(r.secondsToFirstToken * 1000.0)) + " ms to the first token").c_str()
                                             : "no token",
                  static_cast<long long>(r.response.usage.inputTokens), static_cast<long long>(r.response.usage.outputTokens),
                  r.response.usage.reported ? "reported" : "estimated");
    std::cerr << "kwb: " << line << (r.incomplete ? "; INCOMPLETE" : "") << "\n";
  }
  if (!r.error.empty()) {
    std::cerr << "kwb: " << r.error << "\n";
    return kExitFailed;
  }
  if (!storeFailure->empty()) {
    std::cerr << "kwb: the exchange was not stored in " << workspacePath(args).string() << ": " << *storeFailure << "\n";
    return kExitFailed;
  }
  return 0;
}

int llmDiscoverCommand(bool asJson) {
  const auto servers = llm::discoverLocalServers();
  if (asJson) {
    json out = json::array();
    for (const auto &s : servers)
      out.push_back({{"name", s.kind.name}, {"base_url", llm::redactedUrl(s.provider.baseUrl)}, {"format", llm::toString(s.kind.format)},
                     {"models", s.models}, {"seconds", s.seconds}});
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (servers.empty()) {
    std::cout << "No local LLM server answered on the usual ports (";
    bool first = true;
    for (const auto &k : llm::knownLocalServers()) {
      std::cout << (first ? "" : ", ") << k.name << " " << k.port;
      first = false;
    }
    std::cout << ")\n";
    return 0;
  }
  for (const auto &s : servers) {
    std::cout << s.kind.name << "  " << llm::redactedUrl(s.provider.baseUrl) << "  " << s.models.size() << " model(s)";
    for (const auto &m : s.models) std::cout << "  " << m;
    std::cout << "\n";
  }
  return 0;
}

int llmTranscriptsCommand(const LlmArgs &args, bool asJson) {
  auto ws = openWorkspace(args, true);
  if (!ws) return kExitUsage;
  const auto rows = ws->llmTranscripts(args.session);
  if (asJson) {
    json out = json::array();
    for (const auto &r : rows)
      out.push_back({{"id", r.id}, {"session", r.session}, {"provider", r.provider}, {"model", r.model}, {"url", r.url},
                     {"status", r.status}, {"attempts", r.attempts}, {"outcome", r.outcome}, {"error", r.error},
                     {"input_tokens", r.inputTokens}, {"output_tokens", r.outputTokens}, {"usage_reported", r.usageReported},
                     {"cost", r.cost}, {"seconds", r.seconds}, {"started_at", r.startedAt},
                     {"request_headers", json::parse(r.requestHeaders, nullptr, false)}, {"request_body", r.requestBody},
                     {"response_text", r.responseText}});
    std::cout << out.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (rows.empty()) {
    std::cout << "No transcripts for session '" << args.session << "' in " << ws->path().string() << "\n";
    return 0;
  }
  for (const auto &r : rows) {
    char line[160];
    std::snprintf(line, sizeof line, "%lld  %s  %-10s  %3d  %lld/%lld tokens%s  %.2f s  ", static_cast<long long>(r.id),
                  r.startedAt.c_str(), r.outcome.c_str(), r.status, static_cast<long long>(r.inputTokens),
                  static_cast<long long>(r.outputTokens), r.usageReported ? "" : " (est.)", r.seconds);
    std::string text = r.responseText.substr(0, 60);
    for (char &c : text)
      if (c == '\n') c = ' ';
    std::cout << line << r.provider << " " << r.model << "  " << (r.error.empty() ? text : r.error.substr(0, 80)) << "\n";
  }
  return 0;
}

// Reads a stored answer again through today's decoder: the raw bytes as received, in one piece.
int llmReplayCommand(const LlmArgs &args, bool asJson) {
  auto ws = openWorkspace(args, true);
  if (!ws) return kExitUsage;
  std::optional<kwb::LlmTranscriptRecord> found;
  for (const auto &r : ws->llmTranscripts(args.session))
    if (r.id == args.id) found = r;
  if (!found) {
    std::cerr << "kwb: no transcript " << args.id << " in session '" << args.session << "' of " << ws->path().string()
              << "; list them with kwb llm transcripts\n";
    return kExitUsage;
  }
  const auto format = formatOfUrl(found->url);
  const json sent = json::parse(found->requestBody, nullptr, false);
  const bool stream = sent.is_object() && sent.value("stream", false);
  auto decoder = llm::makeDecoder(format, stream);
  decoder->feed(found->responseRaw);
  decoder->finish();
  const auto &r = decoder->response();
  const bool same = llm::transcriptText(r) == found->responseText;
  if (asJson) {
    std::cout << json{{"id", found->id}, {"format", llm::toString(format)}, {"stream", stream}, {"text", r.text},
                      {"complete", r.complete}, {"error", r.error}, {"matches_stored_text", same},
                      {"raw_bytes", found->responseRaw.size()}}.dump(2, ' ', false, json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << r.text << "\n";
    std::cerr << "kwb: replayed " << found->responseRaw.size() << " bytes as " << llm::toString(format)
              << (stream ? " stream" : " body") << ": " << (r.complete ? "complete" : "INCOMPLETE")
              << (r.error.empty() ? "" : ", error: " + r.error) << (same ? "; the same text as stored" : "; DIFFERS from the stored text")
              << "\n";
  }
  return same ? 0 : kExitFailed;
}
