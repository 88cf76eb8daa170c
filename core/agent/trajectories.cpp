#include "core/agent/trajectories.h"

#include <map>
#include <stdexcept>

using nlohmann::json;

namespace kwb::agent {

namespace {

json optionalNumber(const std::optional<double> &v) { return v ? json(*v) : json(nullptr); }

}  // namespace

std::vector<json> trajectoryRecords(SessionStore &store, const SessionRecord &session,
                                    const TrajectoryExportOptions &options) {
  std::map<std::int64_t, GroupRecord> groups;
  for (auto &g : store.groups(session.id)) groups[g.id] = g;
  std::vector<json> records;
  for (const auto &a : store.sessionAttempts(session.id)) {
    const auto g = groups.find(a.groupId);
    if (g == groups.end()) continue;
    const bool rewarded = g->second.done && a.reward && a.credit;
    if (!rewarded && !options.includeUnrewarded) continue;
    json messages = messagesToJson(a.messages);
    messages.push_back({{"role", "assistant"}, {"content", a.responseText}});
    json dcp = nullptr;
    if (g->second.dcp)
      dcp = {{"verdict", std::string(dcpVerdictName(g->second.dcp->verdict))},
             {"failures", g->second.dcp->failures},
             {"group_size", g->second.dcp->groupSize},
             {"reason", g->second.dcp->reason}};
    json meta = {{"session", session.id},
                 {"task", session.taskName},
                 {"provider", session.provider},
                 {"model", session.model},
                 {"group", g->second.ordinal},
                 {"goal", toString(g->second.goal)},
                 {"line", a.line},
                 {"turn", a.turn},
                 {"parent_turn", a.parentId ? json(a.turn - 1) : json(nullptr)},
                 {"answer_outcome", a.answerOutcome},
                 {"outcome", a.outcome},
                 {"success", a.success},
                 {"ms", optionalNumber(a.ms)},
                 {"speedup", optionalNumber(a.speedup)},
                 {"incumbent_ms", optionalNumber(g->second.incumbentMs)},
                 {"dcp", dcp},
                 {"input_tokens", a.inputTokens},
                 {"output_tokens", a.outputTokens},
                 {"cost", a.cost},
                 {"source_hash", a.sourceHash},
                 {"evaluation_id", a.evaluationId ? json(a.evaluationId) : json(nullptr)},
                 {"cards", a.cards},
                 {"context", a.context},
                 {"created_at", a.createdAt}};
    records.push_back({{"messages", messages},
                       {"reward", optionalNumber(a.credit)},
                       {"line_reward", optionalNumber(a.reward)},
                       {"metadata", meta}});
  }
  return records;
}

std::size_t exportTrajectories(SessionStore &store, const std::vector<std::string> &sessionIds, std::ostream &out,
                               const TrajectoryExportOptions &options) {
  std::vector<SessionRecord> sessions;
  for (const auto &id : sessionIds) {
    auto s = store.session(id);
    if (!s) throw std::invalid_argument("no session " + id + " in " + store.workspace().path().string());
    sessions.push_back(*s);
  }
  std::size_t n = 0;
  for (const auto &s : sessions)
    for (const auto &record : trajectoryRecords(store, s, options)) {
      out << record.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      ++n;
    }
  return n;
}

}  // namespace kwb::agent
