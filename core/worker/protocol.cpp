#include "core/worker/protocol.h"

#include <algorithm>
#include <cctype>

namespace kwb::worker {

namespace {

constexpr std::size_t kHintBytes = 4096;  // how much of a broken line is searched for its id
constexpr int kMaxDepth = 256;            // deeper nesting is refused before parsing

std::string dumpValue(const Json &value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool isLeadingKey(const std::string &key) {
  return key == "id" || key == "cmd" || key == "event" || key == "ok";
}

bool isBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

// The deepest nesting of arrays and objects outside strings; stops counting past `limit`.
int nestingDepth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (const char c : text) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
      continue;
    }
    if (c == '"') inString = true;
    else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') --depth;
  }
  return deepest;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest reads well.
std::string parseErrorText(const std::exception &e) {
  std::string what = e.what();
  if (!what.empty() && what.front() == '[') {
    const auto close = what.find("] ");
    if (close != std::string::npos) what.erase(0, close + 2);
  }
  return what;
}

std::optional<std::uint64_t> idFrom(const Json &value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  return std::nullopt;
}

Json without(const Json &object, std::initializer_list<const char *> keys) {
  Json rest = Json::object();
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::none_of(keys.begin(), keys.end(), [&](const char *k) { return it.key() == k; }))
      rest[it.key()] = it.value();
  }
  return rest;
}

}  // namespace

Reply Reply::success(std::uint64_t id, Json result) {
  Reply r;
  r.id = id;
  r.ok = true;
  r.result = std::move(result);
  return r;
}

Reply Reply::failure(std::optional<std::uint64_t> id, ErrorInfo error) {
  Reply r;
  r.id = id;
  r.ok = false;
  r.error = std::move(error);
  return r;
}

// ---- encoding -------------------------------------------------------------------------------

std::string encodeLine(const Json &message) {
  if (!message.is_object()) return dumpValue(message) + "\n";
  std::string out = "{";
  bool first = true;
  auto add = [&](const std::string &key, const Json &value) {
    if (!first) out += ',';
    first = false;
    out += dumpValue(Json(key));
    out += ':';
    out += dumpValue(value);
  };
  for (const char *key : {"id", "cmd", "event", "ok"})
    if (const auto it = message.find(key); it != message.end()) add(key, *it);
  for (auto it = message.begin(); it != message.end(); ++it)
    if (!isLeadingKey(it.key())) add(it.key(), it.value());
  out += "}\n";
  return out;
}

std::string encodeRequest(const Request &request) {
  Json j = request.params.is_object() ? request.params : Json::object();
  j["id"] = request.id;
  j["cmd"] = request.cmd;
  return encodeLine(j);
}

std::string encodeEvent(const Event &event) {
  Json j = event.data.is_object() ? event.data : Json::object();
  if (event.id) j["id"] = *event.id;
  else j.erase("id");
  j["event"] = event.event;
  return encodeLine(j);
}

Json errorToJson(const ErrorInfo &error) {
  Json j = error.details.is_object() ? error.details : Json::object();
  j["kind"] = error.kind;
  j["message"] = error.message;
  return j;
}

std::string encodeReply(const Reply &reply) {
  Json j = Json::object();
  j["id"] = reply.id ? Json(*reply.id) : Json(nullptr);
  j["ok"] = reply.ok;
  if (reply.ok) j["result"] = reply.result;
  else j["error"] = errorToJson(reply.error);
  return encodeLine(j);
}

// ---- decoding -------------------------------------------------------------------------------

std::optional<std::uint64_t> findIdHint(std::string_view text) {
  text = text.substr(0, std::min(text.size(), kHintBytes));
  std::size_t pos = 0;
  while ((pos = text.find("\"id\"", pos)) != std::string_view::npos) {
    std::size_t i = pos + 4;
    auto skipSpace = [&] {
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    };
    skipSpace();
    if (i < text.size() && text[i] == ':') {
      ++i;
      skipSpace();
      std::uint64_t value = 0;
      std::size_t digits = 0;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && digits < 19) {
        value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
        ++i;
        ++digits;
      }
      if (digits > 0) return value;
    }
    pos += 4;
  }
  return std::nullopt;
}

DecodedLine decodeLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  DecodedLine d;
  d.bytes = line.size();
  auto malformed = [&](std::string why) {
    d.kind = DecodedLine::Kind::Malformed;
    d.error = std::move(why);
    d.idHint = findIdHint(line);
    return d;
  };
  if (nestingDepth(line, kMaxDepth) > kMaxDepth)
    return malformed("JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
  try {
    d.message = Json::parse(line.begin(), line.end());
  } catch (const Json::parse_error &e) {
    return malformed("malformed JSON: " + parseErrorText(e));
  } catch (const std::exception &e) {
    return malformed("malformed JSON: " + parseErrorText(e));
  }
  if (!d.message.is_object()) {
    d.message = Json();
    return malformed(std::string("expected a JSON object, got ") + (line.empty() ? "nothing" : "another value"));
  }
  return d;
}

void LineDecoder::feed(std::string_view bytes, std::vector<DecodedLine> &out) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::size_t newline = bytes.find('\n', pos);
    const std::string_view chunk =
        bytes.substr(pos, newline == std::string_view::npos ? std::string_view::npos : newline - pos);
    if (!discarding_ && buffer_.size() + chunk.size() > max_) {
      // Too long: keep only the start (for the id hint) and count the rest as it passes.
      discarding_ = true;
      discarded_ = buffer_.size();
      discardedStart_ = buffer_.substr(0, std::min(buffer_.size(), kHintBytes));
      std::string().swap(buffer_);
    }
    if (discarding_) {
      discarded_ += chunk.size();
      if (discardedStart_.size() < kHintBytes)
        discardedStart_.append(chunk.substr(0, kHintBytes - discardedStart_.size()));
    } else {
      buffer_.append(chunk);
    }
    if (newline == std::string_view::npos) break;
    complete(out);
    pos = newline + 1;
  }
}

void LineDecoder::complete(std::vector<DecodedLine> &out) {
  if (discarding_) {
    DecodedLine d;
    d.kind = DecodedLine::Kind::Oversized;
    d.bytes = discarded_;
    d.error = "line of " + std::to_string(discarded_) + " bytes is longer than the limit of " +
              std::to_string(max_) + " bytes";
    d.idHint = findIdHint(discardedStart_);
    out.push_back(std::move(d));
    discarding_ = false;
    discarded_ = 0;
    discardedStart_.clear();
    return;
  }
  if (!isBlank(buffer_)) out.push_back(decodeLine(buffer_));
  buffer_.clear();
  if (buffer_.capacity() > (std::size_t{1} << 20)) std::string().swap(buffer_);
}

std::optional<DecodedLine> LineDecoder::finish() {
  std::vector<DecodedLine> out;
  if (discarding_ || !buffer_.empty()) complete(out);
  if (out.empty()) return std::nullopt;
  return std::move(out.front());
}

// ---- message structure ----------------------------------------------------------------------

std::variant<Request, ErrorInfo> parseRequest(const Json &message) {
  if (!message.is_object()) return ErrorInfo{error_kind::kBadRequest, "a request must be a JSON object", {}};
  const auto id = message.find("id");
  if (id == message.end())
    return ErrorInfo{error_kind::kBadRequest, "the request has no \"id\" (a non-negative integer)", {}};
  const auto idValue = idFrom(*id);
  if (!idValue)
    return ErrorInfo{error_kind::kBadRequest,
                     "\"id\" must be a non-negative integer, not " + dumpValue(*id), {}};
  const auto cmd = message.find("cmd");
  if (cmd == message.end() || !cmd->is_string() || cmd->get<std::string>().empty())
    return ErrorInfo{error_kind::kBadRequest, "the request has no \"cmd\" (a command name string)", {}};
  Request r;
  r.id = *idValue;
  r.cmd = cmd->get<std::string>();
  r.params = without(message, {"id", "cmd"});
  return r;
}

WorkerMessage parseWorkerMessage(const Json &message) {
  if (!message.is_object()) return std::string("not a JSON object");
  std::optional<std::uint64_t> id;
  if (const auto it = message.find("id"); it != message.end() && !it->is_null()) {
    id = idFrom(*it);
    if (!id) return "\"id\" must be a non-negative integer or null, not " + dumpValue(*it);
  }
  if (const auto ev = message.find("event"); ev != message.end()) {
    if (!ev->is_string()) return std::string("\"event\" must be a string");
    Event e;
    e.id = id;
    e.event = ev->get<std::string>();
    e.data = without(message, {"id", "event"});
    return e;
  }
  if (const auto ok = message.find("ok"); ok != message.end()) {
    if (!ok->is_boolean()) return std::string("\"ok\" must be true or false");
    Reply r;
    r.id = id;
    r.ok = ok->get<bool>();
    if (r.ok) {
      if (const auto res = message.find("result"); res != message.end()) r.result = *res;
    } else {
      const auto err = message.find("error");
      if (err == message.end() || !err->is_object())
        return std::string("a failed reply needs an \"error\" object");
      const auto kind = err->find("kind");
      const auto text = err->find("message");
      r.error.kind = kind != err->end() && kind->is_string() ? kind->get<std::string>() : "unknown";
      r.error.message = text != err->end() && text->is_string() ? text->get<std::string>() : "";
      r.error.details = without(*err, {"kind", "message"});
    }
    return r;
  }
  return std::string("neither an event (\"event\") nor a reply (\"ok\")");
}

std::variant<Request, Reply> requestFromLine(const DecodedLine &line) {
  if (line.kind == DecodedLine::Kind::Oversized)
    return Reply::failure(line.idHint, {error_kind::kLineTooLong, line.error, {}});
  if (line.kind == DecodedLine::Kind::Malformed) return Reply::failure(line.idHint, {error_kind::kBadJson, line.error, {}});
  auto parsed = parseRequest(line.message);
  if (auto *error = std::get_if<ErrorInfo>(&parsed)) {
    std::optional<std::uint64_t> id;
    if (const auto it = line.message.find("id"); it != line.message.end() && it->is_number_unsigned())
      id = it->get<std::uint64_t>();
    return Reply::failure(id, *error);
  }
  return std::get<Request>(std::move(parsed));
}

}  // namespace kwb::worker
