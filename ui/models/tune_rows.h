#pragma once
// A tuning run as the tuning view shows it: one row per point the tuner finished, and the run's
// summary as it stands, made from the tuner's own types (core/tune/tuner.h).
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include <QMetaType>
#include <QString>
#include <QStringList>

#include "core/tune/tuner.h"

namespace kwb::ui {

struct TunePointRow {
  int order = 0;
  QString label;                            // "BX=32 BY=8"
  std::map<std::string, std::int64_t> point;
  kwb::Outcome outcome = kwb::Outcome::Error;
  QString message;
  double objectiveMs = std::nan("");        // NaN unless correct and timed
  bool cached = false;
  QString device;
};

struct TuneSummary {
  QString task, sourceName, strategy;
  QStringList tunables;                     // the names, in the task's order
  quint64 spaceSize = 0, budget = 0;
  QString stop;                             // "running", then "done", "cancelled", "no-device", "error"
  QString message;
  int measured = 0, cached = 0, rejected = 0, compiledOnly = 0, compiledAhead = 0;
  double seconds = 0;
  int bestOrder = -1;
  QString bestLabel;
  double bestMs = std::nan("");
  QString reproduce;                        // the kwb eval command for the best point
  QString memory;                           // what the experience memory recorded of it, or why not
};

// From the tuner's types.
TunePointRow toRow(const kwb::tune::TunedPoint &p);
void fillSummary(TuneSummary &s, const kwb::tune::TuneReport &r);

}  // namespace kwb::ui

Q_DECLARE_METATYPE(kwb::ui::TuneSummary)
Q_DECLARE_METATYPE(kwb::ui::TunePointRow)
