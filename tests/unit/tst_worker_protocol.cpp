// The worker protocol's framing and message codec: pure functions, no processes.
#include <QtTest>

#include <string>

#include "core/worker/protocol.h"

using namespace kwb::worker;

namespace {

std::vector<DecodedLine> feedAll(LineDecoder &decoder, std::string_view bytes) {
  std::vector<DecodedLine> out;
  decoder.feed(bytes, out);
  return out;
}

}  // namespace

class TestWorkerProtocol : public QObject {
  Q_OBJECT
 private slots:
  void requestEncodesAsOneLineIdFirst() {
    Request r{7, "ping", Json{{"text", "two\nlines"}, {"n", 3}}};
    const auto line = encodeRequest(r);
    QVERIFY(line.ends_with('\n'));
    QCOMPARE(std::count(line.begin(), line.end(), '\n'), 1);  // the newline in the string is escaped
    QVERIFY2(line.rfind("{\"id\":7,\"cmd\":\"ping\",", 0) == 0, line.c_str());

    const auto decoded = decodeLine(std::string_view(line).substr(0, line.size() - 1));
    QVERIFY(decoded.kind == DecodedLine::Kind::Message);
    const auto parsed = parseRequest(decoded.message);
    QVERIFY(std::holds_alternative<Request>(parsed));
    const auto &back = std::get<Request>(parsed);
    QCOMPARE(back.id, 7u);
    QCOMPARE(back.cmd, std::string("ping"));
    QCOMPARE(back.params, (Json{{"text", "two\nlines"}, {"n", 3}}));
  }

  void repliesAndEventsRoundTrip() {
    const auto ok = encodeReply(Reply::success(3, Json{{"answer", 42}}));
    QCOMPARE(ok, std::string("{\"id\":3,\"ok\":true,\"result\":{\"answer\":42}}\n"));
    auto msg = parseWorkerMessage(decodeLine(ok).message);
    QVERIFY(std::holds_alternative<Reply>(msg));
    QVERIFY(std::get<Reply>(msg).ok);
    QCOMPARE(std::get<Reply>(msg).result["answer"].get<int>(), 42);

    const auto bad = encodeReply(Reply::failure(4, {"unknown-command", "unknown command 'x'", {{"known", {"ping"}}}}));
    msg = parseWorkerMessage(decodeLine(bad).message);
    const auto &reply = std::get<Reply>(msg);
    QVERIFY(!reply.ok);
    QCOMPARE(*reply.id, 4u);
    QCOMPARE(reply.error.kind, std::string("unknown-command"));
    QCOMPARE(reply.error.message, std::string("unknown command 'x'"));
    QCOMPARE(reply.error.details["known"][0].get<std::string>(), std::string("ping"));

    // A reply to a line nobody could read carries a null id.
    const auto orphan = encodeReply(Reply::failure(std::nullopt, {"bad-json", "malformed", {}}));
    QVERIFY(orphan.rfind("{\"id\":null,\"ok\":false,", 0) == 0);
    QVERIFY(!std::get<Reply>(parseWorkerMessage(decodeLine(orphan).message)).id);

    const auto progress = encodeEvent({9, "progress", Json{{"done", 1}, {"of", 4}}});
    QVERIFY(progress.rfind("{\"id\":9,\"event\":\"progress\",", 0) == 0);
    msg = parseWorkerMessage(decodeLine(progress).message);
    QCOMPARE(*std::get<Event>(msg).id, 9u);
    QCOMPARE(std::get<Event>(msg).data["of"].get<int>(), 4);

    const auto hello = encodeEvent({std::nullopt, "hello", Json{{"protocol", kProtocolVersion}}});
    QVERIFY(hello.rfind("{\"event\":\"hello\",", 0) == 0);
    msg = parseWorkerMessage(decodeLine(hello).message);
    QVERIFY(!std::get<Event>(msg).id);
    QCOMPARE(std::get<Event>(msg).event, std::string("hello"));
  }

  void invalidUtf8IsReplacedWhenEncoding() {
    // A worker may hand back bytes from a compiler or a kernel name: never a line we cannot read.
    const std::string broken = std::string("ok \xff\xfe end");
    const auto line = encodeReply(Reply::success(1, Json{{"text", broken}}));
    const auto decoded = decodeLine(line);
    QVERIFY2(decoded.kind == DecodedLine::Kind::Message, decoded.error.c_str());
    const auto text = decoded.message["result"]["text"].get<std::string>();
    QVERIFY(text.find("\xEF\xBF\xBD") != std::string::npos);  // U+FFFD
    QVERIFY(text.starts_with("ok ") && text.ends_with(" end"));
  }

  void invalidUtf8IsRejectedWhenDecoding() {
    const std::string line = "{\"id\": 12, \"cmd\": \"ping\", \"text\": \"\xc3\x28\"}";
    const auto decoded = decodeLine(line);
    QVERIFY(decoded.kind == DecodedLine::Kind::Malformed);
    QVERIFY2(decoded.error.find("UTF-8") != std::string::npos, decoded.error.c_str());
    QCOMPARE(decoded.idHint.value_or(0), 12u);  // the error reply can still name the request
  }

  void malformedJsonAndNonObjects() {
    auto d = decodeLine("{\"id\": 5, \"cmd\": ping}");
    QVERIFY(d.kind == DecodedLine::Kind::Malformed);
    QVERIFY2(d.error.starts_with("malformed JSON: "), d.error.c_str());
    QCOMPARE(d.idHint.value_or(0), 5u);
    d = decodeLine("[1, 2, 3]");
    QVERIFY(d.kind == DecodedLine::Kind::Malformed);
    QVERIFY(d.error.find("expected a JSON object") != std::string::npos);
    QVERIFY(!d.idHint);
    d = decodeLine(std::string(100000, '[') + std::string(100000, ']'));
    QVERIFY(d.kind == DecodedLine::Kind::Malformed);
    QVERIFY(d.error.find("nested deeper") != std::string::npos);
    // Brackets inside strings do not count as nesting.
    d = decodeLine("{\"s\": \"" + std::string(1000, '[') + "\\\"\"}");
    QVERIFY2(d.kind == DecodedLine::Kind::Message, d.error.c_str());
  }

  void partialLinesAcrossReads() {
    LineDecoder decoder;
    const std::string line = encodeRequest({1, "ping", Json{{"x", "y"}}});
    std::vector<DecodedLine> out;
    for (const char c : line) decoder.feed(std::string_view(&c, 1), out);  // one byte per read
    QCOMPARE(out.size(), std::size_t(1));
    QCOMPARE(out[0].message["cmd"].get<std::string>(), std::string("ping"));
    QCOMPARE(decoder.buffered(), std::size_t(0));
    QVERIFY(!decoder.finish());
  }

  void severalMessagesInOneRead() {
    LineDecoder decoder;
    std::string bytes;
    for (int i = 1; i <= 5; ++i) bytes += encodeRequest({static_cast<std::uint64_t>(i), "ping", Json::object()});
    bytes += "\r\n   \n";  // a blank line (CRLF) and a line of spaces: skipped
    bytes += "{\"id\": 6, \"cmd\": \"devices\"}\r\n";
    bytes += "{\"id\": 7, \"cm";  // the start of the next one
    const auto out = feedAll(decoder, bytes);
    QCOMPARE(out.size(), std::size_t(6));
    for (int i = 0; i < 6; ++i) {
      QVERIFY(out[i].kind == DecodedLine::Kind::Message);
      QCOMPARE(out[i].message["id"].get<int>(), i + 1);
    }
    QCOMPARE(out[5].message["cmd"].get<std::string>(), std::string("devices"));
    const auto rest = feedAll(decoder, "d\": \"ping\"}\n");
    QCOMPARE(rest.size(), std::size_t(1));
    QCOMPARE(rest[0].message["id"].get<int>(), 7);
  }

  void badLineDoesNotDisturbTheNext() {
    LineDecoder decoder;
    const auto out = feedAll(decoder, "{\"id\": 1, oops\n{\"id\": 2, \"cmd\": \"ping\"}\n");
    QCOMPARE(out.size(), std::size_t(2));
    QVERIFY(out[0].kind == DecodedLine::Kind::Malformed);
    QCOMPARE(out[0].idHint.value_or(0), 1u);
    QVERIFY(out[1].kind == DecodedLine::Kind::Message);
  }

  void oversizedLinesAreDroppedWithBoundedMemory() {
    const std::size_t limit = 64;
    LineDecoder decoder(limit);
    std::vector<DecodedLine> out;
    const std::string head = "{\"id\": 31, \"cmd\": \"load\", \"source\": \"";
    decoder.feed(head, out);
    for (int i = 0; i < 100; ++i) {
      decoder.feed(std::string(50, 'x'), out);
      QVERIFY(decoder.buffered() <= limit);
    }
    QVERIFY(out.empty());  // reported once, when its newline arrives
    decoder.feed("\"}\n{\"id\": 32, \"cmd\": \"ping\"}\n", out);
    QCOMPARE(out.size(), std::size_t(2));
    QVERIFY(out[0].kind == DecodedLine::Kind::Oversized);
    QCOMPARE(out[0].idHint.value_or(0), 31u);
    QCOMPARE(out[0].bytes, head.size() + 5000 + 2);
    QVERIFY2(out[0].error.find("limit of 64 bytes") != std::string::npos, out[0].error.c_str());
    QVERIFY(out[1].kind == DecodedLine::Kind::Message);
    QCOMPARE(out[1].message["id"].get<int>(), 32);

    // Exactly at the limit is fine; one byte more is not.
    LineDecoder exact(limit);
    std::string atLimit = "{\"id\":1,\"cmd\":\"ping\",\"p\":\"";
    atLimit += std::string(limit - atLimit.size() - 2, 'a') + "\"}";
    QCOMPARE(atLimit.size(), limit);
    auto r = feedAll(exact, atLimit + "\n");
    QVERIFY(r.size() == 1 && r[0].kind == DecodedLine::Kind::Message);
    r = feedAll(exact, "{\"id\":1,\"cmd\":\"ping\",\"p\":\"" + std::string(limit - 27 + 1, 'a') + "\"}\n");
    QVERIFY(r.size() == 1 && r[0].kind == DecodedLine::Kind::Oversized);
    // One huge read with the newline inside it.
    r = feedAll(exact, std::string(1000, 'z') + "\n{\"ok\": true}\n");
    QCOMPARE(r.size(), std::size_t(2));
    QVERIFY(r[0].kind == DecodedLine::Kind::Oversized && r[0].bytes == 1000);
    QVERIFY(r[1].kind == DecodedLine::Kind::Message);
    QCOMPARE(kMaxLineBytes, std::size_t(64) << 20);
  }

  void unterminatedRestAtEndOfStream() {
    LineDecoder decoder;
    QVERIFY(feedAll(decoder, "{\"id\": 1, \"cmd\": \"shutdown\"}").empty());
    const auto last = decoder.finish();
    QVERIFY(last && last->kind == DecodedLine::Kind::Message);
    QCOMPARE(last->message["cmd"].get<std::string>(), std::string("shutdown"));
    QVERIFY(!decoder.finish());

    LineDecoder small(8);
    QVERIFY(feedAll(small, "{\"id\": 4, \"cmd\": \"x\"").empty());
    const auto oversized = small.finish();
    QVERIFY(oversized && oversized->kind == DecodedLine::Kind::Oversized);
    QCOMPARE(oversized->idHint.value_or(0), 4u);
  }

  void requestValidation() {
    auto error = [](const Json &j) {
      const auto r = parseRequest(j);
      return std::holds_alternative<ErrorInfo>(r) ? std::get<ErrorInfo>(r) : ErrorInfo{};
    };
    QCOMPARE(error(Json{{"cmd", "ping"}}).kind, std::string("bad-request"));
    QVERIFY(error(Json{{"cmd", "ping"}}).message.find("\"id\"") != std::string::npos);
    QVERIFY(error(Json{{"id", -1}, {"cmd", "ping"}}).message.find("non-negative integer") != std::string::npos);
    QVERIFY(error(Json{{"id", "7"}, {"cmd", "ping"}}).message.find("\"7\"") != std::string::npos);
    QVERIFY(error(Json{{"id", 1.5}, {"cmd", "ping"}}).kind == "bad-request");
    QVERIFY(error(Json{{"id", 1}}).message.find("\"cmd\"") != std::string::npos);
    QVERIFY(error(Json{{"id", 1}, {"cmd", 3}}).kind == "bad-request");
    QVERIFY(error(Json{{"id", 1}, {"cmd", ""}}).kind == "bad-request");
    QVERIFY(std::holds_alternative<Request>(parseRequest(Json{{"id", 0}, {"cmd", "ping"}})));
  }

  void workerMessageValidation() {
    auto why = [](const Json &j) {
      const auto m = parseWorkerMessage(j);
      return std::holds_alternative<std::string>(m) ? std::get<std::string>(m) : std::string();
    };
    QVERIFY(why(Json{{"id", 1}}).find("neither") != std::string::npos);
    QVERIFY(why(Json{{"id", 1}, {"ok", false}}).find("\"error\"") != std::string::npos);
    QVERIFY(why(Json{{"id", 1}, {"ok", "yes"}}).find("\"ok\"") != std::string::npos);
    QVERIFY(why(Json{{"id", -3}, {"ok", true}}).find("\"id\"") != std::string::npos);
    QVERIFY(why(Json{{"event", 5}}).find("\"event\"") != std::string::npos);
    QVERIFY(why(Json{{"id", 2}, {"ok", true}}).empty());  // a result may be left out
  }
};

QTEST_APPLESS_MAIN(TestWorkerProtocol)
#include "tst_worker_protocol.moc"
