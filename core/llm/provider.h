#pragma once
// One configured LLM endpoint: its wire format, base URL, model, key, limits and prices, with
// the robustness the agent relies on: retries with exponential backoff and jitter on 429, 5xx
// and connection failures (honouring Retry-After), none on other 4xx (a clear message instead),
// stall detection, prompt cancellation, a per-provider concurrency limit, partial text kept and
// marked incomplete when a stream breaks, token and cost accounting against a budget, and a
// transcript of every exchange with keys redacted. No Qt.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/llm/http_transport.h"
#include "core/llm/llm_types.h"
#include "core/llm/wire_format.h"

namespace kwb::llm {

struct RetryPolicy {
  int maxAttempts = 4;                                  // including the first
  std::chrono::milliseconds initialBackoff{500};
  double multiplier = 2.0;
  std::chrono::milliseconds maxBackoff{30000};
  double jitter = 0.25;                                 // ± this fraction of the backoff
  std::chrono::milliseconds maxRetryAfter{120000};      // a longer Retry-After ends the attempts instead
};

// Dollars per million tokens.
struct Price {
  double inputPerMillion = 0;
  double outputPerMillion = 0;
};

struct ProviderConfig {
  std::string name;                 // unique, shown in lists: "openai", "local-llama"
  WireFormat format = WireFormat::OpenAIChat;
  std::string baseUrl;              // "https://api.openai.com/v1"
  std::string model;                // default model
  std::string apiKeyEnv;            // environment variable holding the key ("OPENAI_API_KEY"); may be empty
  bool keyInKeychain = false;       // the key is in the desktop keychain under "kernel-workbench/<name>"
  int maxConcurrent = 2;            // requests in flight at once through this provider
  std::chrono::seconds stallTimeout{60};
  RetryPolicy retry;
  std::optional<Price> price;       // absent: cost unknown (local servers: 0)
  // The model's context window and the most tokens one answer may have (KOPE's W and the cap on
  // G): 0 when not known (a session then assumes kAssumedContextWindow and asks for its own limit).
  int contextWindow = 0;
  int maxOutputTokens = 0;
};
inline constexpr int kAssumedContextWindow = 32768;
inline constexpr int kMaxContextWindow = 10'000'000;

// How a provider is named in messages: "name (redacted base URL)", or the redacted URL alone when
// that is its name (a provider given as a URL is named by it).
std::string shownName(const ProviderConfig &c);

// Tokens and dollars, per session and in total, and the budget that stops new requests.
class Accounting {
 public:
  struct Totals {
    std::int64_t requests = 0, inputTokens = 0, outputTokens = 0;
    std::int64_t estimatedRequests = 0;  // requests whose usage was estimated, not reported
    double cost = 0;                     // dollars, from the price table
    bool costUnknown = false;            // a request through a provider without prices
  };
  explicit Accounting(std::optional<double> budgetDollars = std::nullopt) : budget_(budgetDollars) {}
  void setBudget(std::optional<double> dollars);
  std::optional<double> budget() const;
  // Empty when a new request may start; else why not ("budget reached: $2.01 of $2.00 spent").
  std::string refusal() const;
  void add(const Usage &usage, double cost, bool costKnown);
  Totals totals() const;

 private:
  mutable std::mutex mutex_;
  std::optional<double> budget_;
  Totals totals_;
};

// One request and its answer, as stored (keys redacted).
struct TranscriptEntry {
  std::string provider, model, url;
  std::string requestHeaders;  // JSON object of the redacted headers
  std::string requestBody;     // JSON text sent
  std::string responseText;    // the text (and tool calls as JSON) received, complete or not
  std::string responseRaw;     // the body as received (first 1 MiB)
  int status = 0;
  int attempts = 0;
  // "complete", "empty" (complete, no text), "interrupted" (cut by the server for another request:
  // asked again), "incomplete", "cancelled", "error"
  std::string outcome;
  std::string error;
  Usage usage;
  double cost = 0;
  double seconds = 0;
  std::string startedAt;       // UTC ISO 8601
};

struct ChatResult {
  ChatResponse response;       // what arrived (partial when incomplete)
  int status = 0;              // of the last attempt
  int attempts = 0;
  bool cancelled = false;
  bool incomplete = false;     // the stream broke (cut, stalled, cancelled, error event) before its end
  // The server ended the answer without a finish reason after another request reached it (a
  // llama-cpp-python server cuts the answer it streams when a new one arrives).
  bool interrupted = false;
  std::string error;           // in words with the fix when known; empty on success
  double cost = 0;             // dollars (0 when unknown)
  double seconds = 0;
  double secondsToFirstToken = -1;
  // What the provider did about the server's behaviour, in words ("the server cut the answer when
  // another request arrived: asked again, one request at a time from now on"); empty when nothing.
  std::string note;
  bool ok() const { return error.empty() && !incomplete && !cancelled; }
};

struct ModelsResult {
  std::vector<std::string> models;
  std::string error;
  double seconds = 0;
};

class Provider {
 public:
  using TranscriptSink = std::function<void(const TranscriptEntry &)>;
  Provider(ProviderConfig config, std::string apiKey, std::shared_ptr<Accounting> accounting = nullptr,
           TranscriptSink transcript = {});

  const ProviderConfig &config() const { return config_; }
  // Blocks until done; onDelta (optional) is called on this thread as pieces arrive. The model
  // defaults to the config's. Never throws for network or server trouble: see ChatResult.
  ChatResult chat(ChatRequest request, const ResponseDecoder::DeltaCallback &onDelta = {},
                  const CancelToken *cancel = nullptr);
  ModelsResult models(const CancelToken *cancel = nullptr);
  // How long the retry after `attempt` (1-based) waits: Retry-After when the server gave one,
  // else the backoff with jitter. Exposed for tests.
  std::chrono::milliseconds backoff(int attempt, const std::optional<std::chrono::milliseconds> &retryAfter) const;
  int inFlight() const;
  // The model's context window: the configured one, else the one the server named when it refused
  // a prompt too long for it (0: not known).
  int contextWindow() const;
  // Requests at once now: the configured limit, or 1 once the server was seen cutting an answer
  // short when another request reached it.
  int concurrencyLimit() const;

 private:
  struct Exchange;  // one request with its retries (provider.cpp)
  ChatResult exchange(const ChatRequest &request, const ResponseDecoder::DeltaCallback &onDelta,
                      const CancelToken *cancel, Exchange &info);
  ProviderConfig config_;
  std::string apiKey_;
  std::shared_ptr<Accounting> accounting_;
  TranscriptSink transcript_;
  mutable std::mutex mutex_;
  std::condition_variable slotFree_;
  int inFlight_ = 0;
  int limit_ = 1;               // requests at once now (concurrencyLimit())
  std::uint64_t started_ = 0;   // requests started so far: one that started during an answer may have cut it
  int learnedWindow_ = 0;       // from a server's refusal; 0: none
};

// A server's refusal of a prompt too long for its model, read from the error body: the window and,
// where the server said it, the prompt's tokens (-1: not said). OpenAI, vLLM and llama-cpp-python
// say "maximum context length is N tokens ... (P in the messages, ...)"; llama.cpp's server sends
// n_ctx and n_prompt_tokens with type exceed_context_size_error.
struct ContextRefusal {
  int window = 0;
  int promptTokens = -1;
};
std::optional<ContextRefusal> contextRefusalIn(const std::string &body);

// What a transcript stores as the response text: the text, then the tool calls as a JSON array
// on a line of their own when there are any.
std::string transcriptText(const ChatResponse &response);

// Retry-After as a delay: delta-seconds ("120") or an HTTP date; nullopt when absent or unreadable.
std::optional<std::chrono::milliseconds> parseRetryAfter(const std::string &value,
                                                         std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

}  // namespace kwb::llm
