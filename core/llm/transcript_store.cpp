#include "core/llm/transcript_store.h"

namespace kwb::llm {

LlmTranscriptRecord toRecord(const TranscriptEntry &e, const std::string &session) {
  LlmTranscriptRecord r;
  r.session = session;
  r.provider = e.provider;
  r.model = e.model;
  r.url = e.url;
  r.requestHeaders = e.requestHeaders;
  r.requestBody = e.requestBody;
  r.responseText = e.responseText;
  r.responseRaw = e.responseRaw;
  r.status = e.status;
  r.attempts = e.attempts;
  r.outcome = e.outcome;
  r.error = e.error;
  r.inputTokens = e.usage.inputTokens;
  r.outputTokens = e.usage.outputTokens;
  r.usageReported = e.usage.reported;
  r.cost = e.cost;
  r.seconds = e.seconds;
  r.startedAt = e.startedAt;
  return r;
}

Provider::TranscriptSink workspaceTranscriptSink(std::shared_ptr<Workspace> workspace, std::string session,
                                                 std::function<void(const std::string &)> onError) {
  return [workspace = std::move(workspace), session = std::move(session), onError = std::move(onError)](const TranscriptEntry &e) {
    try {
      workspace->addLlmTranscript(toRecord(e, session));
    } catch (const std::exception &ex) {
      if (onError) onError(std::string("the transcript could not be stored: ") + ex.what());
    }
  };
}

}  // namespace kwb::llm
