#pragma once
// HTTP for the LLM client, on libcurl's multi interface: one request at a time per call,
// streaming the body to a callback as it arrives. Cancellation is checked at least every 50 ms,
// so a cancelled stream stops within well under 200 ms. A stream
// that sends no bytes for `stallTimeout` is stopped as stalled; there is no total timeout unless
// asked for. Thread-safe: each call uses its own handles.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "core/llm/wire_format.h"

namespace kwb::llm {

class CancelToken {
 public:
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  void reset() { cancelled_ = false; }

 private:
  std::atomic<bool> cancelled_{false};
};

struct TransportOptions {
  std::chrono::milliseconds connectTimeout{10000};
  std::chrono::milliseconds stallTimeout{60000};  // no body bytes (nor headers) for this long
  std::chrono::milliseconds totalTimeout{0};      // 0: none
  // The most body bytes read from a successful response (issue 17, 6: a 100 MB answer was stored
  // whole); more ends the transfer as a failure saying so. An answer of 4096 tokens streamed as
  // server-sent events is well under 1 MB.
  std::int64_t maxBodyBytes = 32 << 20;
};

struct HttpResult {
  enum class Failure { None, Connect, Stalled, Cancelled, Cut, Timeout, Other };
  int status = 0;                                 // 0 when no response line arrived
  std::map<std::string, std::string> headers;     // names lower-cased; the last of repeated ones
  Failure failure = Failure::None;
  std::string error;                              // the failure in words, empty when none
  std::int64_t bodyBytes = 0;
  double secondsToFirstByte = -1;                 // of the body; -1 when none came
  double seconds = 0;
  bool ok() const { return failure == Failure::None && status >= 200 && status < 300; }
};
const char *toString(HttpResult::Failure);

// Performs the request. onBody gets the body as it arrives (only for 2xx responses; the body of
// any other status is collected into `errorBody` when given). Returning false from onBody stops
// the transfer (failure Cancelled).
HttpResult perform(const HttpRequest &request, const TransportOptions &options,
                   const std::function<bool(std::string_view)> &onBody, const CancelToken *cancel = nullptr,
                   std::string *errorBody = nullptr);

}  // namespace kwb::llm
