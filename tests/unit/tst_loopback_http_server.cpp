// The loopback HTTP server (tests/helpers/loopback_http_server.h) that the LLM client is tested
// against: real sockets, with libcurl's easy API (and raw sockets) as the client. Routing and
// order, 404, chunked and Content-Length bodies, delays, cuts, endless streams that stop when the
// client leaves, recorded requests, and the body splitters.
#include <QtTest>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "helpers/loopback_http_server.h"

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using kwb::test::LoopbackHttpServer;
using kwb::test::ReceivedRequest;
using kwb::test::ScriptedResponse;

namespace {

struct FetchOptions {
  std::string method = "GET";
  std::string body;                  // sent when method is POST (or with chunkedUpload)
  std::vector<std::string> headers;  // "Name: value"
  bool chunkedUpload = false;        // send the body with Transfer-Encoding: chunked, 5 bytes a read
  long timeoutMs = 10000;
  std::function<bool(const std::string &)> abortWhen;  // checked after each write; true aborts
};

struct Fetch {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  std::vector<std::string> headerLines;
  std::vector<Clock::time_point> writeTimes;
  Clock::time_point start, end, abortAt;
  curl_off_t startTransferUs = 0;
  std::function<bool(const std::string &)> abortWhen;
  std::string upload;
  std::size_t uploaded = 0;

  // The value of the (last) response header with this name, case-insensitively; "" when absent.
  std::string header(const std::string &name) const {
    std::string found;
    for (const auto &l : headerLines) {
      const auto colon = l.find(':');
      if (colon == std::string::npos) continue;
      if (QString::fromStdString(l.substr(0, colon)).compare(QString::fromStdString(name), Qt::CaseInsensitive) == 0)
        found = QString::fromStdString(l.substr(colon + 1)).trimmed().toStdString();
    }
    return found;
  }
};

std::size_t onWrite(char *data, std::size_t size, std::size_t n, void *user) {
  auto *f = static_cast<Fetch *>(user);
  f->body.append(data, size * n);
  f->writeTimes.push_back(Clock::now());
  if (f->abortWhen && f->abortWhen(f->body)) {
    f->abortAt = Clock::now();
    return 0;
  }
  return size * n;
}

std::size_t onHeader(char *data, std::size_t size, std::size_t n, void *user) {
  std::string line(data, size * n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  static_cast<Fetch *>(user)->headerLines.push_back(line);
  return size * n;
}

std::size_t onRead(char *buffer, std::size_t size, std::size_t n, void *user) {
  auto *f = static_cast<Fetch *>(user);
  const std::size_t len = std::min({size * n, std::size_t(5), f->upload.size() - f->uploaded});
  std::memcpy(buffer, f->upload.data() + f->uploaded, len);
  f->uploaded += len;
  return len;
}

Fetch fetch(const std::string &url, const FetchOptions &o = {}) {
  Fetch f;
  f.abortWhen = o.abortWhen;
  f.upload = o.body;
  CURL *h = curl_easy_init();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o.timeoutMs);
  curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 5000L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, onWrite);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &f);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &f);
  if (o.chunkedUpload) {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, onRead);
    curl_easy_setopt(h, CURLOPT_READDATA, &f);
  } else if (o.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, o.body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(o.body.size()));
  } else if (o.method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, o.method.c_str());
  }
  curl_slist *headers = nullptr;
  for (const auto &hdr : o.headers) headers = curl_slist_append(headers, hdr.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  f.start = Clock::now();
  f.code = curl_easy_perform(h);
  f.end = Clock::now();
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &f.status);
  curl_easy_getinfo(h, CURLINFO_STARTTRANSFER_TIME_T, &f.startTransferUs);
  curl_easy_cleanup(h);  // closes the connection
  curl_slist_free_all(headers);
  return f;
}

ScriptedResponse sse(std::vector<std::string> chunks, bool chunked = true) {
  ScriptedResponse r;
  r.headers = {{"Content-Type", "text/event-stream"}};
  r.chunks = std::move(chunks);
  r.chunkedEncoding = chunked;
  return r;
}

ScriptedResponse text(const std::string &body, int status = 200) {
  ScriptedResponse r;
  r.status = status;
  r.headers = {{"Content-Type", "text/plain"}};
  r.chunks = {body};
  return r;
}

std::string join(const std::vector<std::string> &pieces) {
  std::string s;
  for (const auto &p : pieces) s += p;
  return s;
}

// A raw TCP client on 127.0.0.1:port, or -1.
int connectRaw(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

bool sendRaw(int fd, const std::string &data) {
  return ::send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
}

long long ms(Clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

const std::string kStream =
    "data: {\"id\":\"1\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
    "data: {\"id\":\"1\",\"choices\":[{\"delta\":{\"content\":\"__global__ void k() {}\"}}]}\n\n"
    "data: {\"id\":\"1\",\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
    "data: [DONE]\n\n";

}  // namespace

class TestLoopbackHttpServer : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { QCOMPARE(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK); }
  void cleanupTestCase() { curl_global_cleanup(); }

  void bindsLoopbackOnAFreePort() {
    LoopbackHttpServer a, b;
    QVERIFY(a.port() > 0);
    QVERIFY(a.port() != b.port());
    QCOMPARE(a.baseUrl(), "http://127.0.0.1:" + std::to_string(a.port()));
    QCOMPARE(a.openConnections(), 0);
    QVERIFY(!a.lastClientGone());
  }

  void servesRoutedResponsesInOrderThenRepeatsTheLast() {
    LoopbackHttpServer server;
    server.route("GET", "/v1/models", {text("first"), text("second", 201)});
    server.route("POST", "/v1/models", {text("posted")});
    const auto a = fetch(server.baseUrl() + "/v1/models");
    const auto b = fetch(server.baseUrl() + "/v1/models?page=2");  // the query is not matched
    const auto c = fetch(server.baseUrl() + "/v1/models");
    const auto p = fetch(server.baseUrl() + "/v1/models", {.method = "POST", .body = "{}"});
    QCOMPARE(a.code, CURLE_OK);
    QCOMPARE(a.status, 200L);
    QCOMPARE(a.body, std::string("first"));
    QCOMPARE(b.status, 201L);
    QCOMPARE(b.body, std::string("second"));
    QCOMPARE(c.status, 201L);
    QCOMPARE(c.body, std::string("second"));
    QCOMPARE(p.body, std::string("posted"));
    QCOMPARE(a.header("Connection"), std::string("close"));
    QCOMPARE(server.connectionsAccepted(), std::size_t(4));

    // Routing again starts the new list over; an empty list removes the route.
    server.route("GET", "/v1/models", {text("again")});
    QCOMPARE(fetch(server.baseUrl() + "/v1/models").body, std::string("again"));
    server.route("GET", "/v1/models", {});
    QCOMPARE(fetch(server.baseUrl() + "/v1/models").status, 404L);
  }

  void unroutedRequestsGet404WithAJsonError() {
    LoopbackHttpServer server;
    server.route("GET", "/v1/models", {text("x")});
    const auto missing = fetch(server.baseUrl() + "/v1/nothing?q=1");
    QCOMPARE(missing.code, CURLE_OK);
    QCOMPARE(missing.status, 404L);
    QCOMPARE(missing.header("Content-Type"), std::string("application/json"));
    QCOMPARE(missing.body, std::string(R"({"error":{"message":"no route for GET /v1/nothing?q=1","type":"not_found"}})"));
    QCOMPARE(fetch(server.baseUrl() + "/v1/models/").status, 404L);  // paths match exactly
    QCOMPARE(fetch(server.baseUrl() + "/v1/models", {.method = "DELETE"}).status, 404L);  // and methods
    QVERIFY(server.waitForRequests(3, 5s));
    QCOMPARE(server.requests()[0].path, std::string("/v1/nothing?q=1"));
  }

  void chunkedBodyArrivesIntact() {
    LoopbackHttpServer server;
    server.route("POST", "/v1/chat/completions", {sse(kwb::test::splitEvery(kStream, 10))});
    const auto f = fetch(server.baseUrl() + "/v1/chat/completions", {.method = "POST", .body = "{}"});
    QCOMPARE(f.code, CURLE_OK);
    QCOMPARE(f.status, 200L);
    QCOMPARE(f.header("Transfer-Encoding"), std::string("chunked"));
    QCOMPARE(f.header("Content-Length"), std::string());
    QCOMPARE(f.header("Content-Type"), std::string("text/event-stream"));
    QCOMPARE(f.body, kStream);
  }

  void contentLengthBodyArrivesIntact() {
    LoopbackHttpServer server;
    server.route("POST", "/v1/chat/completions", {sse(kwb::test::splitEvery(kStream, 10), false)});
    const auto f = fetch(server.baseUrl() + "/v1/chat/completions", {.method = "POST", .body = "{}"});
    QCOMPARE(f.code, CURLE_OK);
    QCOMPARE(f.header("Content-Length"), std::to_string(kStream.size()));
    QCOMPARE(f.header("Transfer-Encoding"), std::string());
    QCOMPARE(f.body, kStream);
  }

  void replaysOneStreamInAnyChunking() {
    LoopbackHttpServer server;
    std::vector<std::vector<std::string>> splits = {kwb::test::splitEvery(kStream, 1), kwb::test::splitEvery(kStream, 7),
                                                    {kStream}};
    for (unsigned seed = 1; seed <= 5; ++seed) splits.push_back(kwb::test::splitRandom(kStream, seed, 16));
    for (const bool chunked : {true, false}) {
      for (const auto &split : splits) {
        server.route("GET", "/s", {sse(split, chunked)});
        const auto f = fetch(server.baseUrl() + "/s");
        QCOMPARE(f.code, CURLE_OK);
        QCOMPARE(f.body, kStream);
      }
    }
  }

  void statusAndHeadersAreAsScripted() {
    LoopbackHttpServer server;
    ScriptedResponse limited = text(R"({"error":{"type":"rate_limit_error"}})", 429);
    limited.headers = {{"Content-Type", "application/json"}, {"Retry-After", "1"}, {"X-Request-Id", "req_1"}};
    server.route("POST", "/v1/messages", {limited});
    const auto f = fetch(server.baseUrl() + "/v1/messages", {.method = "POST", .body = "{}"});
    QCOMPARE(f.code, CURLE_OK);
    QCOMPARE(f.status, 429L);
    QCOMPARE(f.header("Retry-After"), std::string("1"));
    QCOMPARE(f.header("X-Request-Id"), std::string("req_1"));
    QCOMPARE(f.body, std::string(R"({"error":{"type":"rate_limit_error"}})"));
  }

  void delaysAreObserved() {
    LoopbackHttpServer server;
    ScriptedResponse slow = sse({"data: 1\n\n", "data: 2\n\n", "data: 3\n\n", "data: 4\n\n"});
    slow.delayBeforeHeaders = 200ms;
    slow.delayBetweenChunks = 60ms;
    server.route("GET", "/slow", {slow});
    const auto f = fetch(server.baseUrl() + "/slow");
    QCOMPARE(f.code, CURLE_OK);
    QCOMPARE(f.body, join(slow.chunks));
    QVERIFY2(f.startTransferUs >= 200'000, std::to_string(f.startTransferUs).c_str());
    // Each chunk came on its own, the delays apart.
    QVERIFY2(f.writeTimes.size() >= 4, std::to_string(f.writeTimes.size()).c_str());
    QVERIFY2(ms(f.writeTimes.back() - f.writeTimes.front()) >= 3 * 60 - 10,
             std::to_string(ms(f.writeTimes.back() - f.writeTimes.front())).c_str());
    QVERIFY(ms(f.end - f.start) >= 200 + 3 * 60 - 10);
  }

  void cutChunkedStreamIsATransferError() {
    LoopbackHttpServer server;
    ScriptedResponse cut = sse({"data: 1\n\n", "data: 2\n\n"});
    cut.cutAfterChunks = true;
    server.route("GET", "/cut", {cut});
    const auto f = fetch(server.baseUrl() + "/cut");
    QVERIFY2(f.code == CURLE_PARTIAL_FILE || f.code == CURLE_RECV_ERROR, curl_easy_strerror(f.code));
    QCOMPARE(f.status, 200L);
    QCOMPARE(f.body, std::string("data: 1\n\ndata: 2\n\n"));  // every chunk arrived before the cut
    QVERIFY(server.waitForNoOpenConnections(5s));
  }

  void cutContentLengthBodyIsATransferError() {
    LoopbackHttpServer server;
    ScriptedResponse cut = sse({"data: 1\n\n", "data: 2\n\n"}, false);
    cut.cutAfterChunks = true;
    server.route("GET", "/cut", {cut});
    const auto f = fetch(server.baseUrl() + "/cut");
    QVERIFY2(f.code == CURLE_PARTIAL_FILE || f.code == CURLE_RECV_ERROR, curl_easy_strerror(f.code));
    QCOMPARE(f.header("Content-Length"), std::to_string(18 + 100));
    QCOMPARE(f.body, std::string("data: 1\n\ndata: 2\n\n"));
  }

  void closeWithoutResponseSendsNothing() {
    LoopbackHttpServer server;
    ScriptedResponse nothing;
    nothing.closeWithoutResponse = true;
    server.route("POST", "/v1/messages", {nothing, text("ok")});
    const auto f = fetch(server.baseUrl() + "/v1/messages", {.method = "POST", .body = "{\"a\":1}"});
    QCOMPARE(f.code, CURLE_GOT_NOTHING);
    QVERIFY(f.body.empty());
    QCOMPARE(server.requests().size(), std::size_t(1));  // the request was read whole first
    QCOMPARE(server.requests()[0].body, std::string("{\"a\":1}"));
    QCOMPARE(fetch(server.baseUrl() + "/v1/messages", {.method = "POST", .body = "{}"}).body, std::string("ok"));
  }

  void endlessStreamStopsWhenTheClientAborts() {
    LoopbackHttpServer server;
    ScriptedResponse endless = sse({"data: {\"delta\":\"x\"}\n\n"});
    endless.endless = true;
    endless.delayBetweenChunks = 10ms;
    server.route("POST", "/v1/chat/completions", {endless});
    int openWhileStreaming = -1;
    const std::size_t piece = endless.chunks[0].size();
    const auto f = fetch(server.baseUrl() + "/v1/chat/completions",
                         {.method = "POST", .body = "{}", .abortWhen = [&](const std::string &soFar) {
                            openWhileStreaming = server.openConnections();
                            return soFar.size() >= 5 * piece;
                          }});
    QCOMPARE(f.code, CURLE_WRITE_ERROR);
    QVERIFY(f.body.size() >= 5 * piece);
    QCOMPARE(openWhileStreaming, 1);
    QVERIFY(server.waitForNoOpenConnections(5s));
    const auto gone = server.lastClientGone();
    QVERIFY(gone.has_value());
    QVERIFY(*gone >= f.abortAt);
    QVERIFY2(ms(*gone - f.abortAt) < 1000, std::to_string(ms(*gone - f.abortAt)).c_str());
  }

  void endlessContentLengthFreeStreamStopsWhenTheClientAborts() {
    LoopbackHttpServer server;
    ScriptedResponse endless = sse({"data: a\n\n", "data: b\n\n"}, false);
    endless.endless = true;  // no delay: the server writes as fast as the client reads
    server.route("GET", "/e", {endless});
    const auto f = fetch(server.baseUrl() + "/e", {.abortWhen = [](const std::string &s) { return s.size() >= 100'000; }});
    QCOMPARE(f.code, CURLE_WRITE_ERROR);
    QCOMPARE(f.header("Content-Length"), std::string());
    QVERIFY(f.body.starts_with("data: a\n\ndata: b\n\ndata: a\n\n"));
    QVERIFY(server.waitForNoOpenConnections(5s));
    QVERIFY(server.lastClientGone().has_value());
  }

  void slowResponseNoticesTheClientGivingUp() {
    LoopbackHttpServer server;
    ScriptedResponse slow = text("late");
    slow.delayBeforeHeaders = 20s;  // the destructor must not wait for it
    server.route("GET", "/slow", {slow});
    const auto f = fetch(server.baseUrl() + "/slow", {.timeoutMs = 300});
    QCOMPARE(f.code, CURLE_OPERATION_TIMEDOUT);
    QVERIFY(server.waitForNoOpenConnections(5s));
    QVERIFY(server.lastClientGone().has_value());
    // Not before curl gave up (its timer has millisecond granularity, so allow a little).
    QVERIFY2(*server.lastClientGone() >= f.start + 290ms, std::to_string(ms(*server.lastClientGone() - f.start)).c_str());
  }

  void recordsRequests() {
    LoopbackHttpServer server;
    server.route("POST", "/v1/chat/completions", {text("ok")});
    const std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true})";
    const auto before = Clock::now();
    const auto f = fetch(server.baseUrl() + "/v1/chat/completions?api-version=2",
                         {.method = "POST", .body = body,
                          .headers = {"Authorization: Bearer sk-test", "X-Custom-Thing: Some Value",
                                      "Content-Type: application/json"}});
    const auto after = Clock::now();
    QCOMPARE(f.code, CURLE_OK);
    QVERIFY(server.waitForRequests(1, 5s));
    const auto reqs = server.requests();
    QCOMPARE(reqs.size(), std::size_t(1));
    const ReceivedRequest &r = reqs[0];
    QCOMPARE(r.method, std::string("POST"));
    QCOMPARE(r.path, std::string("/v1/chat/completions?api-version=2"));
    QCOMPARE(r.headers.at("authorization"), std::string("Bearer sk-test"));
    QCOMPARE(r.headers.at("x-custom-thing"), std::string("Some Value"));
    QCOMPARE(r.headers.at("content-type"), std::string("application/json"));
    QCOMPARE(r.headers.at("content-length"), std::to_string(body.size()));
    QCOMPARE(r.headers.at("host"), "127.0.0.1:" + std::to_string(server.port()));
    QVERIFY(!r.headers.contains("Authorization"));
    QCOMPARE(r.body, body);
    QVERIFY(r.at >= before && r.at <= after);
  }

  void readsChunkedRequestBodies() {
    LoopbackHttpServer server;
    server.route("POST", "/upload", {text("ok")});
    const std::string body = "a chunked request body, sent five bytes at a time";
    const auto f = fetch(server.baseUrl() + "/upload",
                         {.method = "POST", .body = body, .headers = {"Transfer-Encoding: chunked"}, .chunkedUpload = true});
    QCOMPARE(f.code, CURLE_OK);
    QCOMPARE(f.body, std::string("ok"));
    const auto r = server.requests().at(0);
    QCOMPARE(r.headers.at("transfer-encoding"), std::string("chunked"));
    QCOMPARE(r.body, body);
  }

  void answersExpectContinue() {
    LoopbackHttpServer server;
    server.route("POST", "/upload", {text("ok")});
    const std::string body(2000, 'b');
    // curl waits 5 s (set in fetch) for the interim 100 before sending the body without it.
    const auto f = fetch(server.baseUrl() + "/upload", {.method = "POST", .body = body, .headers = {"Expect: 100-continue"}});
    QCOMPARE(f.code, CURLE_OK);
    QVERIFY2(ms(f.end - f.start) < 3000, std::to_string(ms(f.end - f.start)).c_str());
    QCOMPARE(server.requests().at(0).body, body);
  }

  void waitForRequestsTimesOut() {
    LoopbackHttpServer server;
    const auto start = Clock::now();
    QVERIFY(!server.waitForRequests(1, 50ms));
    QVERIFY(Clock::now() - start >= 50ms);
    QVERIFY(server.waitForRequests(0, 0ms));
    QVERIFY(server.waitForNoOpenConnections(0ms));
  }

  void servesConnectionsConcurrently() {
    LoopbackHttpServer server;
    ScriptedResponse slow = text("late");
    slow.delayBeforeHeaders = 20s;
    server.route("GET", "/slow", {slow});
    const int a = connectRaw(server.port());
    const int b = connectRaw(server.port());
    QVERIFY(a >= 0 && b >= 0);
    QVERIFY(sendRaw(a, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"));
    QVERIFY(sendRaw(b, "GET /slow?b HTTP/1.1\r\nHost: x\r\n\r\n"));
    QVERIFY(server.waitForRequests(2, 5s));
    QCOMPARE(server.openConnections(), 2);
    ::close(a);
    ::close(b);
    QVERIFY(server.waitForNoOpenConnections(5s));
    QVERIFY(server.lastClientGone().has_value());
  }

  void rejectsMalformedRequests() {
    LoopbackHttpServer server;
    const int fd = connectRaw(server.port());
    QVERIFY(fd >= 0);
    QVERIFY(sendRaw(fd, "NOT-HTTP\r\n\r\n"));
    std::string reply;
    char buf[1024];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    QVERIFY2(reply.starts_with("HTTP/1.1 400 "), reply.c_str());
    QVERIFY(server.requests().empty());
  }

  void destructorEndsStuckConnectionsPromptly() {
    auto server = std::make_unique<LoopbackHttpServer>();
    ScriptedResponse flood = sse({std::string(4096, 'x')});
    flood.endless = true;  // the client never reads: the server's send() ends up blocked
    server->route("GET", "/flood", {flood});
    const int idle = connectRaw(server->port());  // connected, never sends a request
    const int reader = connectRaw(server->port());
    QVERIFY(idle >= 0 && reader >= 0);
    QVERIFY(sendRaw(reader, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n"));
    QVERIFY(server->waitForRequests(1, 5s));
    QCOMPARE(server->openConnections(), 2);
    const auto start = Clock::now();
    server.reset();
    QVERIFY2(ms(Clock::now() - start) < 2000, std::to_string(ms(Clock::now() - start)).c_str());
    ::close(idle);
    ::close(reader);
  }

  void splitEveryReassembles() {
    using kwb::test::splitEvery;
    const auto bytes = splitEvery(kStream, 1);
    QCOMPARE(bytes.size(), kStream.size());
    for (const auto &p : bytes) QCOMPARE(p.size(), std::size_t(1));
    QCOMPARE(join(bytes), kStream);
    const auto sevens = splitEvery(kStream, 7);
    QCOMPARE(sevens.size(), (kStream.size() + 6) / 7);
    for (std::size_t i = 0; i + 1 < sevens.size(); ++i) QCOMPARE(sevens[i].size(), std::size_t(7));
    QCOMPARE(join(sevens), kStream);
    QCOMPARE(splitEvery(kStream, 100000), std::vector<std::string>{kStream});
    QCOMPARE(join(splitEvery(kStream, 0)), kStream);
    QVERIFY(splitEvery("", 3).empty());
  }

  void splitRandomReassemblesTheSameForTheSameSeed() {
    using kwb::test::splitRandom;
    for (unsigned seed = 0; seed < 20; ++seed) {
      const auto pieces = splitRandom(kStream, seed, 9);
      QCOMPARE(join(pieces), kStream);
      for (const auto &p : pieces) QVERIFY(!p.empty() && p.size() <= 9);
      QCOMPARE(splitRandom(kStream, seed, 9), pieces);
    }
    QVERIFY(splitRandom(kStream, 1) != splitRandom(kStream, 2));
    QCOMPARE(join(splitRandom(kStream, 3)), kStream);
    for (const auto &p : splitRandom(kStream, 3)) QVERIFY(p.size() <= 64);
    QVERIFY(splitRandom("", 1).empty());
  }

  void readFixtureReadsUnderTestsFixtures() {
    const std::string json = kwb::test::readFixture("gpu/stats_2x_h200.json");
    QVERIFY(!json.empty());
    bool threw = false;
    try {
      kwb::test::readFixture("no/such/fixture.txt");
    } catch (const std::runtime_error &e) {
      threw = std::string(e.what()).find("no/such/fixture.txt") != std::string::npos;
    }
    QVERIFY(threw);
  }
};

QTEST_GUILESS_MAIN(TestLoopbackHttpServer)
#include "tst_loopback_http_server.moc"
