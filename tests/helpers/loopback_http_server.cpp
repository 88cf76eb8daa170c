// A real HTTP/1.1 server on loopback replaying scripted responses (see loopback_http_server.h).
#include "helpers/loopback_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace kwb::test {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxHeaderBytes = 1 << 20;
constexpr std::size_t kMaxBodyBytes = std::size_t(256) << 20;
// After a complete response the server half-closes and waits this long for the client to close.
constexpr std::chrono::milliseconds kLinger{1000};

std::runtime_error sysError(const std::string &what) {
  return std::runtime_error("LoopbackHttpServer: " + what + ": " + std::strerror(errno));
}

std::string lower(std::string s) {
  for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string &s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

const char *reasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Overloaded";
    default: return "Status";
  }
}

std::string jsonEscape(const std::string &s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// Writes all of data; false when the peer is gone (or the socket was shut down).
bool sendAll(int fd, const std::string &data) {
  const char *p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::send(fd, p, left, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

enum class Wait { Elapsed, Gone, Stop };

// Waits until deadline while watching the connection: EOF, reset or hang-up is Gone; the stop pipe
// becoming readable is Stop. Bytes the client sends meanwhile are read and dropped.
Wait waitWatching(int fd, int wakeFd, Clock::time_point deadline) {
  for (;;) {
    const auto now = Clock::now();
    long long timeoutMs = 0;
    if (deadline > now) {
      timeoutMs = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
      timeoutMs = std::min<long long>(timeoutMs, 3'600'000);
    }
    pollfd fds[2] = {{fd, POLLIN, 0}, {wakeFd, POLLIN, 0}};
    const int r = ::poll(fds, 2, static_cast<int>(timeoutMs));
    if (r < 0) {
      if (errno == EINTR) continue;
      return Wait::Gone;
    }
    if (fds[1].revents != 0) return Wait::Stop;
    if (r == 0) {
      if (Clock::now() >= deadline) return Wait::Elapsed;
      continue;
    }
    if ((fds[0].revents & POLLIN) != 0) {
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0) return Wait::Gone;
      if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) return Wait::Gone;
      continue;
    }
    if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return Wait::Gone;
  }
}

// Buffered reading of one request; every blocking read also watches the stop pipe.
class Reader {
 public:
  Reader(int fd, int wakeFd) : fd_(fd), wakeFd_(wakeFd) {}

  // Reads until the buffer holds at least n bytes; false on EOF, error or stop.
  bool need(std::size_t n) {
    while (buf_.size() < n)
      if (!fill()) return false;
    return true;
  }

  // Reads one CRLF-terminated line (without the CRLF); nullopt on EOF, error, stop or overlong line.
  std::optional<std::string> line() {
    for (;;) {
      const auto eol = buf_.find("\r\n");
      if (eol != std::string::npos) {
        std::string l = buf_.substr(0, eol);
        buf_.erase(0, eol + 2);
        return l;
      }
      if (buf_.size() > kMaxHeaderBytes || !fill()) return std::nullopt;
    }
  }

  std::string take(std::size_t n) {
    std::string s = buf_.substr(0, n);
    buf_.erase(0, n);
    return s;
  }

 private:
  bool fill() {
    for (;;) {
      pollfd fds[2] = {{fd_, POLLIN, 0}, {wakeFd_, POLLIN, 0}};
      const int r = ::poll(fds, 2, -1);
      if (r < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      if (fds[1].revents != 0) return false;
      char tmp[65536];
      const ssize_t n = ::recv(fd_, tmp, sizeof tmp, MSG_DONTWAIT);
      if (n > 0) {
        buf_.append(tmp, static_cast<std::size_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return false;
    }
  }

  int fd_, wakeFd_;
  std::string buf_;
};

enum class ReadResult { Ok, Gone, Malformed };

std::optional<std::size_t> parseSize(const std::string &text, int base) {
  const std::string t = trim(text);
  if (t.empty() || t.size() > 15) return std::nullopt;
  for (const char c : t)
    if (base == 10 ? !std::isdigit(static_cast<unsigned char>(c)) : !std::isxdigit(static_cast<unsigned char>(c)))
      return std::nullopt;
  return static_cast<std::size_t>(std::stoull(t, nullptr, base));
}

// Reads the request line, headers and body (Content-Length or chunked) into req. Answers
// "Expect: 100-continue" with an interim 100 before reading the body.
ReadResult readRequest(int fd, Reader &in, ReceivedRequest &req) {
  const auto requestLine = in.line();
  if (!requestLine) return ReadResult::Gone;
  {
    std::istringstream s(*requestLine);
    std::string version, extra;
    if (!(s >> req.method >> req.path >> version) || (s >> extra) || version.rfind("HTTP/1.", 0) != 0)
      return ReadResult::Malformed;
  }
  std::size_t headerBytes = requestLine->size();
  for (;;) {
    const auto l = in.line();
    if (!l) return ReadResult::Gone;
    if (l->empty()) break;
    headerBytes += l->size();
    if (headerBytes > kMaxHeaderBytes) return ReadResult::Malformed;
    const auto colon = l->find(':');
    if (colon == std::string::npos || colon == 0) return ReadResult::Malformed;
    const std::string name = lower(l->substr(0, colon));
    const std::string value = trim(l->substr(colon + 1));
    auto [it, inserted] = req.headers.emplace(name, value);
    if (!inserted) it->second += ", " + value;
  }

  const auto te = req.headers.find("transfer-encoding");
  const bool chunked = te != req.headers.end() && lower(te->second).find("chunked") != std::string::npos;
  std::size_t contentLength = 0;
  if (!chunked) {
    if (const auto cl = req.headers.find("content-length"); cl != req.headers.end()) {
      const auto n = parseSize(cl->second, 10);
      if (!n || *n > kMaxBodyBytes) return ReadResult::Malformed;
      contentLength = *n;
    }
  }
  if (const auto ex = req.headers.find("expect");
      ex != req.headers.end() && lower(ex->second) == "100-continue" && (chunked || contentLength > 0)) {
    if (!sendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n")) return ReadResult::Gone;
  }

  if (!chunked) {
    if (!in.need(contentLength)) return ReadResult::Gone;
    req.body = in.take(contentLength);
    return ReadResult::Ok;
  }
  for (;;) {
    const auto sizeLine = in.line();
    if (!sizeLine) return ReadResult::Gone;
    const auto size = parseSize(sizeLine->substr(0, sizeLine->find(';')), 16);
    if (!size || req.body.size() + *size > kMaxBodyBytes) return ReadResult::Malformed;
    if (*size == 0) break;
    if (!in.need(*size + 2)) return ReadResult::Gone;
    req.body += in.take(*size);
    if (in.take(2) != "\r\n") return ReadResult::Malformed;
  }
  for (;;) {  // trailers, up to the empty line
    const auto l = in.line();
    if (!l) return ReadResult::Gone;
    if (l->empty()) break;
  }
  return ReadResult::Ok;
}

ScriptedResponse notFound(const ReceivedRequest &req) {
  ScriptedResponse r;
  r.status = 404;
  r.headers = {{"Content-Type", "application/json"}};
  r.chunks = {"{\"error\":{\"message\":\"no route for " + jsonEscape(req.method) + " " + jsonEscape(req.path) +
              "\",\"type\":\"not_found\"}}"};
  r.chunkedEncoding = false;
  return r;
}

ScriptedResponse badRequest() {
  ScriptedResponse r;
  r.status = 400;
  r.headers = {{"Content-Type", "application/json"}};
  r.chunks = {"{\"error\":{\"message\":\"malformed request\",\"type\":\"bad_request\"}}"};
  r.chunkedEncoding = false;
  return r;
}

}  // namespace

struct LoopbackHttpServer::Connection {
  int fd = -1;        // guarded by mutex_; -1 once closed
  bool done = false;  // guarded by mutex_; the thread is about to return
  std::thread thread;
};

LoopbackHttpServer::LoopbackHttpServer() {
  listenFd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listenFd_ < 0) throw sysError("socket");
  const int one = 1;
  ::setsockopt(listenFd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int pipeFds[2] = {-1, -1};
  if (::bind(listenFd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 || ::listen(listenFd_, 128) != 0 ||
      ::getsockname(listenFd_, reinterpret_cast<sockaddr *>(&addr), &len) != 0 || ::pipe2(pipeFds, O_CLOEXEC) != 0) {
    const auto error = sysError("bind/listen on 127.0.0.1");
    ::close(listenFd_);
    throw error;
  }
  port_ = ntohs(addr.sin_port);
  wakeRead_ = pipeFds[0];
  wakeWrite_ = pipeFds[1];
  acceptThread_ = std::thread(&LoopbackHttpServer::acceptLoop, this);
}

LoopbackHttpServer::~LoopbackHttpServer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (const auto &c : connections_)
      if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);  // unblocks a send() into a full buffer
  }
  const char byte = 'x';
  while (::write(wakeWrite_, &byte, 1) < 0 && errno == EINTR) {
  }
  acceptThread_.join();
  // No new connections now; every thread sees the stop pipe or its shut-down socket.
  for (const auto &c : connections_) c->thread.join();
  connections_.clear();
  ::close(listenFd_);
  ::close(wakeRead_);
  ::close(wakeWrite_);
}

int LoopbackHttpServer::port() const { return port_; }

std::string LoopbackHttpServer::baseUrl() const { return "http://127.0.0.1:" + std::to_string(port_); }

void LoopbackHttpServer::route(const std::string &method, const std::string &path,
                               std::vector<ScriptedResponse> responses) {
  std::lock_guard lock(mutex_);
  if (responses.empty()) {
    routes_.erase({method, path});
    return;
  }
  routes_[{method, path}] = Route{std::move(responses), 0};
}

std::vector<ReceivedRequest> LoopbackHttpServer::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

bool LoopbackHttpServer::waitForRequests(std::size_t count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return requests_.size() >= count; });
}

int LoopbackHttpServer::openConnections() const {
  std::lock_guard lock(mutex_);
  return open_;
}

bool LoopbackHttpServer::waitForNoOpenConnections(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return open_ == 0; });
}

std::size_t LoopbackHttpServer::connectionsAccepted() const {
  std::lock_guard lock(mutex_);
  return accepted_;
}

std::optional<std::chrono::steady_clock::time_point> LoopbackHttpServer::lastClientGone() const {
  std::lock_guard lock(mutex_);
  return lastClientGone_;
}

void LoopbackHttpServer::noteClientGone() {
  const auto now = Clock::now();
  std::lock_guard lock(mutex_);
  if (stopping_) return;  // our own shutdown, not the client
  lastClientGone_ = now;
  changed_.notify_all();
}

// Joins the threads of finished connections; called with mutex_ held (a finished thread no longer
// takes it).
void LoopbackHttpServer::reapFinished() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void LoopbackHttpServer::acceptLoop() {
  for (;;) {
    pollfd fds[2] = {{listenFd_, POLLIN, 0}, {wakeRead_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard lock(mutex_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    reapFinished();
    ++open_;
    ++accepted_;
    auto conn = std::make_unique<Connection>();
    conn->fd = fd;
    Connection *c = conn.get();
    connections_.push_back(std::move(conn));
    c->thread = std::thread(&LoopbackHttpServer::serve, this, c);
    changed_.notify_all();
  }
}

void LoopbackHttpServer::handle(const std::string &method, const std::string &path, Handler handler) {
  std::lock_guard lock(mutex_);
  if (handler) handlers_[{method, path}] = std::move(handler);
  else handlers_.erase({method, path});
}

ScriptedResponse LoopbackHttpServer::responseFor(const ReceivedRequest &request) {
  // Called with mutex_ held.
  const std::string path = request.path.substr(0, request.path.find('?'));
  if (const auto h = handlers_.find({request.method, path}); h != handlers_.end()) return h->second(request);
  const auto it = routes_.find({request.method, path});
  if (it == routes_.end()) return notFound(request);
  Route &r = it->second;
  const std::size_t i = std::min(r.next, r.responses.size() - 1);
  if (r.next < r.responses.size()) ++r.next;
  return r.responses[i];
}

void LoopbackHttpServer::serve(Connection *conn) {
  int fd;
  {
    std::lock_guard lock(mutex_);
    fd = conn->fd;
  }
  enum class End { Graceful, Abrupt, ClientGone };

  const auto respond = [&](const ScriptedResponse &resp, bool head) -> End {
    if (resp.closeWithoutResponse) return End::Abrupt;
    const auto pause = [&](std::chrono::milliseconds d) -> std::optional<End> {
      const Wait w = waitWatching(fd, wakeRead_, Clock::now() + d);
      if (w == Wait::Gone) return End::ClientGone;
      if (w == Wait::Stop) return End::Abrupt;
      return std::nullopt;
    };
    if (resp.delayBeforeHeaders.count() > 0)
      if (const auto e = pause(resp.delayBeforeHeaders)) return *e;

    const bool noBody = head || (resp.status >= 100 && resp.status < 200) || resp.status == 204 || resp.status == 304;
    std::size_t total = 0;
    for (const auto &c : resp.chunks) total += c.size();
    std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " " + reasonPhrase(resp.status) + "\r\n";
    bool userFraming = false;
    for (const auto &[name, value] : resp.headers) {
      const std::string n = lower(name);
      if (n == "content-length" || n == "transfer-encoding") userFraming = true;
      if (n == "connection") continue;  // always "close", added below
      out += name + ": " + value + "\r\n";
    }
    if (!userFraming && resp.status != 204 && resp.status != 304 && !(resp.status >= 100 && resp.status < 200)) {
      if (resp.chunkedEncoding)
        out += "Transfer-Encoding: chunked\r\n";
      else if (!resp.endless)
        out += "Content-Length: " + std::to_string(total + (resp.cutAfterChunks ? 100 : 0)) + "\r\n";
    }
    out += "Connection: close\r\n\r\n";
    if (!sendAll(fd, out)) return End::ClientGone;
    if (noBody) return End::Graceful;

    const bool anyData = std::any_of(resp.chunks.begin(), resp.chunks.end(), [](const auto &c) { return !c.empty(); });
    if (resp.endless && !anyData) {  // hold the connection open until the client leaves
      const Wait w = waitWatching(fd, wakeRead_, Clock::time_point::max());
      return w == Wait::Gone ? End::ClientGone : End::Abrupt;
    }
    bool first = true;
    do {
      for (const auto &chunk : resp.chunks) {
        if (!first) {
          if (const auto e = pause(resp.delayBetweenChunks)) return *e;  // a zero delay still checks for EOF
        }
        first = false;
        if (chunk.empty() && resp.chunkedEncoding) continue;
        std::string data;
        if (resp.chunkedEncoding) {
          char size[32];
          std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
          data = size + chunk + "\r\n";
        } else {
          data = chunk;
        }
        if (!sendAll(fd, data)) return End::ClientGone;
      }
    } while (resp.endless);
    if (resp.cutAfterChunks) return End::Abrupt;
    if (resp.chunkedEncoding && !sendAll(fd, "0\r\n\r\n")) return End::ClientGone;
    return End::Graceful;
  };

  Reader in(fd, wakeRead_);
  ReceivedRequest req;
  const ReadResult read = readRequest(fd, in, req);
  End end = End::Abrupt;
  if (read == ReadResult::Ok) {
    req.at = Clock::now();
    ScriptedResponse resp;
    {
      std::lock_guard lock(mutex_);
      resp = responseFor(req);
      requests_.push_back(req);
      changed_.notify_all();
    }
    end = respond(resp, req.method == "HEAD");
  } else if (read == ReadResult::Malformed) {
    end = respond(badRequest(), false);
  }

  if (end == End::ClientGone) noteClientGone();
  if (end == End::Graceful) {
    // Half-close, then let the client read everything and close first (no reset losing data).
    ::shutdown(fd, SHUT_WR);
    Wait w = Wait::Elapsed;
    const auto deadline = Clock::now() + kLinger;
    while (w == Wait::Elapsed && Clock::now() < deadline) w = waitWatching(fd, wakeRead_, deadline);
  }
  std::lock_guard lock(mutex_);
  ::close(fd);
  conn->fd = -1;
  --open_;
  conn->done = true;
  changed_.notify_all();
}

std::vector<std::string> splitEvery(const std::string &body, std::size_t n) {
  n = std::max<std::size_t>(n, 1);
  std::vector<std::string> pieces;
  for (std::size_t i = 0; i < body.size(); i += n) pieces.push_back(body.substr(i, n));
  return pieces;
}

std::vector<std::string> splitRandom(const std::string &body, unsigned seed, std::size_t maxPiece) {
  maxPiece = std::max<std::size_t>(maxPiece, 1);
  std::mt19937 rng(seed);  // mt19937's output is fixed by the standard; distributions are not
  std::vector<std::string> pieces;
  for (std::size_t i = 0; i < body.size();) {
    const std::size_t n = 1 + static_cast<std::size_t>(rng()) % maxPiece;
    pieces.push_back(body.substr(i, n));
    i += n;
  }
  return pieces;
}

std::string readFixture(const std::string &relativePath) {
  const std::string path = std::string(KWB_SOURCE_DIR) + "/tests/fixtures/" + relativePath;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("readFixture: cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace kwb::test
