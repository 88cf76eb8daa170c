#pragma once
// For the test suites: a real HTTP/1.1 server on 127.0.0.1 that replays scripted responses
// (recorded streams, in any chunking, with delays, cuts and endless streams), so the LLM client
// is tested over real sockets, never against a mock. No Qt: POSIX sockets and std::thread.
//
// One request per connection: every response carries "Connection: close" and the server closes
// the connection after it. One thread per connection; the destructor shuts every socket down and
// joins every thread, so it returns promptly even with endless or delayed responses in flight.
//
// While a response waits (delayBeforeHeaders, delayBetweenChunks, between endless repeats) the
// server polls the socket, so it notices the client going away (EOF, reset, failed send) at once
// and records the time (lastClientGone) before closing its end. A client that half-closes its
// sending side after the request reads as gone, too.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace kwb::test {

struct ScriptedResponse {
  int status = 200;
  // Sent as given, in order, e.g. {"Content-Type","text/event-stream"}, {"Retry-After","1"}.
  // The server adds the framing header (Transfer-Encoding: chunked or Content-Length) unless one
  // is given here, and always "Connection: close".
  std::vector<std::pair<std::string, std::string>> headers;
  // Body pieces, each written with its own send() (TCP_NODELAY, so each goes out at once).
  // With chunked encoding, empty pieces are skipped (a 0-size chunk would end the body).
  std::vector<std::string> chunks;
  std::chrono::milliseconds delayBeforeHeaders{0};
  std::chrono::milliseconds delayBetweenChunks{0};
  // Transfer-Encoding: chunked; false: Content-Length of all chunks (an endless response that is
  // not chunked has no Content-Length: its body runs until the connection closes).
  bool chunkedEncoding = true;
  // After the chunks, close the socket (no final 0-chunk; not chunked: Content-Length is announced
  // as total+100). The close is a plain FIN, so the client receives every chunk first and then
  // sees the body end early (libcurl: CURLE_PARTIAL_FILE).
  bool cutAfterChunks = false;
  // Repeat `chunks` forever (with delayBetweenChunks) until the client disconnects.
  bool endless = false;
  // Accept, read the request, then close with nothing sent (libcurl: CURLE_GOT_NOTHING).
  bool closeWithoutResponse = false;
};

struct ReceivedRequest {
  std::string method, path;                    // path includes the query
  std::map<std::string, std::string> headers;  // names lower-cased; repeated names joined with ", "
  std::string body;                            // Content-Length or chunked bodies, de-chunked
  std::chrono::steady_clock::time_point at;    // when the request (body included) was fully read
};

class LoopbackHttpServer {
 public:
  LoopbackHttpServer();  // binds 127.0.0.1 on a free port, starts accepting at once; throws std::runtime_error
  ~LoopbackHttpServer();  // stops, closes every connection, joins threads
  LoopbackHttpServer(const LoopbackHttpServer &) = delete;
  LoopbackHttpServer &operator=(const LoopbackHttpServer &) = delete;

  int port() const;
  std::string baseUrl() const;  // "http://127.0.0.1:PORT"

  // Responses for METHOD PATH (path without query matched exactly), served in order; the last one
  // is repeated once the list is used up. Routing the same METHOD PATH again replaces the list and
  // starts it over; an empty list removes the route. Unrouted requests get 404 with a JSON error
  // body ({"error":{"message":...,"type":"not_found"}}).
  void route(const std::string &method, const std::string &path, std::vector<ScriptedResponse> responses);

  // A response computed from the request (a scripted LLM server that answers what it is shown);
  // takes precedence over route() for the same METHOD PATH. Called on the connection's thread
  // with the server's lock held: it must not call the server. An empty handler removes it.
  using Handler = std::function<ScriptedResponse(const ReceivedRequest &)>;
  void handle(const std::string &method, const std::string &path, Handler handler);

  // Every request read whole so far, in arrival order (unrouted ones included).
  std::vector<ReceivedRequest> requests() const;
  bool waitForRequests(std::size_t count, std::chrono::milliseconds timeout) const;

  // Connections currently open on the server side: counted from accept until the server closed
  // its end (after the response, once the client closed or at most a short linger; at once when
  // the client went away).
  int openConnections() const;
  bool waitForNoOpenConnections(std::chrono::milliseconds timeout) const;
  // Extra: connections accepted since start (e.g. to check a client made no more attempts).
  std::size_t connectionsAccepted() const;

  // When the server last noticed a client going away in the middle of a response (a failed send,
  // or EOF/reset seen while waiting between chunks or before the headers), or nullopt if never.
  // Set before that connection is closed and uncounted, so it is set once waitForNoOpenConnections
  // returns true after such a disconnect. Never cleared.
  std::optional<std::chrono::steady_clock::time_point> lastClientGone() const;

 private:
  struct Connection;
  struct Route {
    std::vector<ScriptedResponse> responses;
    std::size_t next = 0;
  };

  void acceptLoop();
  void serve(Connection *conn);
  ScriptedResponse responseFor(const ReceivedRequest &request);
  void noteClientGone();
  void reapFinished();

  int listenFd_ = -1;
  int wakeRead_ = -1, wakeWrite_ = -1;  // self-pipe: written once on stop, stays readable
  int port_ = 0;
  std::thread acceptThread_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool stopping_ = false;
  std::map<std::pair<std::string, std::string>, Route> routes_;
  std::map<std::pair<std::string, std::string>, Handler> handlers_;
  std::vector<ReceivedRequest> requests_;
  int open_ = 0;
  std::size_t accepted_ = 0;
  std::optional<std::chrono::steady_clock::time_point> lastClientGone_;
  std::list<std::unique_ptr<Connection>> connections_;
};

// Body splits for replaying one recorded stream in different chunkings. Both return no pieces for
// an empty body; joined, the pieces are the body.
std::vector<std::string> splitEvery(const std::string &body, std::size_t n);  // n=1: byte by byte (0 counts as 1)
// Pieces of 1..maxPiece bytes (maxPiece 0 counts as 1), the same for the same seed on any platform.
std::vector<std::string> splitRandom(const std::string &body, unsigned seed, std::size_t maxPiece = 64);
// The file under KWB_SOURCE_DIR "/tests/fixtures/", whole; throws std::runtime_error if it cannot be read.
std::string readFixture(const std::string &relativePath);

}  // namespace kwb::test
