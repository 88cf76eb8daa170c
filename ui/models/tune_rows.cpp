#include "ui/models/tune_rows.h"

namespace kwb::ui {

TunePointRow toRow(const kwb::tune::TunedPoint &p) {
  TunePointRow r;
  r.order = static_cast<int>(p.order);
  r.label = QString::fromStdString(p.label);
  r.point = p.point;
  r.outcome = p.result.outcome;
  r.message = QString::fromStdString(p.result.message);
  if (p.result.objectiveMs) r.objectiveMs = *p.result.objectiveMs;
  r.cached = p.cached;
  r.device = QString::fromStdString(p.result.device);
  return r;
}

void fillSummary(TuneSummary &s, const kwb::tune::TuneReport &r) {
  s.strategy = QString::fromLatin1(kwb::tune::toString(r.strategy));
  s.spaceSize = r.spaceSize;
  s.budget = r.budget;
  s.measured = static_cast<int>(r.measured);
  s.cached = static_cast<int>(r.cached);
  s.rejected = static_cast<int>(r.rejected);
  s.compiledOnly = static_cast<int>(r.compiledOnly);
  s.compiledAhead = static_cast<int>(r.compiledAhead);
  s.seconds = r.seconds;
  if (r.best) {
    const auto &b = r.points[*r.best];
    s.bestOrder = static_cast<int>(b.order);
    s.bestLabel = QString::fromStdString(b.label);
    s.bestMs = *b.result.objectiveMs;
  }
}

}  // namespace kwb::ui
