#include "core/llm/provider.h"

#include "core/text/printable.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <random>
#include <thread>

namespace kwb::llm {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxRawTranscript = 1 << 20;

std::string nowIso() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

std::string dollars(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.2f", d);
  return buf;
}

bool retryableStatus(int status) { return status == 408 || status == 409 || status == 429 || status >= 500; }

// Waits `delay`, waking early when cancelled. False when cancelled.
bool waitCancellable(std::chrono::milliseconds delay, const CancelToken *cancel) {
  const auto until = Clock::now() + delay;
  while (Clock::now() < until) {
    if (cancel && cancel->cancelled()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(std::chrono::milliseconds(20),
                                  std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()) +
                                      std::chrono::milliseconds(1)));
  }
  return !(cancel && cancel->cancelled());
}

// What a refused request means, with the fix.
std::string statusMessage(const ProviderConfig &c, int status, const std::string &body) {
  const std::string said = printable(errorMessageFromBody(body), 2048);  // the server's words, escaped (issue 17, 6)
  const std::string where = shownName(c);
  const std::string keyHint = c.apiKeyEnv.empty() ? (c.keyInKeychain ? "the key stored in the keychain for " + c.name : "the provider's API key")
                                                  : "$" + c.apiKeyEnv;
  switch (status) {
    case 400: return "the request was refused as malformed (400) by " + where + ": " + said;
    case 401: return "the key was refused (401) by " + where + ": " + said + "; check " + keyHint;
    case 403: return "access denied (403) by " + where + ": " + said + "; check " + keyHint + " and its permissions for this model";
    case 404: return "not found (404) at " + where + ": " + said + "; check the base URL and the model name";
    case 422: return "the request was refused (422) by " + where + ": " + said;
    default: break;
  }
  return "HTTP " + std::to_string(status) + " from " + where + ": " + said;
}

// A server (or proxy) that echoes the key, or the credentials of the provider's URL, must not put
// them in our messages or transcripts (issue 45, 2). A message also has every URL in it redacted;
// the raw body keeps the others (a replay reads it again).
void redactSecrets(std::string &text, const std::string &key, const std::string &url, bool urlsInText = true) {
  if (!key.empty())
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at)) text.replace(at, key.size(), "[redacted]");
  text = withoutUrlSecrets(urlsInText ? redactUrlsIn(text) : std::move(text), url);
}

std::string messagesText(const ChatRequest &r) {
  std::string s;
  for (const auto &m : r.messages) s += m.content;
  return s;
}

}  // namespace

std::string shownName(const ProviderConfig &c) {
  const std::string url = redactedUrl(c.baseUrl);
  return c.name.empty() || c.name == url ? url : c.name + " (" + url + ")";
}

// ---- Accounting ----

void Accounting::setBudget(std::optional<double> dollars) {
  std::lock_guard lock(mutex_);
  budget_ = dollars;
}

std::optional<double> Accounting::budget() const {
  std::lock_guard lock(mutex_);
  return budget_;
}

std::string Accounting::refusal() const {
  std::lock_guard lock(mutex_);
  if (budget_ && totals_.cost >= *budget_)
    return "budget reached: " + dollars(totals_.cost) + " of " + dollars(*budget_) +
           " spent; raise the budget to send more requests";
  return {};
}

void Accounting::add(const Usage &usage, double cost, bool costKnown) {
  std::lock_guard lock(mutex_);
  ++totals_.requests;
  totals_.inputTokens += usage.inputTokens;
  totals_.outputTokens += usage.outputTokens;
  if (!usage.reported) ++totals_.estimatedRequests;
  totals_.cost += cost;
  if (!costKnown) totals_.costUnknown = true;
}

Accounting::Totals Accounting::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

std::string transcriptText(const ChatResponse &response) {
  std::string text = response.text;
  if (!response.toolCalls.empty()) {
    nlohmann::json calls = nlohmann::json::array();
    for (const auto &c : response.toolCalls)
      calls.push_back({{"index", c.index}, {"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    text += (text.empty() ? "" : "\n") + calls.dump();
  }
  return text;
}

// ---- Retry-After ----

std::optional<std::chrono::milliseconds> parseRetryAfter(const std::string &value, std::chrono::system_clock::time_point now) {
  std::string v = value;
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.erase(v.begin());
  if (v.empty()) return std::nullopt;
  if (std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; })) {
    const double s = std::atof(v.c_str());
    if (!std::isfinite(s) || s < 0) return std::nullopt;
    return std::chrono::milliseconds(static_cast<long long>(std::min(s, 1e9) * 1000));  // at most ~31 years
  }
  // IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT", read without the C library's locale.
  static const char *const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char month[4] = {0};
  int day = 0, year = 0, hour = 0, minute = 0, second = 0;
  const auto comma = v.find(", ");
  if (comma == std::string::npos ||
      std::sscanf(v.c_str() + comma + 2, "%2d %3s %4d %2d:%2d:%2d GMT", &day, month, &year, &hour, &minute, &second) != 6)
    return std::nullopt;
  std::tm tm{};
  tm.tm_mon = -1;
  for (int m = 0; m < 12; ++m)
    if (std::string(month) == kMonths[m]) tm.tm_mon = m;
  if (tm.tm_mon < 0) return std::nullopt;
  tm.tm_mday = day;
  tm.tm_year = year - 1900;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const auto at = std::chrono::system_clock::from_time_t(timegm(&tm));
  const auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(at - now);
  return std::max(delay, std::chrono::milliseconds(0));
}

// ---- Provider ----

Provider::Provider(ProviderConfig config, std::string apiKey, std::shared_ptr<Accounting> accounting,
                   TranscriptSink transcript)
    : config_(std::move(config)), apiKey_(std::move(apiKey)), accounting_(std::move(accounting)),
      transcript_(std::move(transcript)) {
  config_.maxConcurrent = std::max(1, config_.maxConcurrent);
  limit_ = config_.maxConcurrent;
}

int Provider::inFlight() const {
  std::lock_guard lock(mutex_);
  return inFlight_;
}

std::chrono::milliseconds Provider::backoff(int attempt, const std::optional<std::chrono::milliseconds> &retryAfter) const {
  if (retryAfter) return *retryAfter;
  const auto &r = config_.retry;
  double ms = static_cast<double>(r.initialBackoff.count()) * std::pow(r.multiplier, std::max(0, attempt - 1));
  ms = std::min(ms, static_cast<double>(r.maxBackoff.count()));
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_real_distribution<double> u(-r.jitter, r.jitter);
  return std::chrono::milliseconds(static_cast<long long>(std::max(0.0, ms * (1.0 + u(rng)))));
}

struct Provider::Exchange {
  std::size_t bodyBytes = 0;  // of the last attempt's response
  std::string errorBody;      // the last refusal's body, as received
};

int Provider::contextWindow() const {
  std::lock_guard lock(mutex_);
  return config_.contextWindow > 0 ? config_.contextWindow : learnedWindow_;
}

int Provider::concurrencyLimit() const {
  std::lock_guard lock(mutex_);
  return limit_;
}

std::optional<ContextRefusal> contextRefusalIn(const std::string &body) {
  ContextRefusal r;
  const auto number = [](const std::string &text, std::size_t at) {
    while (at < text.size() && !std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
    long long v = 0;
    std::size_t digits = 0;
    for (; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) && digits < 10; ++at, ++digits)
      v = v * 10 + (text[at] - '0');
    return digits ? static_cast<int>(std::min<long long>(v, kMaxContextWindow)) : 0;
  };
  // llama.cpp's server: {"error": {"type": "exceed_context_size_error", "n_ctx": N, "n_prompt_tokens": P}}
  try {
    const auto j = nlohmann::json::parse(body);
    const auto &e = j.contains("error") && j["error"].is_object() ? j["error"] : j;
    if (e.contains("n_ctx") && e["n_ctx"].is_number_integer() && e["n_ctx"].get<long long>() > 0) {
      r.window = static_cast<int>(std::min<long long>(e["n_ctx"].get<long long>(), kMaxContextWindow));
      if (e.contains("n_prompt_tokens") && e["n_prompt_tokens"].is_number_integer())
        r.promptTokens = static_cast<int>(std::min<long long>(e["n_prompt_tokens"].get<long long>(), kMaxContextWindow));
      return r;
    }
  } catch (const std::exception &) {
  }
  const std::string message = errorMessageFromBody(body);
  for (const char *said : {"maximum context length is", "exceed context window of", "context window of"}) {
    if (const auto at = message.find(said); at != std::string::npos) {
      r.window = number(message, at + std::strlen(said));
      break;
    }
  }
  if (r.window <= 0) return std::nullopt;
  for (const char *said : {" in the messages", " in your prompt"})
    if (const auto at = message.find(said); at != std::string::npos) {
      auto open = message.rfind('(', at);
      if (open != std::string::npos) r.promptTokens = number(message, open);
    }
  return r;
}

ChatResult Provider::exchange(const ChatRequest &request, const ResponseDecoder::DeltaCallback &onDelta,
                              const CancelToken *cancel, Exchange &info) {
  ChatResult result;
  const auto started = Clock::now();
  if (accounting_)
    if (std::string refusal = accounting_->refusal(); !refusal.empty()) {
      result.error = refusal;
      return result;
    }
  // One of the provider's slots; waiting for it can be cancelled.
  std::uint64_t startedAs = 0;
  {
    std::unique_lock lock(mutex_);
    while (inFlight_ >= limit_) {
      if (cancel && cancel->cancelled()) {
        result.cancelled = true;
        result.error = "cancelled";
        return result;
      }
      slotFree_.wait_for(lock, std::chrono::milliseconds(20));
    }
    ++inFlight_;
    startedAs = ++started_;
  }
  struct Slot {
    Provider *p;
    ~Slot() {
      {
        std::lock_guard lock(p->mutex_);
        --p->inFlight_;
      }
      p->slotFree_.notify_all();
    }
  } slot{this};

  if (apiKey_.find_first_of("\r\n") != std::string::npos) {
    result.error = "the API key of " + config_.name + " holds a line break; set it again without one";
    return result;
  }
  const HttpRequest http = buildChatRequest(config_.format, config_.baseUrl, apiKey_, request);
  TransportOptions options;
  options.stallTimeout = std::chrono::duration_cast<std::chrono::milliseconds>(config_.stallTimeout);
  if (!request.stream) {
    // A whole answer sends nothing until it is done: no stall limit, but a total one.
    options.stallTimeout = std::max<std::chrono::milliseconds>(options.stallTimeout, std::chrono::minutes(10));
    options.totalTimeout = std::chrono::minutes(10);
  }
  std::string raw;
  std::unique_ptr<ResponseDecoder> decoder;
  for (int attempt = 1;; ++attempt) {
    result.attempts = attempt;
    bool anyDelta = false;
    raw.clear();
    decoder = makeDecoder(config_.format, request.stream, [&](const StreamDelta &d) {
      if (!anyDelta && (d.kind == StreamDelta::Kind::Text || d.kind == StreamDelta::Kind::Reasoning ||
                        d.kind == StreamDelta::Kind::ToolCall) && result.secondsToFirstToken < 0)
        result.secondsToFirstToken = std::chrono::duration<double>(Clock::now() - started).count();
      anyDelta = anyDelta || d.kind != StreamDelta::Kind::KeepAlive;
      if (onDelta) onDelta(d);
    });
    std::string errorBody;
    const HttpResult h = perform(http, options, [&](std::string_view bytes) {
      if (raw.size() < kMaxRawTranscript) raw.append(bytes.substr(0, kMaxRawTranscript - raw.size()));
      decoder->feed(bytes);
      return true;
    }, cancel, &errorBody);
    result.status = h.status;
    info.bodyBytes = h.bodyBytes;
    info.errorBody = errorBody;

    if (h.failure == HttpResult::Failure::Cancelled) {
      decoder->finish();
      result.cancelled = true;
      result.incomplete = !decoder->response().complete;
      result.error = "cancelled";
      break;
    }
    const bool success = h.status >= 200 && h.status < 300;
    if (success && h.failure == HttpResult::Failure::None) {
      decoder->finish();
      const auto &r = decoder->response();
      bool cutByAnother = false;
      {
        std::lock_guard lock(mutex_);
        // Another request started after this one, or still runs beside it (the server may have
        // taken them in another order than they started here).
        cutByAnother = started_ != startedAs || inFlight_ > 1;
      }
      if (!r.error.empty()) {
        result.incomplete = true;
        result.error = "the response cannot be used: " + r.error;
      } else if (!r.complete) {
        result.incomplete = true;
        result.error = "the response ended without its end marker after " + std::to_string(h.bodyBytes) +
                       " bytes: the text received is kept and marked incomplete";
      } else if (request.stream && config_.format == WireFormat::OpenAIChat && r.finishReason.empty() && cutByAnother) {
        result.incomplete = result.interrupted = true;
        result.error = "the server ended the answer after " + std::to_string(r.text.size()) +
                       " characters without a finish reason, as another request reached it (a llama-cpp-python "
                       "server cuts the answer it streams when a new request arrives, unless started with "
                       "--interrupt_requests False)";
      }
      break;
    }
    if (success) {  // cut, stalled or broken after the response began
      decoder->finish();
      if (h.bodyBytes > 0 || anyDelta || attempt >= config_.retry.maxAttempts) {
        result.incomplete = true;
        result.error = h.error + (decoder->response().text.empty() ? "" : "; the text received so far is kept and marked incomplete");
        break;
      }
    } else if (h.status != 0 && !retryableStatus(h.status)) {
      result.error = statusMessage(config_, h.status, errorBody);
      break;
    } else if (attempt >= config_.retry.maxAttempts) {
      result.error = (h.status ? statusMessage(config_, h.status, errorBody) : h.error) + " (gave up after " +
                     std::to_string(attempt) + " attempts)";
      break;
    }
    // Retry: 429/5xx, connection failures, or a stream that broke before any byte.
    std::optional<std::chrono::milliseconds> retryAfter;
    if (auto it = h.headers.find("retry-after"); it != h.headers.end()) retryAfter = parseRetryAfter(it->second);
    if (retryAfter && *retryAfter > config_.retry.maxRetryAfter) {
      result.error = statusMessage(config_, h.status, errorBody) + " (the server asks to wait " +
                     std::to_string(retryAfter->count() / 1000) + " s, more than the " +
                     std::to_string(config_.retry.maxRetryAfter.count() / 1000) + " s allowed)";
      break;
    }
    if (!waitCancellable(backoff(attempt, retryAfter), cancel)) {
      result.cancelled = true;
      result.error = "cancelled";
      break;
    }
  }

  result.response = decoder ? decoder->response() : ChatResponse{};
  for (std::string *text : {&result.error, &result.response.error}) redactSecrets(*text, apiKey_, config_.baseUrl);
  redactSecrets(raw, apiKey_, config_.baseUrl, false);
  if (!result.response.usage.reported && result.response.usage.inputTokens == 0)
    result.response.usage.inputTokens = estimateTokens(messagesText(request));
  const bool costKnown = config_.price.has_value();
  if (costKnown)
    result.cost = static_cast<double>(result.response.usage.inputTokens) * config_.price->inputPerMillion / 1e6 +
                  static_cast<double>(result.response.usage.outputTokens) * config_.price->outputPerMillion / 1e6;
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  // A request that reached the model counts, whole or not.
  if (accounting_ && (result.status >= 200 && result.status < 300))
    accounting_->add(result.response.usage, result.cost, costKnown);
  if (transcript_) {
    TranscriptEntry e;
    e.provider = config_.name;
    e.model = request.model;
    e.url = redactedUrl(http.url);
    nlohmann::json headers = nlohmann::json::object();
    for (const auto &[k, v] : redactedHeaders(http)) headers[k] = v;
    e.requestHeaders = headers.dump();
    e.requestBody = http.body;
    e.responseText = transcriptText(result.response);
    e.responseRaw = raw;
    e.status = result.status;
    e.attempts = result.attempts;
    const bool nothing = result.response.text.empty() && result.response.toolCalls.empty();
    e.outcome = result.cancelled     ? "cancelled"
                : result.interrupted ? "interrupted"
                : result.incomplete  ? "incomplete"
                : !result.error.empty() ? "error"
                : nothing            ? "empty"
                                     : "complete";
    e.error = result.error;
    e.usage = result.response.usage;
    e.cost = result.cost;
    e.seconds = result.seconds;
    e.startedAt = nowIso();
    transcript_(e);
  }
  return result;
}

ChatResult Provider::chat(ChatRequest request, const ResponseDecoder::DeltaCallback &onDelta, const CancelToken *cancel) {
  if (request.model.empty()) request.model = config_.model;
  std::vector<std::string> notes;
  // With the window known, the answer may not ask for more than the prompt leaves of it.
  // `exact`: the server counted the prompt; else it is our estimate, taken a quarter larger for the room.
  const auto fit = [&](int window, std::int64_t prompt, bool exact) -> std::string {
    if (prompt + 16 >= window)
      return "the prompt takes " + std::string(exact ? "" : "about ") + std::to_string(prompt) +
             " tokens, more than the model's context window of " + std::to_string(window) +
             " tokens leaves for an answer: use a model with a larger window, start the server with a larger context "
             "(llama.cpp: -c / --n_ctx), or give the session a smaller context budget";
    std::int64_t room = window - (exact ? prompt : prompt * 5 / 4) - 16;
    if (room < 16) room = window - prompt - 16;
    if (room < request.maxTokens) {
      notes.push_back("answer limit " + std::to_string(request.maxTokens) + " lowered to " + std::to_string(room) +
                      " tokens: the prompt takes " + std::string(exact ? "" : "about ") + std::to_string(prompt) +
                      " of the model's " + std::to_string(window) + "-token window");
      request.maxTokens = static_cast<int>(room);
    }
    return {};
  };
  const auto failed = [&](std::string error) {
    ChatResult r;
    r.error = std::move(error);
    return r;
  };
  if (const int window = contextWindow(); window > 0)
    if (std::string problem = fit(window, estimateTokens(messagesText(request)), false); !problem.empty())
      return failed(problem);

  Exchange info;
  ChatResult result = exchange(request, onDelta, cancel, info);
  // A server that cuts an answer when another request arrives serves one at a time from now on.
  for (int again = 1; result.interrupted && again < config_.retry.maxAttempts && !(cancel && cancel->cancelled()); ++again) {
    {
      std::lock_guard lock(mutex_);
      limit_ = 1;
    }
    if (notes.empty() || notes.back().rfind("the server cut", 0) != 0)
      notes.push_back("the server cut an answer short when another request reached it: asked again, one request at "
                      "a time from now on");
    result = exchange(request, onDelta, cancel, info);
  }
  // A stream that came back empty (llama-cpp-python answers a prompt beyond its window so): asked
  // again whole, which brings the server's own words.
  if (result.incomplete && !result.cancelled && result.status == 200 && info.bodyBytes == 0 && request.stream) {
    notes.push_back("the streamed answer came back empty: asked again without streaming to hear why");
    ChatRequest whole = request;
    whole.stream = false;
    result = exchange(whole, {}, cancel, info);
    if (result.ok() && onDelta && !result.response.text.empty())
      onDelta(StreamDelta{StreamDelta::Kind::Text, result.response.text, 0, {}});
  }
  // A prompt too long for the model: its window is learned, and the answer fitted to it once.
  if (result.status == 400)
    if (const auto refusal = contextRefusalIn(info.errorBody)) {
      {
        std::lock_guard lock(mutex_);
        if (config_.contextWindow <= 0) learnedWindow_ = refusal->window;
      }
      notes.push_back("the server says the model's context window is " + std::to_string(refusal->window) + " tokens");
      const bool exact = refusal->promptTokens >= 0;
      const std::int64_t prompt = exact ? refusal->promptTokens : estimateTokens(messagesText(request));
      const int asked = request.maxTokens;
      if (std::string problem = fit(refusal->window, prompt, exact); !problem.empty()) {
        result.error = problem + " (" + result.error + ")";
      } else if (request.maxTokens < asked) {
        result = exchange(request, onDelta, cancel, info);
      }
    }
  for (const auto &n : notes) result.note += (result.note.empty() ? "" : "; ") + n;
  return result;
}

ModelsResult Provider::models(const CancelToken *cancel) {
  ModelsResult out;
  const HttpRequest http = buildModelsRequest(config_.format, config_.baseUrl, apiKey_);
  TransportOptions options;
  options.stallTimeout = std::chrono::seconds(15);
  std::string body, errorBody;
  for (int attempt = 1;; ++attempt) {
    body.clear();
    errorBody.clear();
    const HttpResult h = perform(http, options, [&](std::string_view b) {
      body.append(b);
      return true;
    }, cancel, &errorBody);
    out.seconds += h.seconds;
    if (h.ok()) {
      try {
        out.models = parseModels(config_.format, body);
      } catch (const std::exception &e) {
        out.error = "the model list from " + redactedUrl(http.url) + " could not be read: " + e.what();
      }
      return out;
    }
    if (h.failure == HttpResult::Failure::Cancelled) {
      out.error = "cancelled";
      return out;
    }
    const bool retry = (h.status == 0 || retryableStatus(h.status)) && attempt < config_.retry.maxAttempts;
    if (!retry) {
      out.error = h.status && h.failure == HttpResult::Failure::None ? statusMessage(config_, h.status, errorBody) : h.error;
      redactSecrets(out.error, apiKey_, config_.baseUrl);
      return out;
    }
    std::optional<std::chrono::milliseconds> retryAfter;
    if (auto it = h.headers.find("retry-after"); it != h.headers.end()) retryAfter = parseRetryAfter(it->second);
    if (!waitCancellable(std::min(backoff(attempt, retryAfter), config_.retry.maxRetryAfter), cancel)) {
      out.error = "cancelled";
      return out;
    }
  }
}

}  // namespace kwb::llm
