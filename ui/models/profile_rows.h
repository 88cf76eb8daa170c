#pragma once
// A profile as the window shows it: the metrics of one kernel at one configuration, with the
// request's context (source, task, set). Made by the profile service (ui/services), shown by the
// profiler panel through ProfileMetricsModel.
#include <QList>
#include <QString>

#include "core/eval/outcome.h"

namespace kwb::ui {

struct MetricRow {
  QString name, label, unit;
  double value = 0;
};

struct ProfileRow {
  kwb::Outcome outcome = kwb::Outcome::Error;
  QString reason;     // not-profiled: insufficient-privileges, profiler-busy, ...
  QString message;
  QString device, chip, config, sourceName, taskFolder;
  QString set;        // the metric set asked for: "default", "detailed"
  int passes = 0;
  double seconds = 0;
  QList<MetricRow> metrics;
};

}  // namespace kwb::ui
