#include "core/llm/http_transport.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include <curl/curl.h>

#include "core/text/printable.h"

namespace kwb::llm {

namespace {

using Clock = std::chrono::steady_clock;

void globalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

constexpr std::size_t kMaxErrorBody = 64 * 1024;

struct Transfer {
  const std::function<bool(std::string_view)> *onBody = nullptr;
  std::string *errorBody = nullptr;
  HttpResult *result = nullptr;
  CURL *easy = nullptr;
  Clock::time_point start;
  Clock::time_point lastActivity;
  bool stoppedByCallback = false;
  std::string callbackError;  // an exception thrown by onBody, stopped at the C boundary
  std::int64_t maxBodyBytes = 0;
  bool tooLarge = false;
};

bool successStatus(int status) { return status >= 200 && status < 300; }

size_t onHeader(char *data, size_t size, size_t count, void *user) {
  auto &t = *static_cast<Transfer *>(user);
  const size_t n = size * count;
  t.lastActivity = Clock::now();
  const std::string line = withoutLineEnds(std::string(data, n));
  if (line.rfind("HTTP/", 0) == 0) {  // a status line: a new response (after 100 Continue, a redirect)
    t.result->headers.clear();
    const auto space = line.find(' ');
    if (space != std::string::npos) t.result->status = std::atoi(line.c_str() + space + 1);
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string value = line.substr(colon + 1);
  const auto b = value.find_first_not_of(" \t");
  value = b == std::string::npos ? std::string() : value.substr(b);
  t.result->headers[name] = value;
  return n;
}

size_t onWrite(char *data, size_t size, size_t count, void *user) {
  auto &t = *static_cast<Transfer *>(user);
  const size_t n = size * count;
  const auto now = Clock::now();
  t.lastActivity = now;
  t.result->bodyBytes += static_cast<std::int64_t>(n);
  if (!successStatus(t.result->status)) {
    if (t.errorBody && t.errorBody->size() < kMaxErrorBody)
      t.errorBody->append(data, std::min(n, kMaxErrorBody - t.errorBody->size()));
    return n;
  }
  if (t.maxBodyBytes > 0 && t.result->bodyBytes > t.maxBodyBytes) {
    t.tooLarge = true;
    return 0;  // libcurl ends the transfer with CURLE_WRITE_ERROR
  }
  if (t.result->secondsToFirstByte < 0)
    t.result->secondsToFirstByte = std::chrono::duration<double>(now - t.start).count();
  // No exception may unwind through libcurl's C frames: it is caught here and reported.
  try {
    if (t.onBody && *t.onBody && !(*t.onBody)(std::string_view(data, n))) {
      t.stoppedByCallback = true;
      return 0;  // libcurl ends the transfer with CURLE_WRITE_ERROR
    }
  } catch (const std::exception &e) {
    t.callbackError = e.what();
    return 0;
  } catch (...) {
    t.callbackError = "unknown exception";
    return 0;
  }
  return n;
}

std::string seconds(std::chrono::milliseconds ms) {
  const double s = static_cast<double>(ms.count()) / 1000.0;
  char buf[32];
  std::snprintf(buf, sizeof buf, s == static_cast<long long>(s) ? "%.0f s" : "%.1f s", s);
  return buf;
}

}  // namespace

const char *toString(HttpResult::Failure f) {
  switch (f) {
    case HttpResult::Failure::None: return "none";
    case HttpResult::Failure::Connect: return "connect";
    case HttpResult::Failure::Stalled: return "stalled";
    case HttpResult::Failure::Cancelled: return "cancelled";
    case HttpResult::Failure::Cut: return "cut";
    case HttpResult::Failure::Timeout: return "timeout";
    case HttpResult::Failure::Other: return "other";
  }
  return "other";
}

HttpResult perform(const HttpRequest &request, const TransportOptions &options,
                   const std::function<bool(std::string_view)> &onBody, const CancelToken *cancel,
                   std::string *errorBody) {
  globalInit();
  HttpResult result;
  Transfer t;
  t.onBody = &onBody;
  t.errorBody = errorBody;
  t.result = &result;
  t.start = t.lastActivity = Clock::now();
  t.maxBodyBytes = options.maxBodyBytes;

  CURL *easy = curl_easy_init();
  CURLM *multi = curl_multi_init();
  if (!easy || !multi) {
    if (easy) curl_easy_cleanup(easy);
    if (multi) curl_multi_cleanup(multi);
    result.failure = HttpResult::Failure::Other;
    result.error = "libcurl could not be initialised";
    return result;
  }
  t.easy = easy;
  char curlError[CURL_ERROR_SIZE] = {0};
  curl_slist *headers = nullptr;
  for (const auto &[name, value] : request.headers) headers = curl_slist_append(headers, (name + ": " + value).c_str());
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip for large bodies
  curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, curlError);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connectTimeout.count()));
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, onWrite);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
  if (request.method == "POST") {
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else if (request.method != "GET") {
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  curl_multi_add_handle(multi, easy);

  // Our own loop, so cancellation and stalls are noticed within one 50 ms poll.
  int running = 1;
  while (running) {
    if (const CURLMcode mc = curl_multi_perform(multi, &running); mc != CURLM_OK) {
      result.failure = HttpResult::Failure::Other;
      result.error = std::string("libcurl: ") + curl_multi_strerror(mc);
      break;
    }
    if (!running) break;
    const auto now = Clock::now();
    if (cancel && cancel->cancelled()) {
      result.failure = HttpResult::Failure::Cancelled;
      result.error = "cancelled";
      break;
    }
    if (now - t.lastActivity > options.stallTimeout) {
      result.failure = HttpResult::Failure::Stalled;
      result.error = "stalled: the server sent nothing for " + seconds(options.stallTimeout) +
                     (result.status ? " (after " + std::to_string(result.bodyBytes) + " bytes of body)" : " (no response yet)");
      break;
    }
    if (options.totalTimeout.count() > 0 && now - t.start > options.totalTimeout) {
      result.failure = HttpResult::Failure::Timeout;
      result.error = "timed out after " + seconds(options.totalTimeout);
      break;
    }
    curl_multi_poll(multi, nullptr, 0, 50, nullptr);
  }

  if (result.failure == HttpResult::Failure::None) {
    CURLcode code = CURLE_OK;
    int left = 0;
    while (CURLMsg *msg = curl_multi_info_read(multi, &left))
      if (msg->msg == CURLMSG_DONE) code = msg->data.result;
    if (t.tooLarge) {
      result.failure = HttpResult::Failure::Other;
      result.error = "the response was longer than " + std::to_string(t.maxBodyBytes) +
                     " bytes (TransportOptions::maxBodyBytes); it was not read further";
    } else if (!t.callbackError.empty()) {
      result.failure = HttpResult::Failure::Other;
      result.error = "reading the response failed: " + t.callbackError;
    } else if (t.stoppedByCallback) {
      result.failure = HttpResult::Failure::Cancelled;
      result.error = "cancelled";
    } else if (code != CURLE_OK) {
      const std::string detail = curlError[0] ? curlError : curl_easy_strerror(code);
      switch (code) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_SSL_CONNECT_ERROR:
          result.failure = HttpResult::Failure::Connect;
          result.error = "could not connect to " + redactedUrl(request.url) + ": " + detail;
          break;
        case CURLE_OPERATION_TIMEDOUT:
          result.failure = result.status ? HttpResult::Failure::Stalled : HttpResult::Failure::Connect;
          result.error = (result.status ? "timed out: " : "could not connect to " + redactedUrl(request.url) + ": ") + detail;
          break;
        case CURLE_PARTIAL_FILE:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_SEND_ERROR:
          result.failure = result.status || code != CURLE_GOT_NOTHING ? HttpResult::Failure::Cut : HttpResult::Failure::Connect;
          result.error = "the connection was cut" + std::string(result.status ? " after " + std::to_string(result.bodyBytes) + " bytes of body" : " before a response") +
                         ": " + detail;
          break;
        default:
          result.failure = HttpResult::Failure::Other;
          result.error = detail;
      }
    }
  }
  // libcurl's words may name the URL, its user or its host part (issue 45, 2).
  if (!result.error.empty()) result.error = withoutUrlSecrets(redactUrlsIn(result.error), request.url);
  result.seconds = std::chrono::duration<double>(Clock::now() - t.start).count();
  curl_multi_remove_handle(multi, easy);
  curl_easy_cleanup(easy);
  curl_multi_cleanup(multi);
  curl_slist_free_all(headers);
  return result;
}

}  // namespace kwb::llm
