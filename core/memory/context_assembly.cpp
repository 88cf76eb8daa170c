#include "core/memory/context_assembly.h"


#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string_view>

#include "core/text/printable.h"

namespace kwb::memory {

const char *toString(Tier tier) {
  switch (tier) {
    case Tier::Hot: return "hot";
    case Tier::Warm: return "warm";
    case Tier::Cold: return "cold";
  }
  return "hot";
}

std::size_t ContextBudget::budget() const {
  const std::size_t used = system + generation + recency;
  return window > used ? window - used : 0;
}

std::size_t TokenEstimator::estimate(std::size_t chars) const {
  return static_cast<std::size_t>(std::ceil(static_cast<double>(chars) / charsPerToken_));
}

std::size_t TokenEstimator::estimate(const std::string &text) const { return estimate(text.size()); }

void TokenEstimator::calibrate(std::size_t chars, std::size_t reportedTokens) {
  if (chars == 0 || reportedTokens == 0) return;
  const double observed = static_cast<double>(chars) / static_cast<double>(reportedTokens);
  if (!(observed > 0.5 && observed < 20)) return;  // not a prompt's ratio: a wrong count
  // The first observation replaces the guess; later ones move it a third of the way.
  charsPerToken_ = observations_ == 0 ? observed : charsPerToken_ + (observed - charsPerToken_) / 3.0;
  ++observations_;
}

namespace {

const char *headingOf(Tier tier) {
  return tier == Tier::Warm ? "## Experience with this kernel (from earlier attempts, best first)\n"
                            : "## Further experience (other operators, cards, digests)\n";
}

// What an item costs in the rendered text: its characters and the newline that may end it.
std::size_t costOf(const TokenEstimator &estimator, const ContextItem &item) {
  return estimator.estimate(item.text.size() + 1);
}

}  // namespace

AssembledContext assembleContext(const std::vector<ContextItem> &hot, const std::vector<ContextItem> &warm,
                                 const std::vector<ContextItem> &cold, const ContextBudget &budget, const TierCaps &caps,
                                 const TokenEstimator &estimator) {
  AssembledContext out;
  out.budget = budget.budget();
  for (const auto &item : hot) {
    out.hotTokens += costOf(estimator, item);
    out.included.push_back(item);
  }
  out.tokens = out.hotTokens;
  out.hotOverBudget = out.hotTokens > out.budget;
  const std::size_t rest = out.hotOverBudget ? 0 : out.budget - out.hotTokens;
  auto fill = [&](const std::vector<ContextItem> &items, std::size_t cap, double share) {
    const auto allowance = static_cast<std::size_t>(std::floor(static_cast<double>(rest) * std::clamp(share, 0.0, 1.0)));
    std::size_t used = 0, taken = 0;
    for (const auto &item : items) {
      // The tier's heading (a blank line, then the heading) is paid by its first item.
      const std::size_t heading = taken == 0 ? estimator.estimate(std::string_view(headingOf(item.tier)).size() + 1) : 0;
      const std::size_t cost = costOf(estimator, item) + heading;
      ContextItem copy = item;
      if (taken >= cap) {
        copy.why += (copy.why.empty() ? "" : "; ") + std::string("left: the tier's cap (") + std::to_string(cap) + " items)";
        out.left.push_back(copy);
      } else if (used + cost > allowance || out.tokens + cost > out.budget) {
        copy.why += (copy.why.empty() ? "" : "; ") + std::string("left: ") + std::to_string(cost) +
                    " tokens do not fit the tier's " + std::to_string(allowance - std::min(allowance, used)) + " left";
        out.left.push_back(copy);
      } else {
        used += cost;
        ++taken;
        out.tokens += cost;
        out.included.push_back(item);
      }
    }
  };
  fill(warm, caps.warmItems, caps.warmShare);
  fill(cold, caps.coldItems, caps.coldShare);
  return out;
}

std::string AssembledContext::text() const {
  std::string out;
  std::optional<Tier> tier;
  for (const auto &item : included) {
    if (item.tier != Tier::Hot && tier != item.tier) out += std::string("\n") + headingOf(item.tier);
    tier = item.tier;
    out += item.text;
    if (out.empty() || out.back() != '\n') out += '\n';
  }
  return out;
}

nlohmann::json AssembledContext::record() const {
  auto items = [](const std::vector<ContextItem> &list) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto &i : list) {
      nlohmann::json j = {{"tier", toString(i.tier)}, {"kind", i.kind}, {"why", i.why}, {"chars", i.text.size()}};
      if (i.caseId) j["case"] = i.caseId;
      a.push_back(j);
    }
    return a;
  };
  return {{"budget", budget},     {"tokens", tokens},   {"hot_tokens", hotTokens}, {"hot_over_budget", hotOverBudget},
          {"included", items(included)}, {"left", items(left)}};
}

std::string experienceLine(const Case &c) {
  std::string line = "- [" + std::string(toString(c.label));
  if (c.correct) line += ", x" + fixed(c.ratio, 2) + " over where it started, " + fixed(c.speedup, 2) + "x the reference";
  else line += ", " + c.outcome;
  line += "] " + c.task + ": " + clippedLine(c.idea.empty() ? c.journal : c.idea, 160);
  if (!c.correct && !c.feedback.empty()) line += " -- " + clippedLine(c.feedback, 160);
  if (!c.gpu.empty()) line += " (" + c.gpu + ")";
  return line;
}

std::string digestText(const Digest &d, const std::string &title) {
  if (d.cases == 0) return {};
  std::string out = "- digest of " + title + ": " + std::to_string(d.cases) + " attempts";
  if (d.tasks > 1) out += " over " + std::to_string(d.tasks) + " tasks";
  if (d.gpus > 1) out += " on " + std::to_string(d.gpus) + " GPUs";
  out += ", " + std::to_string(d.correct) + " correct (";
  bool first = true;
  for (const Label l : {Label::Effective, Label::Partial, Label::Ineffective, Label::Negative}) {
    out += std::string(first ? "" : ", ") + std::to_string(d.byLabel[labelRank(l)]) + " " + toString(l);
    first = false;
  }
  out += ")";
  if (d.best) {
    out += "; best " + fixed(d.best->speedup, 2) + "x the reference";
    if (d.tasks > 1) out += " on " + d.best->task;
    if (!d.best->idea.empty()) out += " (" + clippedLine(d.best->idea, 100) + ")";
  }
  out += "\n";
  auto list = [&](const char *heading, const std::vector<Digest::Idea> &ideas, bool ratio) {
    if (ideas.empty()) return;
    out += std::string("  ") + heading + ": ";
    for (std::size_t i = 0; i < ideas.size(); ++i) {
      const auto &idea = ideas[i];
      out += (i ? "; " : "") + clippedLine(idea.idea, 80);
      std::string detail = ratio ? "x" + fixed(idea.ratio, 2) : idea.outcome;
      if (idea.tries > 1) detail += ", " + std::to_string(idea.tries) + " tries";
      out += " (" + detail + ")";
    }
    out += "\n";
  };
  list("paid off", d.paidOff, true);
  list("slowed it down", d.slowedDown, true);
  list("broke it", d.broke, false);
  if (!d.failures.empty()) {
    out += "  failures:";
    for (std::size_t i = 0; i < d.failures.size(); ++i)
      out += std::string(i ? "," : "") + " " + std::to_string(d.failures[i].second) + " " + d.failures[i].first;
    out += "\n";
  }
  return out;
}

ExperienceItems experienceFor(ExperienceStore &store, const MemoryQuery &query, std::size_t warmLimit,
                              std::size_t coldLimit) {
  ExperienceItems out;
  auto why = [](const QueryHit &h, const std::string &what) {
    return what + ": " + toString(h.c.label) + ", d x confidence x similarity " + fixed(h.rank, 3);
  };
  std::size_t shownHere = 0, shownOthers = 0;  // warm items of this task, of the operator's other tasks
  MemoryQuery warm = query;
  warm.text.clear();
  warm.limit = warmLimit;
  for (const auto &h : store.query(warm)) {
    ContextItem item{Tier::Warm, "experience", experienceLine(h.c), why(h, "this task"), h.c.id};
    out.warm.push_back(item);
    ++(h.c.task == query.task ? shownHere : shownOthers);
  }
  if (!query.operatorClass.empty()) {
    MemoryQuery same = warm;
    same.task.clear();
    same.limit = 0;  // this task's own Cases come back too, and are skipped
    for (const auto &h : store.query(same)) {
      if (h.c.task == query.task || out.warm.size() >= warmLimit) continue;
      out.warm.push_back({Tier::Warm, "experience", experienceLine(h.c), why(h, "same operator (" + h.c.operatorClass + ")"), h.c.id});
      ++shownOthers;
    }
  }
  // Digests: what the warm items leave out, summed up (this task's Cases, then its operator's other
  // tasks').
  auto addDigest = [&](const DigestScope &scope, const std::string &title, std::size_t shown, const std::string &what) {
    if (out.cold.size() >= coldLimit) return;
    const Digest d = store.digest(scope);
    if (d.cases <= static_cast<std::int64_t>(shown)) return;
    out.cold.push_back({Tier::Cold, "digest", digestText(d, title),
                        what + ": " + std::to_string(d.cases) + " Cases, " + std::to_string(shown) + " shown one by one", 0});
  };
  if (!query.task.empty())
    addDigest({query.task, {}, {}}, query.task, shownHere, "this task's attempts summed up");
  if (!query.operatorClass.empty())
    addDigest({{}, query.operatorClass, query.task}, "the operator's other tasks (" + query.operatorClass + ")",
              shownOthers, "the same operator's other tasks summed up");
  if (!query.text.empty() && out.cold.size() < coldLimit) {
    // Other operators whose Cases share any of the task's words: coverage more than speed.
    MemoryQuery cross;
    cross.text = query.text;
    cross.anyWord = true;
    cross.correct = true;
    cross.limit = 0;
    for (const auto &h : store.query(cross)) {
      if (out.cold.size() >= coldLimit) break;
      if (h.c.operatorClass == query.operatorClass) continue;
      out.cold.push_back({Tier::Cold, "cross-task", experienceLine(h.c), why(h, "another operator, shared words"), h.c.id});
    }
  }
  return out;
}

}  // namespace kwb::memory
