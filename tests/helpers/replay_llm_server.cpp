#include "tests/helpers/replay_llm_server.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace kwb::test {

namespace {

std::string readAll(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

std::vector<std::string> openAiStream(const std::string &text, const std::string &finishReason, std::size_t piece,
                                      long long promptTokens) {
  const std::string head = R"({"id":"chatcmpl-replay","object":"chat.completion.chunk","created":1764633600,"model":"replay-lineage","system_fingerprint":"fp_replay","choices":[)";
  std::vector<std::string> chunks;
  chunks.push_back("data: " + head + R"({"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null})" + "\n\n");
  for (std::size_t i = 0; i < text.size(); i += piece) {
    const json delta = {{"content", text.substr(i, piece)}};
    chunks.push_back("data: " + head + R"({"index":0,"delta":)" + delta.dump() + R"(,"logprobs":null,"finish_reason":null}],"usage":null})" + "\n\n");
  }
  chunks.push_back("data: " + head + R"({"index":0,"delta":{},"logprobs":null,"finish_reason":")" + finishReason + R"("}],"usage":null})" + "\n\n");
  const long long completion = static_cast<long long>(text.size() / 4 + 1);
  chunks.push_back("data: " + head + R"(],"usage":{"prompt_tokens":)" + std::to_string(promptTokens) +
                   R"(,"completion_tokens":)" + std::to_string(completion) + R"(,"total_tokens":)" +
                   std::to_string(promptTokens + completion) + "}}\n\n");
  chunks.push_back("data: [DONE]\n\n");
  return chunks;
}

ReplayLlmServer::ReplayLlmServer(const std::filesystem::path &taskFolder) {
  const auto lineageFile = taskFolder / "lineage" / "lineage.toml";
  const std::string toml = readAll(lineageFile);
  const std::regex fileLine(R"re(^file\s*=\s*"([^"]+)")re"), titleLine(R"re(^title\s*=\s*"([^"]+)")re");
  std::istringstream lines(toml);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, fileLine)) {
      sources_.push_back(readAll(taskFolder / "lineage" / m[1].str()));
      titles_.push_back(m[1].str());
    } else if (std::regex_search(line, m, titleLine) && !titles_.empty()) {
      titles_.back() = m[1].str();
    }
  }
  if (sources_.empty()) throw std::runtime_error(lineageFile.string() + " lists no steps");
  lastStep_ = sources_.size();
  http_.handle("POST", "/v1/chat/completions", [this](const ReceivedRequest &r) { return answer(r); });
}

std::string ReplayLlmServer::baseUrl() const { return http_.baseUrl() + "/v1"; }

void ReplayLlmServer::script(std::vector<ReplayFault> faults) {
  std::lock_guard lock(mutex_);
  faults_.assign(faults.begin(), faults.end());
}

void ReplayLlmServer::setDelays(std::chrono::milliseconds beforeHeaders, std::chrono::milliseconds betweenChunks) {
  std::lock_guard lock(mutex_);
  beforeHeaders_ = beforeHeaders;
  betweenChunks_ = betweenChunks;
}

void ReplayLlmServer::setBackward(bool backward) {
  std::lock_guard lock(mutex_);
  backward_ = backward;
}

void ReplayLlmServer::setLastStep(std::size_t step) {
  std::lock_guard lock(mutex_);
  lastStep_ = std::clamp<std::size_t>(step, 1, sources_.size());
}

std::vector<std::size_t> ReplayLlmServer::answeredSteps() const {
  std::lock_guard lock(mutex_);
  return answered_;
}

std::size_t ReplayLlmServer::stepShown(const std::string &promptText) const {
  // The latest step whose whole source appears in the prompt.
  for (std::size_t k = sources_.size(); k >= 1; --k)
    if (contains(promptText, sources_[k - 1])) return k;
  return 0;
}

ScriptedResponse ReplayLlmServer::answer(const ReceivedRequest &request) {
  std::string prompt;
  try {
    const json body = json::parse(request.body);
    for (const auto &m : body.at("messages")) prompt += m.value("content", std::string()) + "\n";
  } catch (const std::exception &e) {
    ScriptedResponse bad;
    bad.status = 400;
    bad.headers = {{"Content-Type", "application/json"}};
    bad.chunks = {json{{"error", {{"message", std::string("replay server: unreadable request: ") + e.what()}, {"type", "invalid_request_error"}}}}.dump()};
    bad.chunkedEncoding = false;
    return bad;
  }
  std::lock_guard lock(mutex_);
  ReplayFault fault = ReplayFault::None;
  if (!faults_.empty()) {
    fault = faults_.front();
    faults_.pop_front();
  }
  ++served_;
  // Shown step k: step k+1. Shown none (the task's starter, still the incumbent because the
  // steps answered so far were not faster): the step after the latest one answered.
  std::size_t shown = stepShown(prompt);
  if (shown == 0 && !backward_)
    for (std::size_t s : answered_) shown = std::max(shown, s);
  if (backward_ && shown <= 1 && fault == ReplayFault::None) {
    answered_.push_back(0);
    ScriptedResponse r;
    r.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
    r.chunks = openAiStream("NOTHING LEFT", "stop");
    return r;
  }
  std::size_t next =
      backward_ ? std::max<std::size_t>(shown, 2) - 1 : std::min(std::min(shown + 1, sources_.size()), lastStep_);
  if (fault == ReplayFault::Racy) next = std::min<std::size_t>(2, sources_.size());
  std::string code = sources_[next - 1];
  std::string text, finish = "stop";
  switch (fault) {
    case ReplayFault::None:
      text = backward_ ? "Removed: " + titles_[next] + "\n\n```cuda\n" + code + "```\n"
                       : "Here is the next version.\n\n```cuda\n" + code + "```\n\nIt applies one more optimization.";
      break;
    case ReplayFault::CompileError: {
      // A statement without its semicolon at the kernel's first line of body.
      const auto brace = code.find("{\n", code.find("__global__"));
      code.insert(brace + 2, "  int kwb_replay_broken = 1\n");
      text = "```cuda\n" + code + "```\n";
      break;
    }
    case ReplayFault::WrongAnswer: {
      // The normalisation doubled: every output twice what it should be (softmax's steps all
      // have "const float inv = 1.0f / ..."; a step without it is answered unchanged).
      const auto inv = code.find("1.0f / ");
      if (inv != std::string::npos) code.replace(inv, 4, "2.0f");
      text = "```cuda\n" + code + "```\n";
      break;
    }
    case ReplayFault::Racy: {
      const std::string shared = "__shared__ float sumPartials[BLOCK / 32];";
      const auto at = code.find(shared);
      if (at == std::string::npos) throw std::runtime_error("replay server: step 2 has no sumPartials buffer to share");
      code.replace(at, shared.size(), "float *const sumPartials = maxPartials;  // one buffer for both reductions");
      text = "Both reductions can share one buffer.\n\n```cuda\n" + code + "```\n";
      break;
    }
    case ReplayFault::Truncated:
      text = "```cuda\n" + code.substr(0, code.size() / 2);
      finish = "length";
      break;
    case ReplayFault::NoCode:
      text = "I would vectorize the loads and keep the row in registers, but I am not sure it helps here.";
      break;
    case ReplayFault::Empty:
      text.clear();
      break;
  }
  answered_.push_back(fault == ReplayFault::NoCode || fault == ReplayFault::Empty ? 0 : next);
  ScriptedResponse r;
  r.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  r.chunks = openAiStream(text, finish);
  r.delayBeforeHeaders = beforeHeaders_;
  r.delayBetweenChunks = betweenChunks_;
  return r;
}

}  // namespace kwb::test
