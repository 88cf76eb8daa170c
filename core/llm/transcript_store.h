#pragma once
// Stores a provider's transcript entries in a workspace (table llm_transcripts), under a session.
#include <memory>
#include <string>

#include "core/llm/provider.h"
#include "core/store/workspace.h"

namespace kwb::llm {

LlmTranscriptRecord toRecord(const TranscriptEntry &entry, const std::string &session);
// A sink writing every entry to `workspace` (kept alive by the sink). Errors writing are
// reported through onError (may be empty) and never reach the request.
Provider::TranscriptSink workspaceTranscriptSink(std::shared_ptr<Workspace> workspace, std::string session,
                                                 std::function<void(const std::string &)> onError = {});

}  // namespace kwb::llm
