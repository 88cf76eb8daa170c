#pragma once
// The worker protocol's wire format (see PROTOCOL.md next to this file): one JSON object per
// line, UTF-8, in both directions. Everything here is pure: no I/O, no threads, so the framing
// rules (partial lines, several messages per read, bad UTF-8, oversized lines) are unit-tested
// on their own and shared by the worker and the client.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace kwb::worker {

using Json = nlohmann::json;

inline constexpr int kProtocolVersion = 1;
// The longest line either side accepts, newline excluded. Longer lines are dropped whole and
// answered with a "line-too-long" error.
inline constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;

// Error kinds a reply can carry. The worker sends the first group; the client makes the second
// itself (the worker never saw or never answered the request).
namespace error_kind {
inline constexpr const char *kBadJson = "bad-json";              // the line is not valid JSON/UTF-8
inline constexpr const char *kBadRequest = "bad-request";        // valid JSON, not a valid request
inline constexpr const char *kUnknownCommand = "unknown-command";
inline constexpr const char *kLineTooLong = "line-too-long";     // over the per-line limit
inline constexpr const char *kInvalidArgument = "invalid-argument";  // a command's field is wrong
inline constexpr const char *kInternal = "internal";             // the command threw unexpectedly
inline constexpr const char *kTimeout = "timeout";               // client: no reply within the limit
inline constexpr const char *kWorkerDied = "worker-died";        // client: the process ended
// client: a remote worker's connection or Slurm step ended with the request unanswered (a dropped
// connection, a preempted or timed-out step): the device's trouble, not the candidate's.
inline constexpr const char *kWorkerLost = "worker-lost";
inline constexpr const char *kStartFailed = "start-failed";      // client: it never became ready
inline constexpr const char *kNotRunning = "not-running";        // client: no worker to send to
inline constexpr const char *kCancelled = "cancelled";           // client: shut down meanwhile
inline constexpr const char *kProtocol = "protocol";             // client: the worker broke the rules
inline constexpr const char *kRequestTooLarge = "request-too-large";
}  // namespace error_kind

struct ErrorInfo {
  std::string kind;
  std::string message;
  Json details = Json::object();  // optional extra fields (signal, exit code, stderr, ...)
};

// client → worker: {"id": N, "cmd": "...", <params>...}
struct Request {
  std::uint64_t id = 0;
  std::string cmd;
  Json params = Json::object();  // every field except "id" and "cmd"
};

// worker → client, zero or more per request before its reply: {"id": N, "event": "...", ...}
// Events without an id ("hello", later "log") belong to the worker, not to a request.
struct Event {
  std::optional<std::uint64_t> id;
  std::string event;
  Json data = Json::object();  // every field except "id" and "event"
};

// worker → client, exactly one per request: {"id": N, "ok": true, "result": {...}} or
// {"id": N, "ok": false, "error": {"kind": "...", "message": "...", ...}}. The id is null only
// when the worker could not tell which request a broken line was.
struct Reply {
  std::optional<std::uint64_t> id;
  bool ok = false;
  Json result = Json::object();
  ErrorInfo error;

  static Reply success(std::uint64_t id, Json result);
  static Reply failure(std::optional<std::uint64_t> id, ErrorInfo error);
};

// ---- encoding -------------------------------------------------------------------------------
// One line, '\n'-terminated. "id" comes first and then "cmd"/"event"/"ok", so logs read well.
// Strings that are not valid UTF-8 have their bad bytes replaced by U+FFFD: an encoder never
// produces a line the decoder rejects.
std::string encodeLine(const Json &message);
std::string encodeRequest(const Request &request);
std::string encodeEvent(const Event &event);
std::string encodeReply(const Reply &reply);
Json errorToJson(const ErrorInfo &error);

// ---- decoding -------------------------------------------------------------------------------
// One framed line: a JSON object, or why it is not one.
struct DecodedLine {
  enum class Kind { Message, Malformed, Oversized };
  Kind kind = Kind::Message;
  Json message;                     // Kind::Message: always an object
  std::string error;                // Malformed/Oversized: what is wrong, for a human
  std::optional<std::uint64_t> idHint;  // Malformed/Oversized: the "id" read from the line's start
  std::size_t bytes = 0;            // the line's length without its newline
};

// Parses one line (without its newline; a trailing '\r' is ignored).
DecodedLine decodeLine(std::string_view line);

// Best effort: the value of an `"id": N` field near the start of a broken line, so the error
// reply can name the request it answers.
std::optional<std::uint64_t> findIdHint(std::string_view lineStart);

// Splits a byte stream into lines and decodes them. Feed whatever read() returned; complete
// lines come out in order. Blank lines are skipped. A line longer than the limit is dropped as
// it streams (memory stays bounded by the limit) and reported once, when its newline arrives.
class LineDecoder {
 public:
  explicit LineDecoder(std::size_t maxLineBytes = kMaxLineBytes) : max_(maxLineBytes) {}

  void feed(std::string_view bytes, std::vector<DecodedLine> &out);
  // At end of stream: the unterminated rest, if any (decoded as a line, or reported oversized).
  std::optional<DecodedLine> finish();
  // Bytes held for the line being received.
  std::size_t buffered() const { return buffer_.size(); }

 private:
  void complete(std::vector<DecodedLine> &out);
  std::size_t max_;
  std::string buffer_;
  bool discarding_ = false;      // inside an oversized line
  std::size_t discarded_ = 0;    // its length so far
  std::string discardedStart_;   // its first bytes, for the id hint
};

// ---- message structure ----------------------------------------------------------------------
// A request from a decoded object, or the error to send back (kind bad-request).
std::variant<Request, ErrorInfo> parseRequest(const Json &message);

// A received line as a request, or the failure reply it gets (line-too-long, bad-json,
// bad-request; the id from the line where it can be read): what a worker and a relay do first.
std::variant<Request, Reply> requestFromLine(const DecodedLine &line);

// What the worker said: an event (hello included) or a reply; a string says why it is neither.
using WorkerMessage = std::variant<Event, Reply, std::string>;
WorkerMessage parseWorkerMessage(const Json &message);

}  // namespace kwb::worker
