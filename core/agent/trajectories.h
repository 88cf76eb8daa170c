#pragma once
// `kwb trajectories export`: an agent session's attempts as training records, one JSON object per
// line (JSON Lines), in the chat format RL and fine-tuning pipelines read:
//
//   {"messages": [{"role": "system", ...}, {"role": "user", ...}, {"role": "assistant", ...}],
//    "reward": <the turn's credit>, "line_reward": <the line's rank reward>,
//    "metadata": {"session", "task", "provider", "model", "group", "goal", "line", "turn",
//                 "parent_turn", "answer_outcome", "outcome", "success", "ms", "speedup",
//                 "incumbent_ms", "dcp": {"verdict", "failures", "group_size", "reason"},
//                 "input_tokens", "output_tokens", "cost", "source_hash", "evaluation_id",
//                 "created_at"}}
//
// One record per attempt (one LLM answer); a repair turn's prompt holds the previous answer and
// its feedback, so each record stands alone. Only attempts of finished groups carry rewards:
// the others are left out unless `includeUnrewarded` (their rewards are then null).
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/agent/session_store.h"

namespace kwb::agent {

struct TrajectoryExportOptions {
  bool includeUnrewarded = false;
};

// One record per attempt of the session, in group, line, turn order.
std::vector<nlohmann::json> trajectoryRecords(SessionStore &store, const SessionRecord &session,
                                              const TrajectoryExportOptions &options = {});

// Writes the sessions' records as JSON Lines; returns how many. Throws std::invalid_argument for
// an unknown session id.
std::size_t exportTrajectories(SessionStore &store, const std::vector<std::string> &sessionIds, std::ostream &out,
                               const TrajectoryExportOptions &options = {});

}  // namespace kwb::agent
